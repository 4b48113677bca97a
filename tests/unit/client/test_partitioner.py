from __future__ import annotations

import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftlog_client.partitioner import DefaultPartitioner, murmur2, partition_for_key
from tests.unit.client.kafka_python import kafka_murmur2

# Values from Java's Utils.murmur2 (org.apache.kafka.common.utils.UtilsTest.testMurmur2).
JAVA_CASES = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    bytes([ord("a"), ord("b"), ord("c")]): 479470107,
}


def test_murmur2_matches_java_reference_values() -> None:
    for key, expected in JAVA_CASES.items():
        assert murmur2(key) == expected, key


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_murmur2_matches_kafka_python(key: bytes) -> None:
    assert murmur2(key) & 0x7FFFFFFF == kafka_murmur2(key) & 0x7FFFFFFF


@pytest.mark.parametrize("num_partitions", [1, 2, 3, 6, 7, 100])
def test_partition_for_key_matches_kafka_python_default_partitioner(num_partitions: int) -> None:
    rng = random.Random(num_partitions)
    for _ in range(500):
        key = rng.randbytes(rng.randrange(0, 40))
        expected = (kafka_murmur2(key) & 0x7FFFFFFF) % num_partitions
        assert partition_for_key(key, num_partitions) == expected


def test_keyed_records_ignore_stickiness() -> None:
    p = DefaultPartitioner(random.Random(1))
    key = os.urandom(8)
    first = p.partition("t", key, 12)
    p.on_new_batch("t", 12, first)
    assert p.partition("t", key, 12) == first


def test_null_keys_stick_until_a_batch_completes() -> None:
    p = DefaultPartitioner(random.Random(7))
    first = p.partition("t", None, 6)
    assert all(p.partition("t", None, 6) == first for _ in range(50))
    p.on_new_batch("t", 6, first)
    second = p.partition("t", None, 6)
    assert second != first
    # A stale completion (another partition's batch) does not move the sticky choice.
    p.on_new_batch("t", 6, (second + 1) % 6)
    assert p.partition("t", None, 6) == second


def test_single_partition_topic_stays_on_zero() -> None:
    p = DefaultPartitioner(random.Random(3))
    assert p.partition("t", None, 1) == 0
    p.on_new_batch("t", 1, 0)
    assert p.partition("t", None, 1) == 0


def test_partition_count_must_be_positive() -> None:
    with pytest.raises(ValueError):
        partition_for_key(b"k", 0)
