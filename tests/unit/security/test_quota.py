"""ClientQuotaManager arithmetic with a fake clock: windowed rate, throttle time, entity
precedence, and the cap."""

from __future__ import annotations

import pytest

from common.security.quota import DEFAULT_ENTITY, QuotaType, entity_precedence
from data_plane.security.quota_manager import ClientQuotaManager


class Clock:
    def __init__(self) -> None:
        self.now_ms = 1_000_000

    def __call__(self) -> int:
        return self.now_ms


def manager(quotas, clock, **kw) -> ClientQuotaManager:
    m = ClientQuotaManager(QuotaType.PRODUCE, clock_ms=clock, **kw)
    m.update_quotas(quotas)
    return m


def test_no_quota_no_throttle() -> None:
    clock = Clock()
    m = manager({}, clock)
    assert m.record("u", "c", 10**9).throttle_time_ms == 0
    assert not m.enabled


def test_throttle_is_overshoot_over_quota_times_window() -> None:
    clock = Clock()
    # 11 samples of 1 s: a fresh rate is measured over at least 10 s.
    m = manager({("alice", None): {"producer_byte_rate": 1000.0}}, clock)
    d = m.record("alice", "any", 5_000)  # 5000 B / 10 s = 500 B/s: under
    assert d.throttle_time_ms == 0 and d.rate == pytest.approx(500.0)
    d = m.record("alice", "any", 6_000)  # 11000 / 10 s = 1100 B/s
    assert d.rate == pytest.approx(1100.0)
    # (1100 - 1000) / 1000 * 10_000 ms = 1000 ms, which is also the cap (one window).
    assert d.throttle_time_ms == 1000
    assert d.entity == ("alice", None) and d.quota == 1000.0


def test_throttle_below_the_cap_and_decay() -> None:
    clock = Clock()
    m = manager({("alice", None): {"producer_byte_rate": 1000.0}}, clock)
    m.record("alice", "c", 10_000)
    d = m.record("alice", "c", 200)  # 10200 / 10 s = 1020 B/s -> 0.02 * 10 s = 200 ms
    assert d.throttle_time_ms == 200
    clock.now_ms += 12_000  # every sample expired
    assert m.record("alice", "c", 100).throttle_time_ms == 0


def test_rate_over_longer_elapsed_window() -> None:
    clock = Clock()
    m = manager({(None, "c1"): {"producer_byte_rate": 100.0}}, clock, window_num=3)
    m.record("x", "c1", 100)
    clock.now_ms += 1_000
    m.record("x", "c1", 100)
    clock.now_ms += 1_500
    d = m.record("x", "c1", 100)  # 300 B over 2.5 s (elapsed > 2 minimum windows)
    assert d.rate == pytest.approx(120.0)
    assert d.throttle_time_ms == 500  # (120 - 100) / 100 * 2500


def test_precedence_and_shared_rate() -> None:
    clock = Clock()
    quotas = {
        ("alice", "c1"): {"producer_byte_rate": 50.0},
        ("alice", None): {"producer_byte_rate": 100.0},
        (DEFAULT_ENTITY, None): {"producer_byte_rate": 200.0},
        (None, "c2"): {"producer_byte_rate": 300.0, "consumer_byte_rate": 7.0},
    }
    m = manager(quotas, clock)
    assert m.quota_for("alice", "c1") == (("alice", "c1"), 50.0)
    assert m.quota_for("alice", "c9") == (("alice", None), 100.0)
    assert m.quota_for("bob", "c2") == ((DEFAULT_ENTITY, None), 200.0)
    fetch = ClientQuotaManager(QuotaType.FETCH, clock_ms=clock)
    fetch.update_quotas(quotas)
    assert fetch.quota_for("bob", "c2") == ((None, "c2"), 7.0)
    assert fetch.quota_for("bob", "c3") is None
    # Two client ids of alice under the (alice, None) entry share one rate.
    m.record("alice", "a", 600)
    assert m.record("alice", "b", 600).rate == pytest.approx(120.0)
    assert entity_precedence("u", "c")[0] == ("u", "c")
    assert len(set(entity_precedence("u", "c"))) == 8


def test_update_drops_removed_entities_and_validates() -> None:
    clock = Clock()
    m = manager({("a", None): {"producer_byte_rate": 1.0}}, clock)
    assert m.record("a", "c", 100).throttle_time_ms > 0
    m.update_quotas({})
    assert m.record("a", "c", 100).throttle_time_ms == 0
    with pytest.raises(ValueError):
        ClientQuotaManager(QuotaType.PRODUCE, window_num=1, clock_ms=clock)
