"""ConnectionState with scripted inputs, no sockets: legal and illegal transitions, version
negotiation, in-flight requests matched by correlation id, connect and request timeouts."""

from __future__ import annotations

import pytest

from kraftlog_client.connection_state import (
    AUTHENTICATING,
    CLOSED,
    CONNECTING,
    NEGOTIATING,
    READY,
    TLS_HANDSHAKING,
    ConnectionState,
    ConnectionStateError,
    CorrelationMismatchError,
)


def noop(_body, _error) -> None:
    return None


def ready(state: ConnectionState) -> ConnectionState:
    state.connect_started(0.0)
    state.transition(NEGOTIATING)
    state.transition(READY)
    return state


def test_the_life_cycle_with_tls_and_sasl() -> None:
    s = ConnectionState(30.0, 10.0)
    s.connect_started(0.0)
    for step in (TLS_HANDSHAKING, NEGOTIATING, AUTHENTICATING, READY, CLOSED):
        s.transition(step)
        assert s.state is step


@pytest.mark.parametrize(
    ("path", "illegal"),
    [
        ((), READY),  # no skipping version negotiation
        ((NEGOTIATING,), TLS_HANDSHAKING),
        ((NEGOTIATING, READY), AUTHENTICATING),
        ((CLOSED,), CONNECTING),
    ],
)
def test_illegal_transitions_raise_and_leave_the_state(path, illegal) -> None:
    s = ConnectionState(30.0, 10.0)
    for step in path:
        s.transition(step)
    before = s.state
    with pytest.raises(ConnectionStateError):
        s.transition(illegal)
    assert s.state is before


def test_negotiation_picks_the_highest_common_version_and_skips_disjoint_apis() -> None:
    s = ConnectionState(30.0, 10.0)
    s.transition(NEGOTIATING)
    s.negotiate({0: (3, 7), 1: (4, 11), 2: (1, 5)}, {0: (0, 9), 1: (0, 3), 3: (0, 1)})
    assert s.versions == {0: 7}
    s.transition(READY)
    with pytest.raises(ConnectionStateError):
        s.negotiate({0: (0, 1)}, {0: (0, 1)})


def test_responses_match_the_oldest_request_by_correlation_id() -> None:
    s = ready(ConnectionState(30.0, 10.0))
    ids = [s.next_correlation_id() for _ in range(3)]
    for cid in ids:
        s.track(cid, 1, 11, noop, 0.0)
    assert s.oldest().correlation_id == ids[0]
    assert s.complete(ids[0]).correlation_id == ids[0]
    with pytest.raises(CorrelationMismatchError):
        s.complete(ids[2])
    assert [r.correlation_id for r in s.in_flight] == ids[1:]


def test_correlation_ids_wrap_at_int32() -> None:
    s = ConnectionState(30.0, 10.0)
    s._next_correlation_id = 0x7FFFFFFF  # the last id before the wrap
    assert [s.next_correlation_id() for _ in range(2)] == [0x7FFFFFFF, 0]


def test_connect_and_request_timeouts() -> None:
    s = ConnectionState(30.0, 10.0)
    s.connect_started(100.0)
    assert s.expired(109.9) is None
    assert s.expired(110.0) == "connect"
    s.transition(NEGOTIATING)
    s.transition(READY)
    assert s.expired(1000.0) is None  # nothing in flight
    s.track(s.next_correlation_id(), 1, 11, noop, 200.0)
    s.track(s.next_correlation_id(), 13, 2, noop, 201.0, timeout_s=300.0)
    assert s.expired(229.9) is None
    assert s.expired(230.0) == "request"


def test_close_hands_back_what_was_in_flight_and_refuses_more() -> None:
    s = ready(ConnectionState(30.0, 10.0))
    s.track(s.next_correlation_id(), 1, 11, noop, 0.0)
    pending = s.close()
    assert len(pending) == 1 and s.state is CLOSED and not s.in_flight
    assert s.close() == []
    with pytest.raises(ConnectionStateError):
        s.track(s.next_correlation_id(), 1, 11, noop, 0.0)
    with pytest.raises(ConnectionStateError):
        s.complete(0)
