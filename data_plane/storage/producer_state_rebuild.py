"""Bringing a log's producer state up to date with its segments (Kafka's
``UnifiedLog.rebuildProducerState``), and the two writes that go with it: producer snapshots
and the aborted-transaction index entries of transactions that markers close.

The state is loaded from the newest usable ``<offset>.snapshot`` (producer_state.py) at or
above the log start offset, then batch headers are replayed from the snapshot's offset to the
log end offset; no record is decoded except end markers. Replay re-derives the transaction
index entries of the segments it covers, so they are cut at the replay point first. After a
clean shutdown without any snapshot the log never had an idempotent producer (close writes
one otherwise), so the scan is skipped, as Kafka does.

Thread-safety: none; the owning :class:`~data_plane.storage.log.Log` calls these with its
lock held (or before the log is shared).
"""

from __future__ import annotations

import logging

from data_plane.storage.local_log import LocalLog
from data_plane.storage.producer_state import CompletedTxn, MarkerReader, ProducerStateManager
from data_plane.storage.record_codec import read_end_txn_marker
from data_plane.storage.segment import LogSegment
from data_plane.storage.transaction_index import AbortedTxn

logger = logging.getLogger(__name__)


def index_aborted(segment: LogSegment, completed: list[tuple[CompletedTxn, int]]) -> None:
    """Add each aborted transaction of ``completed`` (with the last stable offset right after
    its marker) to ``segment``'s transaction index: the segment holding the marker."""
    for txn, lso in completed:
        if txn.is_aborted:
            segment.txn_index.append(
                AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, lso)
            )


def take_producer_snapshot(ps: ProducerStateManager, offset: int, log_name: str) -> None:
    """Snapshot ``ps`` as of ``offset`` unless the log never had an idempotent producer (then
    no files: a clean open without a snapshot knows there is nothing to replay, as in
    Kafka). A failed write is logged, not raised: the next open replays the log from an older
    snapshot instead."""
    if not ps.producers and not ps.snapshot_offsets():
        return
    try:
        ps.take_snapshot(offset)
    except OSError as e:
        logger.warning("%s: producer snapshot at %d not written: %s", log_name, offset, e)


def rebuild_producer_state(
    ps: ProducerStateManager,
    local: LocalLog,
    *,
    log_start_offset: int,
    high_watermark: int,
    clean_shutdown: bool,
) -> None:
    """Load the newest usable snapshot into ``ps`` and replay ``local``'s batch headers from
    it to the log end offset, indexing the aborted transactions met again."""
    end = local.next_offset
    if clean_shutdown and not ps.snapshot_offsets():
        ps.reset(end)
        return
    start = ps.load(log_start_offset, end)
    if start >= end:
        return
    segments = local.segments
    first_segment = local.segment_index_from(start)
    # Aborted transactions from the replay point on are indexed again by the replay.
    for seg in segments[first_segment:]:
        seg.txn_index.truncate_to(start)
    for seg in segments[first_segment:]:
        if not seg.files_created or seg.size_in_bytes == 0:
            continue
        first = seg.translate_offset(start)
        if first is None:
            continue
        completed = ps.replay(
            (
                h
                for h in seg.log.batches_from(first.position, strict=False)
                if h.base_offset >= start and h.base_offset < end
            ),
            _segment_marker_reader(seg),
        )
        if completed:
            index_aborted(seg, completed)
    ps.on_high_watermark_updated(high_watermark)


def _segment_marker_reader(seg: LogSegment) -> MarkerReader:
    """Reads end markers from a segment file (header positions are file positions)."""
    return lambda h: read_end_txn_marker(seg.log.read(h.position, h.size_in_bytes))
