"""Property: for random keyed histories (values and tombstones, batches of several records,
compression, transactions committed, aborted or left open, cleanings between writes, time
passing the delete horizon, producers expiring, restarts that may find only older producer
snapshots), the cleaned log read back holds the latest committed value of every key whose
last committed write is not a tombstone, no key whose last committed write is a tombstone
has a value, every record kept is one that was written at that offset and not aborted, and
no cleaning changes what a read_committed consumer sees (the latest value per key), the last
stable offset or the open transactions. In particular removing end markers never leaves a
transaction open, whichever producer snapshot (or none) a restart replays from."""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.compression import Compression
from common.log_config import LogConfig
from data_plane.storage.log import Log
from data_plane.storage.record_codec import DecodedRecord

from .cleaner_helpers import COMPACT, TxnProducer, clean, keyed, read_all, read_committed
from .conftest import ManualClock

KEYS = [b"a", b"b", b"c", b"d", b"e", b"f"]
PRODUCERS = (1, 2)

record = st.tuples(st.sampled_from(KEYS), st.one_of(st.none(), st.binary(min_size=1, max_size=40)))
codec = st.sampled_from([Compression.NONE, Compression.GZIP])
step = st.one_of(
    st.tuples(st.just("write"), st.lists(record, min_size=1, max_size=5), codec),
    st.tuples(
        st.just("txn"),
        st.tuples(st.sampled_from(PRODUCERS), st.lists(record, min_size=1, max_size=3)),
        codec,
    ),
    st.tuples(st.just("end"), st.tuples(st.sampled_from(PRODUCERS), st.booleans()), st.just(0)),
    st.tuples(st.just("clean"), st.booleans(), st.just(0)),
    st.tuples(st.just("tick"), st.integers(0, 2000), st.just(0)),
    # Restart; the argument is how many of the newest producer snapshots a crash lost.
    st.tuples(st.just("reopen"), st.integers(0, 2), st.just(0)),
    # The broker forgets producers silent for a while: their last batch is no longer kept,
    # so their last transaction's marker may go too.
    st.tuples(st.just("expire"), st.just(0), st.just(0)),
)
# producer.id.expiration.ms of the "expire" step.
PRODUCER_EXPIRATION_MS = 500

Written = dict[int, tuple[bytes, bytes | None, tuple[int, int] | None]]


def latest_committed(log: Log) -> dict[bytes, bytes]:
    """Key -> latest value a read_committed consumer sees (keys ending on a tombstone left
    out: the cleaner may or may not have removed the tombstone yet)."""
    latest: dict[bytes, bytes | None] = {}
    for r in read_committed(log):
        latest[r.key] = r.value  # type: ignore[index]
    return {k: v for k, v in latest.items() if v is not None}


def observed(log: Log) -> tuple[dict[bytes, bytes], int, dict[int, int]]:
    return (
        latest_committed(log),
        log.last_stable_offset,
        dict(log.producer_state.ongoing_transactions),
    )


def reopened_from_each_snapshot(
    path: str, config: LogConfig, clock: ManualClock, hw: int
) -> list[Log]:
    """The closed log at ``path`` opened as a restart would that finds nothing but one of
    its producer snapshots, or none (every one tried, each in a copy of the directory)."""
    names = sorted(n for n in os.listdir(path) if n.endswith(".snapshot"))
    out = []
    for keep in [None, *names]:
        copy = f"{path}-copy{len(out)}"
        shutil.copytree(path, f"{copy}/t-0")
        for name in names:
            if name != keep:
                os.unlink(os.path.join(copy, "t-0", name))
        out.append(
            Log(f"{copy}/t-0", config, topic="t", partition=0, clock_ms=clock, high_watermark=hw)
        )
    return out


def reopen(log: Log, path: str, clock: ManualClock, lost_snapshots: int) -> Log:
    hw = log.high_watermark
    log.close()
    if lost_snapshots:
        names = sorted(n for n in os.listdir(path) if n.endswith(".snapshot"))
        for name in names[-lost_snapshots:]:
            os.unlink(os.path.join(path, name))
    return Log(
        path,
        log.config,
        topic="t",
        partition=0,
        clock_ms=clock,
        high_watermark=hw,
        clean_shutdown=lost_snapshots == 0,
    )


class History:
    """The log under test and the model of what was written to it: ``written`` maps each
    offset to (key, value, (producer, transaction number) or None for a plain write);
    ``aborted`` holds the (producer, transaction number) of every aborted transaction and
    ``open_txn`` the producers inside one. Each step method applies one generated step."""

    def __init__(self, path: str, config: LogConfig, clock: ManualClock) -> None:
        self.path = path
        self.config = config
        self.clock = clock
        self.log = Log(path, config, topic="t", partition=0, clock_ms=clock)
        self.producers = {pid: TxnProducer(pid) for pid in PRODUCERS}
        self.written: Written = {}
        self.txn_number = dict.fromkeys(PRODUCERS, 0)
        self.open_txn: set[int] = set()
        self.aborted: set[tuple[int, int]] = set()
        self.checkpoint: int | None = None

    def write(self, pairs: list[tuple[bytes, bytes | None]], compression: int) -> None:
        info = self.log.append(keyed(pairs, compression=compression), 0)
        for i, (key, value) in enumerate(pairs):
            self.written[info.first_offset + i] = (key, value, None)
        self.log.update_high_watermark(self.log.log_end_offset)

    def txn(self, arg: tuple[int, list[tuple[bytes, bytes | None]]], compression: int) -> None:
        pid, pairs = arg
        first = self.producers[pid].append(self.log, pairs, compression=compression)
        self.open_txn.add(pid)
        for i, (key, value) in enumerate(pairs):
            self.written[first + i] = (key, value, (pid, self.txn_number[pid]))

    def end(self, arg: tuple[int, bool], _: int) -> None:
        pid, committed = arg
        self.producers[pid].end(self.log, committed=committed)
        if pid in self.open_txn:  # else a marker of no transaction (legal, empty)
            if not committed:
                self.aborted.add((pid, self.txn_number[pid]))
            self.open_txn.discard(pid)
            self.txn_number[pid] += 1

    def clean(self, roll: bool, _: int) -> None:
        if roll:
            self.log.roll()
        before = observed(self.log)
        result = clean(self.log, self.clock, self.checkpoint)
        assert result.completed
        self.checkpoint = result.end_offset
        assert observed(self.log) == before

    def tick(self, ms: int, _: int) -> None:
        self.clock.advance(ms)

    def expire(self, _: int, __: int) -> None:
        self.log.remove_expired_producers(self.clock(), PRODUCER_EXPIRATION_MS)
        for pid, producer in self.producers.items():
            if self.log.producer_state.last_entry(pid) is None:
                # As a client told UNKNOWN_PRODUCER_ID: a new epoch from 0.
                producer.epoch += 1
                producer.seq = 0

    def reopen(self, lost_snapshots: int, _: int) -> None:
        before = observed(self.log)
        self.log = reopen(self.log, self.path, self.clock, lost_snapshots)
        assert observed(self.log) == before

    def settle(self) -> None:
        """Commit the open transactions, forget every producer and clean twice a delete
        horizon apart, each cleaning leaving what a read_committed consumer sees alone."""
        log, clock = self.log, self.clock
        for pid in sorted(self.open_txn):
            self.producers[pid].end(log, committed=True)
        log.roll()
        # Every producer falls silent and is forgotten: no batch is kept for its sequence.
        clock.advance(PRODUCER_EXPIRATION_MS + 1)
        log.remove_expired_producers(clock(), PRODUCER_EXPIRATION_MS)
        assert log.producer_state.producers == {}
        # Two cleanings a delete horizon apart, each of the whole log (without the
        # checkpoint: a clean log is not cleaned again), remove every removable marker.
        for _ in range(2):
            before = observed(log)
            assert clean(log, clock).completed
            assert observed(log) == before
            clock.advance(self.config.delete_retention_ms)

    def expected(self) -> dict[bytes, bytes | None]:
        """Key -> its last committed write (None: a tombstone)."""
        expected: dict[bytes, bytes | None] = {}
        for offset in sorted(self.written):
            key, value, txn = self.written[offset]
            if txn not in self.aborted:
                expected[key] = value
        return expected


# Generated step kind -> the History method that applies it.
STEPS: dict[str, Callable[[History, Any, int], None]] = {
    "write": History.write,
    "txn": History.txn,
    "end": History.end,
    "clean": History.clean,
    "tick": History.tick,
    "expire": History.expire,
    "reopen": History.reopen,
}


def check_restarts(history: History) -> tuple[list[DecodedRecord], dict[bytes, bytes]]:
    """The settled log's data records and what a read_committed consumer sees; checks that
    no transaction is left open, in the log and after a restart from any of its producer
    snapshots (or none). Leaves ``history.log`` reopened."""
    log, path, config, clock = history.log, history.path, history.config, history.clock
    headers, records = read_all(log)
    markers = {h.base_offset for h in headers if h.is_control}
    records = [r for r in records if r.offset not in markers]
    visible = latest_committed(log)
    assert log.producer_state.ongoing_transactions == {}
    assert log.last_stable_offset == log.high_watermark == log.log_end_offset
    # An aborted transaction's index entry goes with its marker.
    indexed = {t.last_offset for s in log.segments() for t in s.txn_index.entries}
    assert indexed <= markers
    hw = log.high_watermark
    log.close()
    # Whichever snapshot a restart finds (or none), replay closes every transaction.
    for copy in reopened_from_each_snapshot(path, config, clock, hw):
        try:
            assert observed(copy) == (visible, hw, {})
        finally:
            copy.close()
    history.log = Log(path, config, topic="t", partition=0, clock_ms=clock, high_watermark=hw)
    return records, visible


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(steps=st.lists(step, min_size=5, max_size=60), segment_bytes=st.sampled_from([300, 800]))
def test_cleaned_log_equals_the_latest_committed_value_per_key(steps, segment_bytes) -> None:
    config = dataclasses.replace(COMPACT, segment_bytes=segment_bytes)
    with tempfile.TemporaryDirectory() as tmp:
        history = History(os.path.join(tmp, "t-0"), config, ManualClock())
        try:
            for kind, arg, compression in steps:
                STEPS[kind](history, arg, compression)
            history.settle()
            records, visible = check_restarts(history)
        finally:
            history.log.close()
    offsets = [r.offset for r in records]
    assert offsets == sorted(set(offsets))
    for r in records:
        key, value, txn = history.written[r.offset]
        assert (key, value) == (r.key, r.value)
        assert txn not in history.aborted
    expected = history.expected()
    assert visible == {k: v for k, v in expected.items() if v is not None}
    # A key whose last committed write is a tombstone may keep the tombstone (not yet past
    # its horizon) but never a value; the last record of every key is its last write.
    got: dict[bytes, bytes | None] = {}
    for r in records:
        got[r.key] = r.value  # type: ignore[index]
    for key, value in got.items():
        assert value == expected[key]
