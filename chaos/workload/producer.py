"""Producer workload: one thread per producer, each writing globally unique values
(``<run>-<process>-<sequence>``) round-robin over the topic's partitions, every send recorded
in the history as invoke + completion.

Outcome rules (the checker trusts them, so they err on the side of "unknown"):

- ``send()`` raising before the record is queued (buffer or metadata wait timed out, client
  closed) -> ``fail``: the record never left the process.
- a delivery callback with metadata -> ``ok`` with the acknowledged offset.
- a delivery callback with an error -> ``info``: the client retries internally, so an earlier
  attempt may have been appended even when the last answer was a definite error
  (NOT_ENOUGH_REPLICAS after a timed-out attempt).
- records still in flight when the run stops stay open (the history reads them as ``info``).

Kinds: ``idempotent`` (acks=all, enable.idempotence=true), ``all`` (acks=all, idempotence off)
and ``acks1`` (acks=1, no idempotence). Only idempotent producers promise no duplicates; only
acks=all promises no loss; the invoke records ``acks`` and ``idempotent`` so the checker can
tell.

Thread-safety: each worker owns its producer; the history writer and stats are thread-safe.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from chaos.history import HistoryWriter
from chaos.workload.stats import OpStats
from chaos.workload.worker import WorkloadThread
from kraftlog_client import KafkaError, Producer, RecordMetadata
from kraftlog_client.errors import ClientClosedError

PRODUCER_KINDS = ("idempotent", "all", "acks1")
# Bounds: records a producer may have unacknowledged, and how long a record may take.
DEFAULT_MAX_IN_FLIGHT_RECORDS = 200
DEFAULT_DELIVERY_TIMEOUT_MS = 30_000
_SLOT_WAIT_S = 0.2


@dataclass(frozen=True, slots=True)
class ProducerSpec:
    process: str
    kind: str
    rate_per_s: float
    max_in_flight_records: int = DEFAULT_MAX_IN_FLIGHT_RECORDS
    delivery_timeout_ms: int = DEFAULT_DELIVERY_TIMEOUT_MS

    def __post_init__(self) -> None:
        if self.kind not in PRODUCER_KINDS:
            raise ValueError(f"producer kind {self.kind!r}; expected one of {PRODUCER_KINDS}")
        if self.rate_per_s <= 0:
            raise ValueError("rate_per_s must be > 0")

    def client_config(self, bootstrap: str) -> dict[str, Any]:
        acks = "1" if self.kind == "acks1" else "all"
        return {
            "bootstrap.servers": bootstrap,
            "client.id": self.process,
            "acks": acks,
            "enable.idempotence": self.kind == "idempotent",
            "linger.ms": 5,
            "request.timeout.ms": 5000,
            "delivery.timeout.ms": self.delivery_timeout_ms,
            "max.block.ms": 5000,
            "retry.backoff.ms": 100,
            "socket.connection.setup.timeout.ms": 3000,
            "metadata.max.age.ms": 5000,
        }


class ProducerWorker(WorkloadThread):
    def __init__(
        self,
        spec: ProducerSpec,
        *,
        run_id: str,
        bootstrap: str,
        topic: str,
        partitions: int,
        history: HistoryWriter,
        stats: OpStats,
        stop: threading.Event,
    ) -> None:
        super().__init__(spec.process)
        self.spec = spec
        self._run_id = run_id
        self._servers = bootstrap
        self._topic = topic
        self._partitions = partitions
        self._history = history
        self._stats = stats
        self._halt = stop
        self._slots = threading.BoundedSemaphore(spec.max_in_flight_records)

    def _run(self) -> None:
        spec = self.spec
        producer = Producer(spec.client_config(self._servers))
        interval_s = 1.0 / spec.rate_per_s
        next_at = time.monotonic()
        seq = 0
        try:
            while not self._halt.is_set():
                delay = next_at - time.monotonic()
                if delay > 0 and self._halt.wait(delay):
                    break
                next_at = max(next_at + interval_s, time.monotonic() - 1.0)
                if not self._slots.acquire(timeout=_SLOT_WAIT_S):
                    continue  # too much unacknowledged: let the cluster catch up
                self._send_one(producer, seq)
                seq += 1
            producer.flush(spec.delivery_timeout_ms / 1000)
        except KafkaError:
            pass  # flush timed out: the open sends stay info
        finally:
            producer.close(0)

    def _send_one(self, producer: Producer, seq: int) -> None:
        spec = self.spec
        value = f"{self._run_id}-{spec.process}-{seq}"
        partition = seq % self._partitions
        index = self._history.invoke(
            spec.process,
            "send",
            {
                "value": value,
                "topic": self._topic,
                "partition": partition,
                "acks": "1" if spec.kind == "acks1" else "all",
                "idempotent": spec.kind == "idempotent",
            },
        )

        def delivered(error: Exception | None, metadata: RecordMetadata | None) -> None:
            self._slots.release()
            if error is None and metadata is not None:
                self._history.ok(index, {"offset": metadata.offset})
                self._stats.add("send-ok")
            else:
                self._history.info(index, {"error": _describe(error)})
                self._stats.add("send-info")

        try:
            producer.send(
                self._topic, value=value.encode(), partition=partition, on_delivery=delivered
            )
        except (KafkaError, ClientClosedError) as e:
            self._slots.release()
            self._history.fail(index, {"error": _describe(e)})
            self._stats.add("send-fail")


def _describe(error: BaseException | None) -> str:
    return "unknown" if error is None else f"{type(error).__name__}: {error}"
