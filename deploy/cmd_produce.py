"""``kraftlog produce``: records from stdin lines (cf. kafka-console-producer.sh).

    kraftlog produce --topic T [--bootstrap-server HOST:PORT | --dir D]
        [--key-separator SEP] [--parse-headers] [--header KEY=VALUE ...]
        [--partition N] [--acks all|1|0] [--compression-type none|gzip|zstd]
        [--producer-property KEY=VALUE ...]

Each stdin line (without its newline) is one record value. With ``--key-separator SEP`` a
line is ``key SEP value`` (a line without SEP is an error, as in Kafka). With
``--parse-headers`` a line starts with ``k1:v1,k2:v2`` then a tab (``--headers-delimiter``,
``--headers-separator`` and ``--headers-key-separator`` change the three separators);
``--header K=V`` adds a header to every record. Exits 0 when every record was acknowledged,
1 on the first failure (the error is printed).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

from common.configdef import ConfigError
from data_plane.client import KafkaError, Producer
from deploy.cluster_layout import ClusterLayout, ClusterLayoutError

DEFAULT_CLUSTER_DIR = ".cluster"
# Records in flight before produce waits for the oldest acknowledgement (bounds memory of
# futures; the producer's own buffer.memory bounds the bytes).
_MAX_PENDING_FUTURES = 100_000


class CommandError(Exception):
    """Bad arguments or input; printed without a traceback."""


def add_bootstrap_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("where the brokers are")
    group.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]",
                       help="brokers' Kafka listeners (bootstrap.servers)")
    group.add_argument("--dir", metavar="D",
                       help=f"a local cluster directory (default: {DEFAULT_CLUSTER_DIR})")


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
    p.add_argument("--header", action="append", default=[], metavar="KEY=VALUE",
                   help="a header for every record (repeatable)")
    p.add_argument("--partition", type=int, help="default: the partitioner decides")
    p.add_argument("--acks", default="all", choices=("all", "-1", "0", "1"))
    p.add_argument("--compression-type", default="none", choices=("none", "gzip", "zstd"))
    p.add_argument("--producer-property", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="wait this long for the last acknowledgements (default 60)")
    p.set_defaults(func=run)


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
        props = parse_pairs(args.producer_property, "--producer-property")
        props.update({
            "bootstrap.servers": resolve_bootstrap(args),
            "acks": args.acks,
            "compression.type": args.compression_type,
            "client.id": props.get("client.id", "kraftlog-produce"),
        })
        common_headers = [(k, v.encode()) for k, v in parse_pairs(args.header, "--header").items()]
        producer = Producer(props)
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
                args.topic, value, key=key, headers=common_headers + headers or None,
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
