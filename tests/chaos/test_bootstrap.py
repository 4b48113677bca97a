"""``kraftlog chaos run --bootstrap``: the workload, final read and checks against a cluster
the runner did not start (a plain LocalCluster on 127.0.0.1; no nemesis, no root needed).
On demand (marker slow, KRAFTLOG_SLOW=1): the CI smoke already covers the same workload."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.clusters import running_cluster

REPO = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("KRAFTLOG_SLOW") != "1", reason="set KRAFTLOG_SLOW=1"),
]


def test_run_against_an_existing_cluster(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "cluster", controllers=1, brokers=3) as cluster:
        artifacts = tmp_path / "artifacts"
        argv = [
            sys.executable,
            "-m",
            "deploy.cli",
            "chaos",
            "run",
            "--nemesis",
            "none",
            "--bootstrap",
            ",".join(cluster.bootstrap_servers()),
            "--time-limit",
            "15",
            "--seed",
            "5",
            "--recovery",
            "5",
            "--artifacts",
            str(artifacts),
        ]
        done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr[-4000:]
        summary = json.loads((artifacts / "run-summary.json").read_text())
        assert summary["check"]["valid"] is True
        assert summary["check"]["sends"]["ok"] > 0
        run = json.loads((artifacts / "run.json").read_text())
        assert run["config"]["topic"].startswith("chaos-5-")  # a fresh topic per run
        assert not (artifacts / "cluster").exists() and not (artifacts / "logs").exists()
        refused = subprocess.run(
            [*argv[:6], "kill", *argv[7:-1], str(tmp_path / "other")],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert refused.returncode == 2 and "nemeses need a cluster" in refused.stderr
