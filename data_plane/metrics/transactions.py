"""Transaction metrics, refreshed from the broker's housekeeping tick (once a second), never
by the scrape: open transactions at the coordinator, the last stable offset lag of the
partitions this broker leads (by topic, the largest), end markers written as leader (the
handler counts them; deltas are added here), and the last coordinator load time.

Thread-safety: ``maybe_update`` runs on the broker's event loop; the metrics are thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from data_plane.metrics.names import NodeMetrics

# Refresh period of the gauges (the partition scan costs one pass over the led logs).
UPDATE_INTERVAL_MS = 1_000


class TransactionMetrics:
    def __init__(self, metrics: NodeMetrics) -> None:
        self.metrics = metrics
        self._next_update_ms = 0
        self._markers_reported: dict[str, int] = {}
        self._lag_topics: set[str] = set()

    def maybe_update(
        self,
        now_ms: int,
        ongoing: Callable[[], int],
        stable_lags: Callable[[], Iterable[tuple[str, int]]],
        markers_written: Mapping[str, int],
        last_load_seconds: float | None,
    ) -> None:
        """``stable_lags()``: (topic, high watermark - last stable offset) per led partition;
        ``markers_written``: result -> markers written so far (a running count)."""
        if now_ms < self._next_update_ms:
            return
        self._next_update_ms = now_ms + UPDATE_INTERVAL_MS
        m = self.metrics
        m.transactions_ongoing.set(ongoing())
        worst: dict[str, int] = {}
        for topic, lag in stable_lags():
            if lag > worst.get(topic, -1):
                worst[topic] = lag
        for topic in self._lag_topics - worst.keys():
            m.last_stable_offset_lag.set(0, topic)
        for topic, lag in worst.items():
            m.last_stable_offset_lag.set(lag, topic)
        self._lag_topics = set(worst)
        for result, total in markers_written.items():
            delta = total - self._markers_reported.get(result, 0)
            if delta > 0:
                m.transaction_markers_written.inc(delta, result)
                self._markers_reported[result] = total
        if last_load_seconds is not None:
            m.transaction_coordinator_load_seconds.set(last_load_seconds)
