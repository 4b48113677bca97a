"""``kraftlog produce``: records from stdin lines (cf. kafka-console-producer.sh).

    kraftlog produce --topic T [--bootstrap-server HOST:PORT | --dir D]
        [--key-separator SEP] [--parse-headers] [--header KEY=VALUE ...]
        [--partition N] [--acks all|1|0] [--compression-type none|gzip|snappy|lz4|zstd]
        [--property KEY=VALUE ...] [--producer-property KEY=VALUE ...]

Each stdin line (without its newline) is one record value. With ``--key-separator SEP`` a
line is ``key SEP value`` (a line without SEP is an error, as in Kafka). With
``--parse-headers`` a line starts with ``k1:v1,k2:v2`` then a tab (``--headers-delimiter``,
``--headers-separator`` and ``--headers-key-separator`` change the three separators);
``--header K=V`` adds a header to every record. Exits 0 when every record was acknowledged,
1 on the first failure (the error is printed).

``--property`` takes kafka-console-producer.sh's line reader properties, which override the
matching flags: ``parse.key`` (true: lines are ``key SEP value``), ``key.separator`` (SEP,
default a tab), ``parse.headers`` and ``headers.delimiter``, ``headers.separator``,
``headers.key.separator``. ``--producer-property`` goes into the producer's configuration;
``--acks`` and ``--compression-type`` win over it when given, and a different value in both is
a usage error (exit 2), as are unknown properties and separators given without
``parse.key``/``parse.headers`` (Kafka would ignore them).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

from common.configdef import ConfigError
from deploy.cluster_layout import ClusterLayout, ClusterLayoutError
from deploy.kafka_style_args import UsageError, add_property_args, parse_bool, usage_error
from kraftlog_client import KafkaError, Producer
from kraftlog_client.config import COMPRESSION_TYPES

DEFAULT_CLUSTER_DIR = ".cluster"
PROG = "kraftlog produce"
# kafka-console-producer.sh's LineMessageReader properties.
_BOOLEAN_PROPERTIES = ("parse.key", "parse.headers")
_HEADER_PROPERTIES = {
    "headers.delimiter": "headers_delimiter",
    "headers.separator": "headers_separator",
    "headers.key.separator": "headers_key_separator",
}
PROPERTIES = (*_BOOLEAN_PROPERTIES, "key.separator", *_HEADER_PROPERTIES)
# Kafka's default key.separator.
DEFAULT_KEY_SEPARATOR = "\t"
# Records in flight before produce waits for the oldest acknowledgement (bounds memory of
# futures; the producer's own buffer.memory bounds the bytes).
_MAX_PENDING_FUTURES = 100_000


class CommandError(Exception):
    """Bad arguments or input; printed without a traceback."""


def add_bootstrap_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("where the brokers are")
    group.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT[,...]",
        help="brokers' Kafka listeners (bootstrap.servers)",
    )
    group.add_argument(
        "--dir", metavar="D", help=f"a local cluster directory (default: {DEFAULT_CLUSTER_DIR})"
    )


def resolve_bootstrap(args: argparse.Namespace) -> str:
    if args.bootstrap_server:
        return str(args.bootstrap_server)
    directory = args.dir or DEFAULT_CLUSTER_DIR
    if args.dir is None and not ClusterLayout.exists(directory):
        raise CommandError("no brokers given: use --bootstrap-server HOST:PORT or --dir D")
    try:
        return ",".join(ClusterLayout.load(directory).bootstrap_servers())
    except ClusterLayoutError as e:
        raise CommandError(str(e)) from None


def parse_pairs(items: Iterable[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CommandError(f"{what}: expected KEY=VALUE, got {item!r}")
        out[key] = value
    return out


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("produce", help="send stdin lines as records to a topic")
    p.add_argument("--topic", required=True)
    add_bootstrap_args(p)
    p.add_argument("--key-separator", metavar="SEP", help="lines are KEY SEP VALUE")
    p.add_argument("--parse-headers", action="store_true", help="lines start with headers")
    p.add_argument("--headers-delimiter", default="\t", metavar="SEP")
    p.add_argument("--headers-separator", default=",", metavar="SEP")
    p.add_argument("--headers-key-separator", default=":", metavar="SEP")
    p.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a header for every record (repeatable)",
    )
    p.add_argument("--partition", type=int, help="default: the partitioner decides")
    p.add_argument(
        "--acks",
        default=None,
        choices=("all", "-1", "0", "1"),
        help="default: all (or acks from --producer-property)",
    )
    p.add_argument(
        "--compression-type",
        default=None,
        choices=COMPRESSION_TYPES,
        help="default: none (or compression.type from --producer-property)",
    )
    add_property_args(
        p,
        tool="kafka-console-producer.sh line reader",
        known=PROPERTIES,
        booleans=_BOOLEAN_PROPERTIES,
        client="producer",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="wait this long for the last acknowledgements (default 60)",
    )
    p.set_defaults(func=run)


def apply_properties(args: argparse.Namespace) -> None:
    """Fold the ``--property`` pairs into the line parsing attributes they name."""
    props = dict(args.property)
    parse_key = (
        parse_bool("parse.key", props["parse.key"])
        if "parse.key" in props
        else args.key_separator is not None
    )
    if parse_key:
        args.key_separator = props.get("key.separator", args.key_separator or DEFAULT_KEY_SEPARATOR)
    elif "key.separator" in props:
        raise UsageError("key.separator needs parse.key=true")
    else:
        args.key_separator = None
    if "parse.headers" in props:
        args.parse_headers = parse_bool("parse.headers", props["parse.headers"])
    for key, attr in _HEADER_PROPERTIES.items():
        if key in props:
            if not args.parse_headers:
                raise UsageError(f"{key} needs parse.headers=true")
            setattr(args, attr, props[key])


def _normal(value: str) -> str:
    return "all" if value == "-1" else value  # acks: -1 and all are the same


def producer_config(args: argparse.Namespace, bootstrap: str) -> dict[str, str]:
    """The producer's configuration: ``--producer-property`` plus what the flags say."""
    props = parse_pairs(args.producer_property, "--producer-property")
    for flag, key, value, default in (
        ("--acks", "acks", args.acks, "all"),
        ("--compression-type", "compression.type", args.compression_type, "none"),
    ):
        if value is not None and _normal(props.get(key, value)) != _normal(value):
            raise UsageError(f"{flag} {value} contradicts {key}={props[key]}")
        props[key] = value or props.get(key, default)
    props["bootstrap.servers"] = bootstrap
    props.setdefault("client.id", "kraftlog-produce")
    return props


def parse_line(
    line: str, args: argparse.Namespace
) -> tuple[bytes | None, bytes, list[tuple[str, bytes | None]]]:
    """(key, value, headers) of one input line."""
    headers: list[tuple[str, bytes | None]] = []
    if args.parse_headers:
        head, sep, line = line.partition(args.headers_delimiter)
        if not sep:
            raise CommandError(f"no headers delimiter {args.headers_delimiter!r} in {line!r}")
        for item in filter(None, head.split(args.headers_separator)):
            h_key, h_sep, h_value = item.partition(args.headers_key_separator)
            headers.append((h_key, h_value.encode() if h_sep else None))
    key: bytes | None = None
    if args.key_separator:
        k, sep, line = line.partition(args.key_separator)
        if not sep:
            raise CommandError(f"no key separator {args.key_separator!r} in line {line!r}")
        key = k.encode()
    return key, line.encode(), headers


def run(args: argparse.Namespace) -> int:
    try:
        apply_properties(args)
        props = producer_config(args, resolve_bootstrap(args))
        common_headers = [(k, v.encode()) for k, v in parse_pairs(args.header, "--header").items()]
        producer = Producer(props)
    except UsageError as e:
        return usage_error(PROG, str(e))
    except (CommandError, ConfigError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    failures: list[BaseException] = []
    pending = []
    try:
        for raw in sys.stdin:
            line = raw[:-1] if raw.endswith("\n") else raw
            key, value, headers = parse_line(line, args)
            future = producer.send(
                args.topic,
                value,
                key=key,
                headers=common_headers + headers or None,
                partition=args.partition,
            )
            pending.append(future)
            if len(pending) >= _MAX_PENDING_FUTURES:
                pending[0].get(args.timeout)
                pending = [f for f in pending if not f.done()]
        producer.flush(args.timeout)
        for future in pending:
            error = future.exception(0)
            if error is not None:
                failures.append(error)
                break
    except (CommandError, KafkaError) as e:
        failures.append(e)
    finally:
        producer.close(args.timeout)
    if failures:
        print(f"error: {failures[0]}", file=sys.stderr)
        return 1
    return 0
