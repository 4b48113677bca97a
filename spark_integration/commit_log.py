"""The exactly-once writer's decision log: one compacted topic, one record per decision.

Key: the writer's ``transactionalIdPrefix`` (one query or batch writer per prefix). Value:
a versioned JSON :class:`Decision`: the batch id, the prepared transactions of that batch
(transactional id, producer id, epoch) and whether every one of them is known to be
committed (``applied``). The latest value of a key is the only one that matters, which is
what compaction keeps; the topic has one partition, so the latest value is found by reading
that partition to its end (small: compaction keeps a record per prefix, plus the records
not compacted yet).

Writes use an idempotent producer with acks=all and wait for the acknowledgement: once
:meth:`CommitLog.append` returns, the decision survives the loss of all but one in-sync
replica. The topic is created on first use (cleanup.policy=compact, replication factor
min(3, brokers), min.insync.replicas min(2, replication factor), 1 partition).

A process keeps what it read of each decision log (module-level, behind a lock) and reads
only what was appended since; it also remembers the logs it created. A :class:`CommitLog`
is used by one thread at a time; open one where it is used (driver-side Python workers),
never pickle it.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

from common.error_codes import ErrorCode
from common.topic_partition import TopicPartition
from kraftlog_client import Admin, NewTopic, PreparedTxnState, Producer, TopicOperationError
from spark_integration.cluster import SourceClient
from spark_integration.planning import OffsetRange
from spark_integration.rows import to_tuples

# Version of the JSON value; readers refuse other versions rather than misread them.
DECISION_VERSION = 1
# Replication of the decision log: Kafka's usual 3 where there are that many brokers.
MAX_REPLICATION_FACTOR = 3
# The decision log's segment.bytes (1 MiB: a few thousand decisions).
SEGMENT_BYTES = 1 << 20


@dataclass(slots=True)
class _Index:
    """What this process read of one decision log: the latest value of every key among the
    offsets below ``next_offset``. Compaction only removes a record when a later one of its
    key exists, so reading on from ``next_offset`` keeps every key's latest value right."""

    next_offset: int
    values: dict[bytes, bytes]


# Per process, by (bootstrap servers, topic): Spark reuses its Python workers, so the
# driver's reads of a running query mostly fetch the few records appended since the last.
_INDEXES: dict[tuple[str, str], _Index] = {}
_CREATED: set[tuple[str, str]] = set()
_INDEX_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class Decision:
    """Batch ``batch_id`` of writer ``prefix`` commits ``transactions``; ``applied``: every
    one of them was committed (EndTxn answered NO_ERROR)."""

    prefix: str
    batch_id: int
    transactions: tuple[PreparedTxnState, ...]
    applied: bool

    def encode(self) -> bytes:
        return json.dumps(
            {
                "version": DECISION_VERSION,
                "prefix": self.prefix,
                "batch_id": self.batch_id,
                "transactions": [t.to_dict() for t in self.transactions],
                "applied": self.applied,
            },
            separators=(",", ":"),
        ).encode("utf-8")

    @classmethod
    def decode(cls, raw: bytes) -> Decision:
        value: dict[str, Any] = json.loads(raw)
        if value.get("version") != DECISION_VERSION:
            raise ValueError(
                f"decision record version {value.get('version')!r} is not {DECISION_VERSION}"
            )
        return cls(
            str(value["prefix"]),
            int(value["batch_id"]),
            tuple(PreparedTxnState.from_dict(t) for t in value["transactions"]),
            bool(value["applied"]),
        )


class CommitLog:
    """Reads and appends decisions on ``topic`` (created on first use)."""

    def __init__(self, bootstrap_servers: str, topic: str, timeout_s: float) -> None:
        """``timeout_s`` bounds each call."""
        self.topic = topic
        self._props = {"bootstrap.servers": bootstrap_servers}
        self._timeout_s = timeout_s
        self._index_key = (bootstrap_servers, topic)

    def ensure_topic(self) -> None:
        """Create the topic if it does not exist yet, and wait for its leader (once per
        process and log)."""
        with _INDEX_LOCK:
            if self._index_key in _CREATED:
                return
        with Admin(self._props) as admin:
            timeout_ms = self._timeout_s * 1000
            if self.topic not in admin.list_topics(timeout_ms=timeout_ms):
                brokers = len(admin.describe_cluster(timeout_ms=timeout_ms).brokers)
                rf = min(MAX_REPLICATION_FACTOR, brokers)
                configs = {
                    "cleanup.policy": "compact",
                    "min.insync.replicas": str(min(2, rf)),
                    # Small segments: only closed segments are compacted, and every reader
                    # new to the log reads all of it.
                    "segment.bytes": str(SEGMENT_BYTES),
                }
                try:
                    admin.create_topics(
                        [NewTopic(self.topic, 1, rf, configs)], timeout_ms=timeout_ms
                    )
                except TopicOperationError as e:
                    # Another writer created it first.
                    if any(err.code != ErrorCode.TOPIC_ALREADY_EXISTS for err in e.errors.values()):
                        raise
            admin.wait_for_leaders([self.topic], timeout_ms=timeout_ms)
        with _INDEX_LOCK:
            _CREATED.add(self._index_key)

    def latest(self, prefix: str) -> Decision | None:
        """The last decision recorded for ``prefix`` (None: none yet). Reads what was
        appended since this process last read the log (all of it the first time)."""
        self.ensure_topic()
        with _INDEX_LOCK:
            index = _INDEXES.get(self._index_key)
            start, values = (0, {}) if index is None else (index.next_offset, dict(index.values))
        props = {**self._props, "isolation.level": "read_uncommitted"}
        with SourceClient(props, timeout_ms=int(self._timeout_s * 1000)) as source:
            tp = TopicPartition(self.topic, 0)
            bounds = source.bounds([tp])[tp]
            if not bounds.earliest <= start <= bounds.latest:
                # First read, or the log is not the one read before (recreated, truncated).
                start, values = bounds.earliest, {}
            if start < bounds.latest:
                r = OffsetRange(self.topic, 0, start, bounds.latest)
                for payload, position, aborted in source.read_range(r, fail_on_data_loss=False):
                    for row in to_tuples(
                        payload, r.topic, 0, max(position, r.start), r.end, False, aborted
                    ):
                        if row[1] is None:  # a tombstone forgets the prefix
                            values.pop(row[0], None)
                        else:
                            values[row[0]] = row[1]
        with _INDEX_LOCK:
            _INDEXES[self._index_key] = _Index(bounds.latest, values)
        found = values.get(prefix.encode("utf-8"))
        return None if found is None else Decision.decode(found)

    def append(self, decision: Decision) -> None:
        """Write ``decision`` and wait until the in-sync replicas have it."""
        self.ensure_topic()
        producer = Producer({**self._props, "acks": "all", "enable.idempotence": "true"})
        try:
            future = producer.send(
                self.topic, decision.encode(), key=decision.prefix.encode("utf-8"), partition=0
            )
            producer.flush(self._timeout_s)
            future.get(self._timeout_s)
        finally:
            producer.close(self._timeout_s)
