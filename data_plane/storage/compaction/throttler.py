"""Throttler: keeps the log cleaner's I/O under ``log.cleaner.io.max.bytes.per.second``
(Kafka's Throttler), shared by every cleaner thread.

Callers report the bytes they read or wrote with :meth:`maybe_throttle`; once per check
interval the observed rate since the last check is compared with the limit, and the caller
sleeps for as long as it takes to bring the rate down to it. ``clock_s`` and ``sleep_s`` are
injected (monotonic seconds and a sleep) so tests can drive it without waiting.

Thread-safety: every method may be called from any thread (one lock; the sleep happens
outside it).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

# How often the observed rate is checked (Kafka checks every 100 ms too).
DEFAULT_CHECK_INTERVAL_MS = 100
# The longest single sleep, so a stop request is never kept waiting long.
MAX_SLEEP_S = 1.0


class Throttler:
    def __init__(
        self,
        max_bytes_per_second: float,
        *,
        check_interval_ms: int = DEFAULT_CHECK_INTERVAL_MS,
        clock_s: Callable[[], float] = time.monotonic,
        sleep_s: Callable[[float], None] = time.sleep,
    ) -> None:
        if max_bytes_per_second <= 0:
            raise ValueError(f"max_bytes_per_second must be > 0, got {max_bytes_per_second}")
        self.max_bytes_per_second = max_bytes_per_second
        self._check_interval_s = check_interval_ms / 1000.0
        self._clock_s = clock_s
        self._sleep_s = sleep_s
        self._lock = threading.Lock()
        self._period_start_s = clock_s()
        self._observed_bytes = 0
        self.total_sleep_s = 0.0

    @property
    def unlimited(self) -> bool:
        return math.isinf(self.max_bytes_per_second)

    def maybe_throttle(self, observed_bytes: int) -> float:
        """Count ``observed_bytes``; sleep if the rate since the last check is above the
        limit. Returns the seconds slept."""
        if self.unlimited:
            return 0.0
        with self._lock:
            self._observed_bytes += observed_bytes
            now = self._clock_s()
            elapsed = now - self._period_start_s
            if elapsed < self._check_interval_s:
                return 0.0
            # The time the observed bytes should have taken at the limit.
            owed = self._observed_bytes / self.max_bytes_per_second - elapsed
            sleep = min(max(owed, 0.0), MAX_SLEEP_S)
            # What one sleep does not pay off is carried into the next period.
            self._observed_bytes = int(max(owed - sleep, 0.0) * self.max_bytes_per_second)
            self._period_start_s = now + sleep
        if sleep > 0:
            self._sleep_s(sleep)
            self.total_sleep_s += sleep
        return sleep
