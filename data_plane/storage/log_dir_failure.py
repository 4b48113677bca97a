"""Log directory failures (Kafka's LogDirFailureChannel): an I/O error in one log directory
takes that whole directory offline, while the broker's other directories keep serving.

Whoever meets an I/O error on a log directory (a Log method on any thread, maintenance, a
checkpoint write) calls :meth:`LogDirFailureChannel.maybe_add_offline`. The first report of a
directory logs it at ERROR and queues it; :class:`~data_plane.storage.log_manager.LogManager`
takes queued directories on its failure-handler thread and closes their logs (the thread that
met the error may hold a log's lock, so nothing is closed on it). A directory stays offline
until the process restarts, as in Kafka: after the disk is repaired, a restart loads it again
and its replicas catch up from their leaders.

Thread-safety: every method may be called from any thread (one lock, one condition).
"""

from __future__ import annotations

import collections
import logging
import threading
import time

logger = logging.getLogger(__name__)


class LogDirFailureChannel:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._offline: dict[str, str] = {}  # directory -> the first error met there
        self._pending: collections.deque[str] = collections.deque()

    def maybe_add_offline(self, log_dir: str, reason: str) -> bool:
        """Take ``log_dir`` offline because of ``reason``; True the first time."""
        with self._cond:
            if log_dir in self._offline:
                return False
            self._offline[log_dir] = reason
            self._pending.append(log_dir)
            self._cond.notify_all()
        logger.error("log directory %s is offline after an I/O error: %s", log_dir, reason)
        return True

    def is_offline(self, log_dir: str) -> bool:
        return log_dir in self._offline

    def offline_dirs(self) -> dict[str, str]:
        """Every offline directory with the error that took it offline."""
        with self._cond:
            return dict(self._offline)

    def take(self, timeout_s: float) -> str | None:
        """The next directory that went offline and was not taken yet, waiting up to
        ``timeout_s``; None if there is none by then."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while not self._pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._cond.wait(remaining)
            return self._pending.popleft()

    def wake(self) -> None:
        """End a waiting :meth:`take` early (shutdown)."""
        with self._cond:
            self._cond.notify_all()
