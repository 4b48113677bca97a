"""ReplicaManager: the partitions this broker hosts, kept in step with committed metadata.

Each metadata image the broker's :class:`~data_plane.broker.partition_logs.PartitionLogs`
publishes (an event, once the logs the image hosts exist) is turned into a delta against the
last image applied here (:meth:`MetadataDelta.from_snapshot`), and its
``local_changes(broker_id)`` make partitions leaders or followers (with their leader epoch and
ISR) or drop them, in the same :meth:`apply_image` call. Only a log whose creation failed (an
I/O error, logged by PartitionLogs) is missing then: its partition is not hosted and is tried
again with the next image. A topic deleted and re-created under the same name is hosted only
with its new log, never the retired one.

Produce goes through :meth:`append_records` (validated batches only, one Log.append per
partition); Fetch through :meth:`get_partition` + ``Partition.read_records``.

Offline partitions: when a log directory fails, :meth:`handle_offline_partitions` stops
hosting the partitions whose logs it held (no fetching, no serving: KAFKA_STORAGE_ERROR to
clients, so they refresh their metadata and find the leader the controller elects instead)
until the process restarts; later images never host them again.

Replication, once :meth:`attach_replication` gave it the fetcher manager and the
AlterPartition manager:

- a partition that becomes a follower, or whose leader or leader epoch changes while it
  follows, is handed to the replica fetcher manager (truncation by leader epoch, then fetching
  from the new leader); a partition that becomes leader or is deleted leaves it. A deposed
  leader thus stops accepting writes on the image that shows the new epoch, and its parked
  acks=all produces fail with NOT_LEADER_OR_FOLLOWER (they are re-checked on the change);
- :meth:`record_follower_fetch` (the Fetch handler, replica_id >= 0) updates the leader's view
  of that follower, may move the HW (waking parked produces and fetches) and may propose an
  ISR expansion;
- :meth:`tick` proposes ISR shrinks every ``replica.lag.time.max.ms / 2``.

Thread-safety: none; the broker's event loop owns it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import NamedTuple

from common.error_codes import ErrorCode
from common.errors import ApiError
from common.protocol.topic_id_versions import ZERO_ID
from common.topic_partition import TopicPartition
from data_plane.broker.errors import (
    BrokerRequestError,
    NotLeaderOrFollowerError,
    UnknownTopicOrPartitionError,
)
from data_plane.broker.partition import Partition
from data_plane.replication.alter_partition_manager import AlterPartitionManager
from data_plane.replication.leader_state import IsrChangeProposal
from data_plane.replication.replica_fetcher import ReplicaFetcherManager
from data_plane.storage import (
    AppendOrigin,
    Log,
    LogAppendInfo,
    LogManager,
    VerificationGuard,
    validate_produce_payload,
)
from metadata.delta import MetadataDelta
from metadata.image import MetadataImage, PartitionRegistration
from metadata.messages import AlterPartitionResult

logger = logging.getLogger(__name__)

MIN_INSYNC_REPLICAS_KEY = "min.insync.replicas"


class AppendResult(NamedTuple):
    """One partition's Produce outcome; offsets are -1 on error."""

    error_code: int
    base_offset: int = -1
    last_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: str | None = None


class ReplicaManager:
    def __init__(
        self,
        broker_id: int,
        log_manager: LogManager,
        default_min_insync_replicas: int = 1,
        on_partition_change: Callable[[TopicPartition], None] | None = None,
        *,
        clock_ms: Callable[[], int] | None = None,
        replica_lag_time_max_ms: int = 30_000,
    ) -> None:
        self.broker_id = broker_id
        self.clock_ms: Callable[[], int] = clock_ms or (lambda: 0)
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.fetcher_manager: ReplicaFetcherManager | None = None
        self.alter_partition_manager: AlterPartitionManager | None = None
        self._last_isr_check_ms = 0
        self.log_manager = log_manager
        self.default_min_insync_replicas = default_min_insync_replicas
        self._on_partition_change = on_partition_change
        self._partitions: dict[TopicPartition, Partition] = {}
        # Hosted partitions whose log was missing when their image was applied.
        self._missing_logs: dict[TopicPartition, PartitionRegistration] = {}
        # Logs of partitions deleted here whose replacement may not exist yet.
        self._retired_logs: dict[TopicPartition, Log] = {}
        self.image = MetadataImage()

    def attach_replication(
        self,
        fetcher_manager: ReplicaFetcherManager,
        alter_partition_manager: AlterPartitionManager,
    ) -> None:
        """Start replicating: followers fetch, leaders propose ISR changes."""
        self.fetcher_manager = fetcher_manager
        self.alter_partition_manager = alter_partition_manager
        for tp, part in self._partitions.items():
            if not part.is_leader and part.leader_id >= 0:
                self._follow(fetcher_manager, tp, part)

    def set_partition_change_listener(self, fn: Callable[[TopicPartition], None]) -> None:
        """``fn(tp)`` is called after an append to ``tp`` and when ``tp`` changes role, so parked
        requests on it are re-checked (KafkaApis registers itself)."""
        self._on_partition_change = fn

    # --- metadata -----------------------------------------------------------------------------

    def apply_image(self, image: MetadataImage) -> list[TopicPartition]:
        """Apply a newer metadata image (no-op for the same image); return the partitions
        whose leadership or ISR changed, or that appeared or disappeared. Partitions whose log
        was missing at an earlier call are tried again."""
        changed: list[TopicPartition] = []
        if image is not self.image and image.offset >= self.image.offset:
            local = MetadataDelta.from_snapshot(self.image, image).local_changes(self.broker_id)
            self.image = image
            hosted = local.leaders.keys() | local.followers.keys()
            for tp in local.deletes:
                self._missing_logs.pop(tp, None)
                self._retired_logs.pop(tp, None)
                if self.fetcher_manager is not None:
                    self.fetcher_manager.remove_partition(tp)
                old = self._partitions.pop(tp, None)
                if old is not None:
                    changed.append(tp)
                    if tp in hosted:
                        # Deleted and re-created under the same name: never host the new
                        # partition with the old log (if replacing it failed).
                        self._retired_logs[tp] = old.log
            fresh = {
                tp: lp.registration for tp, lp in (*local.leaders.items(), *local.followers.items())
            }
        else:
            fresh = {}
        retry, self._missing_logs = self._missing_logs, {}
        offline = self.log_manager.is_offline_partition
        for tp, reg in {**retry, **fresh}.items():
            if not offline(tp):
                self._become_or_miss(tp, reg, changed)
        if self._on_partition_change is not None:
            for tp in changed:
                self._on_partition_change(tp)
        return changed

    def _become_or_miss(
        self, tp: TopicPartition, reg: PartitionRegistration, changed: list[TopicPartition]
    ) -> None:
        if self._become(tp, reg):
            changed.append(tp)
            return
        if tp not in self._missing_logs:
            logger.warning("%s-%d: no log to host it (creating the log failed?)", *tp)
        self._missing_logs[tp] = reg

    def _become(self, tp: TopicPartition, reg: PartitionRegistration) -> bool:
        part = self._partitions.get(tp)
        if part is None:
            log_ = self.log_manager.get_log(tp.topic, tp.partition)
            if log_ is None or log_ is self._retired_logs.get(tp):
                return False  # its log was not created (or not replaced)
            self._retired_logs.pop(tp, None)
            part = Partition(tp.topic, tp.partition, self.broker_id, log_)
            self._partitions[tp] = part
        part.apply_registration(
            reg,
            self._min_insync_replicas(tp.topic),
            self.clock_ms(),
            self.replica_lag_time_max_ms,
        )
        fm = self.fetcher_manager
        if fm is not None:
            if part.is_leader or part.leader_id < 0:
                fm.remove_partition(tp)
            else:
                self._follow(fm, tp, part)
        return True

    def _follow(self, fm: ReplicaFetcherManager, tp: TopicPartition, part: Partition) -> None:
        """Fetch ``tp`` from its leader, naming it by the topic id of this broker's image."""
        topic = self.image.topic(tp.topic)
        topic_id = topic.topic_id.bytes if topic is not None else ZERO_ID
        fm.add_partition(tp, part.leader_id, part.leader_epoch, topic_id)

    def handle_offline_partitions(self, tps: list[TopicPartition]) -> None:
        """Stop hosting ``tps``: their log directory went offline (their logs are closed; the
        log manager keeps them offline, so later images do not host them again)."""
        for tp in tps:
            self._missing_logs.pop(tp, None)
            if self.fetcher_manager is not None:
                self.fetcher_manager.remove_partition(tp)
            if self._partitions.pop(tp, None) is not None and self._on_partition_change:
                self._on_partition_change(tp)  # parked requests on it answer now
        logger.error(
            "broker %d: %d partitions offline with their log directory", self.broker_id, len(tps)
        )

    def missing_partition_error(self, tp: TopicPartition) -> int:
        """The error for a partition this broker does not (or no longer) host."""
        if self.log_manager.is_offline_partition(tp):
            return ErrorCode.KAFKA_STORAGE_ERROR
        return ErrorCode.NOT_LEADER_OR_FOLLOWER

    def _min_insync_replicas(self, topic: str) -> int:
        value = self.image.topic_config(topic).get(MIN_INSYNC_REPLICAS_KEY)
        if value is not None:
            try:
                return int(value)
            except ValueError:
                logger.warning("topic %s: bad %s=%r", topic, MIN_INSYNC_REPLICAS_KEY, value)
        return self.default_min_insync_replicas

    # --- lookups ------------------------------------------------------------------------------

    def get_partition(self, tp: TopicPartition) -> Partition | None:
        return self._partitions.get(tp)

    def partitions(self) -> list[Partition]:
        return list(self._partitions.values())

    def leader_partition(self, tp: TopicPartition) -> Partition:
        """The partition if this broker leads it, else the routing error a client expects:
        KAFKA_STORAGE_ERROR when its log directory went offline, UNKNOWN_TOPIC_OR_PARTITION
        when the metadata has no such partition, NOT_LEADER_OR_FOLLOWER when another broker
        leads it (or its log is not ready yet)."""
        part = self._partitions.get(tp)
        if part is not None and part.is_leader:
            return part
        if self.log_manager.is_offline_partition(tp):
            raise BrokerRequestError(
                f"{tp.topic}-{tp.partition} is in an offline log directory on broker "
                f"{self.broker_id}",
                ErrorCode.KAFKA_STORAGE_ERROR,
            )
        if self.image.partition(tp.topic, tp.partition) is None:
            raise UnknownTopicOrPartitionError(f"{tp.topic}-{tp.partition} does not exist")
        raise NotLeaderOrFollowerError(
            f"broker {self.broker_id} does not lead {tp.topic}-{tp.partition}"
        )

    # --- produce ------------------------------------------------------------------------------

    def append_records(
        self,
        tp: TopicPartition,
        payload: memoryview | bytearray | None,
        required_acks: int,
        origin: AppendOrigin = AppendOrigin.CLIENT,
        *,
        verify_transactions: bool = False,
        verification: VerificationGuard | None = None,
    ) -> AppendResult:
        """Validate (header + CRC only, never decoding a record) and append one partition's
        batches: a producer's (CLIENT) or a coordinator's own (COORDINATOR: its transactional
        offset commits are checked by producer epoch only). Any failure appends nothing for
        that partition. ``verify_transactions`` / ``verification``: see :meth:`Log.append`."""
        try:
            part = self.leader_partition(tp)
            if payload is None:
                return AppendResult(ErrorCode.INVALID_RECORD, error_message="null records")
            info = validate_produce_payload(
                payload, max_batch_bytes=part.log.config.max_message_bytes
            )
            appended = part.append_records_to_leader(
                payload,
                required_acks,
                info,
                origin,
                verify_transactions=verify_transactions,
                verification=verification,
            )
        except (BrokerRequestError, ApiError) as e:
            return AppendResult(e.error_code, error_message=str(e))
        return self._appended(tp, appended)

    def _appended(self, tp: TopicPartition, appended: LogAppendInfo) -> AppendResult:
        if self._on_partition_change is not None:
            self._on_partition_change(tp)
        return AppendResult(
            ErrorCode.NO_ERROR,
            appended.first_offset,
            appended.last_offset,
            appended.log_append_time_ms,
            appended.log_start_offset,
        )

    def stable_offset_lags(self) -> list[tuple[str, int]]:
        """(topic, high watermark - last stable offset) of every partition led here."""
        return [
            (p.topic, p.log.high_watermark - p.log.last_stable_offset)
            for p in self._partitions.values()
            if p.is_leader
        ]

    def append_txn_marker(
        self,
        tp: TopicPartition,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        committed: bool,
    ) -> AppendResult:
        """Write one end marker for a transaction coordinator (WriteTxnMarkers) on ``tp``,
        which this broker must lead."""
        try:
            part = self.leader_partition(tp)
            appended = part.append_end_txn_marker(
                producer_id, producer_epoch, coordinator_epoch, committed
            )
        except (BrokerRequestError, ApiError) as e:
            return AppendResult(e.error_code, error_message=str(e))
        return self._appended(tp, appended)

    # --- replication --------------------------------------------------------------------------

    def record_follower_fetch(
        self, part: Partition, replica_id: int, fetch_offset: int, now_ms: int | None = None
    ) -> None:
        """A follower's fetch at ``fetch_offset`` (its LEO) reached the leader ``part`` at
        ``now_ms`` (default: now; a fetch of many partitions reads the clock once)."""
        if now_ms is None:
            now_ms = self.clock_ms()
        moved, proposal = part.update_follower_fetch_state(replica_id, fetch_offset, now_ms)
        if not moved and proposal is None:
            return  # most fetches: an idle partition of the follower's session
        tp = TopicPartition(part.topic, part.partition)
        if proposal is not None:
            self._submit(tp, proposal)
        if moved and self._on_partition_change is not None:
            self._on_partition_change(tp)

    def tick(self, now_ms: int) -> None:
        """Propose ISR shrinks for followers that lag (every replica.lag.time.max.ms / 2)."""
        if now_ms - self._last_isr_check_ms < self.replica_lag_time_max_ms // 2:
            return
        self._last_isr_check_ms = now_ms
        for tp, part in self._partitions.items():
            proposal = part.maybe_shrink_isr(now_ms)
            if proposal is not None:
                logger.info(
                    "%s: shrinking ISR %s -> %s", tp, list(part.isr), list(proposal.new_isr)
                )
                self._submit(tp, proposal)

    def _submit(self, tp: TopicPartition, proposal: IsrChangeProposal) -> None:
        if self.alter_partition_manager is None:
            part = self._partitions.get(tp)
            if part is not None and part.leader_state is not None:
                part.leader_state.on_alter_partition_failed(proposal)
            return
        self.alter_partition_manager.submit(tp, proposal)

    def on_alter_partition_result(
        self, tp: TopicPartition, proposal: IsrChangeProposal, result: AlterPartitionResult
    ) -> None:
        """The AlterPartitionManager's answer for one partition (on the event loop)."""
        part = self._partitions.get(tp)
        if part is None:
            return
        part.on_alter_partition_result(
            proposal,
            result.error_code,
            tuple(result.isr),
            result.leader_epoch,
            result.partition_epoch,
        )
        if self._on_partition_change is not None:
            self._on_partition_change(tp)

    # --- checkpoints --------------------------------------------------------------------------

    def high_watermarks(self) -> dict[TopicPartition, int]:
        return {tp: p.high_watermark for tp, p in self._partitions.items()}
