"""``kraftlog chaos``: run the chaos suite, clean up after a crashed run, serve Toxiproxy's API.

A plug-in command: the ``kraftlog.commands`` entry point ``chaos`` (pyproject.toml) names
:func:`register`, which the ``kraftlog`` command line loads only when ``chaos`` is the command
given, so the product's command line never imports the chaos suite otherwise.

kraftlog chaos run --nemesis kill,pause,partition --time-limit 120 --seed 7 --artifacts DIR
                   [--workload queue|transactional|all] [--bootstrap HOST:PORT,...]
                   [--progress] [--partitions 3] ...
kraftlog chaos cleanup              remove namespaces, processes and mounts of crashed runs
kraftlog chaos toxiproxy [--host H] [--port 8474]   a Toxiproxy-compatible server

``run`` exits 0 when the checker finds nothing, 1 on any anomaly, 2 when the run could not
be carried out, 130 when interrupted (see chaos.runner).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from chaos.nemesis import NEMESES, parse_nemeses
from chaos.runner import WORKLOADS
from chaos.schedule import DEFAULT_RECOVERY_S, ScheduleTimings
from chaos.workload.producer import PRODUCER_KINDS
from chaos.workload.transactional import TxnWorkloadConfig
from deploy.command_group import add_command_group


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    _, chaos_sub = add_command_group(
        sub, "chaos", "fault injection runs with a history and a checker"
    )

    p = chaos_sub.add_parser(
        "run",
        help="start a cluster (or use --bootstrap), run workloads under faults, check",
        description="nemeses: " + ", ".join(NEMESES) + " (or all, none)",
    )
    p.add_argument("--nemesis", default="all", help="comma-separated nemeses, all, or none")
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds of workload")
    p.add_argument("--seed", type=int, default=None, help="schedule seed (default: time)")
    p.add_argument("--artifacts", required=True, type=Path, help="output directory")
    p.add_argument("--bootstrap", default=None, help="target an existing cluster (no nemeses)")
    p.add_argument("--progress", action="store_true", help="progress bar even without a TTY")
    p.add_argument("--controllers", type=int, default=3)
    p.add_argument("--brokers", type=int, default=3)
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument("--replication-factor", type=int, default=3)
    p.add_argument("--min-insync-replicas", type=int, default=2)
    p.add_argument(
        "--producers",
        default="idempotent:2,all:1,acks1:1",
        help=f"kind:count,... with kinds {', '.join(PRODUCER_KINDS)}; the plain kinds (all, "
        "acks1) may duplicate on retries and acks1 may lose acknowledged records, which the "
        "checker counts as informational",
    )
    p.add_argument("--rate", type=float, default=50.0, help="records/s per producer")
    p.add_argument(
        "--workload",
        default="queue",
        choices=WORKLOADS,
        help="queue: producers of each kind and consumers on one topic; transactional: "
        "transactional producers (some aborts), consume-transform-produce workers and "
        "read_committed/read_uncommitted observers on two topics; all: both",
    )
    p.add_argument(
        "--txn-rate", type=float, default=10.0, help="transactions/s per transactional producer"
    )
    p.add_argument("--consumers", type=int, default=2, help="consumers by assignment")
    p.add_argument("--group-consumers", type=int, default=1)
    p.add_argument(
        "--recovery",
        type=float,
        default=DEFAULT_RECOVERY_S,
        help="seconds of workload after the last heal",
    )
    p.add_argument("--hold", default="3,10", help="min,max seconds a fault holds")
    p.add_argument("--gap", default="3,8", help="min,max seconds between faults")
    p.set_defaults(func=_run)

    p = chaos_sub.add_parser("cleanup", help="remove what crashed chaos runs left behind")
    p.set_defaults(func=_cleanup)

    p = chaos_sub.add_parser("toxiproxy", help="serve Toxiproxy's HTTP API")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8474)
    p.set_defaults(func=_toxiproxy)


def _pair(text: str, what: str) -> tuple[float, float]:
    try:
        low, high = (float(x) for x in text.split(","))
    except ValueError:
        raise ValueError(f"{what} must be MIN,MAX seconds, got {text!r}") from None
    return low, high


def _producers(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in text.split(","):
        kind, _, count = item.strip().partition(":")
        if kind not in PRODUCER_KINDS or not count.isdigit():
            raise ValueError(
                f"--producers item {item!r}: expected KIND:COUNT, KIND in "
                f"{', '.join(PRODUCER_KINDS)}"
            )
        out[kind] = int(count)
    return out


def _run(args: argparse.Namespace) -> int:
    from chaos.runner import RunConfig, run

    try:
        hold = _pair(args.hold, "--hold")
        gap = _pair(args.gap, "--gap")
        config = RunConfig(
            nemeses=parse_nemeses(args.nemesis),
            time_limit_s=args.time_limit,
            seed=args.seed if args.seed is not None else int(time.time()) % 1_000_000,
            artifacts=args.artifacts,
            bootstrap=args.bootstrap,
            controllers=args.controllers,
            brokers=args.brokers,
            partitions=args.partitions,
            replication_factor=args.replication_factor,
            min_insync_replicas=args.min_insync_replicas,
            producers=_producers(args.producers),
            rate_per_producer=args.rate,
            assign_consumers=args.consumers,
            group_consumers=args.group_consumers,
            progress=args.progress,
            workload=args.workload,
            txn=TxnWorkloadConfig(rate_per_producer=args.txn_rate),
            timings=ScheduleTimings(
                hold_min_s=hold[0],
                hold_max_s=hold[1],
                gap_min_s=gap[0],
                gap_max_s=gap[1],
                recovery_s=args.recovery,
            ),
        )
    except ValueError as e:
        print(f"kraftlog chaos run: {e}", file=sys.stderr)
        return 2
    print(f"chaos run: seed {config.seed}, artifacts {config.artifacts}", file=sys.stderr)
    return run(config).exit_code


def _cleanup(_args: argparse.Namespace) -> int:
    from chaos.cluster import cleanup_leftovers, missing_requirements

    missing = missing_requirements()
    if missing:
        print("kraftlog chaos cleanup needs " + ", ".join(missing), file=sys.stderr)
        return 2
    for line in cleanup_leftovers():
        print(f"removed {line}")
    return 0


def _toxiproxy(args: argparse.Namespace) -> int:
    from chaos.toxiproxy import serve

    server = serve(args.host, args.port)
    print(f"toxiproxy API on {args.host}:{args.port}", file=sys.stderr)
    try:
        while True:
            time.sleep(3600)
    finally:
        server.stop()
