"""One consumer group member as a process (run by the group tests; killable with SIGKILL).

    python member.py --client kafka-python|confluent --bootstrap H:P --topic T --group G \
        --out events.jsonl [--session-timeout-ms 6000] [--instance-id ID]

Subscribes to the topic in the group with the real client, and appends one JSON line per event
to ``--out`` (flushed at once, so a SIGKILL loses nothing written before it):

    {"e": "assigned", "parts": [0, 3]}     the full assignment after a rebalance (eager)
    {"e": "revoked"}                       partitions taken away (a rebalance began)
    {"e": "rec", "p": 3, "o": 17, "v": "..."}  a record processed
    {"e": "committed", "n": 12}            a synchronous commit after the records succeeded

Records are written before the commit of their batch (at-least-once). SIGTERM closes the
consumer (LeaveGroup) and exits 0.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from typing import Any, TextIO

# Bound on the member's life, so a process the test forgot cannot outlive it by much.
MAX_RUN_S = 240.0
POLL_TIMEOUT_S = 0.2


class Events:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def write(self, **event: Any) -> None:
        self.out.write(json.dumps(event) + "\n")
        self.out.flush()


def run_kafka_python(args: argparse.Namespace, ev: Events, stopping: list[bool]) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer
    from kafka.errors import KafkaError

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: Any) -> None:
            ev.write(e="revoked")

        def on_partitions_assigned(self, assigned: Any) -> None:
            ev.write(e="assigned", parts=sorted(tp.partition for tp in assigned))

    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        client_id=args.name,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=args.session_timeout_ms,
        heartbeat_interval_ms=1000,
        max_poll_records=100,
        group_instance_id=args.instance_id,
    )
    consumer.subscribe([args.topic], listener=Listener())
    deadline = time.monotonic() + MAX_RUN_S
    try:
        while not stopping[0] and time.monotonic() < deadline:
            batches = consumer.poll(timeout_ms=int(POLL_TIMEOUT_S * 1000))
            n = 0
            for records in batches.values():
                for r in records:
                    ev.write(e="rec", p=r.partition, o=r.offset, v=r.value.decode())
                    n += 1
            if n:
                try:
                    consumer.commit()
                    ev.write(e="committed", n=n)
                except KafkaError as e:  # a rebalance took the partitions: redelivered later
                    ev.write(e="commit_failed", error=type(e).__name__)
    finally:
        consumer.close()


def run_confluent(args: argparse.Namespace, ev: Events, stopping: list[bool]) -> None:
    from confluent_kafka import Consumer, KafkaException

    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "client.id": args.name,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": args.session_timeout_ms,
            "heartbeat.interval.ms": 1000,
            "partition.assignment.strategy": "range",
            **({"group.instance.id": args.instance_id} if args.instance_id else {}),
        }
    )

    def on_assign(_c: Any, parts: Any) -> None:
        ev.write(e="assigned", parts=sorted(tp.partition for tp in parts))

    def on_revoke(_c: Any, _parts: Any) -> None:
        ev.write(e="revoked")

    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke)
    deadline = time.monotonic() + MAX_RUN_S
    try:
        while not stopping[0] and time.monotonic() < deadline:
            msgs = consumer.consume(num_messages=100, timeout=POLL_TIMEOUT_S)
            n = 0
            for m in msgs:
                if m.error() is not None:
                    continue
                ev.write(e="rec", p=m.partition(), o=m.offset(), v=m.value().decode())
                n += 1
            if n:
                try:
                    consumer.commit(asynchronous=False)
                    ev.write(e="committed", n=n)
                except KafkaException as e:
                    ev.write(e="commit_failed", error=str(e))
    finally:
        consumer.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", choices=("kafka-python", "confluent"), required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--name", default="member")
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    parser.add_argument("--instance-id", default=None, help="group.instance.id (static member)")
    args = parser.parse_args()
    stopping = [False]

    def on_term(_sig: int, _frame: Any) -> None:
        stopping[0] = True

    signal.signal(signal.SIGTERM, on_term)
    with open(args.out, "a", encoding="utf-8") as out:
        ev = Events(out)
        ev.write(e="started")
        run = run_kafka_python if args.client == "kafka-python" else run_confluent
        run(args, ev, stopping)
        ev.write(e="closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
