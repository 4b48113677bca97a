"""Helpers shared by the log cleaner tests: keyed appends (plain and transactional), reading
a log back record by record (as it is, and as a read_committed consumer sees it), and running
one cleaning."""

from __future__ import annotations

import math

from common.log_config import LogConfig
from common.record_batch import RecordBatchHeader, iter_batch_headers
from data_plane.storage.compaction.cleaner import Cleaner, CleanResult
from data_plane.storage.compaction.offset_map import OffsetMap
from data_plane.storage.compaction.throttler import Throttler
from data_plane.storage.log import FetchIsolation, Log
from data_plane.storage.record_codec import (
    DecodedRecord,
    Record,
    build_batch,
    decode_records,
    read_end_txn_marker,
)

COMPACT = LogConfig(
    cleanup_policy="compact",
    segment_bytes=1024,
    min_cleanable_dirty_ratio=0.01,
    delete_retention_ms=1000,
    file_delete_delay_ms=0,
)


def keyed(pairs: list[tuple[bytes, bytes | None]], timestamp: int = 1000, **kwargs) -> bytearray:
    return build_batch([Record(k, v, timestamp + i) for i, (k, v) in enumerate(pairs)], **kwargs)


def append_keyed(log: Log, pairs: list[tuple[bytes, bytes | None]], **kwargs) -> int:
    """Append one batch; return its first offset (the high watermark follows the LEO)."""
    info = log.append(keyed(pairs, **kwargs), 0)
    log.update_high_watermark(log.log_end_offset)
    return info.first_offset


class TxnProducer:
    """A transactional producer of keyed batches on one partition (its sequence continues
    across batches)."""

    def __init__(self, pid: int, epoch: int = 0) -> None:
        self.pid = pid
        self.epoch = epoch
        self.seq = 0

    def append(self, log: Log, pairs: list[tuple[bytes, bytes | None]], **kwargs) -> int:
        """Append one transactional batch; return its first offset (the high watermark
        follows the LEO)."""
        batch = keyed(
            pairs,
            producer_id=self.pid,
            producer_epoch=self.epoch,
            base_sequence=self.seq,
            is_transactional=True,
            **kwargs,
        )
        self.seq += len(pairs)
        info = log.append(batch, 0)
        log.update_high_watermark(log.log_end_offset)
        return info.first_offset

    def end(self, log: Log, *, committed: bool) -> int:
        """Append this producer's end marker; return its offset."""
        info = log.append_end_txn_marker(
            producer_id=self.pid,
            producer_epoch=self.epoch,
            coordinator_epoch=0,
            committed=committed,
            leader_epoch=0,
        )
        log.update_high_watermark(log.log_end_offset)
        return info.first_offset


def read_committed(log: Log) -> list[DecodedRecord]:
    """The records a read_committed consumer gets, fetching up to the last stable offset and
    dropping aborted batches as the Java client does: per fetch, a producer enters the
    aborted set at the first batch reaching an aborted transaction's first offset and leaves
    it at its ABORT marker; its transactional batches are skipped meanwhile."""
    records: list[DecodedRecord] = []
    offset = log.log_start_offset
    for _ in range(100_000):
        fetched = log.read(offset, 1 << 20, isolation=FetchIsolation.TXN_COMMITTED)
        if fetched.length == 0:
            break
        pending = sorted(
            log.collect_aborted_transactions(offset, fetched), key=lambda t: t.first_offset
        )
        aborted_producers: set[int] = set()
        data = fetched.read_bytes()
        pos = 0
        for h in iter_batch_headers(data, allow_partial_tail=True):
            while pending and pending[0].first_offset <= h.last_offset:
                aborted_producers.add(pending.pop(0).producer_id)
            if h.is_control:
                marker = read_end_txn_marker(data, pos)
                if marker is not None and not marker.committed:
                    aborted_producers.discard(h.producer_id)
            elif not (h.is_transactional and h.producer_id in aborted_producers):
                records.extend(r for r in decode_records(data, pos)[1] if r.offset >= offset)
            pos += h.size_in_bytes
            offset = h.next_offset
    return records


def read_all(log: Log) -> tuple[list[RecordBatchHeader], list[DecodedRecord]]:
    """Every batch header and record from the log start to the high watermark."""
    headers: list[RecordBatchHeader] = []
    records: list[DecodedRecord] = []
    offset = log.log_start_offset
    for _ in range(100_000):
        if offset >= log.high_watermark:
            break
        data = log.read(offset, 1 << 20).read_bytes()
        if not data:
            break
        pos = 0
        for h in iter_batch_headers(data, allow_partial_tail=True):
            _, recs = decode_records(data, pos)
            headers.append(h)
            records.extend(recs)
            pos += h.size_in_bytes
            offset = h.next_offset
    return headers, records


def latest_values(records: list[DecodedRecord]) -> dict[bytes, bytes | None]:
    out: dict[bytes | None, bytes | None] = {}
    for r in records:
        out[r.key] = r.value
    return out  # type: ignore[return-value]


def make_cleaner(clock, *, memory_bytes: int = 1 << 20) -> Cleaner:
    return Cleaner(OffsetMap(memory_bytes), throttler=Throttler(math.inf), clock_ms=clock)


def clean(log: Log, clock, checkpoint: int | None = None, **kwargs) -> CleanResult:
    return make_cleaner(clock, **kwargs).clean(log, checkpoint)
