"""Exactly-once through kill -9: a streaming query (kraftlog source -> exactly-once kraftlog
sink) runs in its own driver process (tests/spark/eos_stream_driver.py, its own local[2]
session and JVM), is killed with SIGKILL at seeded random moments (during start-up, between
and inside micro-batches), and restarted from its checkpoint until it has consumed all its
input; a read_committed read of the output then holds every input record exactly once.

About 2 minutes; part of ``make test`` (KRAFTLOG_EOS_KILL_SEED picks other kill moments)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.spark.conftest import REPO_ROOT
from tests.spark.helpers import produce
from tests.spark.test_exactly_once_protocol import read_committed

pytestmark = [pytest.mark.integration]

RECORDS = 2000
MAX_OFFSETS_PER_TRIGGER = 100  # about 20 micro-batches per full run
KILLS = 5
# The kill moments' seed; KRAFTLOG_EOS_KILL_SEED picks other moments (to look for a flake).
SEED = int(os.environ.get("KRAFTLOG_EOS_KILL_SEED", "20261127"))
# A run is killed this many seconds after it starts: the JVM takes several seconds to come
# up, a micro-batch about one, so the range covers start-up and the middle of batches.
KILL_AFTER_S = (4.0, 25.0)
# Bound on the final, unkilled run (a loaded 2-core machine).
FINAL_RUN_TIMEOUT_S = 420.0
# Bound on reaping a killed process group.
REAP_TIMEOUT_S = 30.0


def _children() -> dict[int, list[int]]:
    """Parent pid -> child pids, from /proc."""
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        out.setdefault(ppid, []).append(int(entry))
    return out


def _descendants(pid: int) -> list[int]:
    tree = _children()
    found, todo = [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _kill(driver: subprocess.Popen) -> None:
    """SIGKILL the driver's process group (the driver and its JVM) and every descendant
    (Spark's Python worker daemon moves to a process group of its own)."""
    doomed = _descendants(driver.pid)
    os.killpg(driver.pid, signal.SIGKILL)  # start_new_session: the group id is the pid
    for pid in doomed:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    driver.wait(REAP_TIMEOUT_S)
    deadline = time.monotonic() + REAP_TIMEOUT_S
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") for p in doomed):
        time.sleep(0.2)


def _start(args: list[str], log: Path) -> subprocess.Popen:
    env = dict(os.environ)
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p
    )
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, str(REPO_ROOT / "tests" / "spark" / "eos_stream_driver.py"), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


def test_streaming_exactly_once_across_kill_9_of_the_driver(
    bootstrap: str, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    source = new_topic(partitions=2, replication_factor=1, prefix="eos-kill-in")
    sink = new_topic(partitions=2, replication_factor=3, prefix="eos-kill-out")
    inputs = [b"record-%05d" % i for i in range(RECORDS)]
    produce(bootstrap, source, inputs)
    args = [
        "--bootstrap", bootstrap,
        "--source", source,
        "--sink", sink,
        "--prefix", f"eos-kill-{uuid.uuid4().hex[:8]}",
        "--commit-log", "_eos_kill_decisions",
        "--checkpoint", str(tmp_path / "checkpoint"),
        "--max-offsets", str(MAX_OFFSETS_PER_TRIGGER),
    ]  # fmt: skip
    log = tmp_path / "driver.log"
    rng = random.Random(SEED)
    killed_running = 0
    for _ in range(KILLS):
        driver = _start(args, log)
        try:
            driver.wait(rng.uniform(*KILL_AFTER_S))
        except subprocess.TimeoutExpired:
            killed_running += 1
        _kill(driver)
    driver = _start(args, log)
    try:
        rc = driver.wait(FINAL_RUN_TIMEOUT_S)
    finally:
        _kill(driver)
    assert rc == 0, f"the last run failed ({rc}); see {log}:\n" + log.read_text()[-4000:]
    # Most kills must have hit a running driver, or the test shows nothing.
    assert killed_running >= KILLS - 1, f"only {killed_running} kills hit a running driver"
    got = read_committed(bootstrap, sink, RECORDS)
    assert len(got) == len(set(got)), "a record was written twice"
    assert sorted(got) == inputs
