"""``kraftlog acls``: ACL bindings in the metadata log (cf. kafka-acls.sh).

    kraftlog acls add --allow-principal User:alice --operation Read --topic orders
    kraftlog acls add --deny-principal User:bob --operation Write --topic logs- --prefixed
    kraftlog acls add --allow-principal User:app --operation Read --group app-
                      --prefixed --host 10.0.0.5
    kraftlog acls add --allow-principal User:ops --operation Create --cluster
    kraftlog acls list [--topic T | --group G | --cluster | --transactional-id X]
                       [--principal P] [--json]
    kraftlog acls remove [resource/principal/operation filters] [--yes]

``--operation`` takes Kafka's names (Read, Write, Create, Delete, Alter, Describe,
ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, All) and may be repeated; one
binding is created per principal and operation. ``--prefixed`` makes the resource name a
prefix (PREFIXED pattern); ``*`` as a literal name means every resource of the type.
``remove`` deletes every binding matching the filters; without any filter it refuses unless
``--yes`` is given.
"""

from __future__ import annotations

import argparse
from typing import Any

from common.security.acl import (
    CLUSTER_RESOURCE_NAME,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from common.security.principal import KafkaPrincipal
from deploy.admin import (
    add_admin_command,
    error_text,
    fail,
    print_json,
)
from deploy.command_group import add_command_group
from metadata import security_messages as sm
from metadata.security_client import create_acls, delete_acls, describe_acls

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


def _resource_args(p: argparse.ArgumentParser, *, required: bool) -> None:
    group = p.add_mutually_exclusive_group(required=required)
    group.add_argument("--topic", metavar="NAME")
    group.add_argument("--group", metavar="NAME")
    group.add_argument("--cluster", action="store_true")
    group.add_argument("--transactional-id", metavar="ID")
    p.add_argument("--prefixed", action="store_true", help="the name is a prefix")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    _, acls_sub = add_command_group(sub, "acls", "add, list and remove ACLs")

    p = acls_sub.add_parser("add", help="create ACL bindings")
    _resource_args(p, required=True)
    p.add_argument("--allow-principal", action="append", default=[], type=_principal)
    p.add_argument("--deny-principal", action="append", default=[], type=_principal)
    p.add_argument("--operation", action="append", required=True, type=_operation)
    p.add_argument("--host", default="*", help="client IP address (default: every host)")
    add_admin_command(p, _add)

    for name, func, text in (
        ("list", _list, "list ACL bindings matching filters"),
        ("remove", _remove, "remove every ACL binding matching filters"),
    ):
        p = acls_sub.add_parser(name, help=text)
        _resource_args(p, required=False)
        p.add_argument("--principal", type=_principal)
        p.add_argument("--operation", type=_operation)
        p.add_argument("--host")
        if name == "remove":
            p.add_argument("--yes", action="store_true", help="allow removing without filters")
        add_admin_command(p, func)


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


def _add(client: Any, args: argparse.Namespace) -> int:
    if not args.allow_principal and not args.deny_principal:
        return fail("give --allow-principal and/or --deny-principal")
    rtype, name = _resource(args)
    if name is None:
        return fail("give a resource: --topic, --group, --cluster or --transactional-id")
    pattern = PatternType.PREFIXED if args.prefixed else PatternType.LITERAL
    creations = [
        sm.AclCreation(int(rtype), name, int(pattern), principal, args.host, int(op), int(perm))
        for perm, principals in (
            (AclPermissionType.ALLOW, args.allow_principal),
            (AclPermissionType.DENY, args.deny_principal),
        )
        for principal in principals
        for op in dict.fromkeys(args.operation)
    ]
    results = create_acls(client, creations)
    failed = [r for r in results if r.error_code]
    if failed:
        return fail(error_text(failed[0].error_code, failed[0].error_message))
    rows = [_row(c) for c in creations]
    if args.json:
        print_json(rows)
    else:
        for row in rows:
            print("added", _text(row))
    return 0


def _filter(args: argparse.Namespace) -> sm.AclFilter:
    rtype, name = _resource(args)
    if args.prefixed:
        pattern = PatternType.PREFIXED
    elif name is not None:
        pattern = PatternType.LITERAL
    else:
        pattern = PatternType.ANY
    return sm.AclFilter(
        resource_type=int(rtype),
        resource_name=name,
        pattern_type=int(pattern),
        principal=args.principal,
        host=args.host,
        operation=int(args.operation) if args.operation is not None else int(AclOperation.ANY),
    )


def _row(a: sm.AclDescription | sm.AclCreation) -> dict[str, Any]:
    return {
        "resource_type": _RESOURCE_NAMES.get(ResourceType(a.resource_type), str(a.resource_type)),
        "resource_name": a.resource_name,
        "pattern_type": PatternType(a.pattern_type).name,
        "principal": a.principal,
        "host": a.host,
        "operation": _OPERATION_BY_VALUE.get(AclOperation(a.operation), str(a.operation)),
        "permission": AclPermissionType(a.permission_type).name,
    }


def _text(row: dict[str, Any]) -> str:
    return (
        f"{row['permission']} {row['principal']} {row['operation']} on "
        f"{row['resource_type']}:{row['resource_name']} ({row['pattern_type']}) "
        f"from host {row['host']}"
    )


def _list(client: Any, args: argparse.Namespace) -> int:
    response = describe_acls(client, _filter(args))
    if response.error_code:
        return fail(error_text(response.error_code, response.error_message))
    rows = [_row(a) for a in response.acls]
    if args.json:
        print_json(rows)
    else:
        for row in rows:
            print(_text(row))
    return 0


def _remove(client: Any, args: argparse.Namespace) -> int:
    flt = _filter(args)
    if flt == sm.AclFilter() and not args.yes:
        return fail("no filter given: this would remove every ACL (add --yes to confirm)")
    results = delete_acls(client, [flt])
    if results[0].error_code:
        return fail(error_text(results[0].error_code, results[0].error_message))
    rows = [_row(a) for a in results[0].matching_acls]
    if args.json:
        print_json(rows)
    else:
        for row in rows:
            print("removed", _text(row))
        if not rows:
            print("no matching ACLs")
    return 0
