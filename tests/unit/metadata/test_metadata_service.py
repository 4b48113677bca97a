"""The gRPC service and client wired to an in-memory stand-in of the metadata log."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import grpc
import msgpack
import pytest
from memlog import InMemoryQuorum

from common.error_codes import ErrorCode
from metadata.client import ControllerClient, ControllerError
from metadata.controller_config import ControllerConfig
from metadata.messages import NewTopic
from metadata.records import NoOpRecord, TopicRecord, decode_record
from metadata.rpc import decode_envelope, method_path
from metadata.service import ControllerServer
from metadata.snapshot import build_snapshot
from raft.api import AppendTimeoutError

CONFIG = ControllerConfig(broker_session_timeout_ms=60_000)


class Cluster:
    def __init__(self, n: int = 2, max_tail_records: int = 100_000) -> None:
        self.quorum = InMemoryQuorum(build_snapshot, max_tail_records)
        self.servers: dict[int, ControllerServer] = {}
        for node_id in range(1, n + 1):
            server = ControllerServer(
                node_id, self.quorum.voter(node_id), CONFIG, "127.0.0.1", 0, cluster_id="c1"
            )
            server.start()
            self.servers[node_id] = server

    def bootstrap(self, *ids: int) -> str:
        return ",".join(self.servers[i].address for i in (ids or self.servers))

    def wait_active(self, node_id: int, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not self.servers[node_id].is_active:
            assert time.monotonic() < deadline, f"controller {node_id} never became active"
            time.sleep(0.01)

    def stop(self) -> None:
        for s in self.servers.values():
            s.stop()


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture
def client(cluster: Cluster) -> Iterator[ControllerClient]:
    c = ControllerClient(cluster.bootstrap(), timeout_s=10.0)
    try:
        yield c
    finally:
        c.close()


def register_three(client: ControllerClient) -> None:
    for bid in (1, 2, 3):
        reg = client.register_broker(bid, f"i{bid}", {"PLAINTEXT": ("127.0.0.1", 9000 + bid)})
        assert reg.error_code == 0
        hb = client.broker_heartbeat(bid, reg.broker_epoch, 10**9)
        assert hb.error_code == 0 and not hb.is_fenced


def test_admin_roundtrip_through_the_active_controller(
    cluster: Cluster, client: ControllerClient
) -> None:
    cluster.quorum.elect(2)
    cluster.wait_active(2)
    register_three(client)
    res = client.create_topics([NewTopic("t", 3, 3), NewTopic("bad name", 1, 1)])
    assert [r.error_code for r in res] == [0, ErrorCode.INVALID_TOPIC_EXCEPTION]
    desc = client.describe_cluster()
    assert desc.controller_id == 2 and desc.cluster_id == "c1"
    assert [b.broker_id for b in desc.brokers] == [1, 2, 3]
    assert not any(b.fenced for b in desc.brokers)
    assert cluster.servers[2].controller.image.topic("t") is not None
    # Every voter's image follows the committed log.
    deadline = time.monotonic() + 10
    while cluster.servers[1].controller.image.topic("t") is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert cluster.servers[1].controller.image == cluster.servers[2].controller.image
    configs = client.describe_configs(["t"])
    assert configs["t"].error_code == 0
    res = client.create_partitions({"t": 2})
    assert res[0].error_code == ErrorCode.INVALID_PARTITIONS
    assert client.delete_topics(["t"])[0].error_code == 0
    status = client.quorum_status()
    assert status["leader_id"] == 2


def test_not_controller_is_followed(cluster: Cluster) -> None:
    cluster.quorum.elect(1)
    cluster.wait_active(1)
    with ControllerClient(cluster.bootstrap(2), timeout_s=10.0) as c:  # only the follower
        register_three(c)
        assert c.create_topics([NewTopic("x", 1, 1)])[0].error_code == 0
    raw = grpc.insecure_channel(cluster.servers[2].address)
    try:
        data = raw.unary_unary(method_path("DeleteTopics"))(msgpack.packb({"names": []}), timeout=5)
    finally:
        raw.close()
    env = decode_envelope(data)
    assert env.error_code == ErrorCode.NOT_CONTROLLER
    assert env.controller_id == 1 and env.controller_address == cluster.servers[1].address


def test_failover_new_controller_replays_log_first(
    cluster: Cluster, client: ControllerClient
) -> None:
    cluster.quorum.elect(1)
    cluster.wait_active(1)
    register_three(client)
    assert client.create_topics([NewTopic("before", 2, 2)])[0].error_code == 0
    cluster.quorum.elect(2)
    cluster.wait_active(2)
    assert not cluster.servers[1].is_active
    res = client.create_topics([NewTopic("before", 1, 1), NewTopic("after", 1, 1)])
    assert [r.error_code for r in res] == [ErrorCode.TOPIC_ALREADY_EXISTS, 0]


def test_deposed_controller_cannot_commit(cluster: Cluster) -> None:
    cluster.quorum.elect(1)
    cluster.wait_active(1)
    server = cluster.servers[1]
    with ControllerClient(cluster.bootstrap(1), timeout_s=10.0) as c:
        register_three(c)
    # Leadership moves on, but server 1 has not heard yet: its append carries the old epoch.
    cluster.quorum.leader_id = 1
    cluster.quorum.epoch += 1
    with (
        ControllerClient(cluster.bootstrap(1), timeout_s=1.0) as c,
        pytest.raises(ControllerError) as info,
    ):
        c.create_topics([NewTopic("never", 1, 1)])
    assert info.value.error_code == ErrorCode.REQUEST_TIMED_OUT  # kept hearing NOT_CONTROLLER
    assert not server.is_active
    assert all(
        not isinstance(decode_record(e.record), TopicRecord)
        for e in cluster.quorum.tail
        if not e.is_control
    )


def test_append_timeout_then_barrier(cluster: Cluster, client: ControllerClient) -> None:
    cluster.quorum.elect(1)
    cluster.wait_active(1)
    register_three(client)
    cluster.quorum.fail_next_append = AppendTimeoutError("lost reply")
    # The first attempt commits but its reply is lost (REQUEST_TIMED_OUT, retriable); the
    # client retries, and the controller, having appended a barrier and replayed, knows the
    # topic now exists.
    res = client.create_topics([NewTopic("maybe", 1, 1)])
    assert res[0].error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    # The next write is preceded by the barrier.
    assert client.create_topics([NewTopic("next", 1, 1)])[0].error_code == 0
    records = [decode_record(e.record) for e in cluster.quorum.tail if not e.is_control]
    names = [r.name for r in records if isinstance(r, TopicRecord)]
    assert names == ["maybe", "next"]
    assert isinstance(records[-3], NoOpRecord) and isinstance(records[-2], TopicRecord)


def test_fetch_metadata_with_snapshot_and_long_poll() -> None:
    cluster = Cluster(n=1, max_tail_records=50)
    try:
        cluster.quorum.elect(1)
        cluster.wait_active(1)
        with ControllerClient(cluster.bootstrap(), timeout_s=10.0) as c:
            register_three(c)
            assert c.create_topics([NewTopic("t", 200, 2)])[0].error_code == 0
            result = c.fetch_metadata(0)
            assert result.snapshot is not None
            assert result.records and result.records[0].offset == result.snapshot.last_offset + 1
            assert result.records[-1].offset == result.committed_offset
            start = time.monotonic()
            empty = c.fetch_metadata(result.committed_offset + 1, max_wait_ms=300)
            assert empty.records == [] and time.monotonic() - start >= 0.25
    finally:
        cluster.stop()


def test_garbage_does_not_hurt_the_server(cluster: Cluster, client: ControllerClient) -> None:
    cluster.quorum.elect(1)
    cluster.wait_active(1)
    host, port = cluster.servers[1].address.rsplit(":", 1)
    for junk in (b"\x00" * 64, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", bytes(range(256)) * 40):
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(junk)
            s.settimeout(5)
            try:
                s.recv(4096)
            except (TimeoutError, ConnectionResetError):
                pass
    raw = grpc.insecure_channel(cluster.servers[1].address)
    try:
        for payload in (b"\xc1", msgpack.packb([1, 2]), msgpack.packb({"names": "notalist"})):
            env = decode_envelope(raw.unary_unary(method_path("DeleteTopics"))(payload, timeout=5))
            assert env.error_code == ErrorCode.INVALID_REQUEST and env.error_message
        with pytest.raises(grpc.RpcError) as info:
            raw.unary_unary("/kraftlog.controller.v1.Controller/Nope")(b"", timeout=5)
        assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED
    finally:
        raw.close()
    register_three(client)
    assert client.create_topics([NewTopic("still-fine", 1, 1)])[0].error_code == 0


def test_client_gives_up_on_unreachable_voters() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with (
        ControllerClient(f"127.0.0.1:{port}", timeout_s=0.5) as c,
        pytest.raises(ControllerError) as info,
    ):
        c.describe_cluster()
    assert info.value.error_code == ErrorCode.REQUEST_TIMED_OUT


def test_late_voter_catches_up_from_snapshot() -> None:
    cluster = Cluster(n=1, max_tail_records=50)
    late: ControllerServer | None = None
    try:
        cluster.quorum.elect(1)
        cluster.wait_active(1)
        with ControllerClient(cluster.bootstrap(), timeout_s=10.0) as c:
            register_three(c)
            assert c.create_topics([NewTopic("t", 120, 3)])[0].error_code == 0
        assert cluster.quorum.snapshot is not None
        late = ControllerServer(2, cluster.quorum.voter(2), CONFIG, "127.0.0.1", 0)
        late.start()
        leader_image = cluster.servers[1].controller.image
        deadline = time.monotonic() + 10
        while late.controller.image.offset < leader_image.offset:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert late.controller.image == leader_image
        assert late.controller.image.encode() == leader_image.encode()
    finally:
        if late is not None:
            late.stop()
        cluster.stop()


def test_overdue_tick_runs_even_while_requests_keep_coming() -> None:
    quorum = InMemoryQuorum(build_snapshot)
    now = [0]
    server = ControllerServer(
        1, quorum.voter(1), CONFIG, "127.0.0.1", 0, clock_ms=lambda: now[0]
    )  # not started: the test drives the event loop by hand
    quorum.elect(1)
    events = server._events
    events._leadership_change(True, quorum.epoch)
    assert server.is_active
    for _ in range(3):
        events.post(("commit", None))
    start = time.monotonic()
    # Due but not overdue past its bound: queued events go first.
    assert events._run_once(start) == start
    # Overdue past the bound: ticks although events are still queued.
    later = events._run_once(start - 60)
    assert later > start and not events._queue.empty()


def test_client_skips_dead_voters(cluster: Cluster) -> None:
    cluster.quorum.elect(2)
    cluster.wait_active(2)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"
    with ControllerClient(f"{dead},{cluster.servers[1].address}", timeout_s=10.0) as c:
        for _ in range(4):  # whichever bootstrap address it starts with
            assert c.describe_cluster().controller_id == 2


def _register(client: ControllerClient, bid: int) -> int:
    reg = client.register_broker(bid, f"i{bid}", {"PLAINTEXT": ("127.0.0.1", 9000 + bid)})
    assert reg.error_code == 0
    assert not client.broker_heartbeat(bid, reg.broker_epoch, 10**9).is_fenced
    return reg.broker_epoch


def _wait(condition: Callable[[], bool], what: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_a_session_stream_ended_by_the_broker_fences_it_without_the_timeout(
    cluster: Cluster, client: ControllerClient
) -> None:
    cluster.quorum.elect(1)
    cluster.wait_active(1)
    epochs = {bid: _register(client, bid) for bid in (1, 2)}
    stop = threading.Event()
    session = client.open_broker_session(1, epochs[1], 10.0, stop, lambda _call: None)
    image = lambda: cluster.servers[1].controller.image  # noqa: E731
    assert not image().brokers[1].fenced
    session.cancel()  # what the kernel's close of a dead process looks like from here
    # CONFIG's session timeout is 60 s: only the stream's end can fence it within the wait.
    _wait(lambda: image().brokers[1].fenced, "broker 1 was not fenced when its stream ended")
    assert not image().brokers[2].fenced
    # A stale registration cannot open a stream.
    with pytest.raises(ControllerError) as info:
        client.open_broker_session(2, epochs[2] + 1, 10.0, stop, lambda _call: None)
    assert info.value.error_code == ErrorCode.STALE_BROKER_EPOCH


def test_session_streams_end_without_fencing_when_the_controller_is_deposed(
    cluster: Cluster, client: ControllerClient
) -> None:
    cluster.quorum.elect(1)
    cluster.wait_active(1)
    epoch = _register(client, 1)
    stop = threading.Event()
    session = client.open_broker_session(1, epoch, 10.0, stop, lambda _call: None)
    ended: list[str] = []
    waiter = threading.Thread(target=lambda: ended.append(session.wait()))
    waiter.start()
    cluster.quorum.elect(2)
    cluster.wait_active(2)
    waiter.join(20)
    assert ended and "ended by the controller" in ended[0]
    # The broker opens it again, following NOT_CONTROLLER to the new controller; nothing fenced.
    again = client.open_broker_session(1, epoch, 10.0, stop, lambda _call: None)
    assert again.address == cluster.servers[2].address
    assert not cluster.servers[2].controller.image.brokers[1].fenced
    again.cancel()
    _wait(
        lambda: cluster.servers[2].controller.image.brokers[1].fenced,
        "the new controller did not fence broker 1 when its stream ended",
    )
