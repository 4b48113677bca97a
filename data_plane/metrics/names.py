"""kraftlog's metrics, declared once (docs/metrics.md lists them; deploy/grafana/kraftlog.json
charts them). :class:`NodeMetrics` creates them in a registry; the broker, controller and
coordinators update them at the points named in each help text.

Names follow Prometheus conventions (``_total`` for counters, base units: seconds, bytes) and
map to Kafka's JMX names where one exists (kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec
-> ``kraftlog_broker_topic_bytes_in_total{topic}``).

Thread-safety: the metrics are thread-safe (data_plane.metrics.registry).
"""

from __future__ import annotations

import threading

from data_plane.metrics.registry import Counter, Gauge, Histogram, Registry

# Request latencies span sub-millisecond fetches to long-polls and acks=all waits.
REQUEST_LATENCY_BUCKETS_S = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)
RAFT_COMMIT_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class NodeMetrics:
    """Every metric a kraftlog node exposes (a broker leaves the controller ones at zero and
    the other way round)."""

    def __init__(self, registry: Registry | None = None) -> None:
        r = registry or Registry()
        self.registry = r
        # --- request dispatch (broker connection layer) ---
        self.requests: Counter = r.counter(
            "kraftlog_requests_total", "Requests handled, by API.", ("api",)
        )
        self.request_errors: Counter = r.counter(
            "kraftlog_request_errors_total",
            "Requests that raised or were refused before a handler ran, by API.",
            ("api",),
        )
        self.request_latency: Histogram = r.histogram(
            "kraftlog_request_latency_seconds",
            "Time from a request being read to its response being queued, by API.",
            ("api",),
            buckets=REQUEST_LATENCY_BUCKETS_S,
        )
        self.connections: Gauge = r.gauge(
            "kraftlog_connections", "Open client connections, by listener.", ("listener",)
        )
        self.connections_by_software: Gauge = r.gauge(
            "kraftlog_connections_by_client_software",
            "Open client connections that named their software (ApiVersions v3+), by listener "
            "and the client's software name and version.",
            ("listener", "client_software_name", "client_software_version"),
        )
        self.authentication_failures: Counter = r.counter(
            "kraftlog_authentication_failures_total",
            "Failed SASL authentications and TLS handshakes, by listener.",
            ("listener",),
        )
        self.authorization_denials: Counter = r.counter(
            "kraftlog_authorization_denied_total",
            "Operations refused by the authorizer, by resource type.",
            ("resource_type",),
        )
        # --- data (produce / fetch handlers) ---
        self.bytes_in: Counter = r.counter(
            "kraftlog_broker_topic_bytes_in_total",
            "Record bytes of Produce requests, by topic (Kafka's BytesInPerSec).",
            ("topic",),
        )
        self.bytes_out: Counter = r.counter(
            "kraftlog_broker_topic_bytes_out_total",
            "Record bytes returned to consumers and followers, by topic (BytesOutPerSec).",
            ("topic",),
        )
        self.throttle_time: Counter = r.counter(
            "kraftlog_quota_throttle_time_seconds_total",
            "Time clients were throttled by quotas, by quota type (produce, fetch).",
            ("quota_type",),
        )
        # --- replication (scrape-time gauges backed by the replica manager) ---
        self.under_replicated_partitions: Gauge = r.gauge(
            "kraftlog_under_replicated_partitions",
            "Partitions this broker leads whose ISR is smaller than the replica set.",
        )
        self.offline_partitions: Gauge = r.gauge(
            "kraftlog_offline_partitions",
            "Partitions without a leader in this node's metadata image.",
        )
        self.leader_partitions: Gauge = r.gauge(
            "kraftlog_leader_partitions", "Partitions this broker leads."
        )
        self.fetch_sessions: Gauge = r.gauge(
            "kraftlog_fetch_sessions",
            "Incremental fetch sessions (KIP-227) this broker keeps (NumIncrementalFetchSessions).",
        )
        self.fetch_session_evictions: Counter = r.counter(
            "kraftlog_fetch_session_evictions_total",
            "Fetch sessions evicted to make room for new ones.",
        )
        self.isr_shrinks: Counter = r.counter(
            "kraftlog_isr_shrinks_total", "ISR shrinks committed for partitions this broker leads."
        )
        self.isr_expands: Counter = r.counter(
            "kraftlog_isr_expands_total", "ISR expansions committed for partitions it leads."
        )
        # --- metadata / controller ---
        self.active_controller: Gauge = r.gauge(
            "kraftlog_active_controller", "1 on the active controller, else 0."
        )
        self.metadata_offset: Gauge = r.gauge(
            "kraftlog_metadata_offset", "Offset of the metadata image this node applied."
        )
        self.metadata_offset_lag: Gauge = r.gauge(
            "kraftlog_metadata_offset_lag",
            "Committed metadata offset minus the offset this node applied.",
        )
        self.raft_commit_latency: Histogram = r.histogram(
            "kraftlog_raft_commit_latency_seconds",
            "Time from a metadata append to its commit on the active controller.",
            buckets=RAFT_COMMIT_BUCKETS_S,
        )
        # --- consumer groups (group coordinator) ---
        self.consumer_group_lag: Gauge = r.gauge(
            "kraftlog_consumer_group_lag",
            "High watermark minus committed offset, by group, topic and partition.",
            ("group", "topic", "partition"),
        )

        # --- transactions (transaction coordinator, partition leaders) ---
        self.transactions_ongoing: Gauge = r.gauge(
            "kraftlog_transactions_ongoing",
            "Transactions open or completing (Ongoing, PrepareCommit, PrepareAbort) at this "
            "broker's transaction coordinator.",
        )
        self.last_stable_offset_lag: Gauge = r.gauge(
            "kraftlog_last_stable_offset_lag",
            "Largest high watermark minus last stable offset among the partitions this broker "
            "leads, by topic (how far read_committed readers are held back).",
            ("topic",),
        )
        self.transaction_markers_written: Counter = r.counter(
            "kraftlog_transaction_markers_written_total",
            "End-transaction markers this broker wrote as partition leader, by result.",
            ("result",),
        )
        self.transaction_coordinator_load_seconds: Gauge = r.gauge(
            "kraftlog_transaction_coordinator_load_seconds",
            "Duration of the last load of a __transaction_state partition this broker became "
            "leader of.",
        )

    def expose(self) -> str:
        return self.registry.expose()


_NODE_METRICS: NodeMetrics | None = None
_NODE_METRICS_LOCK = threading.Lock()


def node_metrics() -> NodeMetrics:
    """The process-wide metrics of this node (one registry per process, as Prometheus' client
    libraries keep; a combined broker+controller node exposes both sets on one endpoint)."""
    global _NODE_METRICS
    with _NODE_METRICS_LOCK:
        if _NODE_METRICS is None:
            _NODE_METRICS = NodeMetrics()
        return _NODE_METRICS
