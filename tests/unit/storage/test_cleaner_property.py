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

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.compression import Compression
from common.log_config import LogConfig
from data_plane.storage.log import Log

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


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(steps=st.lists(step, min_size=5, max_size=60), segment_bytes=st.sampled_from([300, 800]))
def test_cleaned_log_equals_the_latest_committed_value_per_key(steps, segment_bytes) -> None:
    config = dataclasses.replace(COMPACT, segment_bytes=segment_bytes)
    clock = ManualClock()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t-0")
        log = Log(path, config, topic="t", partition=0, clock_ms=clock)
        try:
            producers = {pid: TxnProducer(pid) for pid in PRODUCERS}
            # offset -> (key, value, (producer, transaction number) or None for a plain write)
            written: Written = {}
            txn_number = dict.fromkeys(PRODUCERS, 0)
            open_txn: set[int] = set()
            aborted: set[tuple[int, int]] = set()
            checkpoint: int | None = None
            for kind, arg, compression in steps:
                if kind == "write":
                    info = log.append(keyed(arg, compression=compression), 0)
                    for i, (key, value) in enumerate(arg):
                        written[info.first_offset + i] = (key, value, None)
                    log.update_high_watermark(log.log_end_offset)
                elif kind == "txn":
                    pid, pairs = arg
                    first = producers[pid].append(log, pairs, compression=compression)
                    open_txn.add(pid)
                    for i, (key, value) in enumerate(pairs):
                        written[first + i] = (key, value, (pid, txn_number[pid]))
                elif kind == "end":
                    pid, committed = arg
                    producers[pid].end(log, committed=committed)
                    if pid in open_txn:  # else a marker of no transaction (legal, empty)
                        if not committed:
                            aborted.add((pid, txn_number[pid]))
                        open_txn.discard(pid)
                        txn_number[pid] += 1
                elif kind == "clean":
                    if arg:
                        log.roll()
                    before = observed(log)
                    result = clean(log, clock, checkpoint)
                    assert result.completed
                    checkpoint = result.end_offset
                    assert observed(log) == before
                elif kind == "tick":
                    clock.advance(arg)
                elif kind == "expire":
                    log.remove_expired_producers(clock(), PRODUCER_EXPIRATION_MS)
                    for pid, producer in producers.items():
                        if log.producer_state.last_entry(pid) is None:
                            # As a client told UNKNOWN_PRODUCER_ID: a new epoch from 0.
                            producer.epoch += 1
                            producer.seq = 0
                else:
                    before = observed(log)
                    log = reopen(log, path, clock, arg)
                    assert observed(log) == before
            for pid in sorted(open_txn):
                producers[pid].end(log, committed=True)
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
                clock.advance(config.delete_retention_ms)
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
            log = Log(path, config, topic="t", partition=0, clock_ms=clock, high_watermark=hw)
        finally:
            log.close()
    offsets = [r.offset for r in records]
    assert offsets == sorted(set(offsets))
    for r in records:
        key, value, txn = written[r.offset]
        assert (key, value) == (r.key, r.value)
        assert txn not in aborted
    expected: dict[bytes, bytes | None] = {}
    for offset in sorted(written):
        key, value, txn = written[offset]
        if txn not in aborted:
            expected[key] = value
    assert visible == {k: v for k, v in expected.items() if v is not None}
    # A key whose last committed write is a tombstone may keep the tombstone (not yet past
    # its horizon) but never a value; the last record of every key is its last write.
    got: dict[bytes, bytes | None] = {}
    for r in records:
        got[r.key] = r.value  # type: ignore[index]
    for key, value in got.items():
        assert value == expected[key]
