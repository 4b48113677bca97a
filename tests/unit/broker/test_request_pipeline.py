"""RequestPipeline with scripted inputs, no sockets: responses in request order whatever the
completion order, back-pressure at queued.max.requests, muting, close-after, illegal calls."""

from __future__ import annotations

import pytest

from data_plane.broker.request_pipeline import PipelineStateError, RequestPipeline


def dispatch_all(p: RequestPipeline) -> list:
    slots = []
    while (frame := p.next_frame()) is not None:
        slots.append((frame, p.open_slot()))
    return slots


def test_responses_leave_in_request_order_whatever_order_they_complete_in() -> None:
    p = RequestPipeline(10)
    p.frames_read(["a", "b", "c"])
    (_, a), (_, b), (_, c) = dispatch_all(p)
    p.resolve(c, "C")
    p.resolve(b, "B")
    assert p.pop_responses() == ([], False)  # the head (a) is not done
    p.resolve(a, "A")
    assert p.pop_responses() == (["A", "B", "C"], False)
    assert p.in_flight == 3  # written yet? no: unsent until response_sent
    for _ in range(3):
        p.response_sent()
    assert p.in_flight == 0


def test_a_slot_without_a_frame_sends_nothing_and_frees_its_place() -> None:
    p = RequestPipeline(10)
    p.frames_read(["produce-acks-0", "fetch"])
    (_, s1), (_, s2) = dispatch_all(p)
    p.resolve(s1, None)
    p.resolve(s2, "F")
    assert p.pop_responses() == (["F"], False)
    assert p.in_flight == 1


def test_back_pressure_at_the_in_flight_limit() -> None:
    p = RequestPipeline(2)
    p.frames_read(["a", "b", "c", "d"])
    slots = dispatch_all(p)
    assert [f for f, _ in slots] == ["a", "b"]
    assert p.waiting_frames == 2 and p.needs_pause and not p.can_dispatch
    p.resolve(slots[0][1], "A")
    assert p.pop_responses() == (["A"], False)
    assert not p.can_dispatch  # still in flight until its bytes are written
    p.response_sent()
    assert p.can_dispatch
    assert [f for f, _ in dispatch_all(p)] == ["c"]
    assert p.peak_in_flight == 2


def test_mute_stops_dispatch_and_reading_and_only_the_latest_mute_ends_it() -> None:
    p = RequestPipeline(5)
    first = p.mute(10.0)
    assert first is not None
    assert p.mute(5.0) is None  # shorter than the running mute: nothing changes
    second = p.mute(20.0)
    assert second is not None and second != first
    p.frames_read(["x"])
    assert p.next_frame() is None and not p.reading_allowed and p.needs_pause
    assert not p.unmute(first)  # the earlier timer fires: the longer mute goes on
    assert p.muted
    assert p.unmute(second)
    assert p.reading_allowed and p.next_frame() == "x"


def test_close_after_drops_later_requests_and_keeps_earlier_answers() -> None:
    p = RequestPipeline(10)
    p.frames_read(["ok", "bad", "later"])
    ok = p.next_frame() and p.open_slot()
    bad = p.next_frame() and p.open_slot()
    later = p.next_frame() and p.open_slot()
    p.resolve(later, "L")
    p.resolve(bad, None, close=True)
    p.resolve(ok, "OK")
    p.frames_read(["after"])
    assert p.pop_responses() == (["OK"], True)
    assert p.closing and not p.reading_allowed
    assert p.next_frame() is None and p.waiting_frames == 0
    assert p.in_flight == 1  # only "OK" is owed
    with pytest.raises(PipelineStateError):
        p.open_slot()


def test_illegal_calls_raise_and_change_nothing() -> None:
    p = RequestPipeline(3)
    p.frames_read(["a"])
    ((_, a),) = dispatch_all(p)
    p.resolve(a, "A")
    with pytest.raises(PipelineStateError):
        p.resolve(a, "again")
    assert a.frame == "A"
    with pytest.raises(PipelineStateError):
        p.response_sent()  # nothing handed out yet
    assert p.in_flight == 1
    with pytest.raises(ValueError):
        RequestPipeline(0)
