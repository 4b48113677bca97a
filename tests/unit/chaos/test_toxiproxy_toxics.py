"""Every toxic's effect on real connections through chaos.toxiproxy, set up only through
toxiproxy-python. Bounds are generous (a loaded 2-core machine): delays are checked from
below, and from above only far past what the toxic asks for."""

from __future__ import annotations

import socket
import time

from toxiproxy import Toxiproxy

from tests.unit.chaos.toxiproxy_support import (
    EchoServer,
    client_fixture,  # noqa: F401 - fixtures, by name: client, connect, echo, server
    connect_fixture,  # noqa: F401
    echo_fixture,  # noqa: F401
    recv_exactly,
    recv_until_closed,
    round_trip_s,
    server_fixture,  # noqa: F401
)


def make_proxy(client: Toxiproxy, echo: EchoServer, name: str = "echo"):
    return client.create(upstream=echo.address, name=name)


def test_latency_each_way_and_on_open_connections(
    client: Toxiproxy,
    echo: EchoServer,
    connect,
) -> None:
    proxy = make_proxy(client, echo)
    sock = connect(proxy.listen)
    assert round_trip_s(sock, b"warm") < 2.0
    proxy.add_toxic(type="latency", attributes={"latency": 300})  # applies to sock as well
    assert 0.3 <= round_trip_s(sock, b"down") < 5.0
    proxy.add_toxic(type="latency", stream="upstream", attributes={"latency": 200})
    assert 0.5 <= round_trip_s(sock, b"both") < 5.0
    proxy.destroy_toxic("latency_downstream")
    proxy.destroy_toxic("latency_upstream")
    assert round_trip_s(sock, b"gone") < 2.0


def test_jitter_keeps_order(client: Toxiproxy, echo: EchoServer, connect) -> None:
    proxy = make_proxy(client, echo)
    proxy.add_toxic(type="latency", attributes={"latency": 60, "jitter": 50})
    sock = connect(proxy.listen)
    messages = [b"%03d;" % i for i in range(40)]
    start = time.monotonic()
    for m in messages:
        sock.sendall(m)
        time.sleep(0.002)  # separate chunks, each with its own delay
    assert recv_exactly(sock, sum(map(len, messages))) == b"".join(messages)
    assert time.monotonic() - start >= 0.01  # latency - jitter at least, for the last chunk


def test_bandwidth_caps_throughput(client: Toxiproxy, echo: EchoServer, connect) -> None:
    proxy = make_proxy(client, echo)
    proxy.add_toxic(type="bandwidth", attributes={"rate": 100})  # 100 KB/s downstream
    sock = connect(proxy.listen)
    payload = bytes(200_000)
    start = time.monotonic()
    sock.sendall(payload)
    assert recv_exactly(sock, len(payload)) == payload
    elapsed = time.monotonic() - start
    assert 1.6 <= elapsed < 30  # 2.0 s at exactly 100 KB/s


def test_slow_close_delays_the_close(client: Toxiproxy, echo: EchoServer, connect) -> None:
    proxy = make_proxy(client, echo)
    proxy.add_toxic(type="slow_close", attributes={"delay": 400})
    sock = connect(proxy.listen)
    round_trip_s(sock, b"x")
    start = time.monotonic()
    sock.shutdown(socket.SHUT_WR)  # the echo server sees EOF and closes its side
    data, how = recv_until_closed(sock)
    assert (data, how) == (b"", "eof")
    assert time.monotonic() - start >= 0.4


def test_timeout_drops_data_then_closes(client: Toxiproxy, echo: EchoServer, connect) -> None:
    proxy = make_proxy(client, echo)
    proxy.add_toxic(type="timeout", stream="upstream", attributes={"timeout": 300})
    # The proxy's timer starts when it accepts the connection, so the clock starts before
    # the connect: the close can only come later than the timeout after that.
    start = time.monotonic()
    sock = connect(proxy.listen)
    sock.sendall(b"never arrives")
    data, _ = recv_until_closed(sock)
    assert data == b""
    assert time.monotonic() - start >= 0.29
    assert echo.connection_closed.wait(5)
    assert echo.received == [0]  # the upstream never saw a byte


def test_timeout_zero_is_a_black_hole_until_removed(
    client: Toxiproxy,
    echo: EchoServer,
    connect,
) -> None:
    proxy = make_proxy(client, echo)
    sock = connect(proxy.listen)
    round_trip_s(sock, b"up")
    proxy.add_toxic(type="timeout", attributes={"timeout": 0})
    sock.sendall(b"lost")  # echoed by the server, dropped on the way back
    sock.settimeout(1.0)
    try:
        got = sock.recv(10)
    except TimeoutError:
        got = None
    assert got is None  # neither data nor a close
    proxy.destroy_toxic("timeout_downstream")
    sock.settimeout(10)
    assert round_trip_s(sock, b"back") < 5  # the connection survived; new data flows


def test_reset_peer_gives_connection_reset(
    client: Toxiproxy,
    echo: EchoServer,
    connect,
) -> None:
    proxy = make_proxy(client, echo)
    sock = connect(proxy.listen)
    round_trip_s(sock, b"hello")
    start = time.monotonic()
    proxy.add_toxic(type="reset_peer", attributes={"timeout": 200})
    _, how = recv_until_closed(sock)
    assert how == "reset"  # ECONNRESET, not an orderly close
    assert time.monotonic() - start >= 0.19


def test_slicer_cuts_and_spaces_the_data(
    client: Toxiproxy,
    echo: EchoServer,
    connect,
) -> None:
    proxy = make_proxy(client, echo)
    proxy.add_toxic(
        type="slicer", attributes={"average_size": 10, "size_variation": 5, "delay": 20_000}
    )
    sock = connect(proxy.listen)
    payload = bytes(range(256)) * 2
    start = time.monotonic()
    sock.sendall(payload)
    pieces = []
    received = 0
    while received < len(payload):
        chunk = sock.recv(4096)
        assert chunk
        pieces.append(chunk)
        received += len(chunk)
    assert b"".join(pieces) == payload
    assert len(pieces) > 10  # 20 ms between slices of 5-15 bytes: many separate reads
    assert time.monotonic() - start >= 0.5  # about 50 slices x 20 ms


def test_limit_data_closes_after_the_limit(
    client: Toxiproxy,
    echo: EchoServer,
    connect,
) -> None:
    proxy = make_proxy(client, echo)
    proxy.add_toxic(type="limit_data", attributes={"bytes": 100})
    sock = connect(proxy.listen)
    sock.sendall(bytes(60))
    assert recv_exactly(sock, 60) == bytes(60)
    sock.sendall(bytes(80))
    data, _ = recv_until_closed(sock)
    assert len(data) == 40  # 100 bytes in all, then closed


def test_limit_data_upstream(client: Toxiproxy, echo: EchoServer, connect) -> None:
    proxy = make_proxy(client, echo)
    proxy.add_toxic(type="limit_data", stream="upstream", attributes={"bytes": 30})
    sock = connect(proxy.listen)
    sock.sendall(bytes(100))
    recv_until_closed(sock)
    assert echo.connection_closed.wait(5)
    assert echo.received == [30]


def test_toxicity_is_drawn_per_connection(
    client: Toxiproxy,
    echo: EchoServer,
    connect,
) -> None:
    proxy = make_proxy(client, echo)
    proxy.add_toxic(type="latency", toxicity=0.5, attributes={"latency": 1000})
    slow = 0
    for _ in range(6):
        sock = connect(proxy.listen)
        first = round_trip_s(sock, b"a")
        second = round_trip_s(sock, b"b")
        # One draw per connection: both round trips of a connection agree. (1 s: far above
        # any scheduling stall of an undelayed loopback round trip.)
        assert (first >= 1.0) == (second >= 1.0)
        slow += first >= 1.0
        sock.close()
    assert 0 < slow < 6  # seeded server: both outcomes occur

    proxy.destroy_toxic("latency_downstream")
    proxy.add_toxic(type="latency", toxicity=0.0, attributes={"latency": 3000})
    assert round_trip_s(connect(proxy.listen), b"never slowed") < 2.5
