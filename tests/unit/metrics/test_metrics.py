"""The Prometheus registry's exposition format, limits, and the HTTP endpoint."""

from __future__ import annotations

import math
import re
import urllib.error
import urllib.request

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from data_plane.metrics.http import MetricsHttpServer
from data_plane.metrics.names import NodeMetrics
from data_plane.metrics.registry import (
    CONTENT_TYPE,
    Counter,
    MetricError,
    Registry,
    escape_label_value,
    format_value,
)
from deploy.ports import free_ports

# One sample line of the text format: name, optional labels, value.
SAMPLE_RE = re.compile(
    r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\.)*",?)*\})? '
    r"(-?[0-9.e+-]+|[+-]Inf|NaN)$"
)


def test_counter_gauge_exposition() -> None:
    r = Registry()
    c = r.counter("x_requests_total", "Requests.\nSecond line", ("api",))
    c.inc(1, "Produce")
    c.inc(2.5, "Fetch")
    g = r.gauge("x_temperature", "Temp")
    g.set(-3)
    text = r.expose()
    assert "# HELP x_requests_total Requests.\\nSecond line\n" in text
    assert "# TYPE x_requests_total counter\n" in text
    assert 'x_requests_total{api="Fetch"} 2.5\n' in text
    assert 'x_requests_total{api="Produce"} 1\n' in text
    assert "# TYPE x_temperature gauge\nx_temperature -3\n" in text
    assert text.endswith("\n")
    for line in text.splitlines():
        assert line.startswith("# ") or SAMPLE_RE.match(line), line
    with pytest.raises(MetricError):
        c.inc(-1, "Produce")
    with pytest.raises(MetricError):
        c.inc(1)  # missing label


def test_histogram_buckets_are_cumulative() -> None:
    r = Registry()
    h = r.histogram("x_latency_seconds", "Latency", ("api",), buckets=(0.1, 1.0))
    for v in (0.05, 0.1, 0.5, 3.0):
        h.observe(v, "Produce")
    text = r.expose()
    assert 'x_latency_seconds_bucket{api="Produce",le="0.1"} 2\n' in text
    assert 'x_latency_seconds_bucket{api="Produce",le="1"} 3\n' in text
    assert 'x_latency_seconds_bucket{api="Produce",le="+Inf"} 4\n' in text
    assert 'x_latency_seconds_sum{api="Produce"} 3.65\n' in text
    assert 'x_latency_seconds_count{api="Produce"} 4\n' in text
    assert h.count("Produce") == 4
    with pytest.raises(MetricError):
        r.histogram("x_bad", "b", buckets=(1.0, 0.5))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=30),
    st.lists(st.floats(min_value=-1e6, max_value=1e6), min_size=1, max_size=6, unique=True),
)
def test_histogram_bucket_of_a_value_is_the_first_bound_at_or_above_it(
    values: list[float], bounds: list[float]
) -> None:
    """Per bucket (le label): the observations <= its bound, counted cumulatively; NaN in +Inf
    only. A reference count against the exposition, for any values and bounds."""
    bounds = sorted(bounds)
    r = Registry()
    h = r.histogram("h_seconds", "H", ("api",), buckets=bounds)
    for v in values:
        h.observe(v, "Fetch")
    text = r.expose()
    for bound in bounds:
        want = sum(1 for v in values if v <= bound)
        le = format_value(bound)
        assert f'h_seconds_bucket{{api="Fetch",le="{le}"}} {want}\n' in text
    assert f'h_seconds_bucket{{api="Fetch",le="+Inf"}} {len(values)}\n' in text


def test_escaping_and_values() -> None:
    assert escape_label_value('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
    assert format_value(math.inf) == "+Inf" and format_value(-math.inf) == "-Inf"
    assert format_value(math.nan) == "NaN"
    assert format_value(3.0) == "3" and format_value(0.25) == "0.25"
    r = Registry()
    r.counter("t_total", "t", ("topic",)).inc(1, 'we"ird\n')
    assert 't_total{topic="we\\"ird\\n"} 1' in r.expose()


def test_series_limit_counts_drops() -> None:
    r = Registry()
    c = Counter("limited_total", "l", ("topic",), max_series=2, on_drop=r.dropped_series.inc)
    for i in range(5):
        c.inc(1, f"t{i}")
    assert c.value("t0") == 1 and c.value("t4") == 0
    assert r.dropped_series.value() == 3


def test_registration_is_idempotent_but_typed() -> None:
    r = Registry()
    a = r.counter("same_total", "s", ("x",))
    assert r.counter("same_total", "s", ("x",)) is a
    with pytest.raises(MetricError):
        r.gauge("same_total", "s", ("x",))
    with pytest.raises(MetricError):
        r.counter("same_total", "s", ("y",))
    with pytest.raises(MetricError):
        r.counter("bad-name", "b")
    with pytest.raises(MetricError):
        r.counter("ok_total", "b", ("le",))


def test_function_gauges_and_failures_do_not_break_the_scrape() -> None:
    r = Registry()
    state = {"urp": 0}
    r.gauge("urp", "u").set_function(lambda: state["urp"])
    r.gauge("lag", "l", ("group",)).set_function(lambda: [(("g1",), 5), (("g2",), 7)])

    def broken() -> float:
        raise RuntimeError("boom")

    r.gauge("broken", "b").set_function(broken)
    state["urp"] = 3
    text = r.expose()
    assert "\nurp 3\n" in text and 'lag{group="g2"} 7' in text
    assert "# broken unavailable: RuntimeError" in text


def test_node_metrics_declares_the_issue_metrics() -> None:
    m = NodeMetrics()
    m.requests.inc(1, "Produce")
    m.request_latency.observe(0.002, "Produce")
    m.bytes_in.inc(100, "orders")
    text = m.expose()
    for name in (
        "kraftlog_requests_total",
        "kraftlog_request_latency_seconds_bucket",
        "kraftlog_broker_topic_bytes_in_total",
        "kraftlog_under_replicated_partitions",
        "kraftlog_offline_partitions",
        "kraftlog_isr_shrinks_total",
        "kraftlog_isr_expands_total",
        "kraftlog_active_controller",
        "kraftlog_metadata_offset_lag",
        "kraftlog_raft_commit_latency_seconds",
        "kraftlog_consumer_group_lag",
        "kraftlog_quota_throttle_time_seconds_total",
    ):
        assert name in text, name


def test_http_endpoint() -> None:
    r = Registry()
    r.counter("served_total", "s").inc(7)
    (port,) = free_ports(1)
    server = MetricsHttpServer(r, "127.0.0.1", port)
    server.start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"] == CONTENT_TYPE
            assert "served_total 7" in resp.read().decode()
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/other", timeout=10)
        assert info.value.code == 404
        info.value.close()
    finally:
        server.close()


def test_grafana_dashboard_charts_only_declared_metrics() -> None:
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "deploy" / "grafana" / "kraftlog.json"
    dashboard = json.loads(path.read_text())
    exposed = NodeMetrics().expose()
    declared = {line.split()[2] for line in exposed.splitlines() if line.startswith("# TYPE")}
    used = set()
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            used |= set(re.findall(r"kraftlog_[a-z_]+", target["expr"]))
    base = {re.sub(r"_(bucket|sum|count)$", "", name) for name in used}
    assert base <= declared, base - declared
    assert len(dashboard["panels"]) >= 10


def test_broker_state_metrics_from_images() -> None:
    import uuid

    from data_plane.metrics.state import BrokerStateMetrics
    from metadata.image import MetadataImage, PartitionRegistration, TopicImage

    def image(offset: int, isr: tuple[int, ...], leader: int = 1) -> MetadataImage:
        tid = uuid.UUID(int=5)
        parts = {
            0: PartitionRegistration((1, 2), isr, leader, 1, offset),
            1: PartitionRegistration((2, 1), (2, 1), 2, 1, 1),
            2: PartitionRegistration((3,), (3,), -1, 1, 1),
        }
        t = TopicImage("t", tid, parts)
        return MetadataImage(offset=offset, topics_by_name={"t": t}, topics_by_id={tid: t})

    m = NodeMetrics()
    state = BrokerStateMetrics(m, broker_id=1)
    state.on_image(image(10, (1, 2)), committed_offset=12)
    assert m.leader_partitions.value() == 1
    assert m.under_replicated_partitions.value() == 0
    assert m.offline_partitions.value() == 1
    assert m.metadata_offset.value() == 10 and m.metadata_offset_lag.value() == 2
    state.on_image(image(11, (1,)))
    assert m.under_replicated_partitions.value() == 1
    assert m.isr_shrinks.value() == 1 and m.isr_expands.value() == 0
    state.on_image(image(12, (1, 2)))
    assert m.under_replicated_partitions.value() == 0 and m.isr_expands.value() == 1
    state.on_image(image(13, (1, 2), leader=2))  # leadership moved away
    assert m.leader_partitions.value() == 0


def test_group_lag_snapshot() -> None:
    from types import SimpleNamespace

    from data_plane.metrics.group_lag import LAG_INTERVAL_MS, GroupLagMetrics

    m = NodeMetrics()
    lag = GroupLagMetrics(m.consumer_group_lag)
    offsets = {
        "g1": SimpleNamespace(
            error_code=0,
            offsets={
                ("t", 0): SimpleNamespace(offset=7),
                ("elsewhere", 0): SimpleNamespace(offset=1),
            },
        ),
        "g2": SimpleNamespace(error_code=14, offsets={}),  # not loaded here
    }
    hws = {("t", 0): 10}
    lag.maybe_update(
        0,
        lambda: (0, [("g1", "consumer", "Stable"), ("g2", "consumer", "Empty")]),
        lambda g, _p: offsets[g],
        lambda: hws,
    )
    assert m.consumer_group_lag.value("g1", "t", "0") == 3
    assert 'kraftlog_consumer_group_lag{group="g1",partition="0",topic="t"}' not in m.expose()
    assert 'kraftlog_consumer_group_lag{group="g1",topic="t",partition="0"} 3' in m.expose()
    hws[("t", 0)] = 20
    lag.maybe_update(1, lambda: (0, []), lambda g, _p: offsets[g], lambda: hws)  # too soon
    assert m.consumer_group_lag.value("g1", "t", "0") == 3
    lag.maybe_update(
        LAG_INTERVAL_MS, lambda: (0, [("g1", "", "")]), lambda g, _p: offsets[g], lambda: hws
    )
    assert m.consumer_group_lag.value("g1", "t", "0") == 13
