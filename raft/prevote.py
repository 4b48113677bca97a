"""Pre-vote (Raft thesis, section 9.6) for pysyncobj voters: the decisions, sans-IO.

pysyncobj has no pre-vote: a voter whose election timer fires increments its term and sends
RequestVote, and every voter that sees the higher term (the healthy leader included) adopts it
and steps down, even when the candidate cannot win because its log is stale. A voter that was
restarted, paused or cut off therefore deposes a working leader.

With pre-vote, a voter whose election timer fires first asks the others whether they *would*
vote for it at ``current_term + 1``; nobody changes term or vote for this question. A voter
grants only if

* it has not heard from a leader within the leader lease (``lease_s``, a little under the
  minimum election timeout: a live leader's heartbeats arrive every append interval) and is
  not the leader itself (the check-quorum / "leader stickiness" rule of the thesis, 4.2.3),
* the proposed term is above its own term, or equal to it while it has not voted in that term,
* the candidate's log is at least as up to date as its own (the RequestVote rule).

Only when a majority (counting itself) grants does the voter run pysyncobj's real election. A
restarted voter with a stale log, or one that cannot reach the leader while the others can,
never increments its term, so the leader's next AppendEntries (same term) simply makes it a
follower again.

Thread-safety: none; owned by the Raft tick thread. Times are monotonic seconds supplied by the
caller (an injected clock), so the rules are tested without sockets or sleeps.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Message types kraftlog adds to pysyncobj's wire protocol (pysyncobj ignores unknown types;
# kraftlog's transport consumes these before pysyncobj sees them).
PRE_VOTE = "kraft_pre_vote"
PRE_VOTE_RESPONSE = "kraft_pre_vote_response"


class PreVoteError(ValueError):
    """A pre-vote message that does not have the expected fields."""


@dataclass(frozen=True)
class LogPosition:
    """The last entry of a voter's Raft log: (term, index)."""

    last_term: int
    last_index: int

    def at_least_as_up_to_date_as(self, other: LogPosition) -> bool:
        """Raft's election restriction (section 5.4.1): compare last terms, then lengths."""
        if self.last_term != other.last_term:
            return self.last_term > other.last_term
        return self.last_index >= other.last_index


@dataclass(frozen=True)
class PreVoteRequest:
    proposed_term: int
    candidate_log: LogPosition

    def to_message(self) -> dict[str, object]:
        return {
            "type": PRE_VOTE,
            "term": self.proposed_term,
            "last_log_term": self.candidate_log.last_term,
            "last_log_index": self.candidate_log.last_index,
        }

    @classmethod
    def from_message(cls, message: dict[str, object]) -> PreVoteRequest:
        term = _int_field(message, "term")
        last_term = _int_field(message, "last_log_term")
        last_index = _int_field(message, "last_log_index")
        return cls(term, LogPosition(last_term, last_index))


def _int_field(message: dict[str, object], key: str) -> int:
    value = message.get(key)
    if type(value) is not int:  # bool is refused too
        raise PreVoteError(f"malformed pre-vote request: {message!r}")
    return value


def response_message(proposed_term: int, granted: bool) -> dict[str, object]:
    return {"type": PRE_VOTE_RESPONSE, "term": proposed_term, "granted": granted}


def parse_response(message: dict[str, object]) -> tuple[int, bool]:
    term = message.get("term")
    granted = message.get("granted")
    if type(term) is not int or type(granted) is not bool:
        raise PreVoteError(f"malformed pre-vote response: {message!r}")
    return term, granted


@dataclass
class PreVote:
    """One voter's pre-vote state: its leader lease and its current pre-vote round.

    ``voter_count`` is the size of the quorum (this voter included); ``lease_s`` is how long
    after hearing from a leader this voter refuses pre-votes.
    """

    voter_count: int
    lease_s: float
    _last_leader_contact: float | None = None
    _round_term: int | None = None
    _round_started: float = 0.0
    _granted_by: set[str] = field(default_factory=set)
    _passed: bool = False

    def __post_init__(self) -> None:
        if self.voter_count < 1:
            raise ValueError(f"voter_count must be at least 1, got {self.voter_count}")
        if self.lease_s <= 0:
            raise ValueError(f"lease_s must be positive, got {self.lease_s}")

    # --- as a voter asked for its pre-vote ---------------------------------------------------

    def note_leader_contact(self, now: float) -> None:
        """An AppendEntries from a leader of this voter's term (or newer) arrived. Also ends
        any pre-vote round: there is a leader, so no election should follow it."""
        self._last_leader_contact = now
        self._passed = False
        self._round_term = None

    def in_lease(self, now: float) -> bool:
        return self._last_leader_contact is not None and (
            now - self._last_leader_contact < self.lease_s
        )

    def should_grant(
        self,
        request: PreVoteRequest,
        *,
        now: float,
        is_leader: bool,
        current_term: int,
        voted_in_current_term: bool,
        own_log: LogPosition,
    ) -> bool:
        if is_leader or self.in_lease(now):
            return False
        if request.proposed_term < current_term:
            return False
        if request.proposed_term == current_term and voted_in_current_term:
            return False
        return request.candidate_log.at_least_as_up_to_date_as(own_log)

    # --- as a voter whose election timer fired ------------------------------------------------

    def start_round(
        self, now: float, current_term: int, own_log: LogPosition
    ) -> PreVoteRequest | None:
        """Begin asking for pre-votes at ``current_term + 1``. Returns None when this voter
        alone is a majority (a single-voter quorum needs nobody's agreement)."""
        self._round_term = current_term + 1
        self._round_started = now
        self._granted_by = set()
        self._passed = self._majority()
        return None if self._passed else PreVoteRequest(self._round_term, own_log)

    def on_response(self, voter: str, proposed_term: int, granted: bool) -> bool:
        """Count one answer. True exactly when this answer made the round reach a majority."""
        if self._passed or proposed_term != self._round_term or not granted:
            return False
        self._granted_by.add(voter)
        self._passed = self._majority()
        return self._passed

    def election_allowed(self, now: float, current_term: int) -> bool:
        """Whether the real election at ``current_term + 1`` may start now: a round for that
        term reached a majority within the lease (older agreement may be out of date)."""
        return (
            self._passed
            and self._round_term == current_term + 1
            and now - self._round_started < self.lease_s
        )

    def _majority(self) -> bool:
        return 2 * (len(self._granted_by) + 1) > self.voter_count
