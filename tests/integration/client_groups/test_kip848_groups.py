"""KIP-848 consumer groups with a real client: confluent-kafka (librdkafka) members with
``group.protocol=consumer``, each in a process of its own, on a real broker.

One run: 3 members share 12 partitions while records keep arriving; one member is killed
with kill -9 and its partitions move to the others after the session timeout, while the
others keep consuming and lose none of theirs; a fourth member joins and gets each of its
partitions only after the previous owner revoked it; every record is consumed, and only
records the dead member consumed but never committed are consumed twice. A member
subscribed by regular expression picks up a topic created after it joined.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import confluent_kafka
import pytest

from deploy.cli import main as cli_main
from kraftlog_client import Admin, NewTopic

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
PARTITIONS = 12
DEADLINE_S = 90.0
PRODUCE_EVERY_S = 0.05

MEMBER = textwrap.dedent("""
    import sys, time
    import confluent_kafka
    bootstrap, group, topic, log_path = sys.argv[1:5]
    log = open(log_path, "a", buffering=1)
    def assigned(c, parts):
        log.write(f"assign {time.time()} {','.join(str(p.partition) for p in parts)}\\n")
    def revoked(c, parts):
        log.write(f"revoke {time.time()} {','.join(str(p.partition) for p in parts)}\\n")
    c = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
        "auto.offset.reset": "earliest", "enable.auto.commit": False,
    })
    c.subscribe([topic], on_assign=assigned, on_revoke=revoked)
    stop = time.monotonic() + 240
    while time.monotonic() < stop:
        batch = [m for m in c.consume(200, 0.2) if m.error() is None]
        if not batch:
            continue
        for m in batch:
            log.write(f"proc {m.partition()} {m.offset()}\\n")
        try:
            done = c.commit(asynchronous=False)
        except confluent_kafka.KafkaException:
            continue  # a commit at a stale epoch: those records come again
        for tp in done or ():
            if tp.error is None and tp.offset >= 0:
                log.write(f"commit {tp.partition} {tp.offset}\\n")
""")


class Member:
    def __init__(self, bootstrap: str, group: str, topic: str, log: Path) -> None:
        self.log = log
        self.proc = subprocess.Popen(
            [sys.executable, "-c", MEMBER, bootstrap, group, topic, str(log)],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )

    def lines(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [ln.split() for ln in self.log.read_text().splitlines() if ln.strip()]

    def owned(self) -> set[int]:
        """Partitions held now, from the assign / revoke events."""
        held: set[int] = set()
        for words in self.lines():
            if words[0] in ("assign", "revoke") and len(words) > 2:
                parts = {int(p) for p in words[2].split(",")}
                held = held | parts if words[0] == "assign" else held - parts
        return held

    def events(self, kind: str) -> list[tuple[float, set[int]]]:
        return [
            (float(w[1]), {int(p) for p in w[2].split(",")})
            for w in self.lines()
            if w[0] == kind and len(w) > 2
        ]

    def processed(self) -> list[tuple[int, int]]:
        return [(int(w[1]), int(w[2])) for w in self.lines() if w[0] == "proc"]

    def commits(self) -> dict[int, int]:
        last: dict[int, int] = {}
        for w in self.lines():
            if w[0] == "commit":
                last[int(w[1])] = max(last.get(int(w[1]), 0), int(w[2]))
        return last

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def wait_until(cond: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


class Feed:
    """Records into every partition of ``topic`` until stopped: (partition, offset) sent."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.topic = topic
        self.sent: set[tuple[int, int]] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _delivered(self, err: object, msg: confluent_kafka.Message) -> None:
        if err is None:
            self.sent.add((msg.partition(), msg.offset()))

    def _run(self) -> None:
        i = 0
        deadline = time.monotonic() + 4 * DEADLINE_S
        while not self._stop.is_set() and time.monotonic() < deadline:
            for p in range(PARTITIONS):
                self.producer.produce(
                    self.topic, b"r%d" % i, partition=p, on_delivery=self._delivered
                )
                i += 1
            self.producer.poll(0)
            time.sleep(PRODUCE_EVERY_S)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self.producer.flush(30)


def test_consumer_protocol_members_share_move_and_consume_exactly_once(
    bootstrap: str, new_topic: Callable[..., str], group_id: str, tmp_path: Path
) -> None:
    topic = new_topic(PARTITIONS)
    feed = Feed(bootstrap, topic)
    members = [Member(bootstrap, group_id, topic, tmp_path / f"m{i}.log") for i in range(3)]
    try:
        # Settled, not just covered: while the third member joins, the first ones may still
        # own partitions they are about to revoke (the sets can add up to all 12 then).
        wait_until(
            lambda: (
                all(len(m.owned()) == PARTITIONS // len(members) for m in members)
                and sorted(p for m in members for p in m.owned()) == list(range(PARTITIONS))
            ),
            "3 members to share the 12 partitions evenly",
        )
        dead, survivors = members[0], members[1:]
        before = {id(m): m.owned() for m in survivors}
        dead.proc.send_signal(signal.SIGKILL)
        dead.proc.wait(10)
        killed_at = time.time()
        wait_until(
            lambda: sorted(p for m in survivors for p in m.owned()) == list(range(PARTITIONS)),
            "the survivors to take the dead member's partitions",
        )
        taken_at = max(t for m in survivors for t, _ in m.events("assign"))
        for m in survivors:
            # Nothing of a live member was revoked; it only gained partitions.
            assert not [e for e in m.events("revoke") if e[0] >= killed_at], m.lines()[-20:]
            assert before[id(m)] <= m.owned()
        # The survivors kept consuming their own partitions meanwhile.
        counts = [len(m.processed()) for m in survivors]
        time.sleep(1.0)
        assert all(len(m.processed()) > c for m, c in zip(survivors, counts, strict=True))
        assert taken_at > killed_at

        joiner = Member(bootstrap, group_id, topic, tmp_path / "m3.log")
        members.append(joiner)
        wait_until(lambda: len(joiner.owned()) >= 2, "the joiner to get its share")
        joined_at = {p: t for t, ps in joiner.events("assign") for p in ps}
        for p, t in joined_at.items():
            revokes = [rt for m in survivors for rt, ps in m.events("revoke") if p in ps]
            assert revokes and min(revokes) < t, f"partition {p} handed over before its revocation"
        feed.stop()
        live = [*survivors, joiner]

        def consumed_everything() -> bool:
            seen = {rec for m in members for rec in m.processed()}
            return feed.sent <= seen

        wait_until(consumed_everything, "every record to be consumed")
        # Exactly once, except what the dead member consumed and never committed.
        dead_commits = dead.commits()
        allowed_twice = {(p, o) for p, o in dead.processed() if o >= dead_commits.get(p, 0)}
        seen_once: set[tuple[int, int]] = set()
        for m in members:
            for rec in m.processed():
                assert rec not in seen_once or rec in allowed_twice, f"{rec} consumed twice"
                seen_once.add(rec)
        assert all(m.proc.poll() is None for m in live)
    finally:
        feed.stop()
        for m in members:
            m.stop()


def test_regex_subscription_picks_up_a_later_topic(
    bootstrap: str, admin: Admin, group_id: str
) -> None:
    prefix = f"rx848-{group_id}"

    def create(name: str, partitions: int) -> str:
        admin.create_topics([NewTopic(name, partitions, 1)])
        admin.wait_for_leaders([name], timeout_ms=30_000)
        return name

    create(f"{prefix}-a", 2)
    c = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group_id,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
        }
    )
    try:
        c.subscribe([f"^{prefix}-.*"])  # resolved by the coordinator (heartbeat v1)

        def assigned() -> bool:
            c.poll(0.2)
            return len(c.assignment()) == 2

        wait_until(assigned, "the first topic's partitions")
        later = create(f"{prefix}-b", 3)
        p = confluent_kafka.Producer({"bootstrap.servers": bootstrap})
        for i in range(3):
            p.produce(later, b"late", partition=i)
        p.flush(30)
        got: list[str] = []

        def read_later() -> bool:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                got.append(m.topic())
            return got.count(later) >= 3

        wait_until(read_later, f"records of {later}, created after the subscription")
        assert len(c.assignment()) == 5
    finally:
        c.close()


def test_groups_describe_shows_protocol_epochs_and_target(
    bootstrap: str,
    admin: Admin,
    new_topic: Callable[..., str],
    group_id: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    topic = new_topic(4)
    c = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group_id,
            "group.protocol": "consumer",
            "client.id": "kip848-cli",
        }
    )
    try:
        c.subscribe([topic])

        def assigned() -> bool:
            c.poll(0.2)
            return len(c.assignment()) == 4

        wait_until(assigned, "the member's assignment")
        d = admin.describe_groups([group_id])[group_id]
        assert (d.group_type, d.state, d.protocol) == ("consumer", "Stable", "uniform")
        (m,) = d.members
        assert m.member_epoch == d.assignment_epoch > 0 and m.client_id == "kip848-cli"
        assert sorted(tp.partition for tp in m.target_assignment) == [0, 1, 2, 3]
        capsys.readouterr()
        assert (
            cli_main(["groups", "describe", group_id, "--members", "--bootstrap-server", bootstrap])
            == 0
        )
        out = capsys.readouterr().out
        assert "consumer protocol" in out and "EPOCH" in out and "TARGET-ASSIGNMENT" in out
        assert m.member_id in out and f"{topic}-3" in out
    finally:
        c.close()
