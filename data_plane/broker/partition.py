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

High watermark in this issue: with the ISR equal to {leader}, HW = log end offset after each
append. With more replicas in the ISR the HW stays put until follower fetch offsets are tracked
(issue 5 adds ``update_follower_fetch_state`` and advances the HW to min LEO over the ISR).

Thread-safety: none; the broker's event loop owns every Partition. The Log underneath is
thread-safe (the LogManager's maintenance thread also touches it).
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from data_plane.broker.errors import (
    FencedLeaderEpochError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    UnknownLeaderEpochError,
)
from data_plane.storage import FetchIsolation, FileSlice, Log, LogAppendInfo, PayloadInfo
from metadata.image import PartitionRegistration

NO_EPOCH = -1


class Role(enum.Enum):
    LEADER = "leader"
    FOLLOWER = "follower"


class ReadResult(NamedTuple):
    """What one partition read returns: the records slice and the offsets a Fetch reports."""

    records: FileSlice
    high_watermark: int
    log_start_offset: int
    log_end_offset: int


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

    def __repr__(self) -> str:
        return (
            f"Partition({self.topic}-{self.partition}, {self.role.value}, "
            f"leader={self.leader_id}, epoch={self.leader_epoch})"
        )

    # --- metadata -----------------------------------------------------------------------------

    def apply_registration(self, reg: PartitionRegistration, min_insync_replicas: int) -> bool:
        """Take the role the committed registration gives this broker. Returns True when the
        leader, leader epoch or ISR changed (parked requests on it must be re-checked).
        A registration with an older leader epoch than the current one is stale and ignored."""
        if reg.leader_epoch < self.leader_epoch:
            return False
        changed = (
            reg.leader != self.leader_id
            or reg.leader_epoch != self.leader_epoch
            or reg.isr != self.isr
        )
        self.leader_id = reg.leader
        self.leader_epoch = reg.leader_epoch
        self.partition_epoch = reg.partition_epoch
        self.replicas = tuple(reg.replicas)
        self.isr = tuple(reg.isr)
        self.min_insync_replicas = max(1, min_insync_replicas)
        self.role = Role.LEADER if reg.leader == self.broker_id else Role.FOLLOWER
        if self.role is Role.LEADER:
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
        self, payload: memoryview | bytearray, required_acks: int, validated: PayloadInfo
    ) -> LogAppendInfo:
        """Append a producer's validated batches, stamped with our leader epoch. acks=all
        requires at least ``min.insync.replicas`` in the ISR (NOT_ENOUGH_REPLICAS)."""
        self._require_leader()
        if required_acks == -1 and len(self.isr) < self.min_insync_replicas:
            raise NotEnoughReplicasError(
                f"{self.topic}-{self.partition}: ISR {list(self.isr)} is smaller than "
                f"min.insync.replicas={self.min_insync_replicas}"
            )
        info = self.log.append(payload, self.leader_epoch, validated=validated)
        self.maybe_increment_high_watermark()
        return info

    def maybe_increment_high_watermark(self) -> bool:
        """Advance the HW to what the ISR has replicated: the log end offset while the ISR is
        this leader alone. Returns True if it moved."""
        if self.role is not Role.LEADER:
            return False
        if self.isr == (self.broker_id,):
            return self.update_high_watermark(self.log.log_end_offset)
        return False

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
        """Read from the leader: consumers up to the HW, follower replicas (LOG_END) to the
        log end. Raises OffsetOutOfRangeError outside [log start offset, LEO]."""
        self._require_leader()
        self.check_leader_epoch(current_leader_epoch)
        log = self.log
        records = log.read(
            fetch_offset, max_bytes, isolation=isolation, min_one_message=min_one_message
        )
        return ReadResult(records, log.high_watermark, log.log_start_offset, log.log_end_offset)

    def available_bytes(self, fetch_offset: int, max_bytes: int, isolation: FetchIsolation) -> int:
        """Bytes a read at ``fetch_offset`` would return now (delayed fetch condition)."""
        upper = (
            self.log.high_watermark
            if isolation is FetchIsolation.HIGH_WATERMARK
            else self.log.log_end_offset
        )
        if fetch_offset >= upper:
            return 0
        return self.log.read(fetch_offset, max_bytes, isolation=isolation).length

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        self._require_leader()
        return self.log.find_offset_by_timestamp(timestamp)

    def delete_records_before(self, offset: int) -> int:
        """Move the log start offset up to ``offset`` (-1 = the HW); returns the new low
        watermark. Leader only; beyond the HW is OFFSET_OUT_OF_RANGE (raised by the Log)."""
        self._require_leader()
        target = self.log.high_watermark if offset == -1 else offset
        self.log.maybe_increment_log_start_offset(target)
        return self.log.log_start_offset
