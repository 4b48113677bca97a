"""``python -m chaos.checker HISTORY [--artifacts DIR] [--replica ID=LOG_DIR ...]``: check a
recorded history (e.g. from an earlier run, or one a runner was killed before checking),
print the summary as JSON, write the report folder when ``--artifacts`` is given.

Exit codes: 0 valid, 1 an anomaly (safety or liveness), 2 the history cannot be read."""

from __future__ import annotations

import argparse
import json
import sys

from chaos.checker.check import DEFAULT_BUCKET_S, DEFAULT_LIVENESS_WINDOW_S, check
from chaos.checker.report import write_report
from chaos.history import HistoryFormatError

EXIT_VALID = 0
EXIT_ANOMALY = 1
EXIT_UNREADABLE = 2


def _replica(text: str) -> tuple[str, str]:
    replica, sep, path = text.partition("=")
    if not sep or not replica or not path:
        raise argparse.ArgumentTypeError(f"expected ID=LOG_DIR, got {text!r}")
    return replica, path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos.checker", description=__doc__)
    parser.add_argument("history", help="the history.jsonl of a run")
    parser.add_argument("--artifacts", help="write summary, anomalies and report.html here")
    parser.add_argument(
        "--replica",
        type=_replica,
        action="append",
        default=[],
        metavar="ID=LOG_DIR",
        help="a broker's log directory, to compare replicas up to the HW (repeat per broker)",
    )
    parser.add_argument(
        "--liveness-window-s", type=float, default=DEFAULT_LIVENESS_WINDOW_S, metavar="S"
    )
    parser.add_argument("--bucket-s", type=float, default=DEFAULT_BUCKET_S, metavar="S")
    parser.add_argument("--seed", type=int, help="recorded in the report")
    args = parser.parse_args(argv)
    replicas = {int(r) if r.isdigit() else r: path for r, path in args.replica} or None
    try:
        result = check(
            args.history,
            replicas=replicas,
            liveness_window_s=args.liveness_window_s,
            bucket_s=args.bucket_s,
            seed=args.seed,
        )
    except (OSError, HistoryFormatError) as e:
        print(f"cannot check {args.history}: {e}", file=sys.stderr)
        return EXIT_UNREADABLE
    print(json.dumps(result.summary(), indent=2))
    if args.artifacts:
        print(f"report: {write_report(result, args.artifacts)}", file=sys.stderr)
    return EXIT_VALID if result.valid else EXIT_ANOMALY


if __name__ == "__main__":
    sys.exit(main())
