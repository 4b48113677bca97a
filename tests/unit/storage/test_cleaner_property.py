"""Property: for random keyed histories (values and tombstones, batches of several records,
compression, cleanings between writes, time passing the delete horizon), the cleaned log
read back holds the latest value of every key whose last write is not a tombstone, no key
whose last write is a tombstone has a value, and every record kept is one that was written
at that offset."""

from __future__ import annotations

import dataclasses
import os
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.compression import Compression
from data_plane.storage.log import Log

from .cleaner_helpers import COMPACT, clean, keyed, read_all
from .conftest import ManualClock

KEYS = [b"a", b"b", b"c", b"d", b"e", b"f"]

record = st.tuples(st.sampled_from(KEYS), st.one_of(st.none(), st.binary(min_size=1, max_size=40)))
step = st.one_of(
    st.tuples(
        st.just("write"),
        st.lists(record, min_size=1, max_size=5),
        st.sampled_from([Compression.NONE, Compression.GZIP]),
    ),
    st.tuples(st.just("clean"), st.booleans(), st.just(0)),
    st.tuples(st.just("tick"), st.integers(0, 2000), st.just(0)),
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(steps=st.lists(step, min_size=1, max_size=40), segment_bytes=st.sampled_from([300, 800]))
def test_cleaned_log_equals_the_latest_non_tombstone_value_per_key(steps, segment_bytes) -> None:
    config = dataclasses.replace(COMPACT, segment_bytes=segment_bytes)
    clock = ManualClock()
    with tempfile.TemporaryDirectory() as tmp:
        log = Log(os.path.join(tmp, "t-0"), config, topic="t", partition=0, clock_ms=clock)
        try:
            written: dict[int, tuple[bytes, bytes | None]] = {}
            checkpoint: int | None = None
            for kind, arg, codec in steps:
                if kind == "write":
                    info = log.append(keyed(arg, compression=codec), 0)
                    for i, pair in enumerate(arg):
                        written[info.first_offset + i] = pair
                    log.update_high_watermark(log.log_end_offset)
                elif kind == "clean":
                    if arg:
                        log.roll()
                    result = clean(log, clock, checkpoint)
                    assert result.completed
                    checkpoint = result.end_offset
                else:
                    clock.advance(arg)
            log.roll()
            result = clean(log, clock, checkpoint)
            assert result.completed
            _, records = read_all(log)
        finally:
            log.close()
    offsets = [r.offset for r in records]
    assert offsets == sorted(set(offsets))
    for r in records:
        assert written[r.offset] == (r.key, r.value)
    expected: dict[bytes, bytes | None] = {}
    for offset in sorted(written):
        key, value = written[offset]
        expected[key] = value
    got: dict[bytes, bytes | None] = {}
    for r in records:
        got[r.key] = r.value  # type: ignore[index]
    assert {k: v for k, v in got.items() if v is not None} == {
        k: v for k, v in expected.items() if v is not None
    }
    # A key whose last write is a tombstone may keep the tombstone (not yet past its
    # horizon) but never a value; the last record of every key is its last write.
    for key, value in got.items():
        assert value == expected[key]
