"""Helpers shared by the log cleaner tests: keyed appends, reading a log back record by
record, and running one cleaning."""

from __future__ import annotations

import math

from common.log_config import LogConfig
from common.record_batch import RecordBatchHeader, iter_batch_headers
from data_plane.storage.compaction.cleaner import Cleaner, CleanResult
from data_plane.storage.compaction.offset_map import OffsetMap
from data_plane.storage.compaction.throttler import Throttler
from data_plane.storage.log import Log
from data_plane.storage.record_codec import DecodedRecord, Record, build_batch, decode_records

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
