"""``make bench``: every benchmark in one bounded session, kraftlog beside NATS JetStream.

    .venv/bin/python -m bench.suite             # the full session (about 15-20 minutes)
    .venv/bin/python -m bench.suite --quick     # smaller counts (about 8-10 minutes)
    .venv/bin/python -m bench.suite --only replicated --only nats

Each section runs in its own child process (``--run-section NAME``) with a hard time cap
(the child is killed at the cap and the section recorded as timed out), so one stuck section
cannot hold the session, and every process a section starts dies with its LocalCluster or
NatsCluster. The load average is sampled before and after each section and stored beside its
figures: a figure without the machine's load means little.

Sections: the physical anchors (disk, fsync, loopback TCP), storage, one broker, three brokers
(RF 3, acks=all, min.insync.replicas 2: throughput, end-to-end latency, leader failover), NATS
JetStream R3 (same workloads), controller failover, 10,000 partitions, and the benchmarks other
areas add (bench/groups.py, bench/cleaner.py, bench/spark_read.py, bench/spark_write.py) when
they exist: these are run as ``python -m bench.<name>`` and their printed output is kept.

Results: bench/results/<UTC timestamp>.json and bench/results/latest.json; the table in
docs/benchmarks.md and the plots in docs/img/ are rewritten from them by bench/publish.py
(run at the end unless ``--no-publish``). Prints figures; never asserts.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import describe_machine, load_average  # noqa: E402
from bench.progress import ProgressBar  # noqa: E402

RESULTS_DIR = ROOT / "bench" / "results"
PROGRESS_TICK_S = 0.5
TERMINATE_GRACE_S = 10.0


@dataclass(frozen=True)
class Section:
    name: str
    expected_s: float  # for the progress bar
    cap_s: float  # the child is killed after this long
    external: bool = False  # another area's bench module, run as python -m bench.<name>
    full_args: tuple[str, ...] = ()  # an external module's arguments in a full (not --quick) run


SECTIONS = [
    Section("anchors", 30, 180),
    Section("storage", 60, 300),
    Section("single_broker", 60, 300),
    Section("replicated", 150, 540),
    Section("nats", 120, 480),
    Section("native_peers", 150, 600),
    Section("sustained_produce", 90, 420, external=True),
    Section("controller_failover", 60, 300),
    Section("partitions", 180, 600),
    Section("groups", 60, 300, external=True),
    # The cleaner's own default (48 MB per workload) takes minutes on a loaded machine.
    Section("cleaner", 60, 300, external=True, full_args=("--size-mb", "16")),
    Section("spark_read", 120, 420, external=True),
    Section("spark_write", 180, 600, external=True),
    Section("transactions", 120, 420, external=True),
    Section("rolling_restart", 90, 420, external=True),
    Section("log_dir_failure", 40, 240, external=True),
]


def _run_section(name: str, directory: str, quick: bool) -> dict[str, Any]:
    """In the child: one section's figures."""
    if name == "anchors":
        from bench import anchors

        return anchors.measure(directory, quick)
    if name == "nats":
        from bench import nats_jetstream

        if nats_jetstream.available() is None:
            return {"skipped": "nats-server or nats-py is not installed"}
        return nats_jetstream.section_nats(directory, quick)
    if name == "native_peers":
        from bench import native_peers

        return native_peers.section_native_peers(directory, quick)
    from bench import sections

    return sections.SECTIONS[name](directory, quick)


def _external(section: Section, quick: bool) -> list[str] | None:
    """The command for another area's bench module, or None when it is absent."""
    if importlib.util.find_spec(f"bench.{section.name}") is None:
        return None
    source = (ROOT / "bench" / f"{section.name}.py").read_text()
    cmd = [sys.executable, "-m", f"bench.{section.name}"]
    if quick and "--quick" in source:
        cmd.append("--quick")
    elif not quick:
        cmd.extend(section.full_args)
    return cmd


def _wait(proc: subprocess.Popen[bytes], cap_s: float, bar: ProgressBar) -> bool:
    """True if ``proc`` ended within ``cap_s``; else it is killed (whole process group)."""
    deadline = time.monotonic() + cap_s
    while time.monotonic() < deadline:
        try:
            proc.wait(PROGRESS_TICK_S)
            return True
        except subprocess.TimeoutExpired:
            bar.tick()
    os.killpg(proc.pid, 15)
    try:
        proc.wait(TERMINATE_GRACE_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()
    return False


def run_suite(selected: list[Section], quick: bool, workdir: Path) -> dict[str, Any]:
    bar = ProgressBar([(s.name, s.expected_s) for s in selected])
    results: dict[str, Any] = {}
    for index, section in enumerate(selected):
        bar.start_section(index)
        out_path = workdir / f"{section.name}.json"
        log_path = workdir / f"{section.name}.log"
        scratch = workdir / f"{section.name}.d"
        scratch.mkdir()
        if section.external:
            cmd = _external(section, quick)
            if cmd is None:
                results[section.name] = {"skipped": f"bench/{section.name}.py is not present"}
                bar.finish_section("absent")
                continue
        else:
            cmd = [
                sys.executable,
                "-m",
                "bench.suite",
                "--run-section",
                section.name,
                "--out",
                str(out_path),
                "--dir",
                str(scratch),
            ] + (["--quick"] if quick else [])
        load_before = load_average()
        started = time.monotonic()
        with open(log_path, "wb") as log:
            # A new session: the cap kills the child and everything it started.
            proc = subprocess.Popen(
                cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
            finished = _wait(proc, section.cap_s, bar)
        entry: dict[str, Any] = {
            "seconds": time.monotonic() - started,
            "load_before": load_before,
            "load_after": load_average(),
        }
        if not finished:
            entry["error"] = f"timed out after {section.cap_s:.0f} s (killed)"
        elif proc.returncode != 0:
            entry["error"] = f"exit status {proc.returncode}"
        elif not section.external:
            entry.update(json.loads(out_path.read_text()))
        output = log_path.read_text(errors="replace")
        if section.external or "error" in entry:
            entry["output_tail"] = output[-4000:]
        results[section.name] = entry
        bar.finish_section(entry.get("error", "ok"))
    return results


def ratios(results: dict[str, Any]) -> dict[str, float]:
    """kraftlog / NATS JetStream, same run: records/s (higher is better for kraftlog) and
    latency (lower is better for kraftlog) at each offered rate."""
    k, n = results.get("replicated", {}), results.get("nats", {})
    out: dict[str, float] = {}
    for key in ("produce_100", "consume_100", "produce_1024", "consume_1024"):
        a, b = k.get(key, {}).get("records_per_s"), n.get(key, {}).get("records_per_s")
        if a and b:
            out[f"{key}_records_per_s"] = a / b
    kl, nl = k.get("e2e_latency", {}), n.get("e2e_latency", {})
    for rate in kl:
        if rate in nl and nl[rate].get("p99_ms"):
            out[f"e2e_p99_at_{rate}"] = kl[rate]["p99_ms"] / nl[rate]["p99_ms"]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts")
    parser.add_argument("--only", action="append", default=[], metavar="SECTION")
    parser.add_argument("--skip", action="append", default=[], metavar="SECTION")
    parser.add_argument(
        "--no-publish", action="store_true", help="do not rewrite docs/benchmarks.md and docs/img/"
    )
    parser.add_argument("--run-section", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.run_section:
        figures = _run_section(args.run_section, args.dir, args.quick)
        Path(args.out).write_text(json.dumps(figures, indent=1, default=float))
        return 0

    names = {s.name for s in SECTIONS}
    unknown = [x for x in args.only + args.skip if x not in names]
    if unknown:
        parser.error(f"unknown sections {unknown}; choose from {sorted(names)}")
    selected = [
        s for s in SECTIONS if (not args.only or s.name in args.only) and s.name not in args.skip
    ]
    started = datetime.datetime.now(datetime.UTC)
    doc: dict[str, Any] = {
        "started_utc": started.isoformat(timespec="seconds"),
        "quick": args.quick,
        "machine": describe_machine(),
    }
    print(
        f"kraftlog benchmark suite, {len(selected)} sections"
        f"{' (quick)' if args.quick else ''}; load {load_average()}",
        flush=True,
    )
    # Section directories are removed after the results are written: deleting 10,000
    # partitions' logs took minutes on a loaded machine and is no part of any figure.
    workdir = Path(tempfile.mkdtemp(prefix="kraftlog-bench-suite-"))
    try:
        doc["sections"] = run_suite(selected, args.quick, workdir)
        _write_results(doc, started, publish_doc=not args.no_publish)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


def _write_results(doc: dict[str, Any], started: datetime.datetime, publish_doc: bool) -> None:
    doc["ratios_kraftlog_over_nats"] = ratios(doc["sections"])
    doc["finished_utc"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    text = json.dumps(doc, indent=1, default=float) + "\n"
    (RESULTS_DIR / f"{stamp}.json").write_text(text)
    (RESULTS_DIR / "latest.json").write_text(text)
    from bench import publish

    print(publish.summary(doc))
    if publish_doc:
        publish.publish(doc)
    print(f"results: bench/results/{stamp}.json (and latest.json)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
