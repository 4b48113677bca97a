"""Leader observer: every second, the partition leaders and leader epochs the brokers report
(Metadata) and the Raft leader and term of the controller quorum, written to the history as
``leader`` events whenever they change. The checker's "at most one leader per epoch" works
on these observations.

Thread-safety: one thread; the history writer is thread-safe.
"""

from __future__ import annotations

import threading

from chaos.history import CONTROLLER_TOPIC, HistoryWriter
from chaos.workload.worker import WorkloadThread
from kraftlog_client import Admin, KafkaError
from metadata.client import ControllerClient

OBSERVE_INTERVAL_S = 1.0
_TIMEOUT_MS = 3000


class LeaderObserver(WorkloadThread):
    def __init__(
        self,
        *,
        bootstrap: str,
        controllers: str | None,
        topic: str,
        history: HistoryWriter,
        stop: threading.Event,
    ) -> None:
        super().__init__("observer")
        self._servers = bootstrap
        self._controllers = controllers
        self._topic = topic
        self._history = history
        self._halt = stop
        self._seen: dict[tuple[str, int], tuple[int, int]] = {}

    def _run(self) -> None:
        while not self._halt.wait(OBSERVE_INTERVAL_S):
            self._observe_partitions()
            self._observe_quorum()

    def _note(self, topic: str, partition: int, epoch: int, leader: int, source: str) -> None:
        key = (topic, partition)
        if leader < 0 or self._seen.get(key) == (epoch, leader):
            return
        self._seen[key] = (epoch, leader)
        self._history.leader(topic, partition, epoch, leader, source=source)

    def _observe_partitions(self) -> None:
        admin = Admin(
            {
                "bootstrap.servers": self._servers,
                "request.timeout.ms": _TIMEOUT_MS,
                "default.api.timeout.ms": _TIMEOUT_MS,
                "socket.connection.setup.timeout.ms": 2000,
            }
        )
        try:
            info = admin.describe_topics([self._topic], timeout_ms=_TIMEOUT_MS)
        except KafkaError:
            return  # no broker answers right now (a fault); try again next round
        finally:
            admin.close()
        for p in info[self._topic].partitions:
            self._note(self._topic, p.partition, p.leader_epoch, p.leader, "metadata")

    def _observe_quorum(self) -> None:
        if self._controllers is None:
            return
        try:
            with ControllerClient(self._controllers, _TIMEOUT_MS / 1000) as client:
                status = client.quorum_status()
        except Exception:  # any transport error means "no answer this round"
            return
        leader, epoch = status.get("leader_id"), status.get("epoch")
        if isinstance(leader, int) and isinstance(epoch, int):
            self._note(CONTROLLER_TOPIC, 0, epoch, leader, "quorum")
