"""LogCleaner: the background threads that compact logs with ``cleanup.policy`` including
``compact`` (Kafka's LogCleaner).

``log.cleaner.threads`` threads (``log.cleaner.enable`` false or 0 threads: none) each loop:
ask the :class:`LogCleanerManager` for the filthiest log, clean it with their own
:class:`Cleaner` (and :class:`OffsetMap` of ``log.cleaner.dedupe.buffer.size / threads``
bytes), report it done (which checkpoints the new first dirty offset), and sleep
``log.cleaner.backoff.ms`` when no log needs cleaning. All threads share one
:class:`Throttler` of ``log.cleaner.io.max.bytes.per.second``.

A log that fails to clean (corrupt batch, I/O error, a map too small for one segment) is
marked uncleanable and skipped until restart; the thread goes on with other logs. Nothing
a cleaning raises ends a thread.

:meth:`clean_once` runs one cleaning synchronously (tests, tools); :meth:`start` /
:meth:`stop` run the threads.

Thread-safety: all public methods may be called from any thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from common.errors import ApiError
from common.log_config import LogConfig
from common.topic_partition import TopicPartition
from data_plane.storage.compaction.cleaner import (
    Cleaner,
    CleanerAbortedError,
    CleanerStats,
    LogCleaningError,
)
from data_plane.storage.compaction.log_cleaner_manager import LogCleanerManager
from data_plane.storage.compaction.offset_map import OffsetMap
from data_plane.storage.compaction.throttler import Throttler
from data_plane.storage.log import Clock, Log

logger = logging.getLogger(__name__)

# How long stop() waits for each thread to finish the batch it is on.
STOP_JOIN_TIMEOUT_S = 30.0

LogsFn = Callable[[], Iterable[tuple[TopicPartition, Log, str]]]


@dataclass(frozen=True, slots=True)
class CleaningReport:
    tp: TopicPartition
    completed: bool
    end_offset: int
    dirty_ratio: float
    stats: CleanerStats


class LogCleaner:
    def __init__(
        self,
        config: LogConfig,
        logs: LogsFn,
        log_dirs: Iterable[str],
        *,
        clock_ms: Clock,
    ) -> None:
        """``logs()`` lists (topic-partition, log, log dir) of every log, compacted or not;
        ``config`` holds the broker-level ``log.cleaner.*`` settings."""
        self._config = config
        self._logs = logs
        self._clock_ms = clock_ms
        self.manager = LogCleanerManager(log_dirs)
        self.throttler = Throttler(config.log_cleaner_io_max_bytes_per_second)
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.last_reports: dict[TopicPartition, CleaningReport] = {}
        self.cleanings_completed = 0
        n = max(config.log_cleaner_threads, 1)
        self._map_bytes = config.log_cleaner_dedupe_buffer_size // n
        # The synchronous clean_once() uses its own cleaner (threads have one each).
        self._sync_cleaner: Cleaner | None = None
        # The partition each thread is cleaning (for its abort check).
        self._current = threading.local()

    def _new_cleaner(self) -> Cleaner:
        cfg = self._config
        return Cleaner(
            OffsetMap(self._map_bytes, cfg.log_cleaner_io_buffer_load_factor),
            throttler=self.throttler,
            clock_ms=self._clock_ms,
            abort_requested=self._abort_requested,
        )

    def _abort_requested(self) -> bool:
        return self._stop.is_set() or self._current_aborted()

    def _current_aborted(self) -> bool:
        tp = getattr(self._current, "tp", None)
        return tp is not None and self.manager.is_aborted(tp)

    # -- one cleaning ------------------------------------------------------------------------

    def clean_once(self) -> CleaningReport | None:
        """Clean the filthiest log now, on this thread; None if no log needs cleaning."""
        if self._sync_cleaner is None:
            self._sync_cleaner = self._new_cleaner()
        return self._clean_filthiest(self._sync_cleaner)

    def _clean_filthiest(self, cleaner: Cleaner) -> CleaningReport | None:
        to_clean = self.manager.grab_filthiest_log(self._logs(), self._clock_ms())
        if to_clean is None:
            return None
        tp = to_clean.tp
        self._current.tp = tp
        end: int | None = None
        report = None
        try:
            result = cleaner.clean(to_clean.log, to_clean.checkpoint_offset)
            if result.completed:
                end = result.end_offset
            report = CleaningReport(
                tp, result.completed, result.end_offset, to_clean.plan.dirty_ratio, result.stats
            )
            s = result.stats
            logger.info(
                "cleaned %s-%d up to offset %d: dirty ratio %.2f, %d -> %d bytes in %.2f s "
                "(%d of %d records kept, %d tombstones removed)",
                tp[0],
                tp[1],
                result.end_offset,
                to_clean.plan.dirty_ratio,
                s.bytes_read,
                s.bytes_written,
                s.elapsed_s,
                s.records_retained,
                s.records_read,
                s.tombstones_removed,
            )
        except CleanerAbortedError:
            logger.info("cleaning of %s-%d aborted", *tp)
        except (LogCleaningError, ApiError, OSError, ValueError) as e:
            logger.exception("cleaning %s-%d failed; marking it uncleanable", *tp)
            self.manager.mark_uncleanable(tp, str(e))
        finally:
            self._current.tp = None
            try:
                self.manager.done_cleaning(tp, to_clean.log_dir, end)
            except OSError:
                logger.exception("writing the cleaner checkpoint for %s-%d failed", *tp)
        if report is not None:
            with self._lock:
                self.last_reports[tp] = report
                if report.completed:
                    self.cleanings_completed += 1
        return report

    # -- threads -----------------------------------------------------------------------------

    def start(self) -> None:
        cfg = self._config
        if not cfg.log_cleaner_enable or cfg.log_cleaner_threads <= 0:
            return
        with self._lock:
            if self._threads:
                return
            self._stop.clear()
            for i in range(cfg.log_cleaner_threads):
                t = threading.Thread(
                    target=self._run,
                    args=(self._new_cleaner(),),
                    name=f"log-cleaner-{i}",
                    daemon=True,
                )
                self._threads.append(t)
                t.start()

    def _run(self, cleaner: Cleaner) -> None:
        backoff_s = self._config.log_cleaner_backoff_ms / 1000.0
        while not self._stop.is_set():
            try:
                report = self._clean_filthiest(cleaner)
            except Exception:
                # Never let a thread die: log, back off, go on.
                logger.exception("log cleaner round failed")
                report = None
            if report is None:
                self._stop.wait(backoff_s)

    def stop(self) -> None:
        with self._lock:
            threads, self._threads = self._threads, []
        self._stop.set()
        self.manager.abort_all()
        for t in threads:
            t.join(STOP_JOIN_TIMEOUT_S)
            if t.is_alive():
                logger.warning("%s did not stop within %.0f s", t.name, STOP_JOIN_TIMEOUT_S)

    def abort_cleaning(self, tp: TopicPartition) -> bool:
        """Stop a cleaning of ``tp`` in progress (its log is being deleted) and wait."""
        return self.manager.abort_cleaning(tp)

    def forget(self, tp: TopicPartition, log_dir: str) -> None:
        self.manager.forget(tp, log_dir)
        with self._lock:
            self.last_reports.pop(tp, None)
