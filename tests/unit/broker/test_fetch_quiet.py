"""Incremental fetches skip reading quiet session partitions: over the wire against an
in-process broker, the answers equal a model of KIP-227's rule (a partition is in an
incremental answer iff it has records at its position or a high watermark other than the one
last sent), a fetch whose partitions are all quiet still waits for data, and a fetch is
woken by an append that comes right after its read."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.protocol.api_keys import ApiKey
from common.protocol.codec import encode_request
from tests.unit.broker.harness import BrokerHarness
from tests.unit.broker.test_server_wire import batch, fetch_body, presult, produce_body, wait_for
from tests.unit.broker.wire import WireClient

FETCH_VERSION = 11
PARTITIONS = 3
MAX_EXAMPLES = 30
PARK_MS = 15_000


@pytest.fixture(scope="module")
def shared_broker() -> Iterator[BrokerHarness]:
    with tempfile.TemporaryDirectory() as d:
        h = BrokerHarness(Path(d))
        yield h
        h.close()


def _fetch(
    client: WireClient, sid: int, epoch: int, moves: dict[int, int], topic: str, isolation: int
) -> dict[str, Any]:
    body = fetch_body([(topic, p, off) for p, off in sorted(moves.items())])
    body["session_id"], body["session_epoch"], body["isolation_level"] = sid, epoch, isolation
    return client.call(ApiKey.FETCH, FETCH_VERSION, body)


def _answered(resp: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {p["partition_index"]: p for t in resp["responses"] for p in t["partitions"]}


_steps = st.lists(
    st.one_of(
        st.tuples(st.just("produce"), st.integers(0, PARTITIONS - 1), st.integers(1, 4)),
        st.tuples(
            st.just("fetch"),
            st.sets(st.integers(0, PARTITIONS - 1)),
            st.sampled_from(["end", "first", "stay"]),
        ),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(steps=_steps, isolation=st.sampled_from([0, 1]))
def test_incremental_answers_match_the_model(
    shared_broker: BrokerHarness, steps: list[tuple[Any, ...]], isolation: int
) -> None:
    broker = shared_broker
    topic = f"q{broker.apis.clock_ms() if broker.apis else 0}-{id(steps)}"
    broker.set_topics({topic: PARTITIONS})
    client = WireClient(broker.port)
    try:
        # Model: per partition, the batch start offsets, the end (= HW: an ISR of one), the
        # fetch position, and the high watermark the session last sent.
        starts: list[list[int]] = [[] for _ in range(PARTITIONS)]
        end = [0] * PARTITIONS
        position = [0] * PARTITIONS
        opening = fetch_body([(topic, p, 0) for p in range(PARTITIONS)])
        opening["session_epoch"], opening["isolation_level"] = 0, isolation
        first = client.call(ApiKey.FETCH, FETCH_VERSION, opening)
        sid = first["session_id"]
        assert sid != 0 and set(_answered(first)) == set(range(PARTITIONS))
        sent_hw = [0] * PARTITIONS
        epoch = 1
        for step in steps:
            if step[0] == "produce":
                _, p, n = step
                r = client.call(ApiKey.PRODUCE, 7, produce_body(topic, p, batch(n)))
                assert presult(r)["error_code"] == 0
                starts[p].append(end[p])
                end[p] += n
                continue
            _, moved, where = step
            moves = {}
            for p in moved:
                target = {"end": end[p], "first": 0, "stay": position[p]}[where]
                moves[p] = position[p] = target
            resp = _fetch(client, sid, epoch, moves, topic, isolation)
            epoch += 1
            assert resp["error_code"] == 0
            expected = {
                p for p in range(PARTITIONS) if position[p] < end[p] or end[p] != sent_hw[p]
            }
            got = _answered(resp)
            assert set(got) == expected, (steps, got, position, end, sent_hw)
            for p, entry in got.items():
                assert entry["high_watermark"] == end[p]
                assert bool(entry["records"]) == (position[p] < end[p])
                sent_hw[p] = end[p]
    finally:
        client.close()


def test_a_fetch_of_quiet_partitions_waits_for_data(client: WireClient, broker) -> None:
    """Every session partition quiet, none listed: the fetch parks (it does not answer an
    empty response at once) and an append to one of them wakes it with that partition."""
    opening = fetch_body([("t", 0, 0), ("t", 1, 0)])
    opening["session_epoch"] = 0
    sid = client.call(ApiKey.FETCH, FETCH_VERSION, opening)["session_id"]
    quiet = fetch_body([], max_wait_ms=PARK_MS)
    quiet["session_id"], quiet["session_epoch"] = sid, 1
    cid = client.send(ApiKey.FETCH, FETCH_VERSION, quiet)
    wait_for(lambda: len(broker.apis.fetch_purgatory) == 1, "the quiet fetch to park")
    other = WireClient(broker.port)
    try:
        assert (
            presult(other.call(ApiKey.PRODUCE, 7, produce_body("t", 1, batch(2))))["error_code"]
            == 0
        )
    finally:
        other.close()
    got, resp = client.recv(ApiKey.FETCH, FETCH_VERSION)
    assert got == cid
    (woke,) = _answered(resp).values()
    assert woke["partition_index"] == 1 and woke["high_watermark"] == 2 and woke["records"]


def test_a_parked_fetch_answers_what_it_had_and_what_woke_it(client: WireClient, broker) -> None:
    """A fetch that found some bytes (fewer than ``min_bytes``) parks; the append that wakes it
    is answered together with what it had, and the partition nothing touched is left out."""
    producer = WireClient(broker.port)
    try:

        def produce(partition: int, n: int) -> None:
            resp = producer.call(ApiKey.PRODUCE, 7, produce_body("t", partition, batch(n)))
            assert presult(resp)["error_code"] == 0

        opening = fetch_body([("t", 0, 0), ("t", 1, 0)])
        opening["session_epoch"] = 0
        sid = client.call(ApiKey.FETCH, FETCH_VERSION, opening)["session_id"]
        produce(0, 1)
        small = len(batch(1))
        waiting = fetch_body([], max_wait_ms=PARK_MS, min_bytes=small + len(batch(3)))
        waiting["session_id"], waiting["session_epoch"] = sid, 1
        cid = client.send(ApiKey.FETCH, FETCH_VERSION, waiting)
        wait_for(lambda: len(broker.apis.fetch_purgatory) == 1, "the fetch to park")
        produce(1, 3)
        got, resp = client.recv(ApiKey.FETCH, FETCH_VERSION)
        assert got == cid
        answered = _answered(resp)
        assert set(answered) == {0, 1}
        assert answered[0]["high_watermark"] == 1 and answered[0]["records"]
        assert answered[1]["high_watermark"] == 3 and answered[1]["records"]
        # Nothing moved since: the next fetch of the session has nothing to answer.
        again = fetch_body([("t", 0, 1), ("t", 1, 3)], max_wait_ms=0)
        again["session_id"], again["session_epoch"] = sid, 2
        assert _answered(client.call(ApiKey.FETCH, FETCH_VERSION, again)) == {}
    finally:
        producer.close()


def test_an_append_in_the_step_of_the_read_wakes_the_fetch(client: WireClient, broker) -> None:
    """A fetch and a produce in one write on one connection: the broker reads the fetch
    (nothing there), then appends in the same step of its event loop, before the fetch's
    wait has begun. That append must wake the fetch; the fetch must not sit out its wait."""
    purgatory = broker.apis.fetch_purgatory
    expired = purgatory.expired_count
    fetch = fetch_body([("t", 0, 0)], max_wait_ms=PARK_MS)
    produce = produce_body("t", 0, batch(2))
    client.sock.sendall(
        encode_request(ApiKey.FETCH, FETCH_VERSION, 1, "test", fetch)
        + encode_request(ApiKey.PRODUCE, 7, 2, "test", produce)
    )
    got, resp = client.recv(ApiKey.FETCH, FETCH_VERSION)
    assert got == 1
    (woke,) = _answered(resp).values()
    assert woke["partition_index"] == 0 and woke["high_watermark"] == 2 and woke["records"]
    got, produced = client.recv(ApiKey.PRODUCE, 7)
    assert got == 2 and presult(produced)["error_code"] == 0
    assert purgatory.expired_count == expired, "the fetch waited until its deadline"
