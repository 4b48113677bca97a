"""``cleanup_leftovers`` (what ``kraftlog chaos cleanup`` runs) removes a SIGKILLed run's
namespaces and the processes inside them, stopped ones included, and nothing else."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from chaos.cluster import NAMESPACE_PREFIX, cleanup_leftovers, missing_requirements

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        bool(missing_requirements()), reason="needs " + ", ".join(missing_requirements())
    ),
]


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10)
    return {line.split()[0] for line in out.stdout.splitlines() if line.strip()}


def test_cleanup_removes_one_clusters_namespaces_and_processes() -> None:
    name = f"{NAMESPACE_PREFIX}x{os.getpid() % 10_000}"
    bystander = f"{name}0"  # same prefix, another cluster: must survive
    created = [name, f"{name}-1", bystander]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for ns in created:
            subprocess.run(["ip", "netns", "add", ns], check=True, timeout=10)
        for ns in (name, f"{name}-1"):
            procs.append(subprocess.Popen(["ip", "netns", "exec", ns, "sleep", "300"]))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not all(
            subprocess.run(
                ["ip", "netns", "pids", ns], capture_output=True, text=True, timeout=10
            ).stdout.strip()
            for ns in (name, f"{name}-1")
        ):
            time.sleep(0.05)
        os.kill(procs[1].pid, 19)  # SIGSTOP: a paused node must die too
        removed = cleanup_leftovers(cluster_name=name)
        for p in procs:
            assert p.wait(10) == -9
        assert f"namespace {name}" in removed and f"namespace {name}-1" in removed
        assert sum(1 for line in removed if line.startswith("process ")) == 2
        left = _namespaces()
        assert name not in left and f"{name}-1" not in left
        assert bystander in left
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)
        for ns in created:
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True, timeout=10)
