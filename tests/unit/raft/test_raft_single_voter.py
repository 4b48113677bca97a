"""MetadataLog with a single voter (a one-node quorum on 127.0.0.1)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from deploy.ports import free_ports
from raft.api import (
    BatchTooLargeError,
    LeaderChange,
    LogEntry,
    MetadataLogError,
    Snapshot,
    SnapshotRequired,
    StaleEpochError,
)
from raft.config import RaftConfig
from raft.metadata_log import MetadataLog


def free_port() -> int:
    return free_ports(1)[0]


def counting_builder(prev: Snapshot | None, entries: Sequence[LogEntry]) -> bytes:
    return b"%d" % ((int(prev.data) if prev else 0) + len(entries))


def make_config(tmp_path: Path, port: int, **overrides) -> RaftConfig:
    return RaftConfig(
        node_id=1,
        quorum_voters=f"1@127.0.0.1:{port}",
        metadata_log_dir=str(tmp_path / "meta"),
        quorum_secret="unit-secret",
        election_timeout_ms=300,
        append_interval_ms=30,
        **overrides,
    )


def wait_leader(log: MetadataLog, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not log.is_leader and time.monotonic() < deadline:
        time.sleep(0.01)
    assert log.is_leader


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[list[MetadataLog]]:
    logs: list[MetadataLog] = []
    yield logs
    for log in logs:
        log.close()


def start(opened: list[MetadataLog], config: RaftConfig, builder=counting_builder) -> MetadataLog:
    log = MetadataLog(config, builder)
    opened.append(log)
    log.set_leader_info(b"grpc://c1:9095")
    log.start()
    wait_leader(log)
    return log


def test_a_new_leader_commits_its_leader_change_before_anything_else(tmp_path, opened) -> None:
    log = MetadataLog(make_config(tmp_path, free_port()), counting_builder)
    opened.append(log)
    seen: list[tuple[bool, int, int]] = []
    got = threading.Event()

    def on_leadership(is_leader: bool, epoch: int) -> None:
        seen.append((is_leader, epoch, log.committed_offset))
        got.set()

    log.add_leadership_listener(on_leadership)
    log.set_leader_info(b"grpc://c1:9095")
    log.start()
    assert got.wait(10)
    wait_leader(log)
    epoch = log.epoch
    assert seen == [(True, epoch, 0)]  # the control record had committed first
    (entry,) = log.read(0)
    assert entry.is_control and entry.epoch == epoch
    assert LeaderChange.decode(entry.record) == LeaderChange(1, epoch, b"grpc://c1:9095")
    assert log.leader_info() == b"grpc://c1:9095" and log.leader_id == 1
    log.close()
    assert seen[-1][:2] == (False, epoch)


def test_append_checks_and_errors(tmp_path, opened) -> None:
    log = start(opened, make_config(tmp_path, free_port(), max_batch_bytes=2048))
    epoch = log.epoch
    r = log.append([b"a", b"b"], expected_epoch=epoch)
    assert (r.base_offset, r.last_offset, r.epoch) == (1, 2, epoch)
    with pytest.raises(StaleEpochError):
        log.append([b"c"], expected_epoch=epoch - 1)
    with pytest.raises(BatchTooLargeError):
        log.append([b"x" * 2049])
    with pytest.raises(ValueError):
        log.append([])
    with pytest.raises(TypeError):
        log.append(["text"])  # type: ignore[list-item]
    assert log.committed_offset == 2
    assert log.wait_for_offset(2, 0.01) and not log.wait_for_offset(3, 0.05)


def test_malformed_and_fenced_proposals_are_rejected_without_wedging(tmp_path, opened) -> None:
    """What a peer with the secret but a bug could put in the log: apply must not raise."""
    log = start(opened, make_config(tmp_path, free_port()))
    node = log._node
    assert node is not None
    results: list[tuple[object, int]] = []
    done = threading.Event()

    def cb(result, error):
        results.append((result, error))
        if len(results) == 3:
            done.set()

    node.sync.kraft_append_batch("not-a-list", log.epoch, callback=cb)
    node.sync.kraft_append_batch([b"ok"], log.epoch + 5, callback=cb)
    node.sync.kraft_leader_change(None, log.epoch, b"", callback=cb)
    assert done.wait(10)
    assert [r.status for r, _ in results] == ["rejected", "fenced", "rejected"]
    assert log.committed_offset == 0
    assert log.append([b"after"]).base_offset == 1


def test_restart_keeps_everything_and_moves_to_a_higher_epoch(tmp_path, opened) -> None:
    config = make_config(tmp_path, free_port(), max_tail_records=10)
    log = start(opened, config)
    first_epoch = log.epoch
    for i in range(40):
        log.append([b"r%d" % i])
    top = log.committed_offset
    snap = log.latest_snapshot()
    assert snap is not None and snap.last_offset >= 20
    log.close()
    opened.remove(log)

    again = start(opened, config)
    assert again.epoch > first_epoch
    assert again.wait_for_offset(top + 1, 5)
    assert again.latest_snapshot() is not None
    assert again.latest_snapshot().last_offset >= snap.last_offset
    start_offset = again.log_start_offset
    with pytest.raises(SnapshotRequired):
        again.read(start_offset - 1)
    records = [e.record for e in again.read(start_offset, 100) if not e.is_control]
    assert records[-1] == b"r39"
    last = again.read(top + 1)[0]
    assert last.is_control and last.epoch == again.epoch
    # folded + tail: every record counted exactly once
    entries = again.read(start_offset, 100)
    assert int(again.latest_snapshot().data) + len(entries) == again.committed_offset + 1


def test_a_builder_that_raises_does_not_stop_appends(tmp_path, opened) -> None:
    def broken(prev, entries):
        raise RuntimeError("metadata bug")

    log = start(opened, make_config(tmp_path, free_port(), max_tail_records=4), builder=broken)
    results = [log.append([b"r%d" % i]) for i in range(20)]
    assert [r.base_offset for r in results] == list(range(1, 21))
    assert log.latest_snapshot() is None
    assert len(log.read(0, 100)) == 21


def test_a_port_in_use_fails_start_cleanly(tmp_path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        log = MetadataLog(make_config(tmp_path, busy.getsockname()[1]), counting_builder)
        with pytest.raises(MetadataLogError, match="cannot start"):
            log.start()


def test_calls_before_start_fail_clearly(tmp_path) -> None:
    log = MetadataLog(make_config(tmp_path, free_port()), counting_builder)
    with pytest.raises(MetadataLogError, match="not running"):
        log.append([b"x"])
    assert not log.is_leader and log.leader_id is None and log.committed_offset == -1
