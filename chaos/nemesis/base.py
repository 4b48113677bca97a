"""What every nemesis shares: the context it acts on, the handle of an active fault, and the
cluster views (partition leaders, active controller) nemeses pick their targets from.

A nemesis is a small object with a ``name`` and ``start(ctx) -> ActiveFault``. ``start``
chooses its targets (from the live cluster, with the context's seeded random generator),
calls ``ctx.begin(fault, targets, detail)`` just before it injects anything, injects the
fault and returns a handle whose ``heal()`` undoes it. The runner writes the history's
``nemesis`` start event from ``begin`` (so a fault window opens before the fault's first
effect, also for long faults such as a rolling restart) and the heal event after ``heal()``
with the same id and the final detail (what was cut, filled, whether a node crashed), so the
checker can shade fault windows and measure recovery after each heal.

Thread-safety: nemeses run on the runner's nemesis thread only.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chaos.cluster import ChaosCluster
from deploy.local_cluster import LocalCluster
from kraftlog_client import Admin, KafkaError
from kraftlog_client.metadata import PartitionInfo

# Bound on one metadata probe of the cluster (nodes may be down or partitioned).
METADATA_TIMEOUT_MS = 5000


class NoTargetError(Exception):
    """The cluster offers no target for this nemesis right now (e.g. no partition leader);
    the scheduler skips the fault and records nothing."""


@dataclass
class NemesisContext:
    cluster: ChaosCluster
    topic: str
    rng: random.Random
    # Broker session timeout of the cluster: pauses outlast it so the broker is fenced.
    session_timeout_ms: int
    log: Callable[[str], None] = print
    # Every topic the workload writes (``topic`` among them; empty = ``topic`` only), and the
    # transactional ids of its transactional producers (targets of coordinator faults).
    topics: tuple[str, ...] = ()
    transactional_ids: tuple[str, ...] = ()
    # Set by the runner for each fault: records the start event in the history.
    on_begin: Callable[[str, list[Any], dict[str, Any]], None] | None = None
    began: bool = False

    def begin(self, fault: str, targets: list[Any], detail: dict[str, Any] | None = None) -> None:
        """The fault is about to take effect (call once, right before injecting)."""
        if self.began:
            raise RuntimeError(f"{fault}: begin() called twice")
        self.began = True
        if self.on_begin is not None:
            self.on_begin(fault, targets, dict(detail or {}))

    @property
    def local(self) -> LocalCluster:
        return self.cluster.local

    def bootstrap(self) -> str:
        return ",".join(self.cluster.local.bootstrap_servers())

    def _admin(self) -> Admin:
        return Admin(
            {
                "bootstrap.servers": self.bootstrap(),
                "request.timeout.ms": METADATA_TIMEOUT_MS,
                "default.api.timeout.ms": METADATA_TIMEOUT_MS,
                "socket.connection.setup.timeout.ms": 2000,
            }
        )

    def partitions(self, topic: str | None = None) -> dict[int, PartitionInfo]:
        """The partitions of ``topic`` (default ``self.topic``) as the first answering broker
        sees them."""
        topic = topic or self.topic
        admin = self._admin()
        try:
            info = admin.describe_topics([topic], timeout_ms=METADATA_TIMEOUT_MS)
        finally:
            admin.close()
        return {p.partition: p for p in info[topic].partitions}

    def pick_partition(self) -> PartitionInfo:
        """A random partition, of a random workload topic, that has a leader."""
        topic = self.rng.choice(sorted(self.topics or (self.topic,)))
        led = [p for p in self.partitions(topic).values() if p.leader >= 0]
        if not led:
            raise NoTargetError(f"no partition of {topic} has a leader")
        return self.rng.choice(sorted(led, key=lambda p: p.partition))

    def transaction_coordinator(self) -> tuple[str, int]:
        """A random workload transactional id and the broker coordinating it."""
        if not self.transactional_ids:
            raise NoTargetError("the workload has no transactional producer")
        txn_id = self.rng.choice(sorted(self.transactional_ids))
        admin = self._admin()
        try:
            coordinator = admin.describe_transaction(
                txn_id, timeout_ms=METADATA_TIMEOUT_MS
            ).coordinator
        except KafkaError as e:
            raise NoTargetError(f"no coordinator of {txn_id}: {e}") from None
        finally:
            admin.close()
        return txn_id, coordinator

    def active_controller(self) -> int:
        return self.cluster.local.active_controller_id(METADATA_TIMEOUT_MS / 1000)

    def live_brokers(self) -> list[int]:
        local = self.cluster.local
        return [b for b in local.broker_ids if local.is_running(b) and not local.is_paused(b)]


@dataclass
class ActiveFault:
    """A fault in place. ``heal`` undoes it (idempotent); ``detail`` goes to the history."""

    fault: str
    targets: list[Any]
    heal: Callable[[], None]
    detail: dict[str, Any] = field(default_factory=dict)
    # Faults that are over once start returns (a rolling restart, a leadership move).
    instantaneous: bool = False


class Nemesis(ABC):
    """Base class: ``name`` is the CLI name (``--nemesis kill,pause,...``)."""

    name = "nemesis"

    def expected_duration_s(self, ctx: NemesisContext) -> float:
        """How long ``start`` itself takes, for faults that do their work there (a rolling
        restart); the scheduler does not start a fault that would overrun its window."""
        return 0.0

    @abstractmethod
    def start(self, ctx: NemesisContext) -> ActiveFault:
        """Inject the fault; raise NoTargetError when there is nothing to hit right now."""
