"""``kraftlog quotas``: client quotas in the metadata log (cf. kafka-configs.sh
--entity-type users/clients --alter --add-config producer_byte_rate=...).

    kraftlog quotas set --user alice --producer-byte-rate 1048576
    kraftlog quotas set --client-id app --consumer-byte-rate 2097152
    kraftlog quotas set --user alice --client-id app --producer-byte-rate 524288
    kraftlog quotas set --user-default --producer-byte-rate 10485760
    kraftlog quotas set --user alice --remove producer_byte_rate
    kraftlog quotas describe [--user U] [--client-id C] [--json]
    kraftlog quotas describe --user alice --bootstrap-server localhost:9092

An entity is a user, a client id, or both; ``--user-default`` / ``--client-id-default`` name
the default entity (``<default>``), which applies to every user / client id without its own
quota. Precedence and enforcement: docs/security.md.

Every subcommand takes ``--bootstrap-server host:port,...``: it then goes through a broker
with Kafka's quota APIs (DescribeClientQuotas, AlterClientQuotas, by
:class:`kraftlog_client.Admin`), which need DescribeConfigs or AlterConfigs on the cluster.
Or ``--bootstrap-controller host:port,...`` / ``--dir D`` (see :mod:`deploy.admin`): the
controllers' control plane (:class:`deploy.controller_quotas.ControllerQuotas`). Both run the
same code and print the same output; a refused request prints the Kafka error name and
message and exits 1.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from common.security.quota import (
    CONSUMER_BYTE_RATE,
    DEFAULT_ENTITY,
    ENTITY_CLIENT_ID,
    ENTITY_USER,
    PRODUCER_BYTE_RATE,
    QUOTA_KEYS,
    REQUEST_PERCENTAGE,
)
from deploy.admin import (
    fail,
    print_json,
)
from deploy.command_group import add_command_group
from deploy.controller_quotas import ControllerQuotas
from deploy.dual_target import add_dual_target_command
from kraftlog_client import (
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilterComponent,
    ClientQuotaOp,
)
from metadata.client import ControllerClient


class QuotaTarget(Protocol):
    """What the subcommands call: :class:`kraftlog_client.Admin` or
    :class:`deploy.controller_quotas.ControllerQuotas`."""

    def describe_client_quotas(
        self, components: Sequence[ClientQuotaFilterComponent] = (), *, strict: bool = False
    ) -> dict[ClientQuotaEntity, dict[str, float]]: ...

    def alter_client_quotas(
        self, alterations: Sequence[ClientQuotaAlteration], *, validate_only: bool = False
    ) -> None: ...


# A subcommand: runs on either target.
QuotaCommand = Callable[[QuotaTarget, argparse.Namespace], int]


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    _, quotas_sub = add_command_group(sub, "quotas", "set and describe client quotas")

    p = quotas_sub.add_parser("set", help="set or remove quotas of an entity")
    _entity_args(p)
    p.add_argument("--producer-byte-rate", type=float, metavar="BYTES_PER_S")
    p.add_argument("--consumer-byte-rate", type=float, metavar="BYTES_PER_S")
    p.add_argument("--request-percentage", type=float, metavar="PERCENT")
    p.add_argument("--remove", action="append", default=[], choices=QUOTA_KEYS)
    _add_quota_command(p, _set)

    p = quotas_sub.add_parser("describe", help="show quotas")
    _entity_args(p)
    _add_quota_command(p, _describe)


def _add_quota_command(p: argparse.ArgumentParser, func: QuotaCommand) -> None:
    """``func(target, args)`` on an Admin (``--bootstrap-server``) or on ControllerQuotas."""

    def on_controllers(client: ControllerClient, args: argparse.Namespace) -> int:
        return int(func(ControllerQuotas(client), args))

    add_dual_target_command(
        p, on_controllers, func, lambda args: f"kraftlog quotas {args.quotas_command}"
    )


def _entity_args(p: argparse.ArgumentParser) -> None:
    user = p.add_mutually_exclusive_group()
    user.add_argument("--user")
    user.add_argument("--user-default", action="store_true")
    client = p.add_mutually_exclusive_group()
    client.add_argument("--client-id")
    client.add_argument("--client-id-default", action="store_true")


def _entity(args: argparse.Namespace) -> dict[str, str | None]:
    """The entity the options name: entity type -> name (None: the default entity)."""
    out: dict[str, str | None] = {}
    if args.user_default or args.user is not None:
        out[ENTITY_USER] = None if args.user_default else args.user
    if args.client_id_default or args.client_id is not None:
        out[ENTITY_CLIENT_ID] = None if args.client_id_default else args.client_id
    return out


def _entity_text(entity: dict[str, str | None]) -> str:
    parts = []
    for entity_type in (ENTITY_USER, ENTITY_CLIENT_ID):
        if entity_type in entity:
            parts.append(f"{entity_type}={entity[entity_type] or DEFAULT_ENTITY}")
    return ",".join(parts)


def _set(target: QuotaTarget, args: argparse.Namespace) -> int:
    entity = _entity(args)
    if not entity:
        return fail("give --user/--user-default and/or --client-id/--client-id-default")
    ops = [
        ClientQuotaOp(key, value)
        for key, value in (
            (PRODUCER_BYTE_RATE, args.producer_byte_rate),
            (CONSUMER_BYTE_RATE, args.consumer_byte_rate),
            (REQUEST_PERCENTAGE, args.request_percentage),
        )
        if value is not None
    ]
    ops += [ClientQuotaOp(key, None) for key in dict.fromkeys(args.remove)]
    if not ops:
        return fail("nothing to set: give a rate or --remove KEY")
    target.alter_client_quotas([ClientQuotaAlteration(ClientQuotaEntity.of(entity), tuple(ops))])
    if args.json:
        print_json(
            {
                "entity": _entity_text(entity),
                "set": {op.key: op.value for op in ops if op.value is not None},
                "removed": [op.key for op in ops if op.value is None],
            }
        )
    else:
        for op in ops:
            action = "removed" if op.value is None else f"= {op.value:g}"
            print(f"{_entity_text(entity)}: {op.key} {action}")
    return 0


def _describe(target: QuotaTarget, args: argparse.Namespace) -> int:
    components = [
        ClientQuotaFilterComponent.of_default_entity(entity_type)
        if name is None
        else ClientQuotaFilterComponent.of_entity(entity_type, name)
        for entity_type, name in _entity(args).items()
    ]
    quotas = target.describe_client_quotas(components)
    rows: list[dict[str, Any]] = []
    for entity in sorted(quotas, key=_sort_key):
        rows.append({"entity": _entity_text(entity.as_dict()), "quotas": quotas[entity]})
    if args.json:
        print_json(rows)
    else:
        for row in rows:
            values = ", ".join(f"{k}={v:g}" for k, v in sorted(row["quotas"].items()))
            print(f"{row['entity']}: {values}")
    return 0


def _sort_key(entity: ClientQuotaEntity) -> tuple[str, str]:
    """By user, then client id (the default entity as ``<default>``, absent as "")."""
    names = entity.as_dict()

    def name(entity_type: str) -> str:
        if entity_type not in names:
            return ""
        return names[entity_type] or DEFAULT_ENTITY

    return name(ENTITY_USER), name(ENTITY_CLIENT_ID)
