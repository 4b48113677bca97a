"""The ``transactional`` workload: what runs, on which topics, and its final reads.

Topics (replication and ``min.insync.replicas`` as the run's): ``<prefix>-in`` written by the
transactional producers, ``<prefix>-out`` written by the consume-transform-produce workers
(group ``<prefix>-transform-<run>``), both with the run's partition count.

Threads: ``txn-producer-<i>`` (native transactional producers, some transactions aborted on
purpose), ``transform-<client>-<i>`` (one per client stack: the native client and, when
installed, confluent-kafka), and observers by assignment: ``observer-committed-in``,
``observer-committed-out`` (read_committed) and ``observer-uncommitted-in``
(read_uncommitted).

After the workload stops, each topic gets a read_uncommitted and a read_committed final read
of every partition, and the transform group's committed offsets are recorded.

Thread-safety: built and read by the runner's main thread; the workers are threads.
"""

from __future__ import annotations

import importlib.util
import threading
from dataclasses import dataclass, field

from chaos.history import READ_COMMITTED, READ_UNCOMMITTED, HistoryWriter
from chaos.workload.consumer import AssignConsumerWorker
from chaos.workload.final_read import final_read, read_group_offsets
from chaos.workload.stats import OpStats
from chaos.workload.transform import TRANSFORM_CLIENTS, TransformWorker
from chaos.workload.txn_producer import TxnProducerSpec, TxnProducerWorker


@dataclass(frozen=True)
class TxnWorkloadConfig:
    topic_prefix: str = "chaos-txn"
    producers: int = 2
    # Transactions per second per producer.
    rate_per_producer: float = 10.0
    writes_per_txn: int = 3
    abort_ratio: float = 0.2
    transform_clients: tuple[str, ...] = TRANSFORM_CLIENTS

    @property
    def input_topic(self) -> str:
        return f"{self.topic_prefix}-in"

    @property
    def output_topic(self) -> str:
        return f"{self.topic_prefix}-out"

    @property
    def topics(self) -> tuple[str, str]:
        return (self.input_topic, self.output_topic)


@dataclass
class TxnWorkload:
    config: TxnWorkloadConfig
    group: str
    producers: list[threading.Thread] = field(default_factory=list)
    consumers: list[threading.Thread] = field(default_factory=list)
    transactional_ids: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # why a worker was left out


def confluent_installed() -> bool:
    return importlib.util.find_spec("confluent_kafka") is not None


def build_txn_workload(
    config: TxnWorkloadConfig,
    *,
    run_id: str,
    seed: int,
    bootstrap: str,
    partitions: int,
    history: HistoryWriter,
    stats: OpStats,
    stop_producers: threading.Event,
    stop_consumers: threading.Event,
) -> TxnWorkload:
    """The workload's threads, not started."""
    workload = TxnWorkload(config, group=f"{config.topic_prefix}-transform-{run_id}")
    for i in range(config.producers):
        spec = TxnProducerSpec(
            f"txn-producer-{i}",
            config.rate_per_producer,
            writes_per_txn=config.writes_per_txn,
            abort_ratio=config.abort_ratio,
        )
        workload.producers.append(
            TxnProducerWorker(
                spec,
                run_id=run_id,
                seed=seed * 1000 + i,
                bootstrap=bootstrap,
                topic=config.input_topic,
                partitions=partitions,
                history=history,
                stats=stats,
                stop=stop_producers,
            )
        )
        workload.transactional_ids.append(f"{run_id}-{spec.process}")
    for i, client in enumerate(config.transform_clients):
        if client == "confluent" and not confluent_installed():
            workload.skipped.append("transform-confluent: confluent-kafka is not installed")
            continue
        process = f"transform-{client}-{i}"
        workload.consumers.append(
            TransformWorker(
                process,
                client=client,
                run_id=run_id,
                group=workload.group,
                bootstrap=bootstrap,
                input_topic=config.input_topic,
                output_topic=config.output_topic,
                history=history,
                stats=stats,
                stop=stop_consumers,
            )
        )
        workload.transactional_ids.append(f"{run_id}-{process}")
    observers = [
        ("observer-committed-in", config.input_topic, READ_COMMITTED),
        ("observer-committed-out", config.output_topic, READ_COMMITTED),
        ("observer-uncommitted-in", config.input_topic, READ_UNCOMMITTED),
    ]
    for process, topic, isolation in observers:
        workload.consumers.append(
            AssignConsumerWorker(
                process,
                bootstrap=bootstrap,
                topic=topic,
                partitions=partitions,
                history=history,
                stats=stats,
                stop=stop_consumers,
                isolation=isolation,
            )
        )
    return workload


def txn_final_reads(
    workload: TxnWorkload,
    *,
    bootstrap: str,
    partitions: int,
    history: HistoryWriter,
    timeout_s: float,
) -> dict[str, dict[int, int]]:
    """Both final reads of both topics, then the group's offsets; returns topic ->
    partition -> high watermark (of the read_uncommitted reads that completed)."""
    hws: dict[str, dict[int, int]] = {}
    for topic in workload.config.topics:
        hws[topic] = final_read(
            bootstrap=bootstrap,
            topic=topic,
            partitions=partitions,
            history=history,
            timeout_s=timeout_s,
        )
        final_read(
            bootstrap=bootstrap,
            topic=topic,
            partitions=partitions,
            history=history,
            timeout_s=timeout_s,
            isolation=READ_COMMITTED,
        )
    read_group_offsets(
        bootstrap=bootstrap, group=workload.group, history=history, timeout_s=timeout_s
    )
    return hws
