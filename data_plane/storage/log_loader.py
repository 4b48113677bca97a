"""Opening a partition directory: file classification, index checks and crash recovery
(Kafka's LogLoader).

Partition directory ``<topic>-<partition>`` (topic names may contain '-': the partition is
after the last one). Files it may hold::

    <20 digits>.log / .index / .timeindex     a segment (see segment.py)
    <20 digits>.txnindex                      its aborted transactions (transaction_index.py)
    <20 digits>.snapshot                      producer state (producer_state.py)
    any of the above + .deleted               a deleted segment awaiting removal: unlinked
    segment files + .cleaned / .swap          left by a log cleaner interrupted in its
                                              swap: finished or discarded (see
                                              _complete_or_discard_swaps)
    leader-epoch-checkpoint[.tmp], partition.metadata[.tmp]   owned by replication

Anything else raises :class:`LogDirLayoutError` naming the file, so that a stray file is moved
away by an operator rather than silently ignored or, worse, deleted.

Recovery: segments at or after the one holding the recovery point (everything not known to be
fsynced) are scanned batch by batch — framing, magic, CRC-32C, increasing offsets — and their
indexes rebuilt; the log is cut at the first bad batch and every later segment is removed,
with a warning giving the bytes and batches dropped. Segments below the recovery point are
trusted, but an index that is missing, misaligned, unsorted or points beyond its log is
rebuilt, and the last segment's tail is always re-framed so a torn tail is caught even when a
checkpoint claims it was flushed.

A directory without any ``.log`` is an empty log (a partition created but never written:
its first segment's files are created by the first append).

Not thread-safe: runs once, before the log is shared.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field

from common.durable_io import fsync_directory
from common.errors import CorruptRecordError
from common.topic_partition import TopicPartition
from data_plane.storage.errors import LogDirLayoutError
from data_plane.storage.file_records import FileRecords
from data_plane.storage.offset_index import InvalidIndexError
from data_plane.storage.segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    segment_file_name,
)
from data_plane.storage.segment_cache import OpenSegmentCache
from data_plane.storage.transaction_index import TXN_INDEX_SUFFIX

logger = logging.getLogger(__name__)

_SEGMENT_FILE = re.compile(
    r"^(\d{20})(\.log|\.index|\.timeindex|\.txnindex|\.snapshot)(\.deleted|\.cleaned|\.swap)?$"
)
_REPLICATION_FILES = frozenset(
    {
        "leader-epoch-checkpoint",
        "leader-epoch-checkpoint.tmp",
        "partition.metadata",
        "partition.metadata.tmp",
    }
)
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")
# Kafka's limit on topic name length and its legal characters.
_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


def parse_topic_partition(dir_name: str) -> TopicPartition:
    """``"orders-3"`` -> ``TopicPartition("orders", 3)``; :class:`LogDirLayoutError` if it
    does not parse."""
    m = _PARTITION_DIR.match(dir_name)
    if not m or not _TOPIC.match(m.group(1)) or m.group(1) in (".", ".."):
        raise LogDirLayoutError(
            f"{dir_name!r} is not a partition directory name (<topic>-<partition>)"
        )
    return TopicPartition(m.group(1), int(m.group(2)))


def partition_dir_name(topic: str, partition: int) -> str:
    if not _TOPIC.match(topic) or topic in (".", "..") or partition < 0:
        raise ValueError(f"invalid topic partition {topic!r}-{partition}")
    return f"{topic}-{partition}"


@dataclass(slots=True)
class LoadedLog:
    segments: list[LogSegment]
    next_offset: int
    recovery_point: int
    log_start_offset: int
    truncated_bytes: int = 0
    dropped_batches: int = 0
    rebuilt_indexes: list[str] = field(default_factory=list)
    # The directory was created by this load (nothing of it is durable yet).
    created: bool = False


def load_log(
    dir_path: str,
    *,
    index_interval_bytes: int,
    max_index_bytes: int,
    recovery_point: int,
    log_start_offset: int,
    now_ms: int,
    clean_shutdown: bool = False,
    cache: OpenSegmentCache | None = None,
) -> LoadedLog:
    """Open every segment in ``dir_path`` (created if missing), recover what needs it and
    return the segments (the last one active) and the log's offsets. After a
    ``clean_shutdown`` (everything flushed, checkpoints written) only indexes and the last
    segment's tail are checked; the indexes of closed segments below the recovery point are
    not even opened (only their presence is checked): they are sanity-checked on first use
    (segment.py). ``cache`` bounds the closed segments held open later."""
    try:
        os.mkdir(dir_path, 0o755)
    except FileExistsError:
        pass
    except FileNotFoundError:
        os.makedirs(dir_path, exist_ok=True)
    else:
        # A new log: nothing to classify or recover (the common case when thousands of
        # partitions are created at once, so it skips the listing).
        start = max(log_start_offset, 0)
        first = LogSegment(
            dir_path,
            start,
            index_interval_bytes=index_interval_bytes,
            max_index_bytes=max_index_bytes,
            created_ms=now_ms,
            active=True,
            cache=cache,
            create_files=False,
        )
        return LoadedLog([first], start, start, start, created=True)
    segments: list[LogSegment] = []
    rebuilt: list[str] = []
    log_bases, indexed_bases = _classify_and_clean(dir_path)
    missing_indexes = log_bases - indexed_bases
    try:
        for base in sorted(log_bases):
            seg = LogSegment(
                dir_path,
                base,
                index_interval_bytes=index_interval_bytes,
                max_index_bytes=max_index_bytes,
                created_ms=now_ms,
                active=False,
                cache=cache,
            )
            segments.append(seg)
        result = _recover(
            dir_path, segments, recovery_point, clean_shutdown, missing_indexes, rebuilt
        )
    except BaseException:
        for seg in segments:
            seg.close()
        raise
    segments = result.segments
    if not segments:
        segments.append(
            LogSegment(
                dir_path,
                max(log_start_offset, 0),
                index_interval_bytes=index_interval_bytes,
                max_index_bytes=max_index_bytes,
                created_ms=now_ms,
                active=True,
                cache=cache,
                create_files=False,
            )
        )
        result.next_offset = segments[0].base_offset
    segments[-1].make_active()
    result.segments = segments
    result.recovery_point = min(
        max(result.recovery_point, segments[0].base_offset), result.next_offset
    )
    result.log_start_offset = max(log_start_offset, segments[0].base_offset)
    result.rebuilt_indexes = rebuilt
    return result


def _classify_and_clean(dir_path: str) -> tuple[set[int], set[int]]:
    """Check every name in the directory, remove leftovers and finish or discard an
    interrupted cleaner swap; return the segments' bases and the bases that have both index
    files."""
    names = sorted(os.listdir(dir_path))
    matched: list[tuple[str, int, str, str | None]] = []
    for name in names:
        path = os.path.join(dir_path, name)
        if name in _REPLICATION_FILES and os.path.isfile(path):
            continue
        m = _SEGMENT_FILE.match(name)
        if not m or not os.path.isfile(path):
            raise LogDirLayoutError(
                f"unexpected file {path} in partition directory: not a segment, index, "
                "checkpoint or .deleted/.cleaned/.swap file; move it away and restart"
            )
        matched.append((name, int(m.group(1)), m.group(2), m.group(3)))
    if any(suffix in (CLEANED_SUFFIX, SWAP_SUFFIX) for *_, suffix in matched):
        _complete_or_discard_swaps(dir_path, matched)
        matched = []
        for name in sorted(os.listdir(dir_path)):
            m = _SEGMENT_FILE.match(name)
            if m:
                matched.append((name, int(m.group(1)), m.group(2), m.group(3)))
    log_bases: set[int] = set()
    index_files: list[tuple[int, str]] = []
    kinds: dict[int, set[str]] = {}
    for name, base, kind, suffix in matched:
        path = os.path.join(dir_path, name)
        if suffix == DELETED_SUFFIX:
            logger.info("removing leftover %s", path)
            os.unlink(path)
            continue
        if kind == LOG_SUFFIX:
            log_bases.add(base)
        elif kind in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            index_files.append((base, path))
            kinds.setdefault(base, set()).add(kind)
        elif kind == TXN_INDEX_SUFFIX:
            index_files.append((base, path))
    for base, path in index_files:
        if base not in log_bases:
            logger.info("removing index %s without a log", path)
            os.unlink(path)
    both = {INDEX_SUFFIX, TIME_INDEX_SUFFIX}
    return log_bases, {base for base, k in kinds.items() if k == both and base in log_bases}


def _complete_or_discard_swaps(
    dir_path: str, matched: list[tuple[str, int, str, str | None]]
) -> None:
    """Recover from a log cleaner interrupted in its swap (cleaner.py, Log.replace_segments):

    - ``.cleaned`` files were still being written or renamed: they are deleted, with every
      ``.swap`` file at or above the lowest ``.cleaned`` base (the rest of that unfinished
      rename); the original segments are all still present.
    - a ``<base>.log.swap`` is a complete, fsynced cleaned segment: every ordinary segment
      file with a base in ``[base, its next offset)`` is deleted and the swap files take
      their final names (Kafka's rule). A source lying wholly after the swap's last batch
      (all its records were removed) survives; it holds only records the next cleaning
      removes again (superseded ones and expired tombstones: ``cleaner-offset-checkpoint``
      did not move), never an offset the swap holds.
    - index ``.swap`` files whose ``.log`` already has its final name are renamed too.
    """
    cleaned = [(n, b) for n, b, _k, sfx in matched if sfx == CLEANED_SUFFIX]
    min_cleaned = min((b for _n, b in cleaned), default=None)
    for name, _base in cleaned:
        logger.warning("discarding %s left by an interrupted log cleaning", name)
        _unlink(os.path.join(dir_path, name))
    swaps: dict[int, list[tuple[str, str]]] = {}
    for name, base, kind, sfx in matched:
        if sfx != SWAP_SUFFIX:
            continue
        if min_cleaned is not None and base >= min_cleaned:
            logger.warning("discarding %s (its cleaning did not finish)", name)
            _unlink(os.path.join(dir_path, name))
            continue
        swaps.setdefault(base, []).append((name, kind))
    for base, files in sorted(swaps.items()):
        if any(kind == LOG_SUFFIX for _n, kind in files):
            swap_log = os.path.join(dir_path, segment_file_name(base, LOG_SUFFIX) + SWAP_SUFFIX)
            next_offset = _next_offset_of(swap_log, base)
            for name, obase, kind, sfx in matched:
                if sfx is None and base <= obase < next_offset and kind != ".snapshot":
                    logger.info("removing %s, replaced by the cleaned segment %d", name, base)
                    _unlink(os.path.join(dir_path, name))
        for name, _kind in sorted(files, key=lambda f: f[1] == LOG_SUFFIX):
            logger.info("completing the interrupted swap of %s", name)
            src = os.path.join(dir_path, name)
            os.replace(src, src[: -len(SWAP_SUFFIX)])
    fsync_directory(dir_path)


def _next_offset_of(path: str, base: int) -> int:
    records = FileRecords(path, open_now=True)
    try:
        next_offset = base
        for header in records.batches_from(0, strict=False):
            next_offset = header.next_offset
        return next_offset
    finally:
        records.close()


def _recover(
    dir_path: str,
    segments: list[LogSegment],
    recovery_point: int,
    clean_shutdown: bool,
    missing_indexes: set[int],
    rebuilt: list[str],
) -> LoadedLog:
    if not segments:
        return LoadedLog([], 0, recovery_point, 0)
    if clean_shutdown:
        # Everything was flushed and checkpointed on close: check indexes and the tail only.
        first_unflushed = len(segments)
    else:
        # Segments from the one holding the recovery point on may never have been fsynced.
        first_unflushed = 0
        for i, seg in enumerate(segments):
            if seg.base_offset <= recovery_point:
                first_unflushed = i
    for seg in segments[: min(first_unflushed, len(segments) - 1)]:
        if seg.base_offset in missing_indexes:
            _rebuild(seg, "index file missing", rebuilt)
        # Otherwise the indexes stay unopened until first use, which sanity-checks them
        # (Kafka's lazy indexes): a broker with thousands of segments starts in seconds.

    truncated_bytes = 0
    dropped_batches = 0
    i = first_unflushed
    recovered_any = False
    while i < len(segments):
        seg = segments[i]
        res = seg.recover()
        recovered_any = True
        if res.truncated_bytes:
            truncated_bytes += res.truncated_bytes
            dropped_batches += res.dropped_batches
            # Everything after a bad batch is unreachable: drop the later segments too.
            for later in segments[i + 1 :]:
                size = later.size_in_bytes
                batches = sum(1 for _ in later.log.batches_from(0, strict=False))
                truncated_bytes += size
                dropped_batches += batches
                later.close()
                later.delete_files()
            del segments[i + 1 :]
            logger.warning(
                "%s: recovery truncated the log at %s position %d: dropped %d bytes in %d "
                "batch(es) (%s)",
                dir_path,
                segment_file_name(seg.base_offset, LOG_SUFFIX),
                res.valid_bytes,
                truncated_bytes,
                dropped_batches,
                res.reason,
            )
            break
        i += 1

    last = segments[-1]
    if not recovered_any:
        try:
            if last.base_offset in missing_indexes:
                raise InvalidIndexError(f"index of {last.log.path} missing")
            # A garbled index must not steer the tail scan (which re-indexes what it reads).
            last.offset_index.sanity_check(last.size_in_bytes)
            next_offset = last.read_next_offset()
            _check_indexes(last, next_offset, rebuilt)
        except (CorruptRecordError, InvalidIndexError) as e:
            logger.warning("%s: last segment fails its tail check (%s); recovering it", dir_path, e)
            res = last.recover()
            truncated_bytes += res.truncated_bytes
            dropped_batches += res.dropped_batches if res.truncated_bytes else 0
            if res.truncated_bytes:
                logger.warning(
                    "%s: recovery dropped %d bytes in %d batch(es) (%s)",
                    dir_path,
                    res.truncated_bytes,
                    res.dropped_batches,
                    res.reason,
                )
            recovered_any = True
    # An empty trailing segment (all of it torn) still defines where the next offset starts.
    next_offset = last.read_next_offset()
    # The recovery point stays where it was (clamped to the new end by the caller), as in
    # Kafka: what recovery checked is not fsynced here (thousands of logs recovering would
    # cost three fsyncs each), so a second crash checks it again; the log's next flush
    # covers it, from the segment holding the recovery point on.
    out = LoadedLog(segments, next_offset, recovery_point, 0)
    out.truncated_bytes = truncated_bytes
    out.dropped_batches = dropped_batches
    return out


def _check_indexes(seg: LogSegment, next_offset: int, rebuilt: list[str]) -> None:
    """Rebuild a segment's indexes if either is missing, misaligned, unsorted or beyond the
    log (indexes are derived data)."""
    try:
        seg.offset_index.sanity_check(seg.size_in_bytes)
        seg.time_index.sanity_check(next_offset)
    except InvalidIndexError as e:
        _rebuild(seg, str(e), rebuilt)
    seg.indexes_checked = True


def _rebuild(seg: LogSegment, why: str, rebuilt: list[str]) -> None:
    logger.warning("rebuilding indexes of %s: %s", seg.log.path, why)
    rebuilt.append(seg.log.path)
    res = seg.recover()
    if res.truncated_bytes:
        logger.warning(
            "%s: index rebuild found a bad batch; dropped %d bytes in %d batch(es) (%s)",
            seg.log.path,
            res.truncated_bytes,
            res.dropped_batches,
            res.reason,
        )


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
