"""Group test helpers: member processes (member.py) and what their event files say."""

from __future__ import annotations

import gc
import json
import os
import signal
import socket
import subprocess
import sys
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

MEMBER_SCRIPT = Path(__file__).with_name("member.py")
DEADLINE_S = 60.0
STOP_GRACE_S = 20.0

# Broker settings for group tests: one partition of __consumer_offsets is plenty, and a group's
# first rebalance need not wait the 3 s default for more members.
GROUP_OVERRIDES = {
    "offsets.topic.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
}


def wait_for(cond: Callable[[], Any], what: str, timeout_s: float = DEADLINE_S) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.1)


class Member:
    """A member process and its event file."""

    def __init__(self, proc: subprocess.Popen[bytes], out: Path, name: str) -> None:
        self.proc = proc
        self.out = out
        self.name = name

    def events(self) -> list[dict[str, Any]]:
        if not self.out.exists():
            return []
        lines = self.out.read_text(encoding="utf-8").splitlines()
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                break  # a line being written right now
        return out

    def assignment(self) -> list[int] | None:
        """The member's current partitions (None before its first assignment)."""
        current: list[int] | None = None
        for e in self.events():
            if e["e"] == "assigned":
                current = e["parts"]
            elif e["e"] == "revoked":
                current = []
        return current

    def records(self) -> list[tuple[int, int, str]]:
        return [(e["p"], e["o"], e["v"]) for e in self.events() if e["e"] == "rec"]

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        """SIGTERM: the member closes its consumer (LeaveGroup) and exits."""
        if self.alive:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                self.kill()

    def kill(self) -> None:
        if self.alive:
            self.proc.kill()
        self.proc.wait(STOP_GRACE_S)


@contextmanager
def member_pool(base: Path) -> Iterator[Callable[..., Member]]:
    """``start(client, bootstrap, topic, group, name)`` runs a member; every member still
    running is killed when the context ends (also on failure)."""
    members: list[Member] = []
    base.mkdir(parents=True, exist_ok=True)

    def start(
        client: str,
        bootstrap: str,
        topic: str,
        group: str,
        name: str,
        instance_id: str | None = None,
    ) -> Member:
        out = base / f"{name}.jsonl"
        log = open(base / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        try:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    str(MEMBER_SCRIPT),
                    "--client",
                    client,
                    "--bootstrap",
                    bootstrap,
                    "--topic",
                    topic,
                    "--group",
                    group,
                    "--out",
                    str(out),
                    "--name",
                    name,
                    *(["--instance-id", instance_id] if instance_id else []),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONWARNINGS": "ignore"},
            )
        finally:
            log.close()
        m = Member(proc, out, name)
        members.append(m)
        return m

    try:
        yield start
    finally:
        for m in members:
            if m.alive:
                m.kill()


def balanced(members: list[Member], partitions: int) -> bool:
    """Every member holds its share (sizes differ by at most one) and together all partitions,
    each exactly once."""
    assignments = [m.assignment() for m in members]
    if any(a is None for a in assignments):
        return False
    flat = [p for a in assignments for p in a or ()]
    sizes = [len(a or ()) for a in assignments]
    return sorted(flat) == list(range(partitions)) and max(sizes) - min(sizes) <= 1


def close_leaked_client_sockets() -> None:
    """kafka-python 3.0 does not close the socket of a failed connect (kafka/net/inet.py; a
    kept traceback holds the frame), and connects to a killed broker fail. Close those sockets
    so their ResourceWarning (an error in these tests) does not fire at interpreter exit."""
    gc.collect()
    for obj in gc.get_objects():
        if isinstance(obj, socket.socket) and obj.fileno() >= 0:
            frames = [r for r in gc.get_referrers(obj) if isinstance(r, types.FrameType)]
            if any(f.f_code.co_filename.endswith("kafka/net/inet.py") for f in frames):
                obj.close()


def leader_of(bootstrap: str, topic: str, partition: int) -> int | None:
    """The partition's leader as confluent-kafka's metadata names it (None: none or unknown)."""
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    t = md.topics.get(topic)
    if t is None or t.error is not None or partition not in t.partitions:
        return None
    leader = t.partitions[partition].leader
    return leader if leader >= 0 else None
