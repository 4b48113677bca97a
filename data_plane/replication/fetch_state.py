"""PartitionFetchState: one follower partition's fetch state, as a state machine with no I/O
(Kafka's PartitionFetchState); the replica fetcher (replica_fetcher.py) drives it with what
its OffsetForLeaderEpoch and Fetch answers say.

States::

    TRUNCATING --truncated where the log diverges (or to the HW: no local epoch)--> FETCHING
    FETCHING --a follower append failed, or OFFSET_OUT_OF_RANGE past the leader--> TRUNCATING

Both states can be *delayed* until ``delayed_until_s``: after a partition error the partition
sits out for ``replica.fetch.backoff.ms``, or for METADATA_LAG_RETRY_MS when the error only
means that one side has not applied the newest metadata yet (UNKNOWN_LEADER_EPOCH,
NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_ID, INCONSISTENT_TOPIC_ID). A leader or leader-epoch
change makes a new state (truncation first); answers for an old state are ignored by the
fetcher.

Illegal transitions raise :class:`FetchStateError` and change nothing. Clocks are passed in
(``now_s``, monotonic seconds).

Thread-safety: none; the broker's event loop owns every state.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from common.error_codes import ErrorCode
from common.protocol.topic_id_versions import ZERO_ID

# Retry delay after UNKNOWN_LEADER_EPOCH / NOT_LEADER_OR_FOLLOWER: the leader (or we) just has
# not applied the newest metadata yet, which takes tens of ms; waiting the full
# replica.fetch.backoff.ms would add up to a second to every failover.
METADATA_LAG_RETRY_MS = 50
# UNKNOWN_TOPIC_ID and INCONSISTENT_TOPIC_ID say the same of a topic just created, deleted or
# re-created under its name: the two images disagree on which topic the id stands for.
METADATA_LAG_ERRORS = frozenset(
    {
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.INCONSISTENT_TOPIC_ID,
    }
)
# Partition errors that only say the metadata is moving: delayed without a warning.
EXPECTED_FETCH_ERRORS = frozenset(
    {
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.INCONSISTENT_TOPIC_ID,
    }
)


class FetchState(enum.Enum):
    TRUNCATING = "truncating"
    FETCHING = "fetching"


class FetchStateError(Exception):
    """A transition the partition's fetch state does not allow."""


def retry_delay_s(error_code: int, fetch_backoff_ms: int) -> float:
    """How long a partition sits out after ``error_code``."""
    if error_code in METADATA_LAG_ERRORS:
        return min(METADATA_LAG_RETRY_MS, fetch_backoff_ms) / 1000
    return fetch_backoff_ms / 1000


@dataclass(slots=True)
class PartitionFetchState:
    leader_id: int
    leader_epoch: int
    state: FetchState = FetchState.TRUNCATING
    delayed_until_s: float = 0.0
    # The id (16 bytes) of the topic this follower replicates, from its metadata image; the
    # leader answers UNKNOWN_TOPIC_ID when the name now stands for another topic. All zero:
    # fetch by name.
    topic_id: bytes = ZERO_ID

    def ready_to_truncate(self, now_s: float) -> bool:
        return self.state is FetchState.TRUNCATING and self.delayed_until_s <= now_s

    def ready_to_fetch(self, now_s: float) -> bool:
        return self.state is FetchState.FETCHING and self.delayed_until_s <= now_s

    def truncation_completed(self) -> None:
        """The log was truncated where it diverges from the leader: fetch from its end."""
        if self.state is not FetchState.TRUNCATING:
            raise FetchStateError(f"truncation completed while {self.state.value}")
        self.state = FetchState.FETCHING

    def append_failed(self) -> None:
        """A follower append refused what the leader sent: find the divergence again."""
        if self.state is not FetchState.FETCHING:
            raise FetchStateError(f"append failed while {self.state.value}")
        self.state = FetchState.TRUNCATING

    def offset_out_of_range(self, fetch_offset: int, leader_log_start_offset: int) -> int | None:
        """The leader refused ``fetch_offset``. Returns the offset to restart the log at when
        the follower is behind the leader's log start (its log is emptied and starts there;
        the state stays FETCHING), else None: the follower is ahead of the leader, so it
        truncates again by epoch."""
        if self.state is not FetchState.FETCHING:
            raise FetchStateError(f"offset out of range while {self.state.value}")
        if 0 <= fetch_offset < leader_log_start_offset:
            return leader_log_start_offset
        self.state = FetchState.TRUNCATING
        return None

    def partition_error(self, error_code: int, now_s: float, fetch_backoff_ms: int) -> bool:
        """Any other partition error: sit out the retry delay. Returns whether the error is
        unexpected (worth a warning) rather than a sign of moving metadata."""
        if error_code == ErrorCode.NO_ERROR:
            raise FetchStateError("NO_ERROR is not a partition error")
        self.delayed_until_s = now_s + retry_delay_s(error_code, fetch_backoff_ms)
        return error_code not in EXPECTED_FETCH_ERRORS
