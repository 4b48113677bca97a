"""Incremental fetch sessions (KIP-227): the broker's sans-IO cache and the replica fetcher's
session handler, alone and against each other (a hypothesis model run)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from common.error_codes import ErrorCode
from common.protocol.fetch_session_epochs import MAX_EPOCH, next_epoch
from common.protocol.topic_id_versions import ZERO_ID
from common.topic_partition import TopicPartition
from data_plane.broker.fetch_session import CachedPartition, FetchSessionCache
from data_plane.replication.fetch_session_handler import FetchSessionHandler, PartitionFields

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))


def req(offset: int, partition: int = 0) -> dict[str, Any]:
    return {
        "partition": partition,
        "fetch_offset": offset,
        "partition_max_bytes": 1024,
        "current_leader_epoch": 3,
        "log_start_offset": 0,
    }


def entry(tp: TopicPartition, hw: int, records: bytes = b"", error: int = 0) -> dict[str, Any]:
    return {
        "partition_index": tp.partition,
        "error_code": error,
        "high_watermark": hw,
        "last_stable_offset": hw,
        "log_start_offset": 0,
        "records": records,
    }


def answered(responses: list[dict[str, Any]]) -> set[TopicPartition]:
    return {
        TopicPartition(t["topic"], p["partition_index"]) for t in responses for p in t["partitions"]
    }


def test_a_full_fetch_at_epoch_0_opens_a_session_and_the_answer_has_every_partition() -> None:
    cache = FetchSessionCache()
    ctx = cache.new_context(0, 0, [(T0, req(5)), (T1, req(7, 1))], [], privileged=True, now_ms=0)
    assert ctx.error_code == 0 and not ctx.incremental
    sid = ctx.response_session_id
    assert sid != 0 and cache.get(sid) is not None
    assert answered(ctx.finish([(T0, entry(T0, 5)), (T1, entry(T1, 7))])) == {T0, T1}
    # Epoch -1: no session, and the one named is closed.
    ctx = cache.new_context(sid, -1, [(T0, req(5))], [], privileged=True, now_ms=1)
    assert ctx.response_session_id == 0 and cache.get(sid) is None
    assert answered(ctx.finish([(T0, entry(T0, 5))])) == {T0}


def test_an_incremental_fetch_reads_every_partition_and_answers_only_the_changed() -> None:
    cache = FetchSessionCache()
    ctx = cache.new_context(
        0, 0, [(T0, req(5)), (T1, req(7, 1)), (T2, req(9, 2))], [], privileged=True, now_ms=0
    )
    sid = ctx.response_session_id
    ctx.finish([(T0, entry(T0, 5)), (T1, entry(T1, 7)), (T2, entry(T2, 9))])
    # Only T0 moved; T2 is forgotten.
    ctx = cache.new_context(sid, 1, [(T0, req(6))], [T2], privileged=True, now_ms=1)
    assert ctx.incremental and ctx.response_session_id == sid
    assert [(tp, p.fetch_offset) for tp, p in ctx.partitions] == [(T0, 6), (T1, 7)]
    # T1: nothing new; T0: its HW moved (this fetch let it advance).
    out = ctx.finish([(T0, entry(T0, 6)), (T1, entry(T1, 7))])
    assert answered(out) == {T0}
    # Records, an error, or a new log start offset each make a partition news.
    ctx = cache.new_context(sid, 2, [], [], privileged=True, now_ms=2)
    moved = entry(T1, 7)
    moved["log_start_offset"] = 3
    assert answered(ctx.finish([(T0, entry(T0, 6, b"x")), (T1, moved)])) == {T0, T1}
    ctx = cache.new_context(sid, 3, [], [], privileged=True, now_ms=3)
    err = entry(T1, 7, error=ErrorCode.NOT_LEADER_OR_FOLLOWER)
    err["log_start_offset"] = 3
    assert answered(ctx.finish([(T0, entry(T0, 6)), (T1, err)])) == {T1}


def test_partitions_that_returned_records_rotate_to_the_end() -> None:
    cache = FetchSessionCache()
    ctx = cache.new_context(
        0, 0, [(T0, req(0)), (T1, req(0, 1)), (T2, req(0, 2))], [], privileged=True, now_ms=0
    )
    ctx.finish([(T0, entry(T0, 9, b"r")), (T1, entry(T1, 0)), (T2, entry(T2, 0))])
    ctx = cache.new_context(ctx.response_session_id, 1, [], [], privileged=True, now_ms=1)
    assert [tp for tp, _ in ctx.partitions] == [T1, T2, T0]


def test_session_errors() -> None:
    cache = FetchSessionCache()
    ctx = cache.new_context(0, 0, [(T0, req(0))], [], privileged=False, now_ms=0)
    sid = ctx.response_session_id
    unknown = cache.new_context(sid + 1, 1, [], [], privileged=False, now_ms=1)
    assert unknown.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert cache.new_context(sid, 2, [], [], privileged=False, now_ms=1).error_code == (
        ErrorCode.INVALID_FETCH_SESSION_EPOCH
    )
    assert cache.new_context(sid, 1, [], [], privileged=False, now_ms=1).error_code == 0
    # Epoch 0 naming a session closes it and opens another.
    again = cache.new_context(sid, 0, [(T0, req(0))], [], privileged=False, now_ms=2)
    assert again.response_session_id not in (0, sid) and cache.get(sid) is None
    assert next_epoch(MAX_EPOCH) == 1 and next_epoch(1) == 2


def test_a_full_cache_evicts_only_idle_sessions_or_a_consumer_for_a_follower() -> None:
    cache = FetchSessionCache(max_slots=2, eviction_min_idle_ms=1000)
    a = cache.new_context(0, 0, [(T0, req(0))], [], privileged=False, now_ms=0)
    b = cache.new_context(0, 0, [(T0, req(0))], [], privileged=False, now_ms=10)
    # A third consumer: nobody idle long enough, no session (it fetches in full).
    assert (
        cache.new_context(0, 0, [(T0, req(0))], [], privileged=False, now_ms=20).response_session_id
        == 0
    )
    # A follower displaces the least recently used consumer.
    f = cache.new_context(0, 0, [(T0, req(0))], [], privileged=True, now_ms=30)
    assert f.response_session_id != 0 and cache.get(a.response_session_id) is None
    # Once b has been idle for the eviction age, a consumer may take its slot.
    c = cache.new_context(0, 0, [(T0, req(0))], [], privileged=False, now_ms=1010)
    assert c.response_session_id != 0 and cache.get(b.response_session_id) is None
    assert len(cache) == 2 and cache.evictions == 2
    assert (
        FetchSessionCache(max_slots=0)
        .new_context(0, 0, [(T0, req(0))], [], privileged=True, now_ms=0)
        .response_session_id
        == 0
    )


def test_handler_full_then_incremental_then_reset() -> None:
    h = FetchSessionHandler()
    wanted: dict[TopicPartition, PartitionFields] = {
        T0: (5, 3, 0, 1024, ZERO_ID),
        T1: (7, 3, 0, 1024, ZERO_ID),
    }
    r = h.build(wanted)
    assert r.full and r.session_id == 0 and set(r.to_send) == {T0, T1}
    assert h.handle_response(r, 0, 42)
    r = h.build({T0: (6, 3, 0, 1024, ZERO_ID), T1: (7, 3, 0, 1024, ZERO_ID)})
    assert not r.full and (r.session_id, r.epoch) == (42, 1)
    assert set(r.to_send) == {T0} and r.forgotten == {}
    assert h.handle_response(r, 0, 42)
    r = h.build({T0: (6, 3, 0, 1024, ZERO_ID)})
    assert r.to_send == {} and list(r.forgotten) == [T1] and r.epoch == 2
    # A wrong epoch: close the session in the next, full, request.
    assert not h.handle_response(r, ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0)
    r = h.build({T0: (6, 3, 0, 1024, ZERO_ID)})
    assert r.full and r.session_id == 42 and r.epoch == 0
    assert h.handle_response(r, 0, 43)
    # Unknown session: do not name it again.
    r = h.build({T0: (6, 3, 0, 1024, ZERO_ID)})
    assert not h.handle_response(r, ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0)
    r = h.build({T0: (6, 3, 0, 1024, ZERO_ID)})
    assert r.full and r.session_id == 0
    # The leader keeps no session (cache full): stay with full fetches.
    assert h.handle_response(r, 0, 0)
    assert h.build({T0: (6, 3, 0, 1024, ZERO_ID)}).full


PARTS = [TopicPartition("t", p) for p in range(4)]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["advance", "add", "drop", "lose_session", "lose_answer", "round"]),
            st.integers(0, 3),
        ),
        max_size=40,
    )
)
def test_handler_and_cache_agree_on_every_position(ops: list[tuple[str, int]]) -> None:
    """Whatever happens between rounds, after every answered round the broker read exactly
    the partitions the follower wanted, at the positions it wanted."""
    cache = FetchSessionCache()
    h = FetchSessionHandler()
    positions: dict[TopicPartition, int] = {PARTS[0]: 0}
    for op, i in [*ops, ("round", 0)]:
        tp = PARTS[i]
        if op == "advance" and tp in positions:
            positions[tp] += 1
        elif op == "add":
            positions.setdefault(tp, 0)
        elif op == "drop" and len(positions) > 1:
            positions.pop(tp, None)
        elif op == "lose_session":
            for sid in cache.session_ids():
                cache.remove(sid)
        elif op == "lose_answer":
            wanted = {t: (o, 1, 0, 100, ZERO_ID) for t, o in positions.items()}
            r = h.build(wanted)
            _serve(cache, r)  # the broker moved on, the answer never arrived
            h.reset()
        elif op == "round":
            for _attempt in range(3):  # a session error costs one extra round
                wanted = {t: (o, 1, 0, 100, ZERO_ID) for t, o in positions.items()}
                r = h.build(wanted)
                ctx = _serve(cache, r)
                if h.handle_response(r, ctx.error_code, ctx.response_session_id):
                    assert {t: p.fetch_offset for t, p in ctx.partitions} == positions
                    break
            else:
                raise AssertionError("no answered round in 3 attempts")


def _serve(cache: FetchSessionCache, r: Any) -> Any:
    requested = [
        (
            tp,
            {
                "partition": tp.partition,
                "fetch_offset": f[0],
                "current_leader_epoch": f[1],
                "log_start_offset": f[2],
                "partition_max_bytes": f[3],
            },
        )
        for tp, f in r.to_send.items()
    ]
    ctx = cache.new_context(
        r.session_id, r.epoch, requested, list(r.forgotten), privileged=True, now_ms=0
    )
    if ctx.error_code == 0:
        ctx.finish([(tp, entry(tp, p.fetch_offset)) for tp, p in ctx.partitions])
    return ctx


def test_cached_partition_from_request_defaults() -> None:
    p = CachedPartition.from_request({"partition": 2, "fetch_offset": 10})
    assert (p.partition, p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch) == (
        2,
        10,
        0,
        -1,
    )
