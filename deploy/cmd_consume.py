"""``kraftlog consume``: print a topic's records (cf. kafka-console-consumer.sh).

    kraftlog consume --topic T [--bootstrap-server HOST:PORT | --dir D]
        [--group G] [--from-beginning | --partition N [--offset earliest|latest|N]]
        [--max-messages N] [--timeout-ms MS]
        [--format value|kv|json] [--print-key] [--print-headers] [--print-partition]
        [--print-offset] [--print-timestamp] [--key-separator SEP]
        [--isolation-level read_uncommitted|read_committed]
        [--property KEY=VALUE ...] [--consumer-property KEY=VALUE ...]

Without ``--partition`` every partition of the topic is read, from the end unless
``--from-beginning``; with ``--group G`` as a member of consumer group G (the partitions are
shared with the group's other members, reading starts at the group's committed offsets, and
offsets are committed automatically and on exit), as kafka-console-consumer does.
``--format value`` prints the value (plus the fields the
``--print-*`` flags select, in the order timestamp, partition, offset, headers, key, separated
by ``--key-separator``, a tab by default); ``kv`` is ``key SEP value``; ``json`` prints one
object per record with every field (UTF-8 text, or ``*_base64`` for bytes that are not UTF-8).
Stops after ``--max-messages`` records or ``--timeout-ms`` without a record; exits 0 then, 1 on
errors.

``--property`` takes kafka-console-consumer.sh's formatter properties: ``print.key``,
``print.value``, ``print.timestamp``, ``print.partition``, ``print.offset``, ``print.headers``
(true/false, for the ``value`` format) and ``key.separator`` (``value`` and ``kv``); they
override the matching flags. ``--consumer-property`` goes into the consumer's configuration
(Kafka property names). Contradictions are usage errors (exit 2): an unknown ``--property``, a
``--property`` the format does not use, ``--group`` and a different ``group.id``,
``--from-beginning`` with ``auto.offset.reset`` other than earliest, ``--isolation-level`` and a
different ``isolation.level``.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import time
from typing import Any

from common.configdef import ConfigError
from deploy.cmd_produce import CommandError, add_bootstrap_args, parse_pairs, resolve_bootstrap
from deploy.kafka_style_args import UsageError, add_property_args, parse_bool, usage_error
from kraftlog_client import ConsumerRecord, KafkaError, TopicPartition
from kraftlog_client.consumer import Consumer

_POLL_MS = 200
PROG = "kraftlog consume"

# kafka-console-consumer.sh's formatter properties and the attributes they set.
_PRINT_PROPERTIES = {
    "print.key": "print_key",
    "print.value": "print_value",
    "print.timestamp": "print_timestamp",
    "print.partition": "print_partition",
    "print.offset": "print_offset",
    "print.headers": "print_headers",
}
PROPERTIES = (*_PRINT_PROPERTIES, "key.separator")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("consume", help="print records of a topic")
    p.add_argument("--topic", required=True)
    add_bootstrap_args(p)
    p.add_argument("--group", default=None, metavar="G", help="consume as a member of group G")
    p.add_argument("--from-beginning", action="store_true")
    p.add_argument("--partition", type=int)
    p.add_argument("--offset", default=None, help="earliest, latest or an offset (--partition)")
    p.add_argument("--max-messages", type=int, default=None)
    p.add_argument(
        "--timeout-ms",
        type=int,
        default=None,
        help="exit after this long without a record (default: never)",
    )
    p.add_argument("--format", default="value", choices=("value", "kv", "json"))
    for field_name in ("key", "headers", "partition", "offset", "timestamp"):
        p.add_argument(f"--print-{field_name}", action="store_true")
    p.add_argument("--key-separator", default="\t", metavar="SEP")
    p.add_argument(
        "--isolation-level",
        default=None,
        choices=("read_uncommitted", "read_committed"),
        help="read_committed: stop at the last stable offset, skip aborted transactions "
        "(default read_uncommitted)",
    )
    add_property_args(
        p,
        tool="kafka-console-consumer.sh formatter",
        known=PROPERTIES,
        booleans=_PRINT_PROPERTIES,
        client="consumer",
    )
    p.set_defaults(func=run, print_value=True)


def apply_properties(args: argparse.Namespace) -> None:
    """Fold the ``--property`` pairs into the formatting attributes they name."""
    for key, value in args.property:
        # The json format prints every field, kv only key and value: a property these
        # formats would not honour is refused rather than ignored.
        if args.format == "json" or (args.format == "kv" and key != "key.separator"):
            raise UsageError(f"--property {key} does not apply to --format {args.format}")
        if key == "key.separator":
            args.key_separator = value
        else:
            setattr(args, _PRINT_PROPERTIES[key], parse_bool(key, value))


def consumer_config(args: argparse.Namespace, bootstrap: str) -> dict[str, str]:
    """The consumer's configuration: ``--consumer-property`` plus what the flags say."""
    props = parse_pairs(args.consumer_property, "--consumer-property")
    props["bootstrap.servers"] = bootstrap
    reset = props.setdefault("auto.offset.reset", "earliest" if args.from_beginning else "latest")
    if args.from_beginning and reset != "earliest":
        raise UsageError(f"--from-beginning contradicts auto.offset.reset={reset}")
    props.setdefault("client.id", "kraftlog-consume")
    isolation = props.setdefault("isolation.level", args.isolation_level or "read_uncommitted")
    if args.isolation_level is not None and isolation != args.isolation_level:
        raise UsageError(
            f"--isolation-level {args.isolation_level} contradicts isolation.level={isolation}"
        )
    if args.group is not None and props.setdefault("group.id", args.group) != args.group:
        raise UsageError(f"--group {args.group} contradicts group.id={props['group.id']}")
    return props


def _text(data: bytes | None) -> str:
    if data is None:
        return "null"
    return data.decode("utf-8", errors="backslashreplace")


def _json_bytes(out: dict[str, Any], name: str, data: bytes | None) -> None:
    if data is None:
        out[name] = None
        return
    try:
        out[name] = data.decode("utf-8")
    except UnicodeDecodeError:
        out[f"{name}_base64"] = base64.b64encode(data).decode("ascii")


def format_record(record: ConsumerRecord, args: argparse.Namespace) -> str:
    if args.format == "json":
        out: dict[str, Any] = {
            "topic": record.topic,
            "partition": record.partition,
            "offset": record.offset,
            "timestamp": record.timestamp,
            "timestamp_type": "LogAppendTime" if record.timestamp_type else "CreateTime",
        }
        _json_bytes(out, "key", record.key)
        _json_bytes(out, "value", record.value)
        headers = []
        for h_key, h_value in record.headers:
            h: dict[str, Any] = {"key": h_key}
            _json_bytes(h, "value", h_value)
            headers.append(h)
        out["headers"] = headers
        return json.dumps(out, separators=(",", ":"))
    if args.format == "kv":
        return f"{_text(record.key)}{args.key_separator}{_text(record.value)}"
    fields = []
    if args.print_timestamp:
        kind = "LogAppendTime" if record.timestamp_type else "CreateTime"
        fields.append(f"{kind}:{record.timestamp}")
    if args.print_partition:
        fields.append(f"Partition:{record.partition}")
    if args.print_offset:
        fields.append(f"Offset:{record.offset}")
    if args.print_headers:
        fields.append(",".join(f"{k}:{_text(v)}" for k, v in record.headers) or "NO_HEADERS")
    if args.print_key:
        fields.append(_text(record.key))
    if args.print_value:
        fields.append(_text(record.value))
    # As Kafka's DefaultMessageFormatter: key.separator separates every printed field.
    return args.key_separator.join(fields)


def _setup(consumer: Consumer, args: argparse.Namespace) -> None:
    if args.partition is None:
        if args.offset is not None:
            raise CommandError("--offset needs --partition")
        consumer.subscribe([args.topic])
        return
    if args.group is not None:
        raise CommandError("--partition reads without a group: drop --group or --partition")
    tp = TopicPartition(args.topic, args.partition)
    consumer.assign([tp])
    offset = args.offset or ("earliest" if args.from_beginning else "latest")
    if offset == "earliest":
        consumer.seek_to_beginning([tp])
    elif offset == "latest":
        consumer.seek_to_end([tp])
    else:
        try:
            consumer.seek(tp, int(offset))
        except ValueError:
            raise CommandError(
                f"--offset: expected earliest, latest or N, got {offset!r}"
            ) from None


def run(args: argparse.Namespace) -> int:
    try:
        apply_properties(args)
        consumer = Consumer(consumer_config(args, resolve_bootstrap(args)))
    except UsageError as e:
        return usage_error(PROG, str(e))
    except (CommandError, ConfigError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    count = 0
    out = sys.stdout
    try:
        _setup(consumer, args)
        last_record = time.monotonic()
        while args.max_messages is None or count < args.max_messages:
            limit = None if args.max_messages is None else args.max_messages - count
            records = consumer.poll(_POLL_MS, max_records=limit)
            if records:
                last_record = time.monotonic()
                out.write("".join(format_record(r, args) + "\n" for r in records))
                out.flush()
                count += len(records)
            elif args.timeout_ms is not None and (
                (time.monotonic() - last_record) * 1000.0 >= args.timeout_ms
            ):
                break
    except (CommandError, KafkaError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        consumer.close()
    print(f"Processed a total of {count} messages", file=sys.stderr)
    return 0
