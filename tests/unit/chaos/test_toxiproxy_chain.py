"""The sans-IO toxic chain: timed actions for scripted inputs, no sockets, no clock."""

from __future__ import annotations

import itertools
import random

import pytest

from chaos.toxiproxy.toxics import (
    Close,
    Emit,
    Eof,
    ToxicChain,
    ToxicError,
    ToxicSpec,
    parse_toxic,
    update_toxic,
)


def spec(toxic_type: str, name: str | None = None, toxicity: float = 1.0, **attrs: int):
    body = {"type": toxic_type, "toxicity": toxicity, "attributes": attrs}
    if name:
        body["name"] = name
    return parse_toxic(body)


def chain(*specs: ToxicSpec, now: float = 0.0, seed: int = 1) -> ToxicChain:
    c = ToxicChain(random.Random(seed))
    for s in specs:
        c.add(s, now)
    return c


def test_defaults_and_validation() -> None:
    s = parse_toxic({"type": "latency"})
    assert (s.name, s.stream, s.toxicity, dict(s.attributes)) == (
        "latency_downstream",
        "downstream",
        1.0,
        {"latency": 0, "jitter": 0},
    )
    assert parse_toxic({"type": "bandwidth", "stream": "upstream"}).name == "bandwidth_upstream"
    assert dict(
        parse_toxic({"type": "timeout", "attributes": {"timeout": 5, "x": 1}}).attributes
    ) == {"timeout": 5}  # unknown attributes ignored, as Toxiproxy
    for bad in (
        {"type": "nope"},
        {"type": "latency", "stream": "up"},
        {"type": "latency", "toxicity": "1"},
        {"type": "latency", "toxicity": -0.1},
        {"type": "latency", "attributes": {"latency": 1.5}},
        {"type": "latency", "attributes": []},
        ["latency"],
    ):
        with pytest.raises(ToxicError):
            parse_toxic(bad)
    updated = update_toxic(spec("latency", latency=5), {"attributes": {"jitter": 2}})
    assert dict(updated.attributes) == {"latency": 5, "jitter": 2}


def test_latency_delays_each_chunk_and_keeps_order() -> None:
    c = chain(spec("latency", latency=100, jitter=80))
    times = []
    for i in range(50):
        (action,) = c.on_data(b"x", i * 0.001)
        assert isinstance(action, Emit)
        assert action.at_s >= i * 0.001 + 0.02 - 1e-9
        times.append(action.at_s)
    assert times == sorted(times)  # jitter never reorders
    (eof,) = c.on_eof(0.06)
    assert isinstance(eof, Eof) and eof.at_s >= times[-1]


def test_bandwidth_paces_bytes() -> None:
    c = chain(spec("bandwidth", rate=10))  # 10 KB/s = 10 bytes per ms, 1000-byte pieces
    actions = c.on_data(bytes(2500), 1.0)
    assert [len(a.data) for a in actions] == [1000, 1000, 500]
    assert [round(a.at_s, 6) for a in actions] == [1.1, 1.2, 1.25]
    (later,) = c.on_data(bytes(100), 1.0)  # queued behind the first chunk
    assert later.at_s == pytest.approx(1.26)


def test_slicer_cuts_into_spaced_pieces() -> None:
    c = chain(spec("slicer", average_size=10, size_variation=3, delay=1000))
    actions = c.on_data(bytes(range(100)), 0.0)
    assert b"".join(a.data for a in actions) == bytes(range(100))
    assert all(7 <= len(a.data) <= 13 for a in actions[:-1])
    gaps = [b.at_s - a.at_s for a, b in itertools.pairwise(actions)]
    assert all(g == pytest.approx(0.001) for g in gaps)


def test_limit_data_truncates_and_closes() -> None:
    c = chain(spec("limit_data", bytes=10))
    assert c.on_data(b"123456", 0.0) == [Emit(0.0, b"123456")]
    assert c.on_data(b"7890abc", 0.5) == [Emit(0.5, b"7890"), Close(0.5)]


def test_timeout_swallows_data_and_eof_until_removed() -> None:
    c = chain(spec("timeout", timeout=0), spec("slow_close", delay=200))
    assert c.deadline() is None  # 0: never closes by itself
    assert c.on_data(b"gone", 1.0) == []
    assert c.on_eof(2.0) == []
    # Removing it replays the EOF through the toxics after it (slow_close adds 0.2 s).
    assert c.remove("timeout_downstream", 3.0) == [Eof(pytest.approx(3.2))]


def test_timers_of_timeout_and_reset_peer() -> None:
    c = chain(spec("timeout", timeout=500), now=10.0)
    assert c.deadline() == Close(10.5, reset=False)
    c.add(spec("reset_peer", timeout=100), 10.2)
    assert c.deadline() == Close(pytest.approx(10.3), reset=True)
    c.update(spec("reset_peer", timeout=1000), 11.0)  # an update restarts the timer
    assert c.deadline() == Close(10.5, reset=False)


def test_toxicity_zero_passes_everything() -> None:
    c = chain(spec("latency", toxicity=0.0, latency=1000), spec("reset_peer", toxicity=0.0))
    assert c.on_data(b"x", 1.0) == [Emit(1.0, b"x")]
    assert c.deadline() is None


def test_toxicity_draws_differ_between_connections() -> None:
    s = spec("latency", toxicity=0.5, latency=1000)
    rng = random.Random(3)
    delayed = 0
    for _ in range(200):
        c = ToxicChain(rng)
        c.add(s, 0.0)
        (action,) = c.on_data(b"x", 0.0)
        delayed += action.at_s > 0
    assert 60 < delayed < 140


def test_chain_errors() -> None:
    c = chain(spec("latency"))
    with pytest.raises(ToxicError, match="already"):
        c.add(spec("latency"), 0.0)
    with pytest.raises(ToxicError, match="no toxic"):
        c.remove("other", 0.0)
    c.on_eof(1.0)
    with pytest.raises(ToxicError, match="after EOF"):
        c.on_data(b"x", 2.0)
