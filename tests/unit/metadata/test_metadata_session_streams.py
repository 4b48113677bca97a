"""A broker's broken session stream fences it at once (controller side, sans-IO), and the
registry of held streams (metadata.broker_session_streams) reports each loss once."""

from __future__ import annotations

import threading

import pytest
from harness import Harness

from common.error_codes import ErrorCode
from metadata.broker_session_streams import BrokerSessionStreams
from metadata.controller_config import ControllerConfig

SESSION_MS = ControllerConfig().broker_session_timeout_ms


def three() -> Harness:
    h = Harness(ControllerConfig(auto_leader_rebalance_enable=False))
    h.add_brokers([1, 2, 3])
    return h


# --- the controller ---------------------------------------------------------------------------


def test_a_lost_stream_fences_the_broker_on_the_next_tick_long_before_the_timeout() -> None:
    h = three()
    h.create("t", 6, 3)
    led_by_1 = [pid for pid, p in h.image.topic("t").partitions.items() if p.leader == 1]
    assert led_by_1
    assert h.c.broker_session_opened(1, h.image.brokers[1].epoch) == ErrorCode.NO_ERROR
    assert h.c.broker_session_lost(1, h.image.brokers[1].epoch)
    h.tick(h.now + 1)  # one millisecond later: no timeout could have fenced it
    assert h.image.brokers[1].fenced
    assert not h.image.brokers[2].fenced and not h.image.brokers[3].fenced
    for p in h.image.topic("t").partitions.values():
        assert p.leader in (2, 3) and 1 not in p.isr


def test_a_heartbeat_in_flight_from_the_dead_process_does_not_save_it() -> None:
    h = three()
    assert h.c.broker_session_lost(1, h.image.brokers[1].epoch)
    h.heartbeat(1)
    h.tick(h.now + 1)
    assert h.image.brokers[1].fenced


def test_a_live_broker_whose_stream_broke_is_fenced_then_comes_back() -> None:
    h = three()
    assert h.c.broker_session_lost(1, h.image.brokers[1].epoch)
    h.tick(h.now + 1)
    assert h.image.brokers[1].fenced
    # Its session was forgotten with the fence: its heartbeats start a new one and unfence it.
    h.now += 10
    assert h.heartbeat(1).is_fenced is False
    h.tick(h.now + 1)
    assert not h.image.brokers[1].fenced


def test_losses_of_other_registrations_or_of_fenced_brokers_change_nothing() -> None:
    h = three()
    epoch = h.image.brokers[1].epoch
    assert not h.c.broker_session_lost(1, epoch + 1)  # not its registration
    assert not h.c.broker_session_lost(9, 0)  # not registered at all
    h.tick(h.now + 1)
    assert not h.image.brokers[1].fenced
    # A fenced broker (here: by its session timeout) is not fenced again by a late loss...
    h.now = SESSION_MS
    h.heartbeat(2)
    h.heartbeat(3)
    h.tick(SESSION_MS + 1)
    assert h.image.brokers[1].fenced
    assert not h.c.broker_session_lost(1, epoch)
    # ...so once it is back, nothing left over fences it.
    h.heartbeat(1)
    h.tick(h.now + 1)
    assert not h.image.brokers[1].fenced


def test_a_new_stream_cancels_a_loss_reported_before_the_tick() -> None:
    h = three()
    epoch = h.image.brokers[1].epoch
    assert h.c.broker_session_lost(1, epoch)
    assert h.c.broker_session_opened(1, epoch) == ErrorCode.NO_ERROR
    h.tick(h.now + 1)
    assert not h.image.brokers[1].fenced


def test_opening_a_stream_checks_the_registration() -> None:
    h = three()
    epoch = h.image.brokers[2].epoch
    assert h.c.broker_session_opened(2, epoch) == ErrorCode.NO_ERROR
    assert h.c.broker_session_opened(2, epoch + 1) == ErrorCode.STALE_BROKER_EPOCH
    assert h.c.broker_session_opened(7, 0) == ErrorCode.BROKER_ID_NOT_REGISTERED


def test_an_inactive_controller_ignores_losses() -> None:
    h = three()
    h.c.deactivate()
    assert not h.c.broker_session_lost(1, h.image.brokers[1].epoch)


# --- the registry of held streams -------------------------------------------------------------


def streams(max_streams: int = 4) -> tuple[BrokerSessionStreams, list[tuple[int, int]]]:
    lost: list[tuple[int, int]] = []
    return BrokerSessionStreams(max_streams, lambda b, e: lost.append((b, e))), lost


def test_the_broker_side_ending_is_one_loss_with_its_epoch() -> None:
    reg, lost = streams()
    s = reg.open(1, 7)
    assert s is not None and len(reg) == 1
    reg.broker_side_ended(s)
    reg.broker_side_ended(s)  # gRPC's callback and the hold loop may both see it
    assert lost == [(1, 7)] and s.done and len(reg) == 0


def test_streams_the_controller_ends_or_replaces_are_no_loss() -> None:
    reg, lost = streams()
    old = reg.open(1, 7)
    new = reg.open(1, 8)
    assert old is not None and new is not None
    assert old.done and not new.done
    reg.broker_side_ended(old)  # the replaced call's end arrives later
    assert lost == []
    other = reg.open(2, 3)
    assert other is not None
    reg.end_all()
    assert new.done and other.done and len(reg) == 0
    reg.broker_side_ended(new)
    reg.broker_side_ended(other)
    assert lost == []


def test_no_more_than_max_streams_brokers_are_held() -> None:
    reg, _ = streams(max_streams=2)
    assert reg.open(1, 0) is not None
    assert reg.open(2, 0) is not None
    assert reg.open(3, 0) is None
    assert reg.open(2, 1) is not None  # a broker already held may always replace its stream
    with pytest.raises(ValueError):
        BrokerSessionStreams(0, lambda b, e: None)


def test_hold_returns_when_the_stream_ends_either_way() -> None:
    reg, lost = streams()
    s = reg.open(1, 1)
    assert s is not None
    t = threading.Thread(target=reg.hold, args=(s, lambda: True))
    t.start()
    reg.end_all()
    t.join(10)
    assert not t.is_alive() and lost == []
    # A call gRPC reports dead while nothing called back: hold reports the loss itself.
    s2 = reg.open(2, 5)
    assert s2 is not None
    reg.hold(s2, lambda: False)
    assert lost == [(2, 5)]
