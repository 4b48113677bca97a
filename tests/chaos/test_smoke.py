"""Chaos smoke (CI; with test_links.py under 5 minutes): three short seeded runs of
``kraftlog chaos run`` against a cluster the runner starts in network namespaces, each mixing
several nemeses (the third one of the transactional workload, with the coordinator's
faults); the history must check valid, the artifacts must be complete, and nothing may be
left behind. Plus Ctrl-C: the run cleans up.

The 10 x 5-minute acceptance campaign is ``test_campaign`` (marker ``slow``; runs only with
KRAFTLOG_SLOW=1, e.g. ``make chaos``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from chaos.cluster import NAMESPACE_PREFIX, cleanup_leftovers, missing_requirements
from chaos.history import read_history

REPO = Path(__file__).resolve().parents[2]
# Bounds of one run's process: setup + workload + flush + final read + check.
RUN_MARGIN_S = 150.0
_TERM_GRACE_S = 30.0

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        bool(missing_requirements()) or shutil.which("ip") is None,
        reason="chaos runs need root, iproute2 and iptables (network namespaces): "
        + ", ".join(missing_requirements()),
    ),
]


def _default_sigint() -> None:
    """In the runner's child, before exec: SIGINT to its default. A shell without job control
    starts background commands with SIGINT ignored, and an ignored disposition survives exec
    (Python then keeps it ignored), so a test suite started with ``&`` from a script would
    otherwise send a Ctrl-C that nobody receives."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10)
    return {line.split()[0] for line in out.stdout.splitlines() if line.strip()}


def chaos_run(artifacts: Path, seed: int, nemeses: str, time_limit_s: float, *extra: str):
    """Run ``kraftlog chaos run`` in its own process; returns (exit code, output, the run's
    namespaces still present when it ended — what it left behind). Whatever happens, the run's
    process group is ended and those namespaces are removed afterwards."""
    argv = [
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
        str(artifacts),
        "--hold",
        "3,5",
        "--gap",
        "2,3",
        "--recovery",
        "10",
        "--rate",
        "30",
        *extra,
    ]
    proc = subprocess.Popen(
        argv,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        text=True,
        preexec_fn=_default_sigint,
    )
    try:
        out, _ = proc.communicate(timeout=time_limit_s + RUN_MARGIN_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)  # the runner cleans up on SIGTERM
        try:
            out, _ = proc.communicate(timeout=_TERM_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
        raise AssertionError(f"chaos run did not finish in time:\n{out[-4000:]}") from None
    finally:
        name = f"{NAMESPACE_PREFIX}{proc.pid % 100_000}"
        # Only this run's namespaces: other chaos runs on the machine may create their own.
        left = sorted(n for n in _namespaces() if n == name or n.startswith(f"{name}-"))
        cleanup_leftovers(cluster_name=name)
    return proc.returncode, out, left


def _check_artifacts(artifacts: Path, seed: int, final_reads: int = 3) -> dict:
    for name in (
        "history.jsonl",
        "report.html",
        "summary.json",
        "anomalies.json",
        "runner.log",
        "run.json",
        "run-summary.json",
    ):
        assert (artifacts / name).is_file(), f"missing artifact {name}"
    assert (artifacts / "seed").read_text().strip() == str(seed)
    logs = sorted(p.name for p in (artifacts / "logs").glob("node-*.log"))
    assert len(logs) == 6, logs
    ops = read_history(artifacts / "history.jsonl")
    nemesis = [op.value for op in ops if op.f == "nemesis"]
    starts = [v for v in nemesis if v["phase"] == "start"]
    heals = {v["id"] for v in nemesis if v["phase"] == "heal"}
    assert starts, "no fault was injected"
    assert all(v["id"] in heals for v in starts), "a fault was never healed"
    assert nemesis[-1]["fault"] == "all" and nemesis[-1]["phase"] == "heal"
    assert sum(1 for op in ops if op.f == "final-read" and op.type == "ok") == final_reads
    return json.loads((artifacts / "run-summary.json").read_text())


@pytest.mark.parametrize(
    ("seed", "nemeses"),
    [
        (1, "kill,pause,partition,leader-move"),
        (2, "slow,lossy,disk-corruption,clock,full-disk"),
    ],
)
def test_seeded_run_is_valid_and_leaves_nothing(tmp_path: Path, seed: int, nemeses: str) -> None:
    artifacts = tmp_path / "artifacts"
    code, out, left = chaos_run(artifacts, seed, nemeses, 30)
    assert code == 0, f"chaos run exited {code}:\n{out[-4000:]}"
    summary = _check_artifacts(artifacts, seed)
    assert summary["check"]["valid"] is True
    assert summary["counts"].get("send-ok", 0) > 0 and summary["counts"].get("read", 0) > 0
    assert not (artifacts / "cluster").exists(), "a valid run deletes its data directories"
    assert left == [], f"namespaces left behind: {left}"


def test_transactional_run_with_kill_and_partitions_is_valid(tmp_path: Path) -> None:
    """Transactional producers (some aborts), native and confluent-kafka transforms and
    observers of both isolation levels under kills, partitions and coordinator faults."""
    artifacts = tmp_path / "artifacts"
    code, out, left = chaos_run(
        artifacts, 3, "kill,partition,txn-coordinator", 30, "--workload", "transactional"
    )
    assert code == 0, f"chaos run exited {code}:\n{out[-4000:]}"
    # Two topics of 3 partitions, each read with both isolation levels.
    summary = _check_artifacts(artifacts, 3, final_reads=12)
    check = summary["check"]
    assert check["valid"] is True and check["anomalies"] == {}
    assert check["transactions"]["committed"] > 0 and check["transactions"]["aborted"] > 0
    ops = read_history(artifacts / "history.jsonl")
    transforms = {op.process for op in ops if op.f == "txn" and op.process.startswith("transform")}
    assert transforms, "no consume-transform-produce transaction"
    offsets = [op for op in ops if op.f == "group-offsets" and op.type == "ok"]
    assert offsets and offsets[-1].value["offsets"], "the transform group committed nothing"
    assert left == [], f"namespaces left behind: {left}"


def test_ctrl_c_cleans_up_namespaces_processes_and_tmpfs(tmp_path: Path) -> None:
    artifacts = tmp_path / "artifacts"
    argv = [
        sys.executable,
        "-m",
        "deploy.cli",
        "chaos",
        "run",
        "--nemesis",
        "full-disk,pause",
        "--time-limit",
        "120",
        "--seed",
        "3",
        "--artifacts",
        str(artifacts),
    ]
    proc = subprocess.Popen(
        argv,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        text=True,
    )
    name = f"{NAMESPACE_PREFIX}{proc.pid % 100_000}"
    try:
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:  # bounded: the runner ends by itself after its time limit
            lines.append(line)
            if "cluster ready" in line:
                break
        assert any("cluster ready" in x for x in lines), "".join(lines)
        assert name in _namespaces()
        tmpfs_dir = str(artifacts / "cluster")
        with open("/proc/mounts", encoding="utf-8") as f:
            assert any(tmpfs_dir in line for line in f), "the full-disk tmpfs is mounted"
        pids = subprocess.run(
            ["ip", "netns", "pids", f"{name}-1"], capture_output=True, text=True, timeout=10
        ).stdout.split()
        assert pids, "a controller runs in its namespace"
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends
        rest, _ = proc.communicate(timeout=60)
        assert proc.returncode == 130, rest
        assert not any(n == name or n.startswith(name + "-") for n in _namespaces())
        with open("/proc/mounts", encoding="utf-8") as f:
            assert not any(tmpfs_dir in line for line in f), "tmpfs left mounted"
        for pid in pids:
            assert not Path(f"/proc/{pid}").exists(), f"node process {pid} survived"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        cleanup_leftovers(cluster_name=name)
