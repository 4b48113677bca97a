"""A campaign: several seeded chaos runs in a row, one table of their outcomes.

    python -m chaos.campaign --runs 10 --time-limit 300 --artifacts .chaos   (= make chaos)
    python -m chaos.campaign --workload transactional ...

Each run is ``kraftlog chaos run`` in its own process (a run moves its process into the
cluster's client namespace) with acks=all idempotent producers (the acceptance workload),
the workload ``--workload`` names (default ``all``: the queue and the transactional
workloads side by side), seeds ``first_seed .. first_seed + runs - 1``, artifacts in
``DIR/seed-<n>``.

The table, one row per run: exit code, sends ok / failed / unknown, transactions committed /
aborted / unknown, reads, faults injected, the slowest recovery after a heal (first
acknowledged write per partition), and the anomalies by kind. ``DIR/campaign.json`` holds
the same. Exit code: 0 when every run exited 0, else 1.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# A run's process may take this much longer than its time limit (setup, flush, final read,
# check) before the campaign stops it.
RUN_OVERHEAD_S = 300.0
_TERM_GRACE_S = 60.0


# The acceptance workload: acks=all idempotent producers only.
CAMPAIGN_PRODUCERS = "idempotent:3"


def run_argv(
    seed: int, time_limit_s: float, artifacts: Path, nemeses: str, extra: Sequence[str] = ()
) -> list[str]:
    return [
        sys.executable,
        "-m",
        "deploy.cli",
        "chaos",
        "run",
        "--nemesis",
        nemeses,
        "--time-limit",
        str(time_limit_s),
        "--seed",
        str(seed),
        "--artifacts",
        # Absolute: the run works in the code's directory, not the caller's (run_one).
        str(artifacts.resolve()),
        "--producers",
        CAMPAIGN_PRODUCERS,
        *extra,
    ]


def run_one(
    seed: int, time_limit_s: float, artifacts: Path, nemeses: str, extra: Sequence[str] = ()
) -> dict[str, Any]:
    """One run in a subprocess (stopped with SIGTERM, then SIGKILL, if it overruns); its row."""
    repo = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen(
        run_argv(seed, time_limit_s, artifacts, nemeses, extra),
        cwd=repo,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        code = proc.wait(time_limit_s + RUN_OVERHEAD_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            code = proc.wait(_TERM_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            code = proc.wait()
    return summarize(seed, code, artifacts)


def summarize(seed: int, exit_code: int, artifacts: Path) -> dict[str, Any]:
    row: dict[str, Any] = {"seed": seed, "exit": exit_code, "artifacts": str(artifacts)}
    try:
        run = json.loads((artifacts / "run-summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {**row, "error": "no run-summary.json (see runner.log)"}
    check = run.get("check", {})
    sends = check.get("sends", {})
    txns = check.get("transactions", {})
    recoveries = [r.get("recovered_after_s") for r in check.get("recoveries", [])]
    measured = [r for r in recoveries if isinstance(r, int | float)]
    return {
        **row,
        "valid": check.get("valid"),
        "sends_ok": sends.get("ok", 0),
        "sends_failed": sends.get("failed", 0),
        "sends_unknown": sends.get("unknown", 0),
        "txns_committed": txns.get("committed", 0),
        "txns_aborted": txns.get("aborted", 0),
        "txns_unknown": txns.get("unknown", 0),
        "reads": run.get("counts", {}).get("read", 0),
        "faults": len(run.get("faults", [])),
        "fault_kinds": sorted({f.get("fault") for f in run.get("faults", [])}),
        "max_recovery_s": max(measured) if measured else None,
        "unrecovered_heals": sum(1 for r in recoveries if r is None),
        "anomalies": check.get("anomalies", {}),
        "worker_errors": run.get("worker_errors", []),
    }


def format_table(rows: list[dict[str, Any]]) -> str:
    head = (
        f"{'seed':>4} {'exit':>4} {'ok':>7} {'fail':>5} {'unknown':>7} {'txn c/a/u':>14} "
        f"{'reads':>8} {'faults':>6} {'max rec s':>9}  anomalies"
    )
    lines = [head]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['seed']:>4} {r['exit']:>4}  {r['error']}")
            continue
        rec = r["max_recovery_s"]
        txns = f"{r['txns_committed']}/{r['txns_aborted']}/{r['txns_unknown']}"
        lines.append(
            f"{r['seed']:>4} {r['exit']:>4} {r['sends_ok']:>7} {r['sends_failed']:>5} "
            f"{r['sends_unknown']:>7} {txns:>14} {r['reads']:>8} {r['faults']:>6} "
            f"{'-' if rec is None else f'{rec:.1f}':>9}  {r['anomalies'] or 'none'}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos.campaign", description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--time-limit", type=float, default=300.0)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--nemesis", default="all")
    parser.add_argument("--workload", default="all", help="queue, transactional or all")
    parser.add_argument("--artifacts", type=Path, default=Path(".chaos"))
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be >= 1")
    args.artifacts.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for seed in range(args.first_seed, args.first_seed + args.runs):
        artifacts = args.artifacts / f"seed-{seed}"
        if artifacts.exists():
            parser.error(f"{artifacts} exists; choose another --artifacts or --first-seed")
        print(f"run seed {seed} ({args.time_limit:.0f} s) -> {artifacts}", flush=True)
        rows.append(
            run_one(seed, args.time_limit, artifacts, args.nemesis, ["--workload", args.workload])
        )
        print(format_table(rows[-1:]).splitlines()[-1], flush=True)
        (args.artifacts / "campaign.json").write_text(
            json.dumps(rows, indent=2) + "\n", encoding="utf-8"
        )
    print(format_table(rows))
    return 0 if all(r["exit"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
