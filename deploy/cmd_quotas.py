"""``kraftlog quotas``: client quotas in the metadata log (cf. kafka-configs.sh
--entity-type users/clients --alter --add-config producer_byte_rate=...).

    kraftlog quotas set --user alice --producer-byte-rate 1048576
    kraftlog quotas set --client-id app --consumer-byte-rate 2097152
    kraftlog quotas set --user alice --client-id app --producer-byte-rate 524288
    kraftlog quotas set --user-default --producer-byte-rate 10485760
    kraftlog quotas set --user alice --remove producer_byte_rate
    kraftlog quotas describe [--user U] [--client-id C] [--json]

An entity is a user, a client id, or both; ``--user-default`` / ``--client-id-default`` name
the default entity (``<default>``), which applies to every user / client id without its own
quota. Precedence and enforcement: docs/security.md.
"""

from __future__ import annotations

import argparse
from typing import Any

from common.security.quota import (
    CONSUMER_BYTE_RATE,
    DEFAULT_ENTITY,
    PRODUCER_BYTE_RATE,
    QUOTA_KEYS,
    REQUEST_PERCENTAGE,
)
from deploy.admin import (
    add_admin_command,
    error_text,
    fail,
    print_json,
)
from deploy.command_group import add_command_group
from metadata import security_messages as sm
from metadata.security_client import alter_client_quotas, describe_client_quotas


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    _, quotas_sub = add_command_group(sub, "quotas", "set and describe client quotas")

    p = quotas_sub.add_parser("set", help="set or remove quotas of an entity")
    _entity_args(p)
    p.add_argument("--producer-byte-rate", type=float, metavar="BYTES_PER_S")
    p.add_argument("--consumer-byte-rate", type=float, metavar="BYTES_PER_S")
    p.add_argument("--request-percentage", type=float, metavar="PERCENT")
    p.add_argument("--remove", action="append", default=[], choices=QUOTA_KEYS)
    add_admin_command(p, _set)

    p = quotas_sub.add_parser("describe", help="show quotas")
    _entity_args(p)
    add_admin_command(p, _describe)


def _entity_args(p: argparse.ArgumentParser) -> None:
    user = p.add_mutually_exclusive_group()
    user.add_argument("--user")
    user.add_argument("--user-default", action="store_true")
    client = p.add_mutually_exclusive_group()
    client.add_argument("--client-id")
    client.add_argument("--client-id-default", action="store_true")


def _entity(args: argparse.Namespace) -> sm.ClientQuotaEntity:
    user = DEFAULT_ENTITY if args.user_default else args.user
    client_id = DEFAULT_ENTITY if args.client_id_default else args.client_id
    return sm.ClientQuotaEntity(user, client_id)


def _entity_text(entity: sm.ClientQuotaEntity) -> str:
    parts = []
    if entity.user is not None:
        parts.append(f"user={entity.user}")
    if entity.client_id is not None:
        parts.append(f"client-id={entity.client_id}")
    return ",".join(parts)


def _set(client: Any, args: argparse.Namespace) -> int:
    entity = _entity(args)
    if entity.user is None and entity.client_id is None:
        return fail("give --user/--user-default and/or --client-id/--client-id-default")
    ops = [
        sm.ClientQuotaOp(key, value)
        for key, value in (
            (PRODUCER_BYTE_RATE, args.producer_byte_rate),
            (CONSUMER_BYTE_RATE, args.consumer_byte_rate),
            (REQUEST_PERCENTAGE, args.request_percentage),
        )
        if value is not None
    ]
    ops += [sm.ClientQuotaOp(key, remove=True) for key in dict.fromkeys(args.remove)]
    if not ops:
        return fail("nothing to set: give a rate or --remove KEY")
    results = alter_client_quotas(client, [sm.ClientQuotaAlteration(entity, ops)])
    if results[0].error_code:
        return fail(error_text(results[0].error_code, results[0].error_message))
    if args.json:
        print_json(
            {
                "entity": _entity_text(entity),
                "set": {op.key: op.value for op in ops if not op.remove},
                "removed": [op.key for op in ops if op.remove],
            }
        )
    else:
        for op in ops:
            action = "removed" if op.remove else f"= {op.value:g}"
            print(f"{_entity_text(entity)}: {op.key} {action}")
    return 0


def _describe(client: Any, args: argparse.Namespace) -> int:
    entity = _entity(args)
    entries = describe_client_quotas(client, entity.user, entity.client_id)
    rows = [{"entity": _entity_text(e.entity), "quotas": e.values} for e in entries]
    if args.json:
        print_json(rows)
    else:
        for row in rows:
            values = ", ".join(f"{k}={v:g}" for k, v in sorted(row["quotas"].items()))
            print(f"{row['entity']}: {values}")
    return 0
