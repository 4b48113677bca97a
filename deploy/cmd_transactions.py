"""``kraftlog transactions``: list, describe and abort transactions (cf. kafka-transactions.sh).

    kraftlog transactions list [--state S ...] [--producer-id N ...] [--duration-ms N] [--json]
    kraftlog transactions describe TRANSACTIONAL_ID [--json]
    kraftlog transactions describe-producers --topic T --partition P [--json]
    kraftlog transactions abort --topic T --partition P
        (--start-offset O | --producer-id N --producer-epoch E --coordinator-epoch C)

``list`` asks every broker for the transactional ids it coordinates; ``describe`` shows one id
as its coordinator holds it (state, producer id and epoch, timeout, start time and the
partitions of the open transaction). ``describe-producers`` shows the producer state a
partition's leader keeps: a producer with a CURRENT-TXN-START-OFFSET has a transaction open
there, and one whose coordinator no longer knows it (``describe`` says Empty/Complete*, or
the id is gone) is *hanging*: it holds the last stable offset, so read_committed consumers
stop there. ``abort`` ends such a transaction by writing an ABORT marker to the partition:
``--start-offset`` picks the producer whose open transaction starts at that offset (from
``describe-producers``); the explicit form names the producer. Exit 0 on success, 1 on errors.
"""

from __future__ import annotations

import argparse
import json
import time

from common.error_codes import ErrorCode
from deploy.broker_admin_command import add_broker_admin_command
from deploy.cmd_produce import CommandError
from deploy.command_group import add_command_group
from deploy.text_table import print_table
from kraftlog_client import Admin, KafkaError, TopicPartition

NONE = "-"


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    _, txn_sub = add_command_group(sub, "transactions", "list, describe and abort transactions")

    p = txn_sub.add_parser("list", help="every transactional id of the cluster")
    p.add_argument(
        "--state",
        action="append",
        default=[],
        metavar="STATE",
        help="only these states (Ongoing, PrepareCommit, ...; repeatable)",
    )
    p.add_argument(
        "--producer-id",
        action="append",
        type=int,
        default=[],
        metavar="N",
        help="only these producer ids (repeatable)",
    )
    p.add_argument(
        "--duration-ms",
        type=int,
        default=-1,
        metavar="N",
        help="only transactions running longer than N ms",
    )
    add_broker_admin_command(p, _list)

    p = txn_sub.add_parser("describe", help="one transactional id as its coordinator holds it")
    p.add_argument("transactional_id")
    add_broker_admin_command(p, _describe)

    p = txn_sub.add_parser("describe-producers", help="producer state of one partition")
    _partition_args(p)
    add_broker_admin_command(p, _describe_producers)

    p = txn_sub.add_parser("abort", help="abort a (hanging) transaction on one partition")
    _partition_args(p)
    p.add_argument(
        "--start-offset",
        type=int,
        metavar="O",
        help="the first offset of the open transaction to abort",
    )
    p.add_argument("--producer-id", type=int, metavar="N")
    p.add_argument("--producer-epoch", type=int, metavar="E")
    p.add_argument("--coordinator-epoch", type=int, metavar="C")
    add_broker_admin_command(p, _abort)


def _partition_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--topic", required=True)
    p.add_argument("--partition", type=int, required=True)


def _list(admin: Admin, args: argparse.Namespace) -> int:
    found = admin.list_transactions(
        states=args.state, producer_ids=args.producer_id, min_duration_ms=args.duration_ms
    )
    if args.json:
        print(json.dumps([t._asdict() for t in found], indent=2))
        return 0
    rows = [["TRANSACTIONAL-ID", "COORDINATOR", "PRODUCER-ID", "STATE"]]
    rows += [[t.transactional_id, str(t.coordinator), str(t.producer_id), t.state] for t in found]
    print_table(rows)
    return 0


def _describe(admin: Admin, args: argparse.Namespace) -> int:
    d = admin.describe_transaction(args.transactional_id)
    if args.json:
        doc = d._asdict()
        doc["partitions"] = [f"{tp.topic}-{tp.partition}" for tp in d.partitions]
        print(json.dumps(doc, indent=2))
        return 0
    now_ms = int(time.time() * 1000)
    duration = str(now_ms - d.start_time_ms) if d.start_time_ms >= 0 else NONE
    partitions = ",".join(f"{tp.topic}-{tp.partition}" for tp in d.partitions) or NONE
    print_table([
        ["COORDINATOR", "TRANSACTIONAL-ID", "PRODUCER-ID", "PRODUCER-EPOCH", "STATE",
         "TIMEOUT-MS", "START-TIME-MS", "DURATION-MS", "PARTITIONS"],
        [str(d.coordinator), d.transactional_id, str(d.producer_id), str(d.producer_epoch),
         d.state, str(d.timeout_ms), str(d.start_time_ms) if d.start_time_ms >= 0 else NONE,
         duration, partitions],
    ])  # fmt: skip
    return 0


def _describe_producers(admin: Admin, args: argparse.Namespace) -> int:
    producers = admin.describe_producers(TopicPartition(args.topic, args.partition))
    if args.json:
        print(json.dumps([p._asdict() for p in producers], indent=2))
        return 0
    rows = [["PRODUCER-ID", "PRODUCER-EPOCH", "COORDINATOR-EPOCH", "LAST-SEQUENCE",
             "LAST-TIMESTAMP", "CURRENT-TXN-START-OFFSET"]]  # fmt: skip
    for p in producers:
        rows.append([
            str(p.producer_id), str(p.producer_epoch), str(p.coordinator_epoch),
            str(p.last_sequence), str(p.last_timestamp),
            str(p.current_txn_start_offset) if p.current_txn_start_offset >= 0 else NONE,
        ])  # fmt: skip
    print_table(rows)
    return 0


def _abort(admin: Admin, args: argparse.Namespace) -> int:
    tp = TopicPartition(args.topic, args.partition)
    explicit = (args.producer_id, args.producer_epoch, args.coordinator_epoch)
    if args.start_offset is not None:
        if any(v is not None for v in explicit):
            raise CommandError("give either --start-offset or the producer, not both")
        matches = [
            p for p in admin.describe_producers(tp)
            if p.current_txn_start_offset == args.start_offset
        ]  # fmt: skip
        if not matches:
            raise CommandError(
                f"no transaction open on {tp.topic}-{tp.partition} starts at offset "
                f"{args.start_offset} (see describe-producers)"
            )
        p = matches[0]
        # A producer with no marker yet on the partition has coordinator epoch -1; any
        # coordinator epoch at or above the partition's is accepted.
        pid, epoch, coordinator_epoch = p.producer_id, p.producer_epoch, max(0, p.coordinator_epoch)
    elif all(v is not None for v in explicit):
        pid, epoch, coordinator_epoch = explicit
    else:
        raise CommandError(
            "give --start-offset, or --producer-id, --producer-epoch and --coordinator-epoch"
        )
    try:
        admin.abort_transaction(tp, pid, epoch, coordinator_epoch)
    except KafkaError as e:
        if e.code == ErrorCode.TRANSACTION_COORDINATOR_FENCED:
            raise CommandError(
                f"{e}: the partition saw a newer coordinator epoch; pass --coordinator-epoch"
            ) from None
        raise
    if args.json:
        print(
            json.dumps(
                {
                    "aborted": {
                        "topic": tp.topic,
                        "partition": tp.partition,
                        "producer_id": pid,
                        "producer_epoch": epoch,
                    }
                }
            )
        )
    else:
        print(
            f"aborted the transaction of producer {pid} (epoch {epoch}) on "
            f"{tp.topic}-{tp.partition}"
        )
    return 0
