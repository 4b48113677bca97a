"""``kraftlog topics``: create, list, describe, delete and alter topics (cf. kafka-topics.sh).

    kraftlog topics create NAME --partitions N --replication-factor R [--config k=v ...]
    kraftlog topics list
    kraftlog topics describe [NAME]
    kraftlog topics delete NAME
    kraftlog topics alter NAME [--partitions N] [--config k=v ...] [--delete-config k ...]
    kraftlog topics reassign NAME --partition P --replicas 101,102,104 [--wait]
        [--disallow-replication-factor-change]
    kraftlog topics reassign NAME --partition P --cancel
    kraftlog topics reassign --list [NAME]
    kraftlog topics elect-leaders [NAME [--partition P ...]] [--unclean]

``reassign`` moves a partition's replicas (docs/reassignment.md): the controller adds the new
replicas, they catch up and join the ISR, then the old ones are removed. ``--wait`` polls until
the move is complete (bounded by ``--wait-timeout``). ``elect-leaders`` moves leadership back to
each partition's preferred (first) replica, or with ``--unclean`` elects leaders for
leaderless partitions from any live replica.

Every subcommand takes ``--bootstrap-controller host:port,...`` or ``--dir D`` (see
:mod:`deploy.admin`) and ``--json``, or ``--bootstrap-server host:port,...`` instead: it then
goes through a broker with the Kafka protocol (:class:`kraftlog_client.Admin`; the broker
forwards to the active controller).
``alter`` through a broker uses CreatePartitions and IncrementalAlterConfigs, ``reassign``
AlterPartitionReassignments and ListPartitionReassignments, which the broker forwards. A
request the cluster rejects prints the Kafka error name and message
(``INVALID_REPLICATION_FACTOR: ...``) and exits 1.

The command also takes kafka-topics.sh's flags instead of a subcommand word
(``--create --topic T --partitions 3 ...``, see :data:`KAFKA_STYLE`).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from common.config_resources import OP_DELETE, OP_SET, RESOURCE_TOPIC
from common.error_codes import ErrorCode
from deploy.admin import (
    AdminCommand,
    AdminError,
    add_admin_command,
    error_text,
    fail,
    fetch_image,
    print_json,
)
from deploy.command_group import add_command_group
from deploy.dual_target import BrokerCommand, add_dual_target_command
from deploy.kafka_style_args import (
    APPEND,
    SWITCH,
    Action,
    KafkaStyle,
    Option,
    add_kafka_style,
)
from kraftlog_client import Admin, KafkaError, TopicOperationError, TopicPartition
from kraftlog_client import NewTopic as KafkaNewTopic
from metadata.image import MetadataImage
from metadata.messages import AlterableConfig, NewTopic

# How long `reassign --wait` waits by default for a move to complete.
DEFAULT_REASSIGN_WAIT_S = 300.0
# Poll interval of `reassign --wait`.
REASSIGN_POLL_INTERVAL_S = 0.5

# A subcommand run with an Admin on the brokers (--bootstrap-server).

_TARGETS = frozenset(
    {
        "--bootstrap-server",
        "--bootstrap-controller",
        "--dir",
        "--command-config",
        "--timeout",
        "--json",
    }
)
# kafka-topics.sh's flags, translated into the subcommands below.
KAFKA_STYLE = KafkaStyle(
    tool="kafka-topics.sh",
    actions=(
        Action(
            "--create",
            "create",
            "create the topic --topic",
            "--topic",
            True,
            _TARGETS | {"--partitions", "--replication-factor", "--config", "--if-not-exists"},
        ),
        Action("--list", "list", "list topic names", options=_TARGETS),
        Action(
            "--describe",
            "describe",
            "describe --topic (default: every topic)",
            "--topic",
            False,
            _TARGETS,
        ),
        Action("--delete", "delete", "delete the topic --topic", "--topic", True, _TARGETS),
        Action(
            "--alter",
            "alter",
            "add partitions or change configs of --topic",
            "--topic",
            True,
            _TARGETS | {"--partitions", "--config", "--delete-config"},
        ),
    ),
    options=(
        Option("--topic", metavar="T"),
        Option("--partitions", metavar="N"),
        Option("--replication-factor", metavar="R"),
        Option("--config", APPEND, "KEY=VALUE"),
        Option("--delete-config", APPEND, "KEY"),
        Option("--if-not-exists", SWITCH),
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
    parser, topics_sub = add_command_group(
        sub,
        "topics",
        "create, list, describe, delete and alter topics",
        description="Create, list, describe, delete and alter topics: with a SUBCOMMAND, or "
        "with kafka-topics.sh's flags (kraftlog topics --create --topic T ...).",
    )

    p = topics_sub.add_parser("create", help="create a topic")
    p.add_argument("name")
    p.add_argument("--partitions", type=int, default=-1, help="default: num.partitions")
    p.add_argument(
        "--replication-factor", type=int, default=-1, help="default: default.replication.factor"
    )
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--if-not-exists", action="store_true", help="succeed if it exists already")
    _add_topic_command(p, _create, _create_via_brokers)

    p = topics_sub.add_parser("list", help="list topic names")
    _add_topic_command(p, _list, _list_via_brokers)

    p = topics_sub.add_parser("describe", help="partitions, leaders, replicas, ISR, epochs")
    p.add_argument("name", nargs="?", help="one topic (default: all)")
    _add_topic_command(p, _describe, _describe_via_brokers)

    p = topics_sub.add_parser("delete", help="delete a topic and its data")
    p.add_argument("name")
    _add_topic_command(p, _delete, _delete_via_brokers)

    p = topics_sub.add_parser("alter", help="add partitions or change topic configs")
    p.add_argument("name")
    p.add_argument("--partitions", type=int, help="the new (larger) partition count")
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--delete-config", action="append", default=[], metavar="KEY")
    _add_topic_command(p, _alter, _alter_via_brokers)

    p = topics_sub.add_parser("reassign", help="move a partition's replicas to other brokers")
    p.add_argument("name", nargs="?", help="the topic (optional with --list)")
    p.add_argument("--partition", type=int, help="the partition to move")
    p.add_argument("--replicas", help="target broker ids, comma-separated, preferred first")
    p.add_argument("--cancel", action="store_true", help="cancel the partition's reassignment")
    p.add_argument(
        "--disallow-replication-factor-change",
        action="store_true",
        help="refuse a target of another size than the partition's replication factor",
    )
    p.add_argument("--list", action="store_true", help="list reassignments in progress")
    p.add_argument("--wait", action="store_true", help="wait until the move has completed")
    p.add_argument(
        "--wait-timeout",
        type=float,
        default=DEFAULT_REASSIGN_WAIT_S,
        help=f"seconds --wait waits at most (default {DEFAULT_REASSIGN_WAIT_S:.0f})",
    )
    _add_topic_command(p, _reassign, _reassign_via_brokers)

    p = topics_sub.add_parser("elect-leaders", help="preferred (or unclean) leader election")
    p.add_argument("name", nargs="?", help="one topic (default: every partition)")
    p.add_argument("--partition", type=int, action="append", help="partition id (repeatable)")
    p.add_argument("--unclean", action="store_true", help="elect leaderless partitions' leaders")
    add_admin_command(p, _elect_leaders)

    add_kafka_style(parser, topics_sub, KAFKA_STYLE)


def _add_topic_command(
    p: argparse.ArgumentParser, on_controllers: AdminCommand, on_brokers: BrokerCommand
) -> None:
    """The controller target options of :func:`add_admin_command` plus ``--bootstrap-server``;
    ``on_brokers`` runs with an Admin on the brokers."""
    add_dual_target_command(
        p, on_controllers, on_brokers, lambda args: f"kraftlog topics {args.topics_command}"
    )


def parse_configs(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise AdminError(f"--config {item!r}: expected KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def _create(client: Any, args: argparse.Namespace) -> int:
    topic = NewTopic(
        args.name,
        num_partitions=args.partitions,
        replication_factor=args.replication_factor,
        configs=parse_configs(args.config),
    )
    (result,) = client.create_topics([topic], timeout_s=args.timeout)
    exists = result.error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    if result.error_code and not (exists and args.if_not_exists):
        return fail(
            f"cannot create topic {args.name}: "
            f"{error_text(result.error_code, result.error_message)}"
        )
    return _report_created(
        args,
        exists,
        {
            "name": result.name,
            "topic_id": str(result.topic_id) if result.topic_id else None,
            "partitions": result.num_partitions,
            "replication_factor": result.replication_factor,
            "created": not exists,
        },
    )


def _report_created(args: argparse.Namespace, exists: bool, doc: dict[str, Any]) -> int:
    if args.json:
        print_json(doc)
    elif exists:
        print(f"Topic {args.name} already exists.")
    else:
        print(f"Created topic {args.name}.")
    return 0


def _print_names(args: argparse.Namespace, names: list[str]) -> int:
    if args.json:
        print_json(names)
    else:
        for name in names:
            print(name)
    return 0


def _list(client: Any, args: argparse.Namespace) -> int:
    image = fetch_image(client, args.timeout)
    return _print_names(args, sorted(image.topics_by_name))


def describe_topics(
    image: MetadataImage, names: list[str], configs: dict[str, dict[str, str]]
) -> list[dict[str, Any]]:
    out = []
    for name in names:
        t = image.topic(name)
        if t is None:
            continue
        parts = sorted(t.partitions.items())
        out.append(
            {
                "name": name,
                "topic_id": str(t.topic_id),
                "partition_count": len(parts),
                "replication_factor": len(parts[0][1].replicas) if parts else 0,
                "configs": configs.get(name, {}),
                "partitions": [
                    {
                        "partition": pid,
                        "leader": reg.leader,
                        "leader_epoch": reg.leader_epoch,
                        "partition_epoch": reg.partition_epoch,
                        "replicas": list(reg.replicas),
                        "isr": list(reg.isr),
                        "adding_replicas": list(reg.adding_replicas),
                        "removing_replicas": list(reg.removing_replicas),
                    }
                    for pid, reg in parts
                ],
            }
        )
    return out


def _describe(client: Any, args: argparse.Namespace) -> int:
    image = fetch_image(client, args.timeout)
    if args.name is not None:
        if image.topic(args.name) is None:
            return fail(f"topic {args.name} does not exist (UNKNOWN_TOPIC_OR_PARTITION)")
        names = [args.name]
    else:
        names = sorted(image.topics_by_name)
    configs = {name: dict(image.topic_config(name)) for name in names}
    return _print_topics(describe_topics(image, names, configs), args)


def _print_topics(topics: list[dict[str, Any]], args: argparse.Namespace) -> int:
    """``describe``'s output (kafka-topics.sh's layout, or JSON)."""
    if args.json:
        print_json(topics)
        return 0
    for t in topics:
        conf = ",".join(f"{k}={v}" for k, v in sorted(t["configs"].items()))
        print(
            f"Topic: {t['name']}\tTopicId: {t['topic_id'] or '-'}\tPartitionCount: "
            f"{t['partition_count']}\tReplicationFactor: {t['replication_factor']}\t"
            f"Configs: {conf}"
        )
        for p in t["partitions"]:
            leader = p["leader"] if p["leader"] >= 0 else "none"
            print(
                f"\tTopic: {t['name']}\tPartition: {p['partition']}\tLeader: {leader}\t"
                f"Replicas: {','.join(map(str, p['replicas']))}\t"
                f"Isr: {','.join(map(str, p['isr']))}\tLeaderEpoch: {p['leader_epoch']}"
                + _moving_text(p)
            )
    return 0


def _moving_text(p: dict[str, Any]) -> str:
    """Kafka's describe suffix for a partition being reassigned (empty otherwise)."""
    out = ""
    if p["adding_replicas"]:
        out += f"\tAdding Replicas: {','.join(map(str, p['adding_replicas']))}"
    if p["removing_replicas"]:
        out += f"\tRemoving Replicas: {','.join(map(str, p['removing_replicas']))}"
    return out


def _delete(client: Any, args: argparse.Namespace) -> int:
    (result,) = client.delete_topics([args.name])
    if result.error_code:
        return fail(
            f"cannot delete topic {args.name}: "
            f"{error_text(result.error_code, result.error_message)}"
        )
    if args.json:
        print_json({"name": args.name, "deleted": True})
    else:
        print(f"Deleted topic {args.name}.")
    return 0


def _alter(client: Any, args: argparse.Namespace) -> int:
    def grow(count: int) -> str | None:
        (result,) = client.create_partitions({args.name: count})
        return error_text(result.error_code, result.error_message) if result.error_code else None

    def set_configs(sets: dict[str, str], deletes: list[str]) -> str | None:
        ops = [AlterableConfig(k, OP_SET, v) for k, v in sets.items()]
        ops += [AlterableConfig(k, OP_DELETE, None) for k in deletes]
        (result,) = client.incremental_alter_configs({args.name: ops})
        return error_text(result.error_code, result.error_message) if result.error_code else None

    return _alter_with(args, grow, set_configs)


def _alter_with(
    args: argparse.Namespace,
    grow: Callable[[int], str | None],
    set_configs: Callable[[dict[str, str], list[str]], str | None],
) -> int:
    """``topics alter`` on either target: ``grow`` and ``set_configs`` return an error text
    (None when it worked)."""
    sets = parse_configs(args.config)
    if args.partitions is None and not sets and not args.delete_config:
        raise AdminError("nothing to alter: give --partitions, --config or --delete-config")
    done: dict[str, Any] = {"name": args.name}
    if args.partitions is not None:
        error = grow(args.partitions)
        if error is not None:
            return fail(f"cannot alter partitions of {args.name}: {error}")
        done["partitions"] = args.partitions
    if sets or args.delete_config:
        error = set_configs(sets, list(args.delete_config))
        if error is not None:
            return fail(f"cannot alter configs of {args.name}: {error}")
        done["configs_set"] = sets
        done["configs_deleted"] = list(args.delete_config)
    if args.json:
        print_json(done)
    else:
        print(f"Altered topic {args.name}.")
    return 0


# -- the same subcommands through a broker (--bootstrap-server) ------------------------------


def _alter_via_brokers(admin: Admin, args: argparse.Namespace) -> int:
    def grow(count: int) -> str | None:
        try:
            admin.create_partitions({args.name: count})
        except TopicOperationError as e:
            return str(_topic_error(e, args.name))
        return None

    def set_configs(sets: dict[str, str], deletes: list[str]) -> str | None:
        try:
            admin.incremental_alter_configs(args.name, sets, deletes)
        except KafkaError as e:
            return str(e)
        return None

    return _alter_with(args, grow, set_configs)


def _topic_error(e: TopicOperationError, name: str) -> KafkaError:
    return e.errors.get(name) or next(iter(e.errors.values()))


def _create_via_brokers(admin: Admin, args: argparse.Namespace) -> int:
    topic = KafkaNewTopic(
        args.name, args.partitions, args.replication_factor, parse_configs(args.config)
    )
    exists = False
    try:
        admin.create_topics([topic])
    except TopicOperationError as e:
        error = _topic_error(e, args.name)
        exists = error.code == ErrorCode.TOPIC_ALREADY_EXISTS
        if not (exists and args.if_not_exists):
            return fail(f"cannot create topic {args.name}: {error_text(error.code, error.message)}")
    # CreateTopics v4 answers carry neither the topic id nor the chosen counts.
    return _report_created(args, exists, {"name": args.name, "created": not exists})


def _list_via_brokers(admin: Admin, args: argparse.Namespace) -> int:
    # Every topic, internal ones included, as the controllers' list shows them.
    return _print_names(args, sorted(admin.describe_topics()))


def _describe_via_brokers(admin: Admin, args: argparse.Namespace) -> int:
    try:
        infos = admin.describe_topics(None if args.name is None else [args.name])
    except TopicOperationError as e:
        error = _topic_error(e, args.name or "")
        if error.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            return fail(f"topic {args.name} does not exist (UNKNOWN_TOPIC_OR_PARTITION)")
        return fail(f"cannot describe topics: {error_text(error.code, error.message)}")
    names = sorted(infos)
    entries = admin.describe_config_entries(RESOURCE_TOPIC, names) if names else {}
    topics = []
    for name in names:
        parts = sorted(infos[name].partitions, key=lambda p: p.partition)
        topics.append(
            {
                "name": name,
                "topic_id": None,  # not in Metadata v8 answers
                "partition_count": len(parts),
                "replication_factor": len(parts[0].replicas) if parts else 0,
                "configs": {c.name: c.value for c in entries.get(name, []) if not c.is_default},
                "partitions": [
                    {
                        "partition": p.partition,
                        "leader": p.leader,
                        "leader_epoch": p.leader_epoch,
                        "replicas": list(p.replicas),
                        "isr": list(p.isr),
                        "adding_replicas": [],
                        "removing_replicas": [],
                    }
                    for p in parts
                ],
            }
        )
    return _print_topics(topics, args)


def _reassign_via_brokers(admin: Admin, args: argparse.Namespace) -> int:
    """``topics reassign`` through AlterPartitionReassignments and ListPartitionReassignments,
    which the broker forwards to the active controller."""
    if args.list:
        _check_list_args(args)
        return _list_reassignments_via_brokers(admin, args)
    target = _reassign_target(args)
    tp = TopicPartition(args.name, args.partition)

    def alter() -> str | None:
        answers = admin.alter_partition_reassignments(
            {tp: target},
            allow_replication_factor_change=not args.disallow_replication_factor_change,
        )
        if tp not in answers:
            return f"the broker did not answer for {args.name}-{args.partition}"
        error = answers[tp]
        return None if error is None else error_text(error.code, error.message)

    def moving() -> bool:
        return tp in admin.list_partition_reassignments([tp])

    return _reassign_with(args, target, alter, moving)


def _list_reassignments_via_brokers(admin: Admin, args: argparse.Namespace) -> int:
    wanted = None
    if args.name is not None:
        try:
            info = admin.describe_topics([args.name])[args.name]
        except TopicOperationError as e:
            error = _topic_error(e, args.name)
            if error.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                return fail(f"topic {args.name} does not exist (UNKNOWN_TOPIC_OR_PARTITION)")
            return fail(f"cannot describe {args.name}: {error_text(error.code, error.message)}")
        wanted = [TopicPartition(args.name, p.partition) for p in info.partitions]
    ongoing = admin.list_partition_reassignments(wanted)
    rows = [
        {
            "name": tp.topic,
            "partition": tp.partition,
            "replicas": list(r.replicas),
            "adding_replicas": list(r.adding_replicas),
            "removing_replicas": list(r.removing_replicas),
        }
        for tp, r in sorted(ongoing.items())
    ]
    return _print_reassignments(rows, args)


def _delete_via_brokers(admin: Admin, args: argparse.Namespace) -> int:
    try:
        admin.delete_topics([args.name])
    except TopicOperationError as e:
        error = _topic_error(e, args.name)
        return fail(f"cannot delete topic {args.name}: {error_text(error.code, error.message)}")
    if args.json:
        print_json({"name": args.name, "deleted": True})
    else:
        print(f"Deleted topic {args.name}.")
    return 0


def parse_replicas(text: str) -> list[int]:
    try:
        replicas = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise AdminError(f"--replicas {text!r}: expected broker ids like 101,102,104") from None
    if not replicas:
        raise AdminError("--replicas: give at least one broker id")
    return replicas


def _reassign_target(args: argparse.Namespace) -> list[int] | None:
    """The checked arguments of a move: its target replicas, None to cancel."""
    if args.name is None or args.partition is None:
        raise AdminError("give NAME and --partition P (or --list)")
    if args.cancel == bool(args.replicas):
        raise AdminError("give exactly one of --replicas and --cancel")
    return None if args.cancel else parse_replicas(args.replicas)


def _check_list_args(args: argparse.Namespace) -> None:
    if args.replicas or args.cancel or args.partition is not None:
        raise AdminError("--list takes only an optional topic name")


def _reassign(client: Any, args: argparse.Namespace) -> int:
    if args.list:
        _check_list_args(args)
        return _list_reassignments(client, args)
    target = _reassign_target(args)

    def alter() -> str | None:
        (result,) = client.alter_partition_reassignments(
            {(args.name, args.partition): target},
            allow_replication_factor_change=not args.disallow_replication_factor_change,
        )
        return error_text(result.error_code, result.error_message) if result.error_code else None

    def moving() -> bool:
        return bool(client.list_partition_reassignments({args.name: [args.partition]}))

    return _reassign_with(args, target, alter, moving)


def _reassign_with(
    args: argparse.Namespace,
    target: list[int] | None,
    alter: Callable[[], str | None],
    moving: Callable[[], bool],
) -> int:
    """``topics reassign`` (a move or a cancel) on either target: ``alter`` sends it and
    returns an error text (None when accepted), ``moving`` tells whether the partition is
    still moving."""
    error = alter()
    if error is not None:
        what = "cancel the reassignment of" if args.cancel else "reassign"
        return fail(f"cannot {what} {args.name}-{args.partition}: {error}")
    done: dict[str, Any] = {"name": args.name, "partition": args.partition}
    if args.cancel:
        done["cancelled"] = True
    else:
        done["target_replicas"] = target
    if args.wait and not args.cancel:
        deadline = time.monotonic() + args.wait_timeout
        while moving():
            if time.monotonic() >= deadline:
                return fail(
                    f"{args.name}-{args.partition}: still moving after {args.wait_timeout:.0f} s "
                    "(see `kraftlog topics reassign --list`)"
                )
            time.sleep(REASSIGN_POLL_INTERVAL_S)
        done["completed"] = True
    if args.json:
        print_json(done)
    elif args.cancel:
        print(f"Cancelled the reassignment of {args.name}-{args.partition}.")
    elif done.get("completed"):
        print(f"Moved {args.name}-{args.partition} to replicas {args.replicas}.")
    else:
        print(f"Reassignment of {args.name}-{args.partition} to {args.replicas} started.")
    return 0


def _list_reassignments(client: Any, args: argparse.Namespace) -> int:
    wanted = None
    if args.name is not None:
        image = fetch_image(client, args.timeout)
        t = image.topic(args.name)
        if t is None:
            return fail(f"topic {args.name} does not exist (UNKNOWN_TOPIC_OR_PARTITION)")
        wanted = {args.name: sorted(t.partitions)}
    ongoing = client.list_partition_reassignments(wanted)
    rows = [
        {
            "name": r.name,
            "partition": r.partition_index,
            "replicas": r.replicas,
            "adding_replicas": r.adding_replicas,
            "removing_replicas": r.removing_replicas,
        }
        for r in ongoing
    ]
    return _print_reassignments(rows, args)


def _print_reassignments(rows: list[dict[str, Any]], args: argparse.Namespace) -> int:
    """``reassign --list``'s output (one line per moving partition, or JSON)."""
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print("No reassignment in progress.")
    for r in rows:
        print(
            f"Topic: {r['name']}\tPartition: {r['partition']}\t"
            f"Replicas: {','.join(map(str, r['replicas']))}\t"
            f"Adding: {','.join(map(str, r['adding_replicas']))}\t"
            f"Removing: {','.join(map(str, r['removing_replicas']))}"
        )
    return 0


def _elect_leaders(client: Any, args: argparse.Namespace) -> int:
    partitions = None
    if args.name is not None:
        pids = args.partition
        if pids is None:
            image = fetch_image(client, args.timeout)
            t = image.topic(args.name)
            if t is None:
                return fail(f"topic {args.name} does not exist (UNKNOWN_TOPIC_OR_PARTITION)")
            pids = sorted(t.partitions)
        partitions = {args.name: list(pids)}
    elif args.partition:
        raise AdminError("--partition needs a topic NAME")
    results = client.elect_leaders(preferred=not args.unclean, partitions=partitions)
    rows = [
        {
            "name": r.name,
            "partition": r.partition_index,
            "error": None if r.error_code == 0 else error_text(r.error_code, r.error_message),
        }
        for r in results
    ]
    if args.json:
        print_json(rows)
    else:
        elected = [r for r in rows if r["error"] is None]
        for r in rows:
            if r["error"] is not None:
                print(f"{r['name']}-{r['partition']}: {r['error']}")
        print(f"Elected new leaders for {len(elected)} partition(s).")
    # Nothing to do is not a failure (ELECTION_NOT_NEEDED), as kafka-leader-election.sh.
    hard = [r for r in results if r.error_code not in (0, ErrorCode.ELECTION_NOT_NEEDED)]
    return 1 if hard else 0
