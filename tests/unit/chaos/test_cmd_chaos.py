"""``kraftlog chaos toxiproxy`` serves Toxiproxy's API (the server itself is tested in
test_toxiproxy*.py); ``kraftlog chaos run`` rejects bad arguments with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from deploy.cli import main
from deploy.ports import free_ports

REPO = Path(__file__).resolve().parents[3]


def test_toxiproxy_command_serves_the_api() -> None:
    (port,) = free_ports(1)
    proc = subprocess.Popen(
        [sys.executable, "-m", "deploy.cli", "chaos", "toxiproxy", "--port", str(port)],
        cwd=REPO,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        body = None
        while body is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/proxies", timeout=2) as r:
                    body = json.loads(r.read())
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.1)
        assert body == {}
    finally:
        proc.terminate()
        proc.wait(10)
        assert proc.stderr is not None
        proc.stderr.close()


def test_run_rejects_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["chaos", "run", "--artifacts", str(tmp_path)]
    for extra, message in (
        (["--nemesis", "kill,meteor"], "unknown nemesis meteor"),
        (["--producers", "fast:1"], "--producers item"),
        (["--hold", "5"], "--hold must be MIN,MAX"),
        (["--nemesis", "kill", "--bootstrap", "127.0.0.1:1"], "nemeses need a cluster"),
    ):
        assert main([*base, *extra]) == 2, extra
        assert message in capsys.readouterr().err, extra
    assert not any(tmp_path.iterdir()), "nothing is written for a rejected run"
