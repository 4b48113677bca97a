"""raft.prevote: the pre-vote and leader-lease rules, with an injected clock."""

from __future__ import annotations

import pytest

from raft.prevote import (
    PRE_VOTE,
    LogPosition,
    PreVote,
    PreVoteError,
    PreVoteRequest,
    parse_response,
    response_message,
)

LEASE_S = 0.75  # exact in binary, so the lease boundary is exact
OWN_LOG = LogPosition(last_term=3, last_index=10)


def ask(
    pv: PreVote,
    *,
    now: float = 100.0,
    proposed_term: int = 4,
    candidate_log: LogPosition = OWN_LOG,
    is_leader: bool = False,
    current_term: int = 3,
    voted: bool = False,
) -> bool:
    return pv.should_grant(
        PreVoteRequest(proposed_term, candidate_log),
        now=now,
        is_leader=is_leader,
        current_term=current_term,
        voted_in_current_term=voted,
        own_log=OWN_LOG,
    )


def test_grants_when_no_leader_was_heard_and_log_is_as_recent() -> None:
    assert ask(PreVote(3, LEASE_S))


def test_refuses_within_the_leader_lease_and_grants_after_it() -> None:
    pv = PreVote(3, LEASE_S)
    pv.note_leader_contact(100.0)
    assert not ask(pv, now=100.0 + LEASE_S - 0.01)
    assert ask(pv, now=100.0 + LEASE_S)


def test_the_leader_itself_refuses() -> None:
    assert not ask(PreVote(3, LEASE_S), is_leader=True)


@pytest.mark.parametrize(
    ("candidate_log", "granted"),
    [
        (LogPosition(3, 10), True),
        (LogPosition(3, 11), True),
        (LogPosition(4, 1), True),
        (LogPosition(3, 9), False),  # same last term, shorter log
        (LogPosition(2, 50), False),  # older last term, however long
    ],
)
def test_log_must_be_at_least_as_up_to_date(candidate_log: LogPosition, granted: bool) -> None:
    assert ask(PreVote(3, LEASE_S), candidate_log=candidate_log) is granted


def test_term_rules() -> None:
    pv = PreVote(3, LEASE_S)
    assert not ask(pv, proposed_term=3, current_term=4)  # behind this voter's term
    assert ask(pv, proposed_term=4, current_term=4)  # same term, no vote cast in it yet
    assert not ask(pv, proposed_term=4, current_term=4, voted=True)


def test_round_needs_a_majority_of_distinct_voters() -> None:
    pv = PreVote(5, LEASE_S)
    request = pv.start_round(10.0, 7, OWN_LOG)
    assert request == PreVoteRequest(8, OWN_LOG)
    assert not pv.election_allowed(10.0, 7)
    assert not pv.on_response("b", 8, granted=False)
    assert not pv.on_response("c", 8, granted=True)
    assert not pv.on_response("c", 8, granted=True)  # a duplicate answer counts once
    assert not pv.on_response("d", 7, granted=True)  # an answer to an older round
    assert pv.on_response("e", 8, granted=True)  # self + c + e = 3 of 5
    assert not pv.on_response("d", 8, granted=True)  # already passed: reported once
    assert pv.election_allowed(10.1, 7)


def test_passed_round_expires_and_is_bound_to_its_term() -> None:
    pv = PreVote(3, LEASE_S)
    pv.start_round(10.0, 7, OWN_LOG)
    assert pv.on_response("b", 8, granted=True)
    assert not pv.election_allowed(10.0, 8)  # the term moved on (another election happened)
    assert not pv.election_allowed(10.0 + LEASE_S, 7)  # too old to trust


def test_leader_contact_cancels_a_passed_round() -> None:
    pv = PreVote(3, LEASE_S)
    pv.start_round(10.0, 7, OWN_LOG)
    assert pv.on_response("b", 8, granted=True)
    pv.note_leader_contact(10.05)
    assert not pv.election_allowed(10.06, 7)
    assert not pv.on_response("c", 8, granted=True)


def test_single_voter_needs_nobody() -> None:
    pv = PreVote(1, LEASE_S)
    assert pv.start_round(0.0, 0, OWN_LOG) is None
    assert pv.election_allowed(0.0, 0)


def test_messages_round_trip_and_malformed_ones_are_rejected() -> None:
    request = PreVoteRequest(9, LogPosition(8, 123))
    message = request.to_message()
    assert message["type"] == PRE_VOTE
    assert PreVoteRequest.from_message(message) == request
    assert parse_response(response_message(9, True)) == (9, True)
    with pytest.raises(PreVoteError):
        PreVoteRequest.from_message({"type": PRE_VOTE, "term": "9"})
    with pytest.raises(PreVoteError):
        parse_response({"term": 9, "granted": 1})


def test_invalid_construction() -> None:
    with pytest.raises(ValueError):
        PreVote(0, LEASE_S)
    with pytest.raises(ValueError):
        PreVote(3, 0.0)
