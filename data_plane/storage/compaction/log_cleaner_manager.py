"""LogCleanerManager: which compacted log to clean next, which are being cleaned, and where
each log's clean part ends (Kafka's LogCleanerManager).

File ``cleaner-offset-checkpoint`` in each log directory, Kafka's offset checkpoint format
(checkpoints.py), one line per compacted partition of that directory::

    0
    1
    orders-compacted 0 52311       topic partition first-dirty-offset

The offset is where the last completed cleaning ended: everything below it was cleaned
once. It is written after each completed cleaning (atomically: temp file, fsync, rename) and
read at start; a missing or unreadable file means every log is dirty from its start (it is
then cleaned once more than needed, nothing worse). A log deleted here is dropped from it.

Selection (``grab_filthiest_log``): among logs with ``compact`` in ``cleanup.policy`` that
are not being cleaned and not marked uncleanable, those that reached their
``min.cleanable.dirty.ratio`` (or ``max.compaction.lag.ms``); the one past its max lag
first, then the highest dirty ratio. It is marked in progress until ``done_cleaning``.

Aborting: ``abort_cleaning(tp)`` (the log is being deleted) marks a cleaning in progress
aborted and waits, bounded, until its thread has stopped (the cleaner polls
:meth:`is_aborted` between batches).

Thread-safety: every method may be called from any thread (one condition variable).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

from common.errors import ApiError
from common.topic_partition import TopicPartition
from data_plane.storage.checkpoints import OffsetCheckpointFile
from data_plane.storage.compaction.cleanable import CleanableRange
from data_plane.storage.compaction.cleaner import Cleaner
from data_plane.storage.errors import CorruptCheckpointError, LogClosedError
from data_plane.storage.log import Log

logger = logging.getLogger(__name__)

CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
# How long abort_cleaning waits for a cleaner thread to notice (a batch is small; a thread
# throttled by log.cleaner.io.max.bytes.per.second sleeps at most 1 s per check).
ABORT_WAIT_TIMEOUT_S = 30.0

_RUNNING = "running"
_ABORTED = "aborted"


@dataclass(frozen=True, slots=True)
class LogToClean:
    tp: TopicPartition
    log: Log
    log_dir: str
    checkpoint_offset: int | None
    plan: CleanableRange


class LogCleanerManager:
    def __init__(self, log_dirs: Iterable[str]) -> None:
        self._cond = threading.Condition()
        self._in_progress: dict[TopicPartition, str] = {}
        self.uncleanable: dict[TopicPartition, str] = {}
        self._files: dict[str, OffsetCheckpointFile] = {}
        self._offsets: dict[str, dict[TopicPartition, int]] = {}
        for log_dir in log_dirs:
            f = OffsetCheckpointFile(os.path.join(log_dir, CLEANER_OFFSET_CHECKPOINT))
            try:
                offsets = f.read()
            except CorruptCheckpointError as e:
                logger.warning("%s; every compacted log there is cleaned from its start", e)
                offsets = {}
            self._files[log_dir] = f
            self._offsets[log_dir] = offsets

    # -- checkpoints -------------------------------------------------------------------------

    def checkpoint_offset(self, tp: TopicPartition, log_dir: str) -> int | None:
        with self._cond:
            return self._offsets.get(log_dir, {}).get(tp)

    def _write_locked(self, log_dir: str) -> None:
        f = self._files.get(log_dir)
        if f is not None:
            f.write(self._offsets[log_dir])

    def forget(self, tp: TopicPartition, log_dir: str) -> None:
        """The log was deleted: drop its checkpoint entry and any uncleanable mark."""
        with self._cond:
            self.uncleanable.pop(tp, None)
            offsets = self._offsets.get(log_dir)
            if offsets is not None and offsets.pop(tp, None) is not None:
                try:
                    self._write_locked(log_dir)
                except OSError:
                    logger.exception("writing %s failed", CLEANER_OFFSET_CHECKPOINT)

    def truncate_checkpoint(self, tp: TopicPartition, log_dir: str, offset: int) -> None:
        """The log was truncated to ``offset``: a checkpoint above it moves down to it
        (Kafka's maybeTruncateCheckpoint), so offsets written again count as dirty."""
        with self._cond:
            offsets = self._offsets.get(log_dir)
            if offsets is None or offsets.get(tp, -1) <= offset:
                return
            offsets[tp] = offset
            try:
                self._write_locked(log_dir)
            except OSError:
                logger.exception("writing %s failed", CLEANER_OFFSET_CHECKPOINT)

    # -- selection ---------------------------------------------------------------------------

    def grab_filthiest_log(
        self, logs: Iterable[tuple[TopicPartition, Log, str]], now_ms: int
    ) -> LogToClean | None:
        """The compacted log most in need of cleaning, marked in progress; None if none
        needs it."""
        best: LogToClean | None = None
        for tp, log, log_dir in logs:
            if not log.config.compact:
                continue
            with self._cond:
                if tp in self._in_progress or tp in self.uncleanable:
                    continue
                checkpoint = self._offsets.get(log_dir, {}).get(tp)
            try:
                snap = log.cleaning_snapshot()
                plan = Cleaner.plan(snap, checkpoint, now_ms)
            except (LogClosedError, OSError, ApiError):
                continue
            if not plan.should_clean(snap.config.min_cleanable_dirty_ratio):
                continue
            if best is None or (plan.max_lag_exceeded, plan.dirty_ratio) > (
                best.plan.max_lag_exceeded,
                best.plan.dirty_ratio,
            ):
                best = LogToClean(tp, log, log_dir, checkpoint, plan)
        if best is None:
            return None
        with self._cond:
            if best.tp in self._in_progress:
                return None
            self._in_progress[best.tp] = _RUNNING
        return best

    def done_cleaning(self, tp: TopicPartition, log_dir: str, end_offset: int | None) -> None:
        """The cleaning of ``tp`` ended; ``end_offset`` (a completed one) is checkpointed."""
        with self._cond:
            try:
                if end_offset is not None and self._in_progress.get(tp) == _RUNNING:
                    offsets = self._offsets.setdefault(log_dir, {})
                    if offsets.get(tp) != end_offset:
                        offsets[tp] = end_offset
                        self._write_locked(log_dir)
            finally:
                self._in_progress.pop(tp, None)
                self._cond.notify_all()

    def mark_uncleanable(self, tp: TopicPartition, reason: str) -> None:
        with self._cond:
            self.uncleanable[tp] = reason

    def uncleanable_partitions(self) -> dict[TopicPartition, str]:
        """A copy of the partitions marked uncleanable, with why."""
        with self._cond:
            return dict(self.uncleanable)

    def is_aborted(self, tp: TopicPartition) -> bool:
        with self._cond:
            return self._in_progress.get(tp) == _ABORTED

    def in_progress(self) -> list[TopicPartition]:
        with self._cond:
            return list(self._in_progress)

    def abort_cleaning(self, tp: TopicPartition, timeout_s: float = ABORT_WAIT_TIMEOUT_S) -> bool:
        """Abort a cleaning of ``tp`` in progress and wait until it has stopped; True when
        none is running (any more)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            if tp not in self._in_progress:
                return True
            self._in_progress[tp] = _ABORTED
            while tp in self._in_progress:
                left = deadline - time.monotonic()
                if left <= 0:
                    logger.warning("cleaning of %s-%d did not stop within %.0f s", *tp, timeout_s)
                    return False
                self._cond.wait(left)
            return True

    def abort_all(self) -> None:
        with self._cond:
            for tp in self._in_progress:
                self._in_progress[tp] = _ABORTED
