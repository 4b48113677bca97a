"""Operation counters shared by the workload threads (for the progress bar and the summary;
the checker recomputes everything from the history). Thread-safe."""

from __future__ import annotations

import threading
from collections import Counter


class OpStats:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def add(self, key: str, n: int = 1) -> None:
        with self._lock:
            self._counts[key] += n

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)
