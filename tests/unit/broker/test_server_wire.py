"""The broker's request handling over real sockets (in-process server, hand-built metadata)."""

from __future__ import annotations

import logging
import os
import socket
import struct
import time
from collections import deque
from collections.abc import Callable

import pytest

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.codec import encode_request
from common.protocol.messages.api_versions import ApiVersionsRequest
from common.protocol.messages.create_topics import CreateTopicsRequest, CreateTopicsRequestTopic
from common.protocol.messages.delete_records import (
    DeleteRecordsRequest,
    DeleteRecordsRequestPartition,
    DeleteRecordsRequestTopic,
    DeleteRecordsResponsePartition,
)
from common.protocol.messages.delete_topics import (
    DeleteTopicsRequest,
    DeleteTopicsResponseResponse,
)
from common.protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsRequestResource,
)
from common.protocol.messages.list_offsets import (
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
    ListOffsetsResponsePartition,
)
from data_plane.broker.client_connection import _END, _more_after
from data_plane.broker.config import BrokerConfig
from data_plane.storage import Record, build_batch
from data_plane.storage.file_records import FileSlice
from data_plane.storage.record_codec import Compression, build_end_txn_marker
from tests.unit.broker.harness import BrokerHarness
from tests.unit.broker.wire import WireClient

DEADLINE_S = 20.0


def batch(n: int = 3, start: int = 0, compression: int = Compression.NONE) -> bytes:
    return build_batch(
        [Record(b"k%d" % i, b"v%d" % i, 1_000 + i) for i in range(start, start + n)],
        compression=compression,
    )


def produce_body(topic: str, partition: int, records: bytes | None, acks: int = 1) -> dict:
    return {
        "transactional_id": None,
        "acks": acks,
        "timeout_ms": 5000,
        "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": records}]}
        ],
    }


def fetch_body(parts: list[tuple[str, int, int]], max_wait_ms: int = 0, min_bytes: int = 1) -> dict:
    topics: dict[str, list[dict]] = {}
    for topic, p, offset in parts:
        topics.setdefault(topic, []).append(
            {"partition": p, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
        )
    return {
        "replica_id": -1,
        "max_wait_ms": max_wait_ms,
        "min_bytes": min_bytes,
        "max_bytes": 1 << 24,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
        "forgotten_topics_data": [],
    }


def presult(resp: dict) -> dict:
    return resp["responses"][0]["partition_responses"][0]


def wait_for(cond: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def test_api_versions_probe_falls_back_and_connection_stays(client: WireClient) -> None:
    # A newer-than-supported ApiVersions (clients probe v3/v4) gets the v0 fallback.
    cid = client.send(ApiKey.API_VERSIONS, 2, ApiVersionsRequest())
    _, body = client.recv(ApiKey.API_VERSIONS, 2)
    assert body.error_code == 0
    keys = {e.api_key: (e.min_version, e.max_version) for e in body.api_keys}
    # Produce v0-2 (message formats v0/v1) are not served, as in Kafka 4.
    assert keys[ApiKey.PRODUCE] == (3, 11) and keys[ApiKey.FETCH] == (0, 17)
    assert keys[ApiKey.INIT_PRODUCER_ID] == (0, 5)  # idempotence (REFERENCE.md section 1), KIP-360
    assert keys[ApiKey.JOIN_GROUP] == (0, 9)  # v6+ is flexible
    assert keys[ApiKey.ELECT_LEADERS] == (0, 2)
    assert ApiKey.CREATE_DELEGATION_TOKEN not in keys
    # An old client's Produce v2 gets a clean UNSUPPORTED_VERSION, not CORRUPT_MESSAGE.
    old = WireClient(client.sock.getpeername()[1])
    try:
        raw = struct.pack(">hhih", ApiKey.PRODUCE, 2, 77, -1) + b"\x00\x01" + b"\x00" * 8
        old.sock.sendall(struct.pack(">i", len(raw)) + raw)
        assert struct.unpack_from(">ih", old.recv_frame()) == (77, ErrorCode.UNSUPPORTED_VERSION)
    finally:
        old.close()
    raw = struct.pack(">hhih", ApiKey.API_VERSIONS, 9, cid + 1, -1)
    client.sock.sendall(struct.pack(">i", len(raw)) + raw)
    frame = client.recv_frame()
    assert struct.unpack_from(">ih", frame) == (cid + 1, ErrorCode.UNSUPPORTED_VERSION)
    assert client.call(ApiKey.METADATA, 8, {"topics": None})["brokers"][0]["node_id"] == 1


@pytest.mark.parametrize(
    "api_key,version", [(ApiKey.PRODUCE, 12), (99, 0), (ApiKey.CREATE_DELEGATION_TOKEN, 0)]
)
def test_unknown_api_or_version_gets_unsupported_then_close(
    client: WireClient, api_key: int, version: int
) -> None:
    raw = struct.pack(">hhih", api_key, version, 7, -1) + b"\x00" * 16
    client.sock.sendall(struct.pack(">i", len(raw)) + raw)
    assert client.recv_frame() == struct.pack(">ih", 7, ErrorCode.UNSUPPORTED_VERSION)
    assert client.is_closed_by_peer()


def test_oversized_frame_closes_only_that_connection(tmp_path) -> None:
    h = BrokerHarness(tmp_path, BrokerConfig(socket_request_max_bytes=1024))
    try:
        h.set_topics({"t": 1})
        good, bad = WireClient(h.port), WireClient(h.port)
        bad.sock.sendall(struct.pack(">i", 1025) + b"\x00" * 100)
        assert bad.is_closed_by_peer()
        assert good.call(ApiKey.METADATA, 1, {"topics": None})["topics"][0]["name"] == "t"
        good.close()
        bad.close()
    finally:
        h.close()


def test_wrong_crc_is_corrupt_message_and_appends_nothing(client: WireClient) -> None:
    data = bytearray(batch(3))
    data[-1] ^= 0xFF  # inside the CRC-covered records
    resp = client.call(ApiKey.PRODUCE, 7, produce_body("t", 0, bytes(data)))
    assert presult(resp)["error_code"] == ErrorCode.CORRUPT_MESSAGE
    lo = client.call(ApiKey.LIST_OFFSETS, 5, list_offsets_body("t", 0, -1))
    assert lo.topics[0].partitions[0].offset == 0
    ok = client.call(ApiKey.PRODUCE, 7, produce_body("t", 0, batch(3)))
    assert presult(ok)["error_code"] == 0 and presult(ok)["base_offset"] == 0


def list_offsets_body(topic: str, partition: int, timestamp: int) -> ListOffsetsRequest:
    return ListOffsetsRequest(
        replica_id=-1,
        isolation_level=0,
        topics=[
            ListOffsetsRequestTopic(
                name=topic,
                partitions=[
                    ListOffsetsRequestPartition(
                        partition_index=partition, current_leader_epoch=-1, timestamp=timestamp
                    )
                ],
            )
        ],
    )


def test_produce_routing_and_size_errors(broker: BrokerHarness, client: WireClient) -> None:
    r = client.call(ApiKey.PRODUCE, 7, produce_body("nope", 0, batch()))
    assert presult(r)["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    r = client.call(ApiKey.PRODUCE, 7, produce_body("t", 5, batch()))
    assert presult(r)["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    big = build_batch([Record(None, os.urandom(2_000_000), 1)])
    r = client.call(ApiKey.PRODUCE, 7, produce_body("t", 0, big))
    assert presult(r)["error_code"] == ErrorCode.MESSAGE_SIZE_TOO_LARGE
    marker = build_end_txn_marker(
        producer_id=1, producer_epoch=0, coordinator_epoch=0, committed=True, timestamp_ms=1
    )
    r = client.call(ApiKey.PRODUCE, 7, produce_body("t", 0, marker))
    assert presult(r)["error_code"] == ErrorCode.INVALID_RECORD  # clients send no control batch
    broker.set_topics({"t": 2}, leader=2)
    r = client.call(ApiKey.PRODUCE, 7, produce_body("t", 0, batch()))
    assert presult(r)["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    f = client.call(ApiKey.FETCH, 11, fetch_body([("t", 0, 0)]))
    assert f["responses"][0]["partitions"][0]["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_acks_zero_sends_no_response(client: WireClient) -> None:
    client.send(ApiKey.PRODUCE, 7, produce_body("t", 1, batch(2), acks=0))
    # The next answer on the connection is the metadata one: acks=0 produced nothing.
    cid = client.send(ApiKey.METADATA, 1, {"topics": None})
    got, _ = client.recv(ApiKey.METADATA, 1)
    assert got == cid
    lo = client.call(ApiKey.LIST_OFFSETS, 5, list_offsets_body("t", 1, -1))
    assert lo.topics[0].partitions[0].offset == 2


def test_acks_zero_failure_closes_connection(client: WireClient) -> None:
    client.send(ApiKey.PRODUCE, 7, produce_body("nope", 0, batch(2), acks=0))
    assert client.is_closed_by_peer()


def test_fetch_returns_every_partition_and_the_stored_bytes(client: WireClient) -> None:
    sent = batch(5, compression=Compression.GZIP)
    r = client.call(ApiKey.PRODUCE, 7, produce_body("t", 0, sent))
    assert presult(r)["base_offset"] == 0
    f = client.call(ApiKey.FETCH, 11, fetch_body([("t", 0, 0), ("t", 1, 0), ("x", 0, 0)]))
    by_part = {
        (t["topic"], p["partition_index"]): p for t in f["responses"] for p in t["partitions"]
    }
    assert set(by_part) == {("t", 0), ("t", 1), ("x", 0)}
    p0 = by_part[("t", 0)]
    assert p0["error_code"] == 0 and p0["high_watermark"] == 5 and p0["log_start_offset"] == 0
    got = bytes(p0["records"])
    # Same bytes as produced except the broker-stamped baseOffset and partitionLeaderEpoch.
    assert len(got) == len(sent) and got[16:] == sent[16:]
    assert by_part[("t", 1)]["error_code"] == 0 and len(by_part[("t", 1)]["records"] or b"") == 0
    assert by_part[("x", 0)]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    oor = client.call(ApiKey.FETCH, 11, fetch_body([("t", 0, 99)]))
    assert oor["responses"][0]["partitions"][0]["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE


def test_multi_part_fetch_answers_arrive_whole_and_leave_the_socket_uncorked(
    client: WireClient, broker
) -> None:
    """Answers of several parts (buffers and segment slices alternating) go out with MSG_MORE
    and, when a slice is followed by more, under TCP_CORK: the bytes must arrive whole and in
    order, and the cork must be lifted afterwards (else the tail waits up to 200 ms)."""
    sent = {p: batch(3 + p) for p in (0, 1)}
    for p, b in sent.items():
        assert presult(client.call(ApiKey.PRODUCE, 7, produce_body("t", p, b)))["error_code"] == 0
    cids = [client.send(ApiKey.FETCH, 11, fetch_body([("t", 0, 0), ("t", 1, 0)])) for _ in range(3)]
    for cid in cids:
        got, f = client.recv(ApiKey.FETCH, 11)
        assert got == cid
        for part in f["responses"][0]["partitions"]:
            records = bytes(part["records"])
            want = sent[part["partition_index"]]
            assert len(records) == len(want) and records[16:] == want[16:]
    server = broker.thread.server
    for conn in list(server.connections):
        assert conn.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CORK) == 0


def test_only_parts_with_bytes_count_as_more_to_send() -> None:
    """What decides MSG_MORE / TCP_CORK: an answer ending in an empty segment slice (a
    partition with nothing new below the high watermark) has nothing more after its buffers,
    so they must go out pushed, not held for bytes that never come."""
    empty = FileSlice(None, 0, 0, 0)
    full = FileSlice(None, 0, 10, 0)
    assert not _more_after(deque([b"head", empty, _END]), 1)
    assert not _more_after(deque([b"head", b"", _END, _END]), 1)
    assert _more_after(deque([b"head", empty, _END, b"next"]), 1)
    assert _more_after(deque([b"head", full, _END]), 1)
    assert not _more_after(deque([full, _END]), 1)


def test_incremental_fetch_session_over_the_wire(client: WireClient, broker) -> None:
    """Epoch 0 opens a session; an incremental fetch lists nothing and gets only the
    partition with news; one parked with no partitions listed still wakes on an append to a
    session partition; an unknown session or a wrong epoch is a top-level error."""
    unknown = fetch_body([("t", 0, 0)])
    unknown["session_id"], unknown["session_epoch"] = 12, 1
    f = client.call(ApiKey.FETCH, 11, unknown)
    assert f["error_code"] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND and f["responses"] == []

    opening = fetch_body([("t", 0, 0), ("t", 1, 0)])
    opening["session_epoch"] = 0
    f = client.call(ApiKey.FETCH, 11, opening)
    sid = f["session_id"]
    assert sid != 0 and f["error_code"] == 0
    assert sorted(p["partition_index"] for p in f["responses"][0]["partitions"]) == [0, 1]

    r = client.call(ApiKey.PRODUCE, 7, produce_body("t", 1, batch(3)))
    assert presult(r)["error_code"] == 0
    incremental = fetch_body([])
    incremental["session_id"], incremental["session_epoch"] = sid, 1
    f = client.call(ApiKey.FETCH, 11, incremental)
    assert f["error_code"] == 0 and f["session_id"] == sid
    (only,) = [p for t in f["responses"] for p in t["partitions"]]
    assert only["partition_index"] == 1 and only["high_watermark"] == 3 and only["records"]

    # Move partition 1's position past the records, then park with nothing listed.
    moved = fetch_body([("t", 1, 3)], max_wait_ms=15_000)
    moved["session_id"], moved["session_epoch"] = sid, 2
    cid = client.send(ApiKey.FETCH, 11, moved)
    wait_for(lambda: len(broker.apis.fetch_purgatory) == 1, "the incremental fetch to park")
    other = WireClient(broker.port)
    try:
        r = other.call(ApiKey.PRODUCE, 7, produce_body("t", 0, batch(2)))
        assert presult(r)["error_code"] == 0
    finally:
        other.close()
    got, f = client.recv(ApiKey.FETCH, 11)
    assert got == cid
    (woke,) = [p for t in f["responses"] for p in t["partitions"]]
    assert woke["partition_index"] == 0 and woke["high_watermark"] == 2

    stale = fetch_body([])
    stale["session_id"], stale["session_epoch"] = sid, 2
    assert client.call(ApiKey.FETCH, 11, stale)["error_code"] == (
        ErrorCode.INVALID_FETCH_SESSION_EPOCH
    )


def test_delayed_fetch_completes_on_append_and_pipelines_in_order(
    client: WireClient, broker
) -> None:
    fetch_cid = client.send(ApiKey.FETCH, 11, fetch_body([("t", 1, 0)], max_wait_ms=15_000))
    meta_cid = client.send(ApiKey.METADATA, 1, {"topics": None})
    wait_for(lambda: len(broker.apis.fetch_purgatory) == 1, "the fetch to park")
    other = WireClient(broker.port)
    try:
        assert (
            presult(other.call(ApiKey.PRODUCE, 7, produce_body("t", 1, batch(2))))["error_code"]
            == 0
        )
    finally:
        other.close()
    got, f = client.recv(ApiKey.FETCH, 11)
    assert got == fetch_cid
    assert f["responses"][0]["partitions"][0]["high_watermark"] == 2
    assert len(f["responses"][0]["partitions"][0]["records"]) > 0
    got, _ = client.recv(ApiKey.METADATA, 1)
    assert got == meta_cid  # answered after the fetch, although it was ready first


def test_delayed_fetch_times_out_empty(client: WireClient) -> None:
    f = client.call(ApiKey.FETCH, 11, fetch_body([("t", 1, 0)], max_wait_ms=200))
    p = f["responses"][0]["partitions"][0]
    assert p["error_code"] == 0 and len(p["records"] or b"") == 0


def test_list_offsets_earliest_latest_and_by_timestamp(client: WireClient) -> None:
    client.call(ApiKey.PRODUCE, 7, produce_body("t", 0, batch(3, start=0)))
    client.call(ApiKey.PRODUCE, 7, produce_body("t", 0, batch(3, start=10)))

    def lo(ts: int) -> ListOffsetsResponsePartition:
        r = client.call(ApiKey.LIST_OFFSETS, 5, list_offsets_body("t", 0, ts))
        return r.topics[0].partitions[0]

    assert lo(-2).offset == 0
    assert lo(-1).offset == 6
    found = lo(1_010)
    assert (found.offset, found.timestamp) == (3, 1_010)
    assert lo(99_999).offset == -1
    v0 = client.call(
        ApiKey.LIST_OFFSETS,
        0,
        ListOffsetsRequest(
            replica_id=-1,
            topics=[
                ListOffsetsRequestTopic(
                    name="t",
                    partitions=[
                        ListOffsetsRequestPartition(
                            partition_index=0, timestamp=-1, max_num_offsets=1
                        )
                    ],
                )
            ],
        ),
    )
    assert v0.topics[0].partitions[0].old_style_offsets == [6]


def test_list_offsets_by_max_timestamp_and_the_tiered_storage_specials(client: WireClient) -> None:
    """v7+ -3: the first record with the largest timestamp (not the last offset: a later
    batch may carry older timestamps); v8+ -4: the log start; v9+ -5: -1 (nothing tiered)."""
    client.call(ApiKey.PRODUCE, 9, produce_body("t", 0, batch(3, start=5)))  # ts 1005..1007
    client.call(ApiKey.PRODUCE, 9, produce_body("t", 0, batch(2, start=0)))  # ts 1000..1001

    def lo(version: int, ts: int) -> ListOffsetsResponsePartition:
        r = client.call(ApiKey.LIST_OFFSETS, version, list_offsets_body("t", 0, ts))
        return r.topics[0].partitions[0]

    top = lo(7, -3)
    assert (top.error_code, top.offset, top.timestamp) == (0, 2, 1_007)
    assert lo(8, -4).offset == 0
    assert lo(9, -5).offset == -1
    # An empty partition has no record to name.
    none = client.call(ApiKey.LIST_OFFSETS, 7, list_offsets_body("t", 1, -3))
    assert none.topics[0].partitions[0].offset == -1


def test_delete_records_moves_low_watermark(client: WireClient) -> None:
    client.call(ApiKey.PRODUCE, 7, produce_body("t", 0, batch(4)))
    partition = DeleteRecordsRequestPartition(partition_index=0, offset=2)
    body = DeleteRecordsRequest(
        topics=[DeleteRecordsRequestTopic(name="t", partitions=[partition])], timeout_ms=1000
    )
    r = client.call(ApiKey.DELETE_RECORDS, 1, body)
    assert r.topics[0].partitions[0] == DeleteRecordsResponsePartition(
        partition_index=0, low_watermark=2, error_code=0
    )
    earliest = client.call(ApiKey.LIST_OFFSETS, 5, list_offsets_body("t", 0, -2))
    assert earliest.topics[0].partitions[0].offset == 2


def test_metadata_unknown_topic_and_partition_details(client: WireClient) -> None:
    m = client.call(
        ApiKey.METADATA,
        8,
        {"topics": [{"name": "t"}, {"name": "missing"}], "allow_auto_topic_creation": True},
    )
    assert m["controller_id"] == 1 and m["cluster_id"] == "test-cluster"
    t, missing = m["topics"]
    assert missing["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert [p["partition_index"] for p in t["partitions"]] == [0, 1]
    p = t["partitions"][0]
    assert (
        p["leader_id"],
        p["leader_epoch"],
        p["replica_nodes"],
        p["isr_nodes"],
        p["offline_replicas"],
    ) == (1, 0, [1], [1], [])


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_disconnects_mid_request_leave_nothing_behind(broker: BrokerHarness) -> None:
    broker.set_topics({"t": 1})
    server = broker.thread.server
    warm = WireClient(broker.port)
    warm.call(ApiKey.METADATA, 1, {"topics": None})
    warm.close()
    wait_for(lambda: len(server.connections) == 0, "the warm-up connection to go")
    fds_before = _open_fds()
    for _ in range(20):
        half = socket.create_connection(("127.0.0.1", broker.port))
        half.sendall(struct.pack(">i", 500) + b"\x00\x03")  # half a request
        half.close()
        parked = WireClient(broker.port)
        parked.send(ApiKey.FETCH, 11, fetch_body([("t", 0, 0)], max_wait_ms=30_000))
        wait_for(lambda: len(broker.apis.fetch_purgatory) == 1, "the fetch to park")
        parked.close()
        wait_for(lambda: len(broker.apis.fetch_purgatory) == 0, "the parked fetch to go")
    wait_for(lambda: len(server.connections) == 0, "connections to close")
    assert len(broker.apis.fetch_purgatory) == 0 and len(broker.apis.produce_purgatory) == 0
    wait_for(lambda: _open_fds() <= fds_before, "file descriptors to be released")
    loop = broker.thread.loop
    import asyncio

    tasks = asyncio.run_coroutine_threadsafe(_task_count(), loop).result(10)
    assert tasks == 1  # only the server's main coroutine


async def _task_count() -> int:
    import asyncio

    return len([t for t in asyncio.all_tasks() if t is not asyncio.current_task()])


def test_back_pressure_bounds_requests_in_flight(tmp_path) -> None:
    h = BrokerHarness(tmp_path, BrokerConfig(queued_max_requests=2))
    try:
        h.set_topics({"t": 1})
        c = WireClient(h.port)
        cids = [
            c.send(ApiKey.FETCH, 11, fetch_body([("t", 0, 0)], max_wait_ms=300)) for _ in range(6)
        ]
        got = [c.recv(ApiKey.FETCH, 11)[0] for _ in cids]
        assert got == cids
        (conn,) = h.thread.server.connections
        assert conn.peak_in_flight == 2
        c.close()
    finally:
        h.close()


def test_log_append_time_topic_stamps_batches(tmp_path) -> None:
    from data_plane.storage import LogConfig

    log_config = LogConfig(
        log_dirs=(str(tmp_path / "logs"),), message_timestamp_type="LogAppendTime"
    )
    h = BrokerHarness(tmp_path, log_config=log_config)
    try:
        h.set_topics({"t": 1})
        c = WireClient(h.port)
        before_ms = int(time.time() * 1000)
        r = presult(c.call(ApiKey.PRODUCE, 7, produce_body("t", 0, batch(2))))
        assert r["error_code"] == 0 and r["log_append_time_ms"] >= before_ms
        f = c.call(ApiKey.FETCH, 11, fetch_body([("t", 0, 0)]))
        data = bytes(f["responses"][0]["partitions"][0]["records"])
        (attributes,) = struct.unpack_from(">h", data, 21)
        (max_timestamp,) = struct.unpack_from(">q", data, 35)
        assert attributes & 0x08 and max_timestamp == r["log_append_time_ms"]
        c.close()
    finally:
        h.close()


def test_metadata_v0_empty_list_means_all_topics(client: WireClient) -> None:
    m = client.call(ApiKey.METADATA, 0, {"topics": []})
    assert [t["name"] for t in m["topics"]] == ["t"]
    m1 = client.call(ApiKey.METADATA, 1, {"topics": []})
    assert m1["topics"] == []  # v1+: empty means none, null means all


def test_describe_configs_of_this_broker_and_without_controller(client: WireClient) -> None:
    body = DescribeConfigsRequest(
        resources=[
            DescribeConfigsRequestResource(resource_type=rtype, resource_name=name)
            for rtype, name in ((4, "1"), (4, "7"), (2, "t"))
        ],
        include_synonyms=False,
    )
    results = client.call(ApiKey.DESCRIBE_CONFIGS, 1, body).results
    assert [r.error_code for r in results] == [
        0,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.NOT_CONTROLLER,  # this test broker has no controller to forward to
    ]


def test_idle_connection_is_closed(tmp_path) -> None:
    h = BrokerHarness(tmp_path, BrokerConfig(connections_max_idle_ms=1000))
    try:
        c = WireClient(h.port)
        c.call(ApiKey.METADATA, 1, {"topics": None})
        assert c.is_closed_by_peer()  # blocks until the broker closes it (socket timeout 20 s)
        c.close()
    finally:
        h.close()


def test_admin_without_controller_answers_per_topic_errors(client: WireClient) -> None:
    body = CreateTopicsRequest(
        topics=[
            CreateTopicsRequestTopic(name=name, num_partitions=1, replication_factor=1)
            for name in ("a", "b", "b")
        ],
        timeout_ms=1000,
        validate_only=False,
    )
    topics = client.call(ApiKey.CREATE_TOPICS, 3, body).topics
    assert [(t.name, t.error_code) for t in topics] == [
        ("a", ErrorCode.NOT_CONTROLLER),
        ("b", ErrorCode.INVALID_REQUEST),
        ("b", ErrorCode.INVALID_REQUEST),
    ]
    request = DeleteTopicsRequest(topic_names=["t"], timeout_ms=1000)
    deleted = client.call(ApiKey.DELETE_TOPICS, 3, request)
    assert deleted.responses == [
        DeleteTopicsResponseResponse(name="t", error_code=ErrorCode.NOT_CONTROLLER)
    ]


def test_many_pipelined_requests_in_one_write_respect_the_bound(tmp_path) -> None:
    h = BrokerHarness(tmp_path, BrokerConfig(queued_max_requests=3))
    try:
        c = WireClient(h.port)
        frames = b"".join(
            encode_request(ApiKey.API_VERSIONS, 2, cid, "t", ApiVersionsRequest())
            for cid in range(1, 201)
        )
        c.sock.sendall(frames)  # 200 requests arrive in one chunk
        got = [c.recv(ApiKey.API_VERSIONS, 2)[0] for _ in range(200)]
        assert got == list(range(1, 201))
        server = h.thread.server
        assert server is not None
        (conn,) = server.connections
        assert conn.peak_in_flight == 3
        c.close()
    finally:
        h.close()


def test_server_thread_start_fails_cleanly_on_a_busy_port(tmp_path) -> None:
    from data_plane.broker.apis import KafkaApis
    from data_plane.broker.replica_manager import ReplicaManager
    from data_plane.broker.server import KafkaServer, ListenerSpec, ServerThread
    from data_plane.storage import LogConfig, LogManager

    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    log_manager = LogManager(LogConfig(log_dirs=(str(tmp_path / "logs"),)))
    config = BrokerConfig()

    def make() -> KafkaServer:
        apis = KafkaApis(1, "c", config, ReplicaManager(1, log_manager), None, lambda: 0)
        return KafkaServer(config, apis, [ListenerSpec("PLAINTEXT", "127.0.0.1", port)])

    thread = ServerThread(make, "asyncio", "busy-port")
    try:
        with pytest.raises(OSError):
            thread.start()
        thread.stop()  # safe after a failed start
    finally:
        busy.close()
        log_manager.close()


def test_fetch_sizes_first_batch_whole_then_limits(client: WireClient) -> None:
    big = build_batch([Record(None, os.urandom(5000), 1)])
    for p in (0, 1):
        client.call(ApiKey.PRODUCE, 7, produce_body("t", p, big))
        client.call(ApiKey.PRODUCE, 7, produce_body("t", p, big))
    body = fetch_body([("t", 0, 0), ("t", 1, 0)])
    for t in body["topics"]:
        for p in t["partitions"]:
            p["partition_max_bytes"] = 100
    body["max_bytes"] = 100
    parts = client.call(ApiKey.FETCH, 11, body)["responses"][0]["partitions"]
    # KIP-74: the first batch is whole although it exceeds both limits; then nothing fits.
    assert len(parts[0]["records"]) == len(big)
    assert len(parts[1]["records"] or b"") == 0 and parts[1]["high_watermark"] == 2
    body["max_bytes"] = 1 << 20
    for t in body["topics"]:
        for p in t["partitions"]:
            p["partition_max_bytes"] = len(big) + 10
    parts = client.call(ApiKey.FETCH, 11, body)["responses"][0]["partitions"]
    # Per-partition limit: the first batch and 10 bytes of the next (a partial batch is legal).
    assert [len(p["records"]) for p in parts] == [len(big) + 10, len(big) + 10]


@pytest.mark.parametrize("interval_ms", [100, 600_000])
def test_high_watermarks_are_checkpointed_periodically_and_at_stop(tmp_path, interval_ms) -> None:
    from common.topic_partition import TopicPartition

    config = BrokerConfig(replica_high_watermark_checkpoint_interval_ms=interval_ms)
    h = BrokerHarness(tmp_path, config)
    closed = False
    try:
        h.set_topics({"t": 1})
        c = WireClient(h.port)
        c.call(ApiKey.PRODUCE, 7, produce_body("t", 0, batch(4)))
        c.close()
        tp = TopicPartition("t", 0)
        if interval_ms == 100:
            wait_for(lambda: h.log_manager.read_high_watermarks().get(tp) == 4, "a checkpoint")
        else:
            assert h.log_manager.read_high_watermarks().get(tp) is None  # none written yet
            h.thread.stop()  # the stop writes one before the logs close
            assert h.log_manager.read_high_watermarks().get(tp) == 4
            h.log_manager.close()
            closed = True
    finally:
        if not closed:
            h.close()


def test_out_of_file_descriptors_pauses_accepts_then_recovers(
    broker: BrokerHarness, caplog
) -> None:
    import resource
    import subprocess
    import sys

    server = broker.thread.server
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    script = (
        "import socket, sys\n"
        "sys.stdin.readline()\n"
        f"s = [socket.create_connection(('127.0.0.1', {broker.port})) for _ in range(5)]\n"
        "print('connected', flush=True)\n"
        "sys.stdin.read()\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert child.stdin is not None and child.stdout is not None
        # Use up every descriptor number below a lowered limit, so the broker's accept fails.
        highest = max(int(fd) for fd in os.listdir("/proc/self/fd"))
        resource.setrlimit(resource.RLIMIT_NOFILE, (highest + 1, hard))
        fillers: list[int] = []
        try:
            for _ in range(highest + 1):
                try:
                    fillers.append(os.dup(0))
                except OSError:
                    break
            child.stdin.write(b"go\n")
            child.stdin.flush()
            assert child.stdout.readline() == b"connected\n"
            wait_for(lambda: "pausing accepts" in caplog.text, "an accept to fail")
        finally:
            for fd in fillers:
                os.close(fd)
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        wait_for(lambda: len(server.connections) == 5, "the queued connections to be accepted")
    finally:
        child.stdin.close()
        child.stdout.close()
        child.wait(10)


def test_flexible_produce_and_fetch_and_the_last_fetched_epoch_check(client: WireClient) -> None:
    sent = batch(4)
    r = client.call(ApiKey.PRODUCE, 9, produce_body("t", 0, sent))
    part = presult(r)
    assert (part["error_code"], part["base_offset"], part["record_errors"]) == (0, 0, [])
    body = fetch_body([("t", 0, 0)])
    f = client.call(ApiKey.FETCH, 12, body)
    p0 = f["responses"][0]["partitions"][0]
    assert p0["error_code"] == 0 and p0["high_watermark"] == 4
    assert bytes(p0["records"])[16:] == sent[16:]
    assert p0["diverging_epoch"] is None  # the tagged field is not sent
    # A fetcher whose last batch has epoch 0 and whose log ends at 4 agrees with ours.
    body["topics"][0]["partitions"][0].update({"fetch_offset": 4, "last_fetched_epoch": 0})
    agreed = client.call(ApiKey.FETCH, 12, body)["responses"][0]["partitions"][0]
    assert agreed["error_code"] == 0 and agreed["diverging_epoch"] is None
    # One that claims an epoch this log never had diverged: no records, where to truncate.
    body["topics"][0]["partitions"][0].update({"fetch_offset": 9, "last_fetched_epoch": 7})
    diverged = client.call(ApiKey.FETCH, 12, body)["responses"][0]["partitions"][0]
    assert diverged["error_code"] == 0
    assert diverged["diverging_epoch"] == {"epoch": -1, "end_offset": -1}
    assert len(diverged["records"] or b"") == 0
    # Epoch 0 ends at 4 here: a fetcher at offset 9 of epoch 0 truncates to 4.
    body["topics"][0]["partitions"][0].update({"fetch_offset": 9, "last_fetched_epoch": 0})
    longer = client.call(ApiKey.FETCH, 12, body)["responses"][0]["partitions"][0]
    assert longer["diverging_epoch"] == {"epoch": 0, "end_offset": 4}


def test_each_negotiated_version_is_logged_once_at_debug(
    client: WireClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="data_plane.broker.client_connection"):
        client.call(
            ApiKey.API_VERSIONS,
            3,
            ApiVersionsRequest(client_software_name="probe-client", client_software_version="2.0"),
        )
        for _ in range(3):
            client.call(ApiKey.METADATA, 9, {"topics": None})
        wait_for(lambda: "METADATA v9" in caplog.text, "the negotiated version logged")
    lines = [r.getMessage() for r in caplog.records if "METADATA v9" in r.getMessage()]
    assert len(lines) == 1 and "probe-client 2.0" in lines[0]
    assert all(r.levelno == logging.DEBUG for r in caplog.records if "v9" in r.getMessage())
