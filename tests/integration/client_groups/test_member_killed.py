"""A native group member killed with kill -9 sends no LeaveGroup: the coordinator expires its
session and the surviving member takes over its partitions from the committed offsets."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kraftlog_client import Consumer, TopicPartition
from tests.integration.client_groups.conftest import MEMBER

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
DEADLINE_S = 60.0

CHILD = textwrap.dedent("""
    import sys
    from kraftlog_client import Consumer
    bootstrap, group, topic = sys.argv[1:4]
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "doomed",
                  "auto.offset.reset": "earliest", "session.timeout.ms": "2000",
                  "heartbeat.interval.ms": "300", "auto.commit.interval.ms": "100"})
    c.subscribe([topic])
    reported = False
    while True:
        c.poll(100)
        if c.assignment() and not reported:
            print("assigned", len(c.assignment()), flush=True)
            reported = True
""")


def test_killed_member_is_expired_and_its_partitions_move(
    bootstrap: str,
    new_topic: Callable[..., str],
    group_id: str,
    produce: Callable[..., list[bytes]],
) -> None:
    topic = new_topic(2)
    produce(topic, 20, 2)
    # The survivor never commits: offset 10 of the other partition can only be the child's.
    survivor = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group_id,
            **MEMBER,
            "session.timeout.ms": "2000",
            "enable.auto.commit": "false",
        }
    )
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, bootstrap, group_id, topic],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
    )
    try:
        survivor.subscribe([topic])
        assert child.stdout is not None
        os.set_blocking(child.stdout.fileno(), False)
        deadline = time.monotonic() + DEADLINE_S
        seen: list = []
        child_out = ""
        while not (len(survivor.assignment()) == 1 and "assigned 1" in child_out):
            assert time.monotonic() < deadline, (survivor.assignment(), child_out)
            seen += survivor.poll(50)
            try:
                child_out += os.read(child.stdout.fileno(), 4096).decode()
            except BlockingIOError:
                pass
        mine = next(iter(survivor.assignment()))
        theirs = TopicPartition(topic, 1 - mine.partition)
        # The child reads and auto-commits its partition; wait for the commit to show.
        while survivor.committed([theirs])[theirs] != 10:
            assert time.monotonic() < deadline, "the child did not commit"
            seen += survivor.poll(50)
        seen = []
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        while len(survivor.assignment()) != 2:
            assert time.monotonic() < deadline, "the dead member's session did not expire"
            seen += survivor.poll(50)
        # From the dead member's commit: nothing of its partition is read again.
        while survivor.position(theirs) < 10:
            seen += survivor.poll(50)
        assert [r for r in seen if r.partition == theirs.partition] == []
        assert survivor.position(theirs) == 10
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        if child.stdout is not None:
            child.stdout.close()
        survivor.close()
