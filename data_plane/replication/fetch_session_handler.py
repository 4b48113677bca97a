"""The client half of incremental fetch sessions (KIP-227), sans-IO: what a replica fetcher
puts in its next Fetch, given the session it holds with its leader.

State: the session id the leader gave (0 = none), the epoch the next request carries (0 =
full fetch asking for a session) and, per partition in the session, the request fields last
sent (fetch offset, current leader epoch, log start offset, partition max bytes, topic id).

- **Full fetch** (no session yet, or after an error or a reconnect): every partition, epoch
  0, and the old session id if there was one, so the leader frees it in the same request.
  The answer's session id becomes the session (0: the leader keeps none; fetch in full again).
- **Incremental fetch**: only partitions that are new or whose fields changed (after a round
  that appended records, the fetch offset moved), plus ``forgotten`` partitions no longer
  fetched (moved, delayed after an error, truncating), with the fields they were last sent
  with (a forgotten partition is named by the topic id the leader knows it by). The answer
  holds only partitions with news: a partition missing from it has nothing new.
- A partition answered with an error is sent again in full the next time it is fetched
  (:meth:`FetchSessionHandler.resend`): a leader may keep a partition it cannot serve out of
  the session (a topic id it does not know yet), and an incremental request that leaves it
  out would then never fetch it again.
- A session error (FETCH_SESSION_ID_NOT_FOUND after a leader restart or eviction,
  INVALID_FETCH_SESSION_EPOCH) or any failed round (no answer, connection lost) resets to a
  full fetch.

Invariant: between a request and its answer the state does not change (one request in
flight per fetcher), so the answer is matched with the :class:`SessionRequest` that asked.
"""

from __future__ import annotations

from dataclasses import dataclass

from common.error_codes import ErrorCode
from common.protocol.fetch_session_epochs import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    next_epoch,
)
from common.topic_partition import TopicPartition

# (fetch_offset, current_leader_epoch, log_start_offset, partition_max_bytes, topic_id): the
# topic id is 16 bytes, all zero when the partition is fetched by topic name.
PartitionFields = tuple[int, int, int, int, bytes]

SESSION_ERRORS = frozenset(
    {ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH}
)


@dataclass(frozen=True, slots=True)
class SessionRequest:
    session_id: int
    epoch: int
    to_send: dict[TopicPartition, PartitionFields]
    forgotten: dict[TopicPartition, PartitionFields]
    wanted: dict[TopicPartition, PartitionFields]

    @property
    def full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)


class FetchSessionHandler:
    def __init__(self) -> None:
        self.session_id = INVALID_SESSION_ID
        self.next_epoch = INITIAL_EPOCH
        self._sent: dict[TopicPartition, PartitionFields] = {}
        self.full_fetches = 0
        self.incremental_fetches = 0

    def build(self, wanted: dict[TopicPartition, PartitionFields]) -> SessionRequest:
        """The next request for the partitions to fetch now and their fields."""
        if self.session_id == INVALID_SESSION_ID or self.next_epoch == INITIAL_EPOCH:
            return SessionRequest(self.session_id, INITIAL_EPOCH, dict(wanted), {}, wanted)
        sent = self._sent
        to_send = {tp: f for tp, f in wanted.items() if sent.get(tp) != f}
        forgotten = {tp: f for tp, f in sent.items() if tp not in wanted}
        return SessionRequest(self.session_id, self.next_epoch, to_send, forgotten, wanted)

    def handle_response(self, request: SessionRequest, error_code: int, session_id: int) -> bool:
        """Apply the answer's session fields; False when the answer carries no partitions to
        apply (a session error: the next request is a full fetch)."""
        if error_code in SESSION_ERRORS:
            # NOT_FOUND: the id is gone, do not name it again; a wrong epoch: close it.
            keep = error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
            self._reset(request.session_id if keep else INVALID_SESSION_ID)
            return False
        if error_code != ErrorCode.NO_ERROR:
            self.reset()
            return False
        if request.full:
            self.full_fetches += 1
            self.session_id = session_id
            self.next_epoch = next_epoch(INITIAL_EPOCH) if session_id else INITIAL_EPOCH
            self._sent = dict(request.wanted) if session_id else {}
            return True
        self.incremental_fetches += 1
        if session_id != request.session_id:  # the leader closed the session
            self._reset(INVALID_SESSION_ID)
            return True
        self.next_epoch = next_epoch(request.epoch)
        for tp in request.forgotten:
            self._sent.pop(tp, None)
        self._sent.update(request.to_send)
        return True

    def resend(self, tp: TopicPartition) -> None:
        """``tp`` was answered with an error: list it the next time it is fetched, as a
        partition new to the session."""
        self._sent.pop(tp, None)

    def reset(self) -> None:
        """After a failed round: the next request is a full fetch that closes the session."""
        self._reset(self.session_id)

    def _reset(self, close_id: int) -> None:
        self.session_id = close_id
        self.next_epoch = INITIAL_EPOCH
        self._sent = {}
