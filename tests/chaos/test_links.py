"""Link faults of the chaos cluster, measured on the network path alone (echo servers in the
broker namespaces; see link_probe.py): a slow link adds the proxy's latency to new
connections and resets the existing direct ones, cuts block exactly one ordered pair (either
direction breaks TCP), and heal-all leaves no rule behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chaos.cluster import NAMESPACE_PREFIX, cleanup_leftovers, missing_requirements

REPO = Path(__file__).resolve().parents[2]
LATENCY_S = 0.2  # per direction, as link_probe sets it
ROUND_TRIPS = 3

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        bool(missing_requirements()),
        reason="chaos links need " + ", ".join(missing_requirements()),
    ),
]


def test_slow_cut_lossy_and_heal(tmp_path: Path) -> None:
    name = f"{NAMESPACE_PREFIX}t{os.getpid() % 10_000}"
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tests.chaos.link_probe", str(tmp_path / "c"), name],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        cleanup_leftovers(cluster_name=name)
    assert done.returncode == 0, done.stderr[-4000:]
    m = json.loads(done.stdout.strip().splitlines()[-1])
    fast = ROUND_TRIPS * 2 * LATENCY_S / 2  # well below the slowed round trips
    assert isinstance(m["baseline"], float) and m["baseline"] < fast, m
    assert isinstance(m["held_before"], float), m
    assert m["held_after_slow"] in ("ConnectionResetError", "BrokenPipeError", "closed"), m
    assert isinstance(m["slow"], float) and m["slow"] >= ROUND_TRIPS * 2 * LATENCY_S * 0.9, m
    assert isinstance(m["other_broker_while_slow"], float), m
    assert m["other_broker_while_slow"] < fast, m
    assert isinstance(m["after_unslow"], float) and m["after_unslow"] < fast, m
    assert m["cut"] in ("TimeoutError", "timeout"), m
    assert isinstance(m["other_broker_while_cut"], float), m
    assert isinstance(m["after_uncut"], float), m
    assert m["reverse_cut"] in ("TimeoutError", "timeout"), m
    rules = m["rules_while_faulty"]
    assert "--mode random --probability 0.5" in rules and "DNAT" in rules, rules
    assert "-j DROP" in rules and "tcp-reset" in rules, rules
    healed = m["rules_after_heal"]
    assert "DROP" not in healed and "DNAT" not in healed and "REJECT" not in healed, healed
    assert isinstance(m["after_heal"], float), m
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10)
    assert name not in listed.stdout
