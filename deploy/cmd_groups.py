"""``kraftlog groups``: list, describe, reset and delete consumer groups
(cf. kafka-consumer-groups.sh).

    kraftlog groups list [--bootstrap-server HOST:PORT | --dir D] [--json]
    kraftlog groups describe GROUP [--members] [--json]
    kraftlog groups reset-offsets GROUP (--topic T[:P,P...] ... | --all-topics)
        (--to-earliest | --to-latest | --to-offset N | --shift-by N | --to-datetime ISO)
        [--dry-run | --execute] [--json]
    kraftlog groups delete GROUP [--json]

``describe`` prints one row per partition the group has a committed offset for or a member
owns: CURRENT-OFFSET (committed), LOG-END-OFFSET (the high watermark: the end of what
consumers can read), LAG (their difference), and the owner's CONSUMER-ID, HOST, CLIENT-ID
("-" where none). ``--members`` lists the members with their partitions instead.

``reset-offsets`` computes new committed offsets, clamped into [log start, high watermark] as
Kafka does, and prints them; only with ``--execute`` are they committed, and only while the
group has no active members (stop its consumers first: they would overwrite the reset).
``--to-datetime`` takes ISO 8601 (``2026-11-22T10:00:00``, UTC unless an offset is given) and
picks the first offset at or after it (the end when none). ``delete`` removes a group without
active members and its committed offsets (DeleteGroups). Exit 0 on success, 1 on errors.

The command also takes kafka-consumer-groups.sh's flags instead of a subcommand word
(``--describe --group G ...``, see :data:`KAFKA_STYLE`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Iterable
from typing import Any

from common.error_codes import ErrorCode
from deploy.broker_admin_command import add_broker_admin_command
from deploy.cmd_produce import CommandError
from deploy.command_group import add_command_group
from deploy.kafka_style_args import APPEND, SWITCH, Action, KafkaStyle, Option, add_kafka_style
from deploy.text_table import print_table
from kraftlog_client import Admin, KafkaError, TopicPartition
from kraftlog_client.group_admin import CONSUMER_GROUP_TYPE, GroupDescription

NONE = "-"

_TARGETS = frozenset({"--bootstrap-server", "--dir", "--timeout-ms", "--json"})
_RESET = frozenset(
    {
        "--topic",
        "--all-topics",
        "--to-earliest",
        "--to-latest",
        "--to-offset",
        "--shift-by",
        "--to-datetime",
        "--dry-run",
        "--execute",
    }
)
# kafka-consumer-groups.sh's flags, translated into the subcommands below.
KAFKA_STYLE = KafkaStyle(
    tool="kafka-consumer-groups.sh",
    actions=(
        Action("--list", "list", "list the groups", options=_TARGETS),
        Action(
            "--describe",
            "describe",
            "offsets, lag and owners of --group",
            "--group",
            True,
            _TARGETS | {"--members"},
        ),
        Action(
            "--reset-offsets",
            "reset-offsets",
            "move --group's committed offsets",
            "--group",
            True,
            _TARGETS | _RESET,
        ),
        Action("--delete", "delete", "delete --group and its offsets", "--group", True, _TARGETS),
    ),
    options=(
        Option("--group", metavar="G"),
        Option("--members", SWITCH),
        Option("--topic", APPEND, "TOPIC[:P,P...]"),
        Option("--all-topics", SWITCH),
        Option("--to-earliest", SWITCH),
        Option("--to-latest", SWITCH),
        Option("--to-offset", metavar="N"),
        Option("--shift-by", metavar="N"),
        Option("--to-datetime", metavar="ISO"),
        Option("--dry-run", SWITCH),
        Option("--execute", SWITCH),
        Option("--bootstrap-server", metavar="HOST:PORT[,...]", help="brokers' Kafka listeners"),
        Option("--dir", metavar="D", help="a local cluster directory (its brokers)"),
        Option("--timeout-ms", metavar="MS"),
        Option("--json", SWITCH),
    ),
)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser, groups_sub = add_command_group(
        sub,
        "groups",
        "list, describe, reset and delete consumer groups",
        description="List, describe, reset and delete consumer groups: with a SUBCOMMAND, or "
        "with kafka-consumer-groups.sh's flags (kraftlog groups --describe --group G ...).",
    )

    p = groups_sub.add_parser("list", help="every consumer group of the cluster")
    add_broker_admin_command(p, _list)

    p = groups_sub.add_parser("describe", help="offsets, log end offsets, lag and owners")
    p.add_argument("group")
    p.add_argument("--members", action="store_true", help="list members and their partitions")
    add_broker_admin_command(p, _describe)

    p = groups_sub.add_parser("reset-offsets", help="move a stopped group's committed offsets")
    p.add_argument("group")
    scope = p.add_mutually_exclusive_group(required=True)
    scope.add_argument(
        "--topic",
        action="append",
        metavar="TOPIC[:P,P...]",
        help="a topic, or some of its partitions (repeatable)",
    )
    scope.add_argument(
        "--all-topics",
        action="store_true",
        help="every partition the group has committed offsets for",
    )
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--to-earliest", action="store_true")
    how.add_argument("--to-latest", action="store_true")
    how.add_argument("--to-offset", type=int, metavar="N")
    how.add_argument("--shift-by", type=int, metavar="N", help="move by N (negative: back)")
    how.add_argument("--to-datetime", metavar="ISO", help="first offset at or after this time")
    run = p.add_mutually_exclusive_group()
    run.add_argument("--dry-run", action="store_true", help="only print the plan (default)")
    run.add_argument("--execute", action="store_true", help="commit the new offsets")
    add_broker_admin_command(p, _reset)

    p = groups_sub.add_parser("delete", help="delete a group without members, with its offsets")
    p.add_argument("group")
    add_broker_admin_command(p, _delete)

    add_kafka_style(parser, groups_sub, KAFKA_STYLE)


# -- list ------------------------------------------------------------------------------------


def _list(admin: Admin, args: argparse.Namespace) -> int:
    groups = admin.list_groups()
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "group": g.group_id,
                        "protocol_type": g.protocol_type,
                        "coordinator": g.coordinator,
                    }
                    for g in groups
                ],
                indent=2,
            )
        )
    else:
        for g in groups:
            print(g.group_id)
    return 0


# -- describe --------------------------------------------------------------------------------


def describe_rows(admin: Admin, group: str) -> tuple[GroupDescription, list[dict[str, Any]]]:
    """The group and one row per partition: committed offset, high watermark, lag, owner."""
    description = admin.describe_groups([group])[group]
    committed = admin.list_consumer_group_offsets(group)
    owners = {tp: m for m in description.members for tp in m.assignment}
    partitions = sorted(set(committed) | set(owners))
    ends = (
        {tp: r.offset for tp, r in admin.list_offsets({tp: "latest" for tp in partitions}).items()}
        if partitions
        else {}
    )
    rows = []
    for tp in partitions:
        current = committed.get(tp)
        end = ends.get(tp)
        owner = owners.get(tp)
        rows.append(
            {
                "group": group,
                "topic": tp.topic,
                "partition": tp.partition,
                "current_offset": current,
                "log_end_offset": end,
                "lag": (max(0, end - current) if current is not None and end is not None else None),
                "consumer_id": owner.member_id if owner else None,
                "host": owner.client_host if owner else None,
                "client_id": owner.client_id if owner else None,
            }
        )
    return description, rows


def _cell(value: Any) -> str:
    return NONE if value is None else str(value)


def _describe(admin: Admin, args: argparse.Namespace) -> int:
    description, rows = describe_rows(admin, args.group)
    if args.members:
        consumer = description.group_type == CONSUMER_GROUP_TYPE

        def names(tps: Iterable[TopicPartition]) -> list[str]:
            return [f"{tp.topic}-{tp.partition}" for tp in tps]

        members = [
            {
                "consumer_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "host": m.client_host,
                "client_id": m.client_id,
                "partitions": names(m.assignment),
                **(
                    {"member_epoch": m.member_epoch, "target": names(m.target_assignment)}
                    if consumer
                    else {}
                ),
            }
            for m in description.members
        ]
        if args.json:
            extra = (
                {
                    "group_epoch": description.group_epoch,
                    "assignment_epoch": description.assignment_epoch,
                }
                if consumer
                else {}
            )
            print(
                json.dumps(
                    {
                        "group": args.group,
                        "protocol": description.group_type,
                        "state": description.state,
                        **extra,
                        "members": members,
                    },
                    indent=2,
                )
            )
            return 0
        epochs = (
            f", group epoch {description.group_epoch}, assignment epoch "
            f"{description.assignment_epoch}"
            if consumer
            else ""
        )
        print(
            f"Group {args.group} is {description.state} ({description.group_type} protocol, "
            f"{len(members)} members, assignor {description.protocol or NONE}{epochs})"
        )
        if members:
            head = ["CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"]
            table = [[*head, "EPOCH", "TARGET-ASSIGNMENT"] if consumer else head]
            for m in members:
                row = [
                    m["consumer_id"],
                    m["host"],
                    m["client_id"],
                    str(len(m["partitions"])),
                    ",".join(m["partitions"]) or NONE,
                ]
                if consumer:
                    row += [str(m["member_epoch"]), ",".join(m["target"]) or NONE]
                table.append(row)
            print_table(table)
        return 0
    if args.json:
        print(
            json.dumps(
                {"group": args.group, "state": description.state, "partitions": rows}, indent=2
            )
        )
        return 0
    if description.state == "Dead" and not rows:
        print(f"error: consumer group {args.group} does not exist", file=sys.stderr)
        return 1
    if not description.members:
        print(f"Consumer group '{args.group}' has no active members.")
    table = [
        [
            "GROUP",
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
        ]
    ]
    table += [
        [
            r["group"],
            r["topic"],
            str(r["partition"]),
            _cell(r["current_offset"]),
            _cell(r["log_end_offset"]),
            _cell(r["lag"]),
            _cell(r["consumer_id"]),
            _cell(r["host"]),
            _cell(r["client_id"]),
        ]
        for r in rows
    ]
    print_table(table)
    return 0


# -- reset-offsets ---------------------------------------------------------------------------


def _parse_topics(specs: Iterable[str], admin: Admin) -> list[TopicPartition]:
    out: list[TopicPartition] = []
    for spec in specs:
        topic, sep, parts = spec.partition(":")
        if not topic:
            raise CommandError(f"--topic {spec!r}: no topic name")
        if sep:
            try:
                out += [TopicPartition(topic, int(p)) for p in parts.split(",") if p]
            except ValueError:
                raise CommandError(f"--topic {spec!r}: partitions must be numbers") from None
        else:
            info = admin.describe_topics([topic])[topic]
            out += [TopicPartition(topic, p.partition) for p in info.partitions]
    return sorted(set(out))


def parse_datetime_ms(text: str) -> int:
    """ISO 8601 to epoch milliseconds; a time without an offset is UTC."""
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise CommandError(
            f"--to-datetime {text!r} is not ISO 8601 "
            "(e.g. 2026-11-22T10:00:00 or 2026-11-22T10:00:00+01:00)"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)


def plan_reset(admin: Admin, args: argparse.Namespace) -> dict[TopicPartition, int]:
    """The new committed offset of every selected partition."""
    committed = admin.list_consumer_group_offsets(args.group)
    if args.all_topics:
        partitions = sorted(committed)
        if not partitions:
            raise CommandError(f"group {args.group} has no committed offsets; use --topic")
    else:
        partitions = _parse_topics(args.topic, admin)
    starts = {
        tp: r.offset for tp, r in admin.list_offsets({tp: "earliest" for tp in partitions}).items()
    }
    ends = {
        tp: r.offset for tp, r in admin.list_offsets({tp: "latest" for tp in partitions}).items()
    }
    if args.to_datetime is not None:
        ts = parse_datetime_ms(args.to_datetime)
        found = admin.list_offsets({tp: ts for tp in partitions})
        wanted = {
            tp: (found[tp].offset if found[tp].offset >= 0 else ends[tp]) for tp in partitions
        }
    elif args.to_earliest:
        wanted = dict(starts)
    elif args.to_latest:
        wanted = dict(ends)
    elif args.to_offset is not None:
        wanted = {tp: args.to_offset for tp in partitions}
    else:
        # --shift-by moves from the committed offset (from the end where nothing is).
        wanted = {tp: committed.get(tp, ends[tp]) + args.shift_by for tp in partitions}
    return {tp: min(max(wanted[tp], starts[tp]), ends[tp]) for tp in partitions}


def _reset(admin: Admin, args: argparse.Namespace) -> int:
    description = admin.describe_groups([args.group])[args.group]
    if not description.is_empty:
        print(
            f"error: assignments can only be reset if the group '{args.group}' is inactive, "
            f"but the current state is {description.state} "
            f"({len(description.members)} active members)",
            file=sys.stderr,
        )
        return 1
    plan = plan_reset(admin, args)
    if args.execute:
        try:
            admin.alter_consumer_group_offsets(args.group, plan)
        except KafkaError as e:
            if e.code == ErrorCode.NON_EMPTY_GROUP:
                print(f"error: {e.message}", file=sys.stderr)
                return 1
            raise
    if args.json:
        print(
            json.dumps(
                {
                    "group": args.group,
                    "executed": bool(args.execute),
                    "offsets": [
                        {"topic": tp.topic, "partition": tp.partition, "new_offset": o}
                        for tp, o in sorted(plan.items())
                    ],
                },
                indent=2,
            )
        )
        return 0
    table = [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]]
    table += [[args.group, tp.topic, str(tp.partition), str(o)] for tp, o in sorted(plan.items())]
    print_table(table)
    if not args.execute:
        print("(dry run: nothing changed; add --execute to commit these offsets)")
    return 0


# -- delete ----------------------------------------------------------------------------------


def _delete(admin: Admin, args: argparse.Namespace) -> int:
    # NON_EMPTY_GROUP (members still active) and GROUP_ID_NOT_FOUND raise KafkaError: exit 1.
    admin.delete_groups([args.group])
    if args.json:
        print(json.dumps({"group": args.group, "deleted": True}, indent=2))
    else:
        print(f"Deletion of requested consumer groups ('{args.group}') was successful.")
    return 0
