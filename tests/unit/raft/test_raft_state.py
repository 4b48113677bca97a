from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raft.api import LeaderChange, LogEntry, Snapshot, SnapshotRequired
from raft.state import MetadataLogState, StateFormatError


def concat(prev: Snapshot | None, entries: Sequence[LogEntry]) -> bytes:
    return (prev.data if prev else b"") + b"".join(b"%d;" % e.offset for e in entries)


def test_batches_take_contiguous_offsets_and_the_entry_term_as_epoch() -> None:
    s = MetadataLogState(100, concat)
    out, entries = s.apply_batch([b"a", b"b"], 3, entry_term=3)
    assert (out.status, out.base_offset, out.last_offset, out.epoch) == ("ok", 0, 1, 3)
    assert entries == [LogEntry(0, 3, b"a"), LogEntry(1, 3, b"b")]
    out, _ = s.apply_batch([b"c"], 4, entry_term=4)
    assert (out.base_offset, out.last_offset, out.epoch) == (2, 2, 4)
    assert s.committed_offset == 2
    assert [e.record for e in s.read(1, 10)] == [b"b", b"c"]
    assert s.read(3, 10) == []


def test_a_batch_from_another_epoch_is_dropped_without_taking_an_offset() -> None:
    s = MetadataLogState(100, concat)
    s.apply_batch([b"a"], 2, entry_term=2)
    out, entries = s.apply_batch([b"stale"], 2, entry_term=3)
    assert out.status == "fenced" and entries == []
    assert s.committed_offset == 0


@pytest.mark.parametrize("records", [[], None, [b"a", "str"], "abc", [1]])
def test_malformed_batches_are_rejected_not_raised(records) -> None:
    s = MetadataLogState(100, concat)
    out, entries = s.apply_batch(records, 1, entry_term=1)
    assert out.status == "rejected" and entries == [] and s.committed_offset == -1


def test_leader_change_is_a_control_entry_and_is_fenced_by_its_epoch() -> None:
    s = MetadataLogState(100, concat)
    out, _ = s.apply_leader_change(2, 4, b"info", entry_term=5)
    assert out.status == "fenced" and s.leader is None
    out, entries = s.apply_leader_change(2, 5, b"info", entry_term=5)
    assert out.status == "ok" and entries[0].is_control
    assert LeaderChange.decode(entries[0].record) == LeaderChange(2, 5, b"info")
    assert s.leader == LeaderChange(2, 5, b"info")
    out, _ = s.apply_leader_change("x", 6, b"", entry_term=6)
    assert out.status == "rejected"


def test_the_tail_folds_into_a_snapshot_past_its_bound() -> None:
    s = MetadataLogState(4, concat)
    for i in range(5):
        s.apply_batch([b"r%d" % i], 1, entry_term=1)
    # 5 > 4 entries: all but the newest 2 folded
    assert s.snapshot == Snapshot(last_offset=2, epoch=1, data=b"0;1;2;")
    assert s.log_start_offset == 3
    assert [e.offset for e in s.read(3, 10)] == [3, 4]
    with pytest.raises(SnapshotRequired):
        s.read(2, 10)
    for i in range(3):
        s.apply_batch([b"x%d" % i], 1, entry_term=1)
    assert s.snapshot.data == b"0;1;2;3;4;5;"


def test_a_failing_builder_never_raises_and_loses_nothing() -> None:
    calls = []

    def broken(prev, entries):
        calls.append(len(entries))
        raise RuntimeError("bug")

    s = MetadataLogState(4, broken)
    for i in range(12):
        out, _ = s.apply_batch([b"r%d" % i], 1, entry_term=1)
        assert out.status == "ok" and out.base_offset == i
    assert s.snapshot is None
    assert [e.offset for e in s.read(0, 100)] == list(range(12))
    # retried every max_tail/2 offsets, not on every append
    assert calls == [3, 5, 7, 9]


def test_a_builder_returning_non_bytes_counts_as_a_failure() -> None:
    s = MetadataLogState(2, lambda prev, entries: "text")
    for _ in range(4):
        s.apply_batch([b"r"], 1, entry_term=1)
    assert s.snapshot is None and s.committed_offset == 3


def test_state_round_trips_through_its_dump_form() -> None:
    s = MetadataLogState(4, concat)
    s.apply_leader_change(1, 1, b"i", entry_term=1)
    for i in range(6):
        s.apply_batch([b"r%d" % i], 1, entry_term=1)
    t = MetadataLogState(4, concat)
    t.load_dict(s.to_dict())
    assert (t.snapshot, t.tail, t.next_offset, t.leader) == (
        s.snapshot,
        s.tail,
        s.next_offset,
        s.leader,
    )


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(version=99),
        lambda d: d.pop("tail"),
        lambda d: d.update(next_offset=1000),
        lambda d: d["tail"].pop(0),
        lambda d: d.update(snapshot="x"),
    ],
)
def test_a_malformed_dump_is_refused_and_leaves_the_state_alone(mutate) -> None:
    s = MetadataLogState(4, concat)
    for i in range(6):
        s.apply_batch([b"r%d" % i], 1, entry_term=1)
    data = s.to_dict()
    mutate(data)
    t = MetadataLogState(4, concat)
    t.apply_batch([b"own"], 1, entry_term=1)
    with pytest.raises(StateFormatError):
        t.load_dict(data)
    assert [e.record for e in t.tail] == [b"own"]


def test_read_validates_its_arguments() -> None:
    s = MetadataLogState(4, concat)
    with pytest.raises(ValueError):
        s.read(-1, 10)
    with pytest.raises(ValueError):
        s.read(0, 0)


# --- property test: any sequence of applies keeps the state machine's invariants ------------


ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("batch"),
            st.lists(st.binary(max_size=4), min_size=1, max_size=5),
            st.integers(0, 3),  # fence - term
        ),
        st.tuples(st.just("leader"), st.integers(0, 5), st.integers(0, 1)),
        st.tuples(st.just("term"), st.integers(1, 2), st.just(0)),
    ),
    max_size=80,
)


@settings(max_examples=150, deadline=None)
@given(ops=ops, max_tail=st.integers(2, 9), failing=st.sets(st.integers(0, 40), max_size=5))
def test_any_apply_sequence_keeps_offsets_contiguous_and_nothing_lost(ops, max_tail, failing):
    calls = [0]

    def builder(prev, entries):
        calls[0] += 1
        if calls[0] in failing:
            raise RuntimeError("injected")
        return concat(prev, entries)

    s = MetadataLogState(max_tail, builder)
    term = 1
    expected: list[tuple[int, bool]] = []  # (epoch, is_control) per offset
    for op in ops:
        if op[0] == "term":
            term += op[1]
            continue
        if op[0] == "batch":
            out, entries = s.apply_batch(op[1], term - (op[2] % 2), entry_term=term)
            accepted = op[2] % 2 == 0
            assert (out.status == "ok") == accepted
            if accepted:
                expected += [(term, False)] * len(op[1])
        else:
            out, entries = s.apply_leader_change(op[1], term - op[2], b"i", entry_term=term)
            assert (out.status == "ok") == (op[2] == 0)
            if op[2] == 0:
                expected.append((term, True))
        assert s.committed_offset == len(expected) - 1
        if out.status == "ok":
            assert [e.offset for e in entries] == list(range(out.base_offset, out.last_offset + 1))
    # snapshot + tail cover every offset exactly once, with the right epochs and kinds
    start = s.log_start_offset
    folded = s.snapshot.data.split(b";")[:-1] if s.snapshot else []
    assert [int(x) for x in folded] == list(range(start))
    tail = s.read(start, 10_000) if expected else []
    assert [(e.epoch, e.is_control) for e in tail] == expected[start:]
    assert len(s.tail) <= max_tail or any(c in failing for c in range(calls[0] + 1))
    copy = MetadataLogState(max_tail, builder)
    copy.load_dict(s.to_dict())
    assert (copy.snapshot, copy.tail, copy.next_offset) == (s.snapshot, s.tail, s.next_offset)
