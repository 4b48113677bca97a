"""Consumer workloads: readers by assignment (every partition, from offset 0, positions known
so the checker can demand no skips and no going back) and, when the cluster has consumer
groups, readers by group (positions unknown after a rebalance: re-reads are allowed, skips
are not).

Every poll is recorded: invoke, then ``ok`` with ``records`` ``[[topic, partition, offset,
value], ...]``, or ``info`` with the error (a poll's outcome on error is "nothing read").
After an error the assign consumer is rebuilt at the position after the last record it
returned, and records a fresh ``assign``.

Thread-safety: each worker owns its consumer; history and stats are thread-safe.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from chaos.history import READ_COMMITTED, READ_UNCOMMITTED, HistoryWriter
from chaos.workload.stats import OpStats
from chaos.workload.worker import WorkloadThread
from common.configdef import ConfigError
from kraftlog_client import Consumer, KafkaError, TopicPartition, UnsupportedFeatureError
from kraftlog_client.errors import IllegalStateError

POLL_TIMEOUT_MS = 1000
MAX_POLL_RECORDS = 500
# Pause after a failed poll before rebuilding the consumer (the cluster is in a fault).
ERROR_BACKOFF_S = 0.5


def consumer_config(bootstrap: str, process: str, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "client.id": process,
        "request.timeout.ms": 5000,
        "socket.connection.setup.timeout.ms": 3000,
        "metadata.max.age.ms": 5000,
        "auto.offset.reset": "earliest",
        "max.poll.records": MAX_POLL_RECORDS,
        **extra,
    }


def poll_value(isolation: str) -> dict[str, str] | None:
    """The invoke value of a poll: read_committed polls say so (history format)."""
    return {"isolation": isolation} if isolation == READ_COMMITTED else None


def record_assignment(
    history: HistoryWriter, process: str, group: str, partitions: Iterable[tuple[str, int]]
) -> None:
    """A group member's new assignment, positions unknown (it resumes from the committed
    offsets)."""
    index = history.invoke(process, "assign", None)
    parts = [[topic, partition, None] for topic, partition in sorted(partitions)]
    history.ok(index, {"partitions": parts, "group": group})


def records_of(batch: list[Any]) -> list[list[Any]]:
    return [
        [r.topic, r.partition, r.offset, r.value.decode("utf-8", "replace") if r.value else None]
        for r in batch
    ]


class AssignConsumerWorker(WorkloadThread):
    def __init__(
        self,
        process: str,
        *,
        bootstrap: str,
        topic: str,
        partitions: int,
        history: HistoryWriter,
        stats: OpStats,
        stop: threading.Event,
        isolation: str = READ_UNCOMMITTED,
    ) -> None:
        super().__init__(process)
        self.process = process
        self._servers = bootstrap
        self._topic = topic
        self._partitions = partitions
        self._isolation = isolation
        self._history = history
        self._stats = stats
        self._halt = stop

    def _open(self, positions: dict[int, int]) -> Consumer:
        consumer = Consumer(
            consumer_config(self._servers, self.process, **{"isolation.level": self._isolation})
        )
        tps = [TopicPartition(self._topic, p) for p in range(self._partitions)]
        index = self._history.invoke(self.process, "assign", None)
        consumer.assign(tps)
        for tp in tps:
            consumer.seek(tp, positions[tp.partition])
        self._history.ok(
            index,
            {
                "partitions": [[self._topic, p, positions[p]] for p in sorted(positions)],
                "group": None,
            },
        )
        return consumer

    def _run(self) -> None:
        positions = {p: 0 for p in range(self._partitions)}
        consumer = self._open(positions)
        try:
            while not self._halt.is_set():
                index = self._history.invoke(self.process, "poll", poll_value(self._isolation))
                try:
                    batch = consumer.poll(POLL_TIMEOUT_MS)
                except (KafkaError, IllegalStateError) as e:
                    self._history.info(index, {"error": f"{type(e).__name__}: {e}"})
                    self._stats.add("poll-info")
                    consumer.close()
                    if self._halt.wait(ERROR_BACKOFF_S):
                        return
                    consumer = self._open(positions)
                    continue
                records = records_of(batch)
                for _topic, partition, offset, _value in records:
                    positions[partition] = offset + 1
                # Past aborted records and transaction markers the position moves on
                # without a record; a rebuilt consumer starts there, not before them.
                for p in positions:
                    positions[p] = max(positions[p], _position(consumer, self._topic, p))
                self._history.ok(index, {"records": records})
                self._stats.add("poll-ok")
                self._stats.add("read", len(records))
        finally:
            consumer.close()


def _position(consumer: Consumer, topic: str, partition: int) -> int:
    try:
        return consumer.position(TopicPartition(topic, partition), timeout_ms=0)
    except (KafkaError, IllegalStateError):
        return -1


def groups_supported(bootstrap: str) -> tuple[bool, str]:
    """Whether this client build accepts ``group.id`` (consumer groups may not exist yet);
    the reason when not."""
    try:
        Consumer(consumer_config(bootstrap, "probe", **{"group.id": "chaos-probe"})).close()
    except (UnsupportedFeatureError, ConfigError) as e:
        return False, str(e)
    return True, ""


class GroupConsumerWorker(WorkloadThread):
    """A group member subscribed to the topic. Each poll is recorded; an ``assign`` (position
    unknown) is recorded whenever the member's assignment changes."""

    def __init__(
        self,
        process: str,
        *,
        group: str,
        bootstrap: str,
        topic: str,
        history: HistoryWriter,
        stats: OpStats,
        stop: threading.Event,
    ) -> None:
        super().__init__(process)
        self.process = process
        self._group = group
        self._servers = bootstrap
        self._topic = topic
        self._history = history
        self._stats = stats
        self._halt = stop

    def _run(self) -> None:
        consumer = Consumer(
            consumer_config(self._servers, self.process, **{"group.id": self._group})
        )
        seen: set[TopicPartition] | None = None
        try:
            consumer.subscribe([self._topic])
            while not self._halt.is_set():
                index = self._history.invoke(self.process, "poll", None)
                try:
                    batch = consumer.poll(POLL_TIMEOUT_MS)
                except (KafkaError, IllegalStateError) as e:
                    self._history.info(index, {"error": f"{type(e).__name__}: {e}"})
                    self._stats.add("poll-info")
                    if self._halt.wait(ERROR_BACKOFF_S):
                        return
                    continue
                assignment = set(consumer.assignment())
                if assignment != seen:
                    # Records of this poll came from the new assignment; note it first would
                    # need the rebalance callback, so positions stay unknown (null).
                    record_assignment(self._history, self.process, self._group, assignment)
                    seen = assignment
                self._history.ok(index, {"records": records_of(batch)})
                self._stats.add("poll-ok")
                self._stats.add("read", len(batch))
        finally:
            consumer.close()
