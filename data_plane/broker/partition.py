"""Partition: one hosted replica's role, leader epoch, ISR and high watermark over its Log.

State (Kafka's Partition):

- ``role``: LEADER or FOLLOWER, from the committed metadata (a partition this broker does not
  host has no Partition object);
- ``leader_id``, ``leader_epoch``, ``partition_epoch``, ``replicas``, ``isr``: the
  registration the role came from;
- the high watermark lives in the :class:`Log` (``Log.high_watermark``); this class decides
  when it moves.

Invariants: the high watermark never passes the log end offset and never goes backwards while
this broker leads; a leader appends only with its own leader epoch; a request carrying a
``current_leader_epoch`` older than ours is fenced (FENCED_LEADER_EPOCH), a newer one means our
metadata lags (UNKNOWN_LEADER_EPOCH).

Replication: while leading, a :class:`LeaderReplicationState` (sans-IO) tracks each
follower's log end offset and caught-up time; HW = min LEO over the maximal ISR (committed ISR
plus a pending expansion, minus nothing of a pending shrink). A new leader epoch starts at the
log end offset (an entry in the Log's leader-epoch cache), and the HW does not move until every
ISR member has fetched in the new epoch. ISR changes are *proposed* here and sent to the
controller by the AlterPartitionManager; they count only once committed. While following, the
fetcher appends with :meth:`append_records_as_follower` (HW = min(leader's HW, own LEO)) and
truncates with :meth:`truncate_to` (logging how many offsets were removed, and loudly when
committed ones go: that only happens after an unclean election).

Thread-safety: none; the broker's event loop owns every Partition. The Log underneath is
thread-safe (the LogManager's maintenance thread also touches it).
"""

from __future__ import annotations

import enum
import logging
from typing import NamedTuple

from common.error_codes import ErrorCode
from data_plane.broker.errors import (
    FencedLeaderEpochError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OffsetNotAvailableError,
    UnknownLeaderEpochError,
)
from data_plane.replication.errors import ReplicationStateError, UnknownReplicaError
from data_plane.replication.follower import follower_high_watermark
from data_plane.replication.leader_state import IsrChangeProposal, LeaderReplicationState
from data_plane.storage import (
    AbortedTxn,
    AppendOrigin,
    FetchIsolation,
    FileSlice,
    Log,
    LogAppendInfo,
    PayloadInfo,
    VerificationGuard,
)
from data_plane.storage.leader_epoch_cache import EpochEndOffset
from metadata.image import PartitionRegistration

logger = logging.getLogger(__name__)

NO_EPOCH = -1
# Kafka's default replica.lag.time.max.ms; the ReplicaManager passes the configured value.
DEFAULT_REPLICA_LAG_TIME_MAX_MS = 30_000


class Role(enum.Enum):
    LEADER = "leader"
    FOLLOWER = "follower"


class ReadResult(NamedTuple):
    """What one partition read returns: the records slice and the offsets a Fetch reports;
    for a read_committed read, the aborted transactions the slice may hold (else None)."""

    records: FileSlice
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    last_stable_offset: int
    aborted_transactions: list[AbortedTxn] | None = None


class Partition:
    def __init__(self, topic: str, partition: int, broker_id: int, log: Log) -> None:
        self.topic = topic
        self.partition = partition
        self.broker_id = broker_id
        self.log = log
        self.role = Role.FOLLOWER
        self.leader_id = -1
        self.leader_epoch = NO_EPOCH
        self.partition_epoch = NO_EPOCH
        self.replicas: tuple[int, ...] = ()
        self.isr: tuple[int, ...] = ()
        self.min_insync_replicas = 1
        # Only while leading: the followers' replication state, and the log end offset at
        # which this leader's epoch began (KIP-207: offsets below the high watermark only are
        # named while the HW is still behind it).
        self.leader_state: LeaderReplicationState | None = None
        self.leader_epoch_start_offset = -1

    def __repr__(self) -> str:
        return (
            f"Partition({self.topic}-{self.partition}, {self.role.value}, "
            f"leader={self.leader_id}, epoch={self.leader_epoch})"
        )

    # --- metadata -----------------------------------------------------------------------------

    def apply_registration(
        self,
        reg: PartitionRegistration,
        min_insync_replicas: int,
        now_ms: int = 0,
        replica_lag_time_max_ms: int = DEFAULT_REPLICA_LAG_TIME_MAX_MS,
    ) -> bool:
        """Take the role the committed registration gives this broker. Returns True when the
        leader, leader epoch or ISR changed (parked requests on it must be re-checked).
        A registration older than the current one (lower leader epoch, or the same leader epoch
        with a lower partition epoch, e.g. an image behind an AlterPartition answer already
        applied) is stale and ignored.

        Becoming leader of a new epoch starts that epoch at the log end offset (leader-epoch
        cache entry) with fresh follower states; staying leader applies the committed ISR."""
        if reg.leader_epoch < self.leader_epoch or (
            reg.leader_epoch == self.leader_epoch and reg.partition_epoch < self.partition_epoch
        ):
            return False
        new_leadership = reg.leader_epoch != self.leader_epoch or reg.leader != self.leader_id
        changed = new_leadership or reg.isr != self.isr
        self.leader_id = reg.leader
        self.leader_epoch = reg.leader_epoch
        self.partition_epoch = reg.partition_epoch
        self.replicas = tuple(reg.replicas)
        self.isr = tuple(reg.isr)
        self.min_insync_replicas = max(1, min_insync_replicas)
        self.role = Role.LEADER if reg.leader == self.broker_id else Role.FOLLOWER
        if self.role is not Role.LEADER:
            self.leader_state = None
            self.leader_epoch_start_offset = -1
            return changed
        if (
            new_leadership
            or self.leader_state is None
            or self.leader_state.replicas != self.replicas
        ):
            leo = self.log.log_end_offset
            self.log.leader_epoch_cache.assign(self.leader_epoch, leo)
            if new_leadership:
                self.leader_epoch_start_offset = leo
            self.leader_state = LeaderReplicationState(
                self.broker_id,
                self.replicas,
                self.isr,
                self.leader_epoch,
                self.partition_epoch,
                leo,
                now_ms,
                replica_lag_time_max_ms,
            )
            logger.info(
                "%s-%d: leader in epoch %d from offset %d, ISR %s",
                self.topic,
                self.partition,
                self.leader_epoch,
                leo,
                list(self.isr),
            )
        else:
            try:
                self.leader_state.apply_committed(self.isr, self.partition_epoch)
            except ReplicationStateError as e:
                # Metadata apply never raises: the controller checked this ISR; start the
                # follower tracking afresh rather than keep state that disagrees with it.
                logger.error(
                    "%s-%d: committed ISR not applicable (%s); resetting",
                    self.topic,
                    self.partition,
                    e,
                )
                self.leader_state = None
                return (
                    self.apply_registration(
                        reg, min_insync_replicas, now_ms, replica_lag_time_max_ms
                    )
                    or changed
                )
        self.maybe_increment_high_watermark()
        return changed

    @property
    def is_leader(self) -> bool:
        return self.role is Role.LEADER

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """Fence a request that names a leader epoch (-1 = the client does not know one)."""
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return
        if current_leader_epoch < self.leader_epoch:
            raise FencedLeaderEpochError(
                f"{self.topic}-{self.partition}: epoch {current_leader_epoch} is older than "
                f"{self.leader_epoch}"
            )
        raise UnknownLeaderEpochError(
            f"{self.topic}-{self.partition}: epoch {current_leader_epoch} is newer than "
            f"{self.leader_epoch}"
        )

    def _require_leader(self) -> None:
        if self.role is not Role.LEADER:
            raise NotLeaderOrFollowerError(
                f"broker {self.broker_id} is not the leader of {self.topic}-{self.partition} "
                f"(leader {self.leader_id}, epoch {self.leader_epoch})"
            )

    # --- leader path --------------------------------------------------------------------------

    def append_records_to_leader(
        self,
        payload: memoryview | bytearray,
        required_acks: int,
        validated: PayloadInfo,
        origin: AppendOrigin = AppendOrigin.CLIENT,
        *,
        verify_transactions: bool = False,
        verification: VerificationGuard | None = None,
    ) -> LogAppendInfo:
        """Append a producer's validated batches, stamped with our leader epoch. acks=all
        requires at least ``min.insync.replicas`` in the ISR (NOT_ENOUGH_REPLICAS).
        ``verify_transactions`` / ``verification``: see :meth:`Log.append`."""
        self._require_leader()
        if required_acks == -1 and len(self.isr) < self.min_insync_replicas:
            raise NotEnoughReplicasError(
                f"{self.topic}-{self.partition}: ISR {list(self.isr)} is smaller than "
                f"min.insync.replicas={self.min_insync_replicas}"
            )
        info = self.log.append(
            payload,
            self.leader_epoch,
            validated=validated,
            origin=origin,
            verify_transactions=verify_transactions,
            verification=verification,
        )
        self.maybe_increment_high_watermark()
        return info

    def append_end_txn_marker(
        self, producer_id: int, producer_epoch: int, coordinator_epoch: int, committed: bool
    ) -> LogAppendInfo:
        """Write a transaction's end marker for its coordinator (WriteTxnMarkers), stamped
        with our leader epoch; like an acks=all append it needs ``min.insync.replicas``."""
        self._require_leader()
        if len(self.isr) < self.min_insync_replicas:
            raise NotEnoughReplicasError(
                f"{self.topic}-{self.partition}: ISR {list(self.isr)} is smaller than "
                f"min.insync.replicas={self.min_insync_replicas}"
            )
        info = self.log.append_end_txn_marker(
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch,
            committed=committed,
            leader_epoch=self.leader_epoch,
        )
        self.maybe_increment_high_watermark()
        return info

    def maybe_increment_high_watermark(self) -> bool:
        """Advance the HW to what the maximal ISR has replicated (min LEO over it; the log
        end offset while the ISR is this leader alone). Returns True if it moved.

        Not while the *committed* ISR is below ``min.insync.replicas`` (counted as at most the
        replication factor), as KIP-966 has it: the controller's eligible leader replicas
        (metadata.election) may lead after this leader only because nothing commits then. A
        pending expansion does not count: until the controller has committed it, it still
        treats the ISR as too small and may elect an ELR member that lacks the new records."""
        state = self.leader_state
        if self.role is not Role.LEADER or state is None:
            return False
        if len(self.isr) < min(self.min_insync_replicas, len(self.replicas)):
            return False
        return self.update_high_watermark(state.high_watermark(self.log.log_end_offset))

    # --- replication, leader side ---------------------------------------------------------

    def update_follower_fetch_state(
        self, follower_id: int, fetch_offset: int, now_ms: int
    ) -> tuple[bool, IsrChangeProposal | None]:
        """A follower fetched at ``fetch_offset`` (its LEO). Returns whether the HW moved and
        an ISR expansion to send to the controller. A fetch from a broker that is not a replica
        is ignored (its data is served, nothing is tracked).

        A member of the maximal ISR fetching again at the log end it was already recorded at,
        with the HW there too, only has its times refreshed: nothing else can move. A
        follower's fetch session names every partition it follows, and most of them are idle
        like this on each fetch."""
        self._require_leader()
        state = self.leader_state
        if state is None:
            return False, None
        log = self.log
        leo = log.log_end_offset
        if fetch_offset == leo == log.high_watermark and state.refresh_caught_up_follower(
            follower_id, leo, now_ms
        ):
            return False, None
        if fetch_offset > leo or fetch_offset < self.log.log_start_offset:
            # Out of range: the read answers OFFSET_OUT_OF_RANGE and the follower truncates;
            # a diverged log end must not count as replicated.
            return False, None
        try:
            state.update_follower_fetch_state(follower_id, fetch_offset, leo, now_ms)
        except UnknownReplicaError:
            return False, None
        moved = self.maybe_increment_high_watermark()
        return moved, state.maybe_expand_isr(follower_id, self.log.high_watermark)

    def maybe_shrink_isr(self, now_ms: int) -> IsrChangeProposal | None:
        """An ISR shrink to send to the controller when followers lag too long."""
        state = self.leader_state
        if self.role is not Role.LEADER or state is None:
            return None
        return state.maybe_shrink(self.log.log_end_offset, now_ms)

    def on_alter_partition_result(
        self,
        proposal: IsrChangeProposal,
        error_code: int,
        isr: tuple[int, ...],
        leader_epoch: int,
        partition_epoch: int,
    ) -> bool:
        """The controller's answer to ``proposal``: a committed ISR is applied at once (the
        metadata image will show the same later); an error forgets the proposal so it is made
        again from fresh state. Returns True if the ISR changed."""
        state = self.leader_state
        if (
            state is None
            or self.role is not Role.LEADER
            or proposal.leader_epoch != self.leader_epoch
        ):
            return False
        if error_code != ErrorCode.NO_ERROR or leader_epoch != self.leader_epoch:
            state.on_alter_partition_failed(proposal)
            return False
        if partition_epoch <= self.partition_epoch and tuple(isr) != proposal.new_isr:
            state.on_alter_partition_failed(proposal)
            return False
        changed = state.apply_committed(tuple(isr), partition_epoch)
        self.isr = state.isr
        self.partition_epoch = state.partition_epoch
        logger.info(
            "%s-%d: ISR now %s (partition epoch %d)",
            self.topic,
            self.partition,
            list(self.isr),
            self.partition_epoch,
        )
        self.maybe_increment_high_watermark()
        return changed

    def produce_completion_state(self) -> tuple[object, ...]:
        """Everything :meth:`check_enough_replicas_reach_offset` reads: while this tuple is
        unchanged, no parked produce on this partition can have become complete. The high
        watermark and the leader epoch never move back, so a state never repeats after a
        change."""
        state = self.leader_state
        size = len(state.maximal_isr) if state is not None else len(self.isr)
        return (
            self.role,
            self.leader_epoch,
            self.log.high_watermark,
            size,
            self.min_insync_replicas,
            len(self.replicas),
        )

    def check_enough_replicas_reach_offset(self, required_offset: int) -> tuple[bool, int]:
        """Kafka's checkEnoughReplicasReachOffset for a parked acks=all produce: (done, error).
        Done with NO_ERROR once the HW passed ``required_offset`` with the ISR still at least
        ``min.insync.replicas``; NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below
        that (the HW then stays where it is); NOT_LEADER_OR_FOLLOWER once no longer leader."""
        if self.role is not Role.LEADER:
            return True, ErrorCode.NOT_LEADER_OR_FOLLOWER
        state = self.leader_state
        size = len(state.maximal_isr) if state is not None else len(self.isr)
        if self.log.high_watermark < required_offset:
            if size < min(self.min_insync_replicas, len(self.replicas)):
                # The HW is frozen below the minimum (maybe_increment_high_watermark): it
                # cannot pass this offset until the ISR grows back, so fail now (retriable).
                return True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
            return False, ErrorCode.NO_ERROR
        if size < self.min_insync_replicas:
            return True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return True, ErrorCode.NO_ERROR

    def end_offset_for_epoch(self, leader_epoch: int) -> EpochEndOffset:
        """OffsetForLeaderEpoch: the largest epoch <= ``leader_epoch`` and where it ends."""
        return self.log.leader_epoch_cache.end_offset_for(leader_epoch, self.log.log_end_offset)

    # --- replication, follower side -------------------------------------------------------

    def append_records_as_follower(
        self, records: memoryview | bytes, leader_high_watermark: int, leader_log_start_offset: int
    ) -> LogAppendInfo | None:
        """Append fetched batches (whole ones; may be empty) keeping the leader's offsets and
        epochs; HW = min(leader's HW, own LEO); the log start offset follows the leader's."""
        if self.role is Role.LEADER:
            raise NotLeaderOrFollowerError(f"{self.topic}-{self.partition}: leader, not follower")
        info = self.log.append_as_follower(records) if len(records) else None
        self.log.update_high_watermark(
            follower_high_watermark(leader_high_watermark, self.log.log_end_offset)
        )
        if 0 <= leader_log_start_offset <= self.log.high_watermark:
            self.log.maybe_increment_log_start_offset(leader_log_start_offset)
        return info

    def truncate_to(self, offset: int, reason: str) -> int:
        """Follower truncation; returns the number of offsets removed. Removing offsets below
        the high watermark means committed records are gone: only an unclean election does
        that, and it is logged as data loss."""
        if self.role is Role.LEADER:
            raise NotLeaderOrFollowerError(f"{self.topic}-{self.partition}: leader, not follower")
        leo, hw = self.log.log_end_offset, self.log.high_watermark
        if offset >= leo:
            return 0
        self.log.truncate_to(offset)
        removed = leo - self.log.log_end_offset
        if self.log.log_end_offset < hw:
            logger.warning(
                "%s-%d: truncated %d offsets to offset %d, below the high watermark %d: %d "
                "committed offsets lost (unclean leader election) (%s)",
                self.topic,
                self.partition,
                removed,
                self.log.log_end_offset,
                hw,
                hw - self.log.log_end_offset,
                reason,
            )
        else:
            logger.info(
                "%s-%d: truncated %d uncommitted offsets, log end now %d (%s)",
                self.topic,
                self.partition,
                removed,
                self.log.log_end_offset,
                reason,
            )
        return removed

    def update_high_watermark(self, high_watermark: int) -> bool:
        """Move the HW forward (never back while leading); True if it moved."""
        old = self.log.high_watermark
        if high_watermark <= old:
            return False
        return self.log.update_high_watermark(high_watermark) != old

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    # --- reads --------------------------------------------------------------------------------

    def read_records(
        self,
        fetch_offset: int,
        max_bytes: int,
        isolation: FetchIsolation,
        *,
        current_leader_epoch: int = NO_EPOCH,
        min_one_message: bool = True,
    ) -> ReadResult:
        """Read from the leader: read_committed consumers up to the last stable offset (with
        the aborted transactions the slice may hold), read_uncommitted ones up to the HW,
        follower replicas (LOG_END) to the log end. Raises OffsetOutOfRangeError outside
        [log start offset, LEO]."""
        self._require_leader()
        self.check_leader_epoch(current_leader_epoch)
        log = self.log
        records = log.read(
            fetch_offset, max_bytes, isolation=isolation, min_one_message=min_one_message
        )
        aborted = None
        if isolation is FetchIsolation.TXN_COMMITTED:
            aborted = log.collect_aborted_transactions(fetch_offset, records)
        return ReadResult(
            records,
            log.high_watermark,
            log.log_start_offset,
            log.log_end_offset,
            log.last_stable_offset,
            aborted,
        )

    def isolation_end(self, isolation: FetchIsolation) -> int:
        """The offset a read at ``isolation`` stops before: the high watermark, the last
        stable offset, or the log end offset."""
        if isolation is FetchIsolation.HIGH_WATERMARK:
            return self.log.high_watermark
        if isolation is FetchIsolation.TXN_COMMITTED:
            return self.log.last_stable_offset
        return self.log.log_end_offset

    def available_bytes(self, fetch_offset: int, max_bytes: int, isolation: FetchIsolation) -> int:
        """Bytes a read at ``fetch_offset`` would return now (delayed fetch condition)."""
        upper = self.isolation_end(isolation)
        if fetch_offset >= upper:
            return 0
        return self.log.read(fetch_offset, max_bytes, isolation=isolation).length

    def check_offsets_available(self) -> None:
        """KIP-207: raise OffsetNotAvailableError while this leader's high watermark is below
        the offset at which its epoch began. The previous leader may already have told a
        client a higher end offset; naming a lower one now would move the partition's end
        backwards for that client (Spark reports that as data loss)."""
        hw = self.high_watermark
        if self.leader_epoch_start_offset > hw:
            raise OffsetNotAvailableError(
                f"{self.topic}-{self.partition}: the high watermark ({hw}) is behind the start "
                f"of leader epoch {self.leader_epoch} ({self.leader_epoch_start_offset})"
            )

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        self._require_leader()
        return self.log.find_offset_by_timestamp(timestamp)

    def offset_of_max_timestamp(self) -> tuple[int, int] | None:
        self._require_leader()
        return self.log.find_max_timestamp()

    def delete_records_before(self, offset: int) -> int:
        """Move the log start offset up to ``offset`` (-1 = the HW); returns the new low
        watermark. Leader only; beyond the HW is OFFSET_OUT_OF_RANGE (raised by the Log)."""
        self._require_leader()
        target = self.log.high_watermark if offset == -1 else offset
        self.log.maybe_increment_log_start_offset(target)
        return self.log.log_start_offset
