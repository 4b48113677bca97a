from __future__ import annotations

import collections
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metadata.placement import PlacementError, assign_replicas, rack_alternated_brokers


def test_rack_unaware_matches_kafka_pattern() -> None:
    # Kafka's documented example: 5 brokers, 10 partitions, rf 3, start index 0, shift 0
    # (AdminUtils: "broker-0 .. broker-4" leaders round-robin, followers shifted).
    brokers = {b: None for b in range(5)}
    got = assign_replicas(brokers, 10, 3, random.Random(0), fixed_start_index=0)
    assert got[0] == [0, 1, 2]
    assert got[1] == [1, 2, 3]
    assert got[4] == [4, 0, 1]
    assert got[5] == [0, 2, 3]  # after one wrap-around the shift grows by one
    assert got[9] == [4, 1, 2]


def test_rack_alternation() -> None:
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_brokers(racks) == [0, 3, 1, 5, 4, 2]


def test_rack_aware_spreads_replicas_over_racks() -> None:
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    got = assign_replicas(racks, 30, 3, random.Random(7))
    for replicas in got.values():
        assert len({racks[b] for b in replicas}) == 3
    leaders = collections.Counter(r[0] for r in got.values())
    assert set(leaders.values()) == {5}


def test_too_few_brokers() -> None:
    with pytest.raises(PlacementError):
        assign_replicas({1: None, 2: None}, 1, 3, random.Random(0))
    with pytest.raises(PlacementError):
        assign_replicas({1: None}, 1, 0, random.Random(0))


@given(
    n=st.integers(1, 9),
    parts=st.integers(1, 40),
    rf=st.integers(1, 9),
    seed=st.integers(0, 1000),
    use_racks=st.booleans(),
)
def test_placement_properties(n: int, parts: int, rf: int, seed: int, use_racks: bool) -> None:
    rf = min(rf, n)
    brokers = {b: (f"r{b % 3}" if use_racks else None) for b in range(10, 10 + n)}
    got = assign_replicas(brokers, parts, rf, random.Random(seed))
    assert sorted(got) == list(range(parts))
    for replicas in got.values():
        assert len(replicas) == rf
        assert len(set(replicas)) == rf
        assert set(replicas) <= set(brokers)
    leaders = collections.Counter(r[0] for r in got.values())
    assert max(leaders.values()) - min(leaders.get(b, 0) for b in brokers) <= 1
