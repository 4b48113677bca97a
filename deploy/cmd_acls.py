"""``kraftlog acls``: ACL bindings in the metadata log (cf. kafka-acls.sh).

    kraftlog acls add --allow-principal User:alice --operation Read --topic orders
    kraftlog acls add --deny-principal User:bob --operation Write --topic logs- --prefixed
    kraftlog acls add --allow-principal User:app --operation Read --group app-
                      --prefixed --host 10.0.0.5
    kraftlog acls add --allow-principal User:ops --operation Create --cluster
    kraftlog acls list [--topic T | --group G | --cluster | --transactional-id X]
                       [--principal P] [--json]
    kraftlog acls remove [resource/principal/operation filters] [--yes]
    kraftlog acls --add --allow-principal User:alice --operation Read --topic orders \
                  --resource-pattern-type prefixed --bootstrap-server localhost:9092

``--operation`` takes Kafka's names (Read, Write, Create, Delete, Alter, Describe,
ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, All) and may be repeated; one
binding is created per principal and operation. ``--prefixed`` makes the resource name a
prefix (PREFIXED pattern); ``*`` as a literal name means every resource of the type.
``--resource-pattern-type`` (kafka-acls.sh's) names the pattern type instead: ``literal`` or
``prefixed``, and for ``list`` and ``remove`` also ``any`` (every pattern type) or ``match``
(every pattern covering the name). ``remove`` deletes every binding matching the filters;
without any filter it refuses unless ``--yes`` (``--force``) is given.

The command also takes kafka-acls.sh's flags instead of a subcommand word (``--add``,
``--list``, ``--remove`` with the options above, see :data:`KAFKA_STYLE`).

Every subcommand takes ``--bootstrap-server host:port,...``: it then goes through a broker
with Kafka's ACL APIs (CreateAcls, DescribeAcls, DeleteAcls, by :class:`kraftlog_client.Admin`),
which needs the authorizer on (else SECURITY_DISABLED) and Describe or Alter on the cluster.
Or ``--bootstrap-controller host:port,...`` / ``--dir D`` (see :mod:`deploy.admin`): the
controllers' control plane, as kafka-acls.sh's ``--bootstrap-controller``
(:class:`deploy.controller_acls.ControllerAcls`). Both run the same code and print the same
output; a refused request prints the Kafka error name and message and exits 1.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from common.security.acl import (
    CLUSTER_RESOURCE_NAME,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from common.security.principal import KafkaPrincipal
from deploy.admin import (
    AdminError,
    fail,
    print_json,
)
from deploy.command_group import add_command_group
from deploy.controller_acls import ControllerAcls
from deploy.dual_target import add_dual_target_command
from deploy.kafka_style_args import (
    APPEND,
    SWITCH,
    Action,
    KafkaStyle,
    Option,
    add_kafka_style,
)
from metadata.client import ControllerClient


class AclTarget(Protocol):
    """What the subcommands call: :class:`kraftlog_client.Admin` or
    :class:`deploy.controller_acls.ControllerAcls`."""

    def create_acls(self, bindings: Sequence[AclBinding]) -> None: ...

    def describe_acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]: ...

    def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[list[AclBinding]]: ...


# A subcommand: runs on either target.
AclCommand = Callable[[AclTarget, argparse.Namespace], int]

# Kafka's CamelCase operation names <-> enum.
OPERATION_NAMES = {
    "All": AclOperation.ALL,
    "Read": AclOperation.READ,
    "Write": AclOperation.WRITE,
    "Create": AclOperation.CREATE,
    "Delete": AclOperation.DELETE,
    "Alter": AclOperation.ALTER,
    "Describe": AclOperation.DESCRIBE,
    "ClusterAction": AclOperation.CLUSTER_ACTION,
    "DescribeConfigs": AclOperation.DESCRIBE_CONFIGS,
    "AlterConfigs": AclOperation.ALTER_CONFIGS,
    "IdempotentWrite": AclOperation.IDEMPOTENT_WRITE,
}
_OPERATION_BY_VALUE = {v: k for k, v in OPERATION_NAMES.items()}
# --resource-pattern-type values (kafka-acls.sh's): a binding's, and a filter's.
_BINDING_PATTERNS = ("literal", "prefixed")
_FILTER_PATTERNS = ("literal", "prefixed", "any", "match")
_RESOURCE_NAMES = {
    ResourceType.TOPIC: "Topic",
    ResourceType.GROUP: "Group",
    ResourceType.CLUSTER: "Cluster",
    ResourceType.TRANSACTIONAL_ID: "TransactionalId",
}


def _operation(text: str) -> AclOperation:
    for name, op in OPERATION_NAMES.items():
        if name.lower() == text.lower():
            return op
    raise argparse.ArgumentTypeError(
        f"unknown operation {text!r}; one of {', '.join(OPERATION_NAMES)}"
    )


def _principal(text: str) -> str:
    try:
        return str(KafkaPrincipal.parse(text))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _resource_args(p: argparse.ArgumentParser, *, required: bool, filters: bool) -> None:
    group = p.add_mutually_exclusive_group(required=required)
    group.add_argument("--topic", metavar="NAME")
    group.add_argument("--group", metavar="NAME")
    group.add_argument("--cluster", action="store_true")
    group.add_argument("--transactional-id", metavar="ID")
    p.add_argument("--prefixed", action="store_true", help="the name is a prefix")
    p.add_argument(
        "--resource-pattern-type",
        type=str.lower,
        choices=_FILTER_PATTERNS if filters else _BINDING_PATTERNS,
        help="as kafka-acls.sh: prefixed = --prefixed"
        + ("; any: every pattern type, match: every pattern covering the name" if filters else ""),
    )


def _pattern_type(args: argparse.Namespace, default: PatternType) -> PatternType:
    """``--resource-pattern-type`` or ``--prefixed`` (which must agree), else ``default``."""
    chosen = args.resource_pattern_type
    if args.prefixed:
        if chosen not in (None, "prefixed"):
            raise AdminError(f"--prefixed contradicts --resource-pattern-type {chosen}")
        return PatternType.PREFIXED
    return default if chosen is None else PatternType[chosen.upper()]


_ACTION_OPTIONS = frozenset(
    {
        "--bootstrap-server",
        "--bootstrap-controller",
        "--dir",
        "--command-config",
        "--timeout",
        "--json",
        "--topic",
        "--group",
        "--cluster",
        "--transactional-id",
        "--resource-pattern-type",
        "--operation",
        "--host",
    }
)
# kafka-acls.sh's flags, translated into the subcommands below.
KAFKA_STYLE = KafkaStyle(
    tool="kafka-acls.sh",
    actions=(
        Action(
            "--add",
            "add",
            "create ACL bindings",
            options=_ACTION_OPTIONS | {"--allow-principal", "--deny-principal"},
        ),
        Action("--list", "list", "list ACL bindings", options=_ACTION_OPTIONS | {"--principal"}),
        Action(
            "--remove",
            "remove",
            "remove matching ACL bindings",
            options=_ACTION_OPTIONS | {"--principal", "--force"},
        ),
    ),
    options=(
        Option("--topic", metavar="NAME"),
        Option("--group", metavar="NAME"),
        Option("--cluster", SWITCH),
        Option("--transactional-id", metavar="ID"),
        Option("--resource-pattern-type", metavar="TYPE"),
        Option("--allow-principal", APPEND, "PRINCIPAL"),
        Option("--deny-principal", APPEND, "PRINCIPAL"),
        Option("--principal", metavar="PRINCIPAL"),
        Option("--operation", APPEND, "OPERATION"),
        Option("--host", metavar="IP"),
        Option("--force", SWITCH, help="remove without filters"),
        Option("--bootstrap-server", metavar="HOST:PORT[,...]", help="brokers' Kafka listeners"),
        Option(
            "--bootstrap-controller",
            metavar="HOST:PORT[,...]",
            help="controllers' CONTROLLER listeners",
        ),
        Option("--dir", metavar="D", help="a local cluster directory (its controllers)"),
        Option("--command-config", metavar="FILE", help="control plane TLS properties"),
        Option("--timeout", metavar="SECONDS"),
        Option("--json", SWITCH),
    ),
)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser, acls_sub = add_command_group(
        sub,
        "acls",
        "add, list and remove ACLs",
        description="Add, list and remove ACLs: with a SUBCOMMAND, or with kafka-acls.sh's "
        "flags (kraftlog acls --add --allow-principal User:a --operation Read --topic T ...).",
    )

    p = acls_sub.add_parser("add", help="create ACL bindings")
    _resource_args(p, required=True, filters=False)
    p.add_argument("--allow-principal", action="append", default=[], type=_principal)
    p.add_argument("--deny-principal", action="append", default=[], type=_principal)
    p.add_argument("--operation", action="append", required=True, type=_operation)
    p.add_argument("--host", default="*", help="client IP address (default: every host)")
    _add_acl_command(p, _add)

    for name, func, text in (
        ("list", _list, "list ACL bindings matching filters"),
        ("remove", _remove, "remove every ACL binding matching filters"),
    ):
        p = acls_sub.add_parser(name, help=text)
        _resource_args(p, required=False, filters=True)
        p.add_argument("--principal", type=_principal)
        p.add_argument("--operation", type=_operation)
        p.add_argument("--host")
        if name == "remove":
            p.add_argument(
                "--yes", "--force", action="store_true", help="allow removing without filters"
            )
        _add_acl_command(p, func)

    add_kafka_style(parser, acls_sub, KAFKA_STYLE)


def _add_acl_command(p: argparse.ArgumentParser, func: AclCommand) -> None:
    """``func(target, args)`` on an Admin (``--bootstrap-server``) or on ControllerAcls."""

    def on_controllers(client: ControllerClient, args: argparse.Namespace) -> int:
        return int(func(ControllerAcls(client), args))

    add_dual_target_command(
        p, on_controllers, func, lambda args: f"kraftlog acls {args.acls_command}"
    )


def _resource(args: argparse.Namespace) -> tuple[ResourceType, str | None]:
    if args.topic is not None:
        return ResourceType.TOPIC, args.topic
    if args.group is not None:
        return ResourceType.GROUP, args.group
    if args.cluster:
        return ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME
    if args.transactional_id is not None:
        return ResourceType.TRANSACTIONAL_ID, args.transactional_id
    return ResourceType.ANY, None


def _add(target: AclTarget, args: argparse.Namespace) -> int:
    if not args.allow_principal and not args.deny_principal:
        return fail("give --allow-principal and/or --deny-principal")
    rtype, name = _resource(args)
    if name is None:
        return fail("give a resource: --topic, --group, --cluster or --transactional-id")
    pattern = ResourcePattern(rtype, name, _pattern_type(args, PatternType.LITERAL))
    bindings = [
        AclBinding(pattern, AccessControlEntry(principal, args.host, op, perm))
        for perm, principals in (
            (AclPermissionType.ALLOW, args.allow_principal),
            (AclPermissionType.DENY, args.deny_principal),
        )
        for principal in principals
        for op in dict.fromkeys(args.operation)
    ]
    target.create_acls(bindings)
    rows = [_row(b) for b in bindings]
    if args.json:
        print_json(rows)
    else:
        for row in rows:
            print("added", _text(row))
    return 0


def _filter(args: argparse.Namespace) -> AclBindingFilter:
    rtype, name = _resource(args)
    pattern = _pattern_type(args, PatternType.LITERAL if name is not None else PatternType.ANY)
    return AclBindingFilter(
        resource_type=rtype,
        name=name,
        pattern_type=pattern,
        principal=args.principal,
        host=args.host,
        operation=args.operation if args.operation is not None else AclOperation.ANY,
    )


def _row(b: AclBinding) -> dict[str, Any]:
    p, e = b.pattern, b.entry
    return {
        "resource_type": _RESOURCE_NAMES.get(p.resource_type, str(int(p.resource_type))),
        "resource_name": p.name,
        "pattern_type": p.pattern_type.name,
        "principal": e.principal,
        "host": e.host,
        "operation": _OPERATION_BY_VALUE.get(e.operation, str(int(e.operation))),
        "permission": e.permission_type.name,
    }


def _text(row: dict[str, Any]) -> str:
    return (
        f"{row['permission']} {row['principal']} {row['operation']} on "
        f"{row['resource_type']}:{row['resource_name']} ({row['pattern_type']}) "
        f"from host {row['host']}"
    )


def _list(target: AclTarget, args: argparse.Namespace) -> int:
    rows = [_row(b) for b in target.describe_acls(_filter(args))]
    if args.json:
        print_json(rows)
    else:
        for row in rows:
            print(_text(row))
    return 0


def _remove(target: AclTarget, args: argparse.Namespace) -> int:
    flt = _filter(args)
    if flt == AclBindingFilter() and not args.yes:
        return fail("no filter given: this would remove every ACL (add --yes to confirm)")
    (matched,) = target.delete_acls([flt])
    rows = [_row(b) for b in matched]
    if args.json:
        print_json(rows)
    else:
        for row in rows:
            print("removed", _text(row))
        if not rows:
            print("no matching ACLs")
    return 0
