"""java_string_hash against Java's String.hashCode (values computed by the formula
s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, 32-bit signed) and Kafka's partitionFor."""

from __future__ import annotations

import pytest

from data_plane.coordinator.hashing import java_string_hash, kafka_abs, partition_for


def _by_formula(units: list[int]) -> int:
    n = len(units)
    total = sum(u * 31 ** (n - 1 - i) for i, u in enumerate(units)) % 2**32
    return total - 2**32 if total >= 2**31 else total


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("hello", 99162322),
        ("Aa", 2112),
        ("BB", 2112),  # the classic Java collision
        ("kafka", _by_formula([107, 97, 102, 107, 97])),
        ("polygenelubricants", -2147483648),  # hashes to Integer.MIN_VALUE
        ("\U0001f600", _by_formula([0xD83D, 0xDE00])),  # a surrogate pair: two code units
        ("my-consumer-group", _by_formula([ord(c) for c in "my-consumer-group"])),
    ],
)
def test_java_string_hash(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_kafka_abs_maps_min_value_to_zero() -> None:
    assert kafka_abs(-2147483648) == 0
    assert kafka_abs(-5) == 2147483643  # n & 0x7fffffff, not Math.abs
    assert kafka_abs(7) == 7


def test_partition_for() -> None:
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("hello", 50) == 99162322 % 50
    assert partition_for("Aa", 7) == partition_for("BB", 7)
    with pytest.raises(ValueError):
        partition_for("g", 0)
