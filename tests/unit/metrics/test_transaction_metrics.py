"""Transaction metrics: gauges from the coordinator and the led partitions, marker counts
as deltas of the handler's running totals, refreshed at most once a second."""

from __future__ import annotations

from data_plane.metrics.names import NodeMetrics
from data_plane.metrics.transactions import UPDATE_INTERVAL_MS, TransactionMetrics


def test_gauges_and_marker_counts() -> None:
    m = NodeMetrics()
    tm = TransactionMetrics(m)
    markers = {"commit": 3, "abort": 1}
    lags = [("a", 5), ("a", 2), ("b", 0)]
    tm.maybe_update(0, lambda: 4, lambda: lags, markers, 0.25)
    text = m.expose()
    assert "kraftlog_transactions_ongoing 4" in text
    assert 'kraftlog_last_stable_offset_lag{topic="a"} 5' in text
    assert 'kraftlog_transaction_markers_written_total{result="commit"} 3' in text
    assert "kraftlog_transaction_coordinator_load_seconds 0.25" in text
    # Within the interval nothing is recomputed; after it, deltas are added once.
    markers["commit"] = 7
    tm.maybe_update(10, lambda: 0, lambda: [], markers, None)
    assert 'kraftlog_transaction_markers_written_total{result="commit"} 3' in m.expose()
    tm.maybe_update(UPDATE_INTERVAL_MS, lambda: 0, lambda: [("b", 1)], markers, None)
    text = m.expose()
    assert 'kraftlog_transaction_markers_written_total{result="commit"} 7' in text
    assert 'kraftlog_last_stable_offset_lag{topic="a"} 0' in text
    assert "kraftlog_transactions_ongoing 0" in text
