"""KafkaApis: the state request handlers share, and what a handler is (the table of handled
APIs is the handler registry, :data:`data_plane.broker.handlers.HANDLERS`).

A handler is ``handle(apis, request) -> Response``: a response body (dict, encoded by the
codec), :data:`NO_RESPONSE` (acks=0 Produce), :data:`CLOSE_CONNECTION`, or a coroutine
producing one of those (requests that wait: delayed fetch, acks=all, admin forwarding). Handlers
never block the event loop: controller calls run in ``apis.admin_executor``.
Beside its handler, each API's module has its authorization rule, ``authorize``
(:mod:`data_plane.security.request_authz`), which runs before the handler.

Thread-safety: everything here belongs to the event loop thread, except ``admin_executor``
jobs, which only call the (thread-safe) ControllerClient.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar, TypeVarTuple

from common.protocol.codec import RequestHeader
from common.protocol.message_base import Message
from common.protocol.messages.write_txn_markers import (
    WriteTxnMarkersRequestMarker,
    WriteTxnMarkersResponseMarker,
)
from common.topic_partition import TopicPartition
from data_plane.broker.config import BrokerConfig
from data_plane.broker.coordinator_partition_writer import CoordinatorPartitionWriter
from data_plane.broker.fetch_session import FetchSessionCache
from data_plane.broker.producer_ids import ProducerIdManager
from data_plane.broker.purgatory import DelayedOperationPurgatory
from data_plane.broker.replica_manager import ReplicaManager
from data_plane.broker.txn_marker_sender import TransactionMarkerSender
from data_plane.broker.txn_verifier import TransactionVerifier
from data_plane.coordinator import (
    OFFSETS_TOPIC,
    GroupCoordinator,
    GroupCoordinatorRuntime,
    coordinator_config,
    wall_clock_ms,
)
from data_plane.coordinator.transaction_coordinator import (
    TransactionCoordinator,
    TransactionCoordinatorConfig,
)
from data_plane.coordinator.transaction_runtime import TransactionCoordinatorRuntime
from metadata.client import ControllerClient
from metadata.image import MetadataImage
from metadata.topics import TRANSACTION_STATE_TOPIC

logger = logging.getLogger(__name__)
T = TypeVar("T")
Ts = TypeVarTuple("Ts")


class _Sentinel:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


NO_RESPONSE = _Sentinel("NO_RESPONSE")
CLOSE_CONNECTION = _Sentinel("CLOSE_CONNECTION")

# A request or response body: a generated Message for the APIs the codec has typed
# (common.protocol.codec.TYPED_APIS), else a dict.
Body = dict[str, Any] | Message | _Sentinel
Response = Body | Coroutine[Any, Any, Body]


class ProduceGate:
    """Keeps one connection's Produce appends in request order. A Produce request whose
    appends wait (a transaction verification) holds the gate until they are done; every
    later Produce request of the connection appends only after that, as Kafka's broker,
    which handles one request of a connection at a time, does. Without it a later request
    (its partition's transaction already open, nothing to verify) would append its batches
    before the earlier request's: OUT_OF_ORDER_SEQUENCE_NUMBER for a pipelining producer.

    Thread-safety: none; the connection's event loop owns it (asyncio.Event)."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: asyncio.Event | None = None

    def busy(self) -> bool:
        """Whether an earlier request's appends are still waiting."""
        return self._last is not None and not self._last.is_set()

    def hold(self) -> tuple[asyncio.Event | None, asyncio.Event]:
        """Take the next place: (the previous holder's event to await first, or None; this
        request's event, to set once its appends are done)."""
        previous, mine = self._last, asyncio.Event()
        self._last = mine
        return (previous if previous is not None and not previous.is_set() else None), mine


@dataclass(frozen=True, slots=True)
class Request:
    header: RequestHeader
    body: dict[str, Any]
    listener_name: str
    # The client's address as Kafka reports it in group descriptions: "/" + IP.
    client_host: str = ""
    # The connection's Produce order (None: a request outside a connection, e.g. a test).
    produce_gate: ProduceGate | None = None


Handler = Callable[["KafkaApis", Request], Response]


class KafkaApis:
    def __init__(
        self,
        broker_id: int,
        cluster_id: str | None,
        config: BrokerConfig,
        replica_manager: ReplicaManager,
        controller: ControllerClient | None,
        clock_ms: Callable[[], int],
        *,
        default_num_partitions: int = 1,
        default_replication_factor: int = 1,
        local_config: Callable[[], dict[str, str]] = dict,
        authorizer_enabled: bool = False,
    ) -> None:
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self.config = config
        self.replica_manager = replica_manager
        self.controller = controller
        self.clock_ms = clock_ms
        self.default_num_partitions = default_num_partitions
        self.default_replication_factor = default_replication_factor
        self.local_config = local_config
        # Whether requests pass an authorizer (kraftlog.authorizer.enabled): without one the
        # ACL APIs answer SECURITY_DISABLED, as Kafka's broker without authorizer.class.name.
        self.authorizer_enabled = authorizer_enabled
        self.fetch_sessions = FetchSessionCache(config.max_incremental_fetch_session_cache_slots)
        max_parked = config.purgatory_max_operations
        self.fetch_purgatory: DelayedOperationPurgatory[TopicPartition] = DelayedOperationPurgatory(
            "Fetch", clock_ms, max_parked
        )
        # tp -> the partition's produce_completion_state at its last produce wake-up.
        self._produce_wake_states: dict[TopicPartition, tuple[object, ...]] = {}
        self.produce_purgatory: DelayedOperationPurgatory[TopicPartition] = (
            DelayedOperationPurgatory("Produce", clock_ms, max_parked)
        )
        self.admin_executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=config.admin_threads, thread_name_prefix=f"broker-{broker_id}-admin"
        )
        # AlterPartition calls (blocking gRPC) of the replication layer, one at a time.
        self.replication_executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=f"broker-{broker_id}-alter-partition"
        )
        replica_manager.set_partition_change_listener(self.on_partition_change)
        # InitProducerId: ids from controller-allocated blocks (gRPC on the admin pool).
        self.producer_id_manager = ProducerIdManager(
            broker_id, self._broker_epoch, controller, self.admin_executor
        )
        self._last_producer_expiration_ms = clock_ms()
        # Topics an auto-create call is in flight for (one call per topic at a time).
        self.auto_creating: set[str] = set()
        # Consumer groups and committed offsets (docs/groups.md).
        self.group_coordinator = GroupCoordinatorRuntime(
            GroupCoordinator(coordinator_config(config), wall_clock_ms),
            CoordinatorPartitionWriter(replica_manager, self.produce_purgatory),
            commit_timeout_ms=config.offsets_commit_timeout_ms,
            load_buffer_bytes=config.offsets_load_buffer_size,
        )
        # Transactions (docs/transactions.md): the coordinator of the __transaction_state
        # partitions led here, and the sender of its end markers to partition leaders.
        self.transaction_markers = TransactionMarkerSender(
            broker_id,
            lambda: self.image,
            self._write_markers_locally,
            retry_backoff_ms=config.transaction_marker_retry_backoff_ms,
            request_timeout_ms=config.request_timeout_ms,
        )
        # Leaders verify a transaction's first batch on a partition with its coordinator.
        self.transaction_verifier = TransactionVerifier(
            broker_id,
            lambda: self.image,
            lambda *args: self.transaction_coordinator.coordinator.verify_partitions(*args),
            request_timeout_ms=config.request_timeout_ms,
        )
        # End markers written here as partition leader, by result (a metric's running count).
        self.transaction_markers_written: dict[str, int] = {"commit": 0, "abort": 0}
        self.transaction_coordinator = TransactionCoordinatorRuntime(
            TransactionCoordinator(
                TransactionCoordinatorConfig(
                    transaction_max_timeout_ms=config.transaction_max_timeout_ms,
                    transactional_id_expiration_ms=config.transactional_id_expiration_ms,
                    abort_timed_out_interval_ms=(
                        config.transaction_abort_timed_out_transaction_cleanup_interval_ms
                    ),
                    remove_expired_interval_ms=(
                        config.transaction_remove_expired_transaction_cleanup_interval_ms
                    ),
                ),
                num_partitions=config.transaction_state_log_num_partitions,
                clock_ms=wall_clock_ms,
            ),
            CoordinatorPartitionWriter(replica_manager, self.produce_purgatory),
            self.transaction_markers,
            lambda: self.producer_id_manager.generate_producer_id(config.request_timeout_ms),
            write_timeout_ms=config.request_timeout_ms,
            wall_clock=wall_clock_ms,
        )

    @property
    def image(self) -> MetadataImage:
        return self.replica_manager.image

    def on_partition_change(self, tp: TopicPartition) -> None:
        """New data, a moved HW, or a leadership change on ``tp``: wake parked requests."""
        self.fetch_purgatory.check_and_complete(tp)
        if self._produce_state_changed(tp):
            self.produce_purgatory.check_and_complete(tp)
        if tp.topic == OFFSETS_TOPIC:
            self.group_coordinator.on_partition_change(tp)
        elif tp.topic == TRANSACTION_STATE_TOPIC:
            self.transaction_coordinator.on_partition_change(tp)

    def _produce_state_changed(self, tp: TopicPartition) -> bool:
        """Whether what parked acks=all produces on ``tp`` wait for changed since their last
        wake-up (always True for a partition no longer hosted). A leader's append rarely
        moves it (the high watermark moves on follower fetches), yet every producer with a
        request in flight has one parked there."""
        part = self.replica_manager.get_partition(tp)
        if part is None:
            self._produce_wake_states.pop(tp, None)
            return True
        state = part.produce_completion_state()
        if self._produce_wake_states.get(tp) == state:
            return False
        self._produce_wake_states[tp] = state
        return True

    async def _write_markers_locally(
        self, markers: list[WriteTxnMarkersRequestMarker]
    ) -> list[WriteTxnMarkersResponseMarker]:
        # The handler module imports this one: import it when first needed.
        from data_plane.broker.handlers.write_txn_markers import write_markers

        return await write_markers(self, markers)

    def _broker_epoch(self) -> int:
        b = self.image.brokers.get(self.broker_id)
        return b.epoch if b is not None else -1

    def tick(self) -> None:
        """Expire parked requests whose deadline passed (the server calls this often), and
        every ``producer.id.expiration.check.interval.ms`` idle producer ids."""
        self.fetch_purgatory.expire()
        self.produce_purgatory.expire()
        self.group_coordinator.tick()
        self.transaction_coordinator.tick()
        now = self.clock_ms()
        if now - self._last_producer_expiration_ms >= (
            self.config.producer_id_expiration_check_interval_ms
        ):
            self._last_producer_expiration_ms = now
            for part in self.replica_manager.partitions():
                part.log.remove_expired_producers(now, self.config.producer_id_expiration_ms)

    async def call_controller(self, fn: Callable[[*Ts], T], *args: *Ts) -> T:
        """Run a blocking ControllerClient call off the event loop."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.admin_executor, fn, *args)

    async def wait_for_image(
        self, predicate: Callable[[MetadataImage], bool], timeout_ms: int
    ) -> bool:
        """Wait (bounded) until this broker's metadata satisfies ``predicate``: admin answers
        go out once the broker itself sees the change, so a client's next Metadata call does."""
        deadline = self.clock_ms() + max(0, timeout_ms)
        while not predicate(self.image):
            if self.clock_ms() >= deadline:
                return False
            await asyncio.sleep(IMAGE_POLL_S)
        return True

    def close(self) -> None:
        self.group_coordinator.close()
        self.transaction_coordinator.close()
        self.transaction_verifier.close()
        self.transaction_markers.close()
        self.producer_id_manager.close()
        self.fetch_purgatory.cancel_all()
        self.produce_purgatory.cancel_all()
        self.admin_executor.shutdown(wait=False, cancel_futures=True)
        self.replication_executor.shutdown(wait=False, cancel_futures=True)


# How often wait_for_image re-checks the image.
IMAGE_POLL_S = 0.01
