"""Transactional producers: one thread each, writing one globally unique value to each of
several partitions per transaction and aborting some transactions on purpose; every
transaction is one ``txn`` operation in the history (format: :mod:`chaos.history`).

Outcome rules (the checker trusts them, so they err on the side of "unknown"):

- the commit (or the intended abort) returned -> ``ok`` with ``outcome``;
- anything failed, and the abort that followed was acknowledged by the coordinator ->
  ``fail``: the coordinator refuses to abort a transaction whose commit it has written, so an
  acknowledged abort proves the transaction did not commit;
- anything else (a commit that timed out, the abort failing too, a fenced producer) ->
  ``info``; the producer is then closed and a new one initialized under the same
  transactional.id, which fences the old one and finishes what it left open.

The commit's start time (``commit_at``) is taken before ``commit_transaction`` flushes: a
read_committed reader can see none of the transaction's records before that moment.

Thread-safety: each worker owns its producer; the history writer and stats are thread-safe.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chaos.history import HistoryWriter
from chaos.workload.stats import OpStats
from chaos.workload.worker import WorkloadThread
from kraftlog_client import KafkaError, Producer
from kraftlog_client.errors import ClientClosedError, IllegalStateError

# Bound of each call of a transaction (a fault may hold any of them). Short: a worker stuck
# in a call holds its partitions, so its give-up-and-start-again must fit, with a rejoin,
# well inside the checker's 30 s liveness window after a heal.
TXN_CALL_TIMEOUT_S = 6.0
# The coordinator aborts a transaction left open this long (a producer that died mid-way),
# so a stuck transaction holds read_committed readers back for at most this long.
TXN_TIMEOUT_MS = 10_000
# Pause after a failed transaction before the next one (the cluster is in a fault).
ERROR_BACKOFF_S = 0.5
CLIENT_ERRORS: tuple[type[BaseException], ...] = (
    KafkaError,
    ClientClosedError,
    IllegalStateError,
    TimeoutError,
)


@dataclass(frozen=True, slots=True)
class TxnProducerSpec:
    process: str
    # Transactions started per second (each waits for the previous one to end).
    rate_per_s: float
    writes_per_txn: int = 3
    abort_ratio: float = 0.2

    def __post_init__(self) -> None:
        if self.rate_per_s <= 0 or self.writes_per_txn < 1:
            raise ValueError("rate_per_s must be > 0 and writes_per_txn >= 1")
        if not 0.0 <= self.abort_ratio <= 1.0:
            raise ValueError("abort_ratio must be in [0, 1]")


def txn_producer_config(bootstrap: str, transactional_id: str, process: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "client.id": process,
        "transactional.id": transactional_id,
        "transaction.timeout.ms": TXN_TIMEOUT_MS,
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": 5,
        "request.timeout.ms": 5000,
        "delivery.timeout.ms": 12_000,
        "max.block.ms": 10_000,
        "retry.backoff.ms": 100,
        "socket.connection.setup.timeout.ms": 3000,
        "metadata.max.age.ms": 5000,
    }


class TransactionRecorder:
    """Runs one transaction's body and records its outcome by the module's rules.

    ``run(producer, value, body)`` invokes the ``txn`` operation with ``value``, calls
    ``body()`` (begin, sends, offsets), then commits or aborts as ``value["intent"]`` says.
    Returns the completion's type: ``ok``, ``fail`` (aborted; the producer is usable) or
    ``info`` (the producer must be replaced). ``errors`` are the client errors that mean
    "this transaction went wrong" (anything else propagates: a bug).
    """

    def __init__(self, process: str, history: HistoryWriter, stats: OpStats) -> None:
        self.process = process
        self._history = history
        self._stats = stats

    def run(
        self,
        producer: Any,
        value: dict[str, Any],
        body: Callable[[], None],
        errors: tuple[type[BaseException], ...] = CLIENT_ERRORS,
    ) -> str:
        index = self._history.invoke(self.process, "txn", value)
        commit_at: float | None = None
        try:
            body()
            if value["intent"] == "commit":
                commit_at = self._history.elapsed_s()
                producer.commit_transaction(TXN_CALL_TIMEOUT_S)
            else:
                producer.abort_transaction(TXN_CALL_TIMEOUT_S)
        except errors as e:
            return self._failed(producer, index, e, commit_at, errors)
        result: dict[str, Any] = {"outcome": value["intent"]}
        if commit_at is not None:
            result["commit_at"] = round(commit_at, 6)
        self._history.ok(index, result)
        self._stats.add(f"txn-{value['intent']}")
        return "ok"

    def _failed(
        self,
        producer: Any,
        index: int,
        error: BaseException,
        commit_at: float | None,
        errors: tuple[type[BaseException], ...],
    ) -> str:
        detail: dict[str, Any] = {"error": describe(error)}
        if commit_at is not None:
            detail["commit_at"] = round(commit_at, 6)
        try:
            producer.abort_transaction(TXN_CALL_TIMEOUT_S)
        except errors as e:
            detail["abort_error"] = describe(e)
            self._history.info(index, detail)
            self._stats.add("txn-info")
            return "info"
        self._history.fail(index, detail)
        self._stats.add("txn-fail")
        return "fail"


def describe(error: BaseException | None) -> str:
    return "unknown" if error is None else f"{type(error).__name__}: {error}"


class TxnProducerWorker(WorkloadThread):
    """Writes ``writes_per_txn`` values to distinct random partitions of ``topic`` per
    transaction, ``abort_ratio`` of them aborted on purpose (seeded per worker)."""

    def __init__(
        self,
        spec: TxnProducerSpec,
        *,
        run_id: str,
        seed: int,
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
        self._rng = random.Random(seed)
        self._servers = bootstrap
        self._topic = topic
        self._partitions = partitions
        self._history = history
        self._stats = stats
        self._halt = stop
        self._recorder = TransactionRecorder(spec.process, history, stats)

    def _new_producer(self) -> Producer | None:
        """A producer with its transactions initialized, or None if stopped first."""
        config = txn_producer_config(
            self._servers, f"{self._run_id}-{self.spec.process}", self.spec.process
        )
        while not self._halt.is_set():
            producer = Producer(config)
            try:
                producer.init_transactions(TXN_CALL_TIMEOUT_S)
                return producer
            except CLIENT_ERRORS:
                producer.close(0)
                self._stats.add("txn-init-retry")
                self._halt.wait(ERROR_BACKOFF_S)
        return None

    def _run(self) -> None:
        spec = self.spec
        interval_s = 1.0 / spec.rate_per_s
        writes = min(spec.writes_per_txn, self._partitions)
        producer = self._new_producer()
        n = 0
        try:
            while producer is not None and not self._halt.is_set():
                txn_id = f"{self._run_id}-{spec.process}-{n}"
                parts = sorted(self._rng.sample(range(self._partitions), writes))
                intent = "abort" if self._rng.random() < spec.abort_ratio else "commit"
                value = {
                    "id": txn_id,
                    "intent": intent,
                    "writes": [[self._topic, p, f"{txn_id}-{p}"] for p in parts],
                }

                def body(p: Producer = producer, v: dict[str, Any] = value) -> None:
                    p.begin_transaction()
                    for topic, partition, record in v["writes"]:
                        p.send(topic, record.encode(), partition=partition)

                n += 1
                if self._recorder.run(producer, value, body) == "info":
                    producer.close(0)
                    self._halt.wait(ERROR_BACKOFF_S)
                    producer = self._new_producer()
                    continue
                if self._halt.wait(interval_s):
                    break
        finally:
            if producer is not None:
                producer.close(0)
