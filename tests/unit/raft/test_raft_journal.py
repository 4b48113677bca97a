from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from raft.dump import DumpContents, DumpCorruptError, read_dump, write_dump
from raft.journal import JOURNAL_MAGIC, DurableJournal, JournalCorruptError


def open_journal(d: Path) -> DurableJournal:
    return DurableJournal(str(d / "j.log"), str(d / "meta.json"))


def entries(j: DurableJournal) -> list[tuple[bytes, int, int]]:
    return list(j[:])


def test_entries_survive_reopen(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    for i in range(1, 6):
        j.add(b"cmd%d" % i, i, 1)
    assert j.dirty
    j.sync()
    assert not j.dirty and j.sync_count == 1
    j._destroy()
    j = open_journal(tmp_path)
    assert entries(j) == [(b"cmd%d" % i, i, 1) for i in range(1, 6)]
    assert j[-1] == (b"cmd5", 5, 1) and len(j) == 5 and j.term_at(3) == 1 and j.term_at(9) is None


def test_a_torn_tail_is_truncated_on_open(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    j.add(b"one", 1, 1)
    j.add(b"two", 2, 1)
    j._destroy()
    path = tmp_path / "j.log"
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate(size - 2)  # half-written last record
    j = open_journal(tmp_path)
    assert entries(j) == [(b"one", 1, 1)]
    j.add(b"three", 2, 2)
    j._destroy()
    assert entries(open_journal(tmp_path)) == [(b"one", 1, 1), (b"three", 2, 2)]


def test_a_corrupt_record_ends_the_journal(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    j.add(b"one", 1, 1)
    j.add(b"two", 2, 1)
    j._destroy()
    data = bytearray((tmp_path / "j.log").read_bytes())
    data[-1] ^= 0xFF
    (tmp_path / "j.log").write_bytes(bytes(data))
    assert entries(open_journal(tmp_path)) == [(b"one", 1, 1)]


def test_a_foreign_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "j.log").write_bytes(b"PYSYNCOBJ" + b"\0" * 40)
    with pytest.raises(JournalCorruptError):
        open_journal(tmp_path)


def test_truncation_keeps_identical_resent_entries_on_disk(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    for i in range(1, 6):
        j.add(b"c%d" % i, i, 1)
    j.sync()
    size = (tmp_path / "j.log").stat().st_size
    j.deleteEntriesFrom(2)  # pysyncobj: the leader re-sends entries 3.. it already sent
    assert len(j) == 2
    for i in range(3, 7):
        j.add(b"c%d" % i, i, 1)
    # entries 3..5 were reused, only 6 was written
    assert (tmp_path / "j.log").stat().st_size > size
    j.sync()
    j._destroy()
    assert entries(open_journal(tmp_path)) == [(b"c%d" % i, i, 1) for i in range(1, 7)]


def test_truncation_with_a_conflicting_entry_rewrites_from_there(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    for i in range(1, 6):
        j.add(b"c%d" % i, i, 1)
    j.deleteEntriesFrom(2)
    j.add(b"c3", 3, 1)  # same
    j.add(b"new4", 4, 2)  # conflict: 4 and 5 go
    assert entries(j)[-1] == (b"new4", 4, 2) and len(j) == 4
    j.sync()
    j._destroy()
    assert entries(open_journal(tmp_path)) == [
        (b"c1", 1, 1), (b"c2", 2, 1), (b"c3", 3, 1), (b"new4", 4, 2)
    ]  # fmt: skip


def test_truncation_without_re_adds_is_durable_at_sync(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    for i in range(1, 6):
        j.add(b"c%d" % i, i, 1)
    j.deleteEntriesFrom(3)
    assert j.dirty
    j.sync()
    j._destroy()
    assert [e[1] for e in entries(open_journal(tmp_path))] == [1, 2, 3]


def test_front_compaction_and_clear_are_durable(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    for i in range(1, 11):
        j.add(b"c%d" % i, i, 1)
    j.deleteEntriesTo(7)
    assert [e[1] for e in entries(j)] == [8, 9, 10]
    j.add(b"c11", 11, 2)
    j._destroy()
    j = open_journal(tmp_path)
    assert [e[1] for e in entries(j)] == [8, 9, 10, 11] and j.term_at(11) == 2
    j.clear()
    j._destroy()
    assert (tmp_path / "j.log").read_bytes() == JOURNAL_MAGIC


def test_term_and_vote_are_stored_before_returning(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    j.setCurrentTerm(7, "127.0.0.1:9093")
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["current_term"] == 7 and meta["voted_for"] == "127.0.0.1:9093"
    j.setRaftCommitIndex(42)
    j.onOneSecondTimer()
    j2 = open_journal(tmp_path)
    assert (j2.getCurrentTerm(), j2.getVotedForNodeId(), j2.getRaftCommitIndex()) == (
        7,
        "127.0.0.1:9093",
        42,
    )
    j._destroy()
    j2._destroy()


def test_trim_to_dump_drops_entries_a_dump_already_covers(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    for i in range(1, 11):
        j.add(b"c%d" % i, i, 1)
    j.trim_to_dump([(b"c6", 6, 1), (b"c7", 7, 1)])
    assert [e[1] for e in entries(j)] == [6, 7, 8, 9, 10]
    j.trim_to_dump([(b"other", 8, 1), (b"c9", 9, 1)])  # not our entry: leave the journal
    assert len(j) == 5
    j._destroy()


def test_dump_round_trip_and_corruption(tmp_path: Path) -> None:
    path = str(tmp_path / "dump.bin")
    contents = DumpContents(
        state={"version": 1, "tail": [[0, 1, b"r", False]]},
        last_entry=(b"\x00cmd", 9, 2),
        prev_entry=(b"\x01", 8, 2),
        cluster=["127.0.0.1:1", "127.0.0.1:2"],
    )
    write_dump(path, contents)
    assert read_dump(path, make_durable=True) == contents
    data = bytearray(Path(path).read_bytes())
    data[-3] ^= 0x55
    Path(path).write_bytes(bytes(data))
    with pytest.raises(DumpCorruptError):
        read_dump(path)
    Path(path).write_bytes(bytes(data[:20]))
    with pytest.raises(DumpCorruptError):
        read_dump(path)


def test_a_failed_write_leaves_no_partial_record(tmp_path: Path, monkeypatch) -> None:
    j = open_journal(tmp_path)
    j.add(b"one", 1, 1)
    real_write = os.write

    def short_then_fail(fd, data):
        if fd == j._fd:
            real_write(fd, bytes(data[:5]))
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", short_then_fail)
    with pytest.raises(OSError):
        j.add(b"two", 2, 1)
    monkeypatch.setattr(os, "write", real_write)
    j.add(b"three", 2, 1)
    j._destroy()
    assert entries(open_journal(tmp_path)) == [(b"one", 1, 1), (b"three", 2, 1)]


def test_a_corrupt_dump_stops_the_voter_with_a_clear_error(tmp_path: Path) -> None:
    from raft.api import MetadataLogError
    from raft.config import RaftConfig
    from raft.metadata_log import MetadataLog

    meta = tmp_path / "meta"
    meta.mkdir()
    (meta / "raft-dump.bin").write_bytes(b"KLRAFTD1" + b"\xff" * 30)
    config = RaftConfig(
        node_id=1,
        quorum_voters="1@127.0.0.1:1",
        metadata_log_dir=str(meta),
        quorum_secret="x",
    )
    log = MetadataLog(config, lambda prev, entries: b"")
    with pytest.raises(MetadataLogError, match=r"raft-dump\.bin"):
        log.start()
