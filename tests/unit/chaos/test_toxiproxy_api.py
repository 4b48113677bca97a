"""The Toxiproxy HTTP API of chaos.toxiproxy, driven only through toxiproxy-python."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest
from toxiproxy import Toxiproxy
from toxiproxy.api import APIConsumer
from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists

from chaos.toxiproxy import serve
from deploy.ports import free_ports
from tests.unit.chaos.toxiproxy_support import (
    EchoServer,
    client_fixture,  # noqa: F401 - fixtures, by name: client, connect, echo, server
    connect_fixture,  # noqa: F401
    echo_fixture,  # noqa: F401
    recv_until_closed,
    refused,
    round_trip_s,
    server_fixture,  # noqa: F401
)


def test_version_and_running(client: Toxiproxy) -> None:
    assert client.running()
    assert b'"version": "2.' in client.version()


def test_create_list_show_destroy(client: Toxiproxy, echo: EchoServer, connect) -> None:
    proxy = client.create(upstream=echo.address, name="echo")
    host, port = proxy.listen.rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0  # listen port 0 = ephemeral, real one reported
    assert proxy.enabled is True and proxy.upstream == echo.address
    assert set(client.proxies()) == {"echo"}
    shown = APIConsumer.get("/proxies/echo")
    assert shown.status_code == 200
    assert shown.json() == {
        "name": "echo",
        "listen": proxy.listen,
        "upstream": echo.address,
        "enabled": True,
        "toxics": [],
    }
    assert round_trip_s(connect(proxy.listen), b"ping") < 5
    # The server itself answers 409 for a name in use (the client also checks first).
    with pytest.raises(ProxyExists):
        APIConsumer.post("/proxies", json={"name": "echo", "upstream": echo.address})
    created = APIConsumer.post("/proxies", json={"name": "two", "upstream": echo.address})
    assert created.status_code == 201
    assert client.destroy(proxy) is True
    assert refused(proxy.listen)
    assert set(client.proxies()) == {"two"}
    with pytest.raises(NotFound):
        proxy.destroy()
    with pytest.raises(NotFound):
        APIConsumer.get("/proxies/echo")


def test_bad_requests(client: Toxiproxy) -> None:
    with pytest.raises(InvalidToxic, match="missing required field: upstream"):
        APIConsumer.post("/proxies", json={"name": "x"})
    with pytest.raises(InvalidToxic, match="no port"):
        APIConsumer.post("/proxies", json={"name": "x", "upstream": "nowhere"})
    with pytest.raises(InvalidToxic, match="bad request body"):
        APIConsumer.post("/proxies", data=b"{not json")
    assert APIConsumer.delete("/proxies").status_code == 405
    with pytest.raises(NotFound, match="no route"):
        APIConsumer.get("/nothing")
    browser = APIConsumer.get("/proxies", headers={"User-Agent": "Mozilla/5.0"})
    assert browser.status_code == 403
    assert client.proxies() == {}


def test_disable_refuses_and_drops_connections(
    client: Toxiproxy,
    echo: EchoServer,
    connect,
) -> None:
    proxy = client.create(upstream=echo.address, name="echo")
    open_conn = connect(proxy.listen)
    round_trip_s(open_conn, b"before")
    proxy.disable()
    assert client.proxies()["echo"].enabled is False
    assert open_conn.recv(10) == b""  # the existing connection was closed
    assert refused(proxy.listen)
    proxy.enable()
    assert round_trip_s(connect(proxy.listen), b"after") < 5  # same address again
    with proxy.down():
        assert refused(proxy.listen)
    assert round_trip_s(connect(proxy.listen), b"again") < 5


def test_update_upstream(client: Toxiproxy, echo: EchoServer, connect) -> None:
    proxy = client.create(upstream="127.0.0.1:1", name="moving")
    assert refused(proxy.listen)  # the upstream refuses, so the proxy closes the client
    reply = APIConsumer.post("/proxies/moving", json={"upstream": echo.address})
    assert reply.json()["upstream"] == echo.address
    assert reply.json()["listen"] == proxy.listen
    assert round_trip_s(connect(proxy.listen), b"moved") < 5


def test_toxic_endpoints(client: Toxiproxy, echo: EchoServer) -> None:
    proxy = client.create(upstream=echo.address, name="echo")
    proxy.add_toxic(type="latency", attributes={"latency": 100})
    proxy.add_toxic(
        type="bandwidth", stream="upstream", name="slow", toxicity=0.5, attributes={"rate": 10}
    )
    toxics = proxy.toxics()
    assert set(toxics) == {"latency_downstream", "slow"}
    latency = proxy.get_toxic("latency_downstream")
    assert (latency.type, latency.stream, latency.toxicity) == ("latency", "downstream", 1.0)
    assert latency.attributes == {"latency": 100, "jitter": 0}
    assert toxics["slow"].attributes == {"rate": 10} and toxics["slow"].toxicity == 0.5
    shown = APIConsumer.get("/proxies/echo/toxics/slow").json()
    assert shown["stream"] == "upstream"
    # Update: attributes merged, toxicity replaced, name/type/stream kept.
    updated = APIConsumer.post(
        "/proxies/echo/toxics/latency_downstream",
        json={"attributes": {"jitter": 20}, "toxicity": 0.25},
    ).json()
    assert updated["attributes"] == {"latency": 100, "jitter": 20}
    assert updated["toxicity"] == 0.25
    assert [t["name"] for t in APIConsumer.get("/proxies/echo").json()["toxics"]] == [
        "latency_downstream",
        "slow",
    ]
    with pytest.raises(ProxyExists):  # 409: the toxic exists
        proxy.add_toxic(type="latency")
    with pytest.raises(InvalidToxic, match="invalid toxic type"):
        proxy.add_toxic(type="earthquake")
    with pytest.raises(InvalidToxic, match="stream was invalid"):
        proxy.add_toxic(type="latency", stream="sideways")
    with pytest.raises(InvalidToxic, match="toxicity"):
        proxy.add_toxic(type="latency", name="l2", toxicity=1.5)
    with pytest.raises(InvalidToxic, match="must be >= 0"):
        proxy.add_toxic(type="latency", name="l3", attributes={"latency": -1})
    with pytest.raises(InvalidToxic, match="size_variation"):
        proxy.add_toxic(type="slicer", attributes={"average_size": 4, "size_variation": 4})
    with pytest.raises(NotFound):
        APIConsumer.get("/proxies/echo/toxics/nothing")
    with pytest.raises(NotFound):
        APIConsumer.post("/proxies/none/toxics", json={"type": "latency"})
    assert proxy.destroy_toxic("slow") is True
    assert set(proxy.toxics()) == {"latency_downstream"}
    with pytest.raises(NotFound):
        proxy.destroy_toxic("slow")


def test_reset_enables_everything_and_removes_toxics(
    client: Toxiproxy,
    echo: EchoServer,
    connect,
) -> None:
    one = client.create(upstream=echo.address, name="one")
    two = client.create(upstream=echo.address, name="two")
    one.add_toxic(type="timeout", attributes={"timeout": 0})
    two.add_toxic(type="latency", stream="upstream", attributes={"latency": 5000})
    two.disable()
    assert client.reset() is True
    proxies = client.proxies()
    assert all(p.enabled for p in proxies.values())
    assert one.toxics() == {} and two.toxics() == {}
    assert round_trip_s(connect(one.listen), b"one") < 4
    assert round_trip_s(connect(two.listen), b"two") < 4


def test_populate(client: Toxiproxy, echo: EchoServer, connect) -> None:
    body = [
        {"name": "a", "upstream": echo.address, "listen": "127.0.0.1:0"},
        {"name": "b", "upstream": echo.address, "listen": "127.0.0.1:0", "enabled": False},
    ]
    reply = APIConsumer.post("/populate", json=body)
    assert reply.status_code == 201
    first = {p["name"]: p for p in reply.json()["proxies"]}
    assert set(first) == {"a", "b"} and first["b"]["enabled"] is False
    # Again: unchanged proxies stay as they are (same port), a changed one is replaced.
    body[1]["upstream"] = "127.0.0.1:1"
    again = {p["name"]: p for p in APIConsumer.post("/populate", json=body).json()["proxies"]}
    assert again["a"]["listen"] == first["a"]["listen"]
    assert again["b"]["upstream"] == "127.0.0.1:1"
    with pytest.raises(InvalidToxic):  # one bad entry: nothing changes
        APIConsumer.post("/populate", json=[{"name": "c", "upstream": echo.address}, {"name": "d"}])
    assert set(client.proxies()) == {"a", "b"}
    # The client library's populate (get + create) works against the server too.
    created = client.populate([{"name": "e", "upstream": echo.address, "listen": "127.0.0.1:0"}])
    assert [p.name for p in created] == ["e"]
    assert round_trip_s(connect(client.get_proxy("e").listen), b"e") < 5


def test_command_line(tmp_path, echo: EchoServer, connect) -> None:
    """``python -m chaos.toxiproxy`` as a process: --config populates, SIGTERM stops it."""
    port, proxy_port = free_ports(2)
    config = tmp_path / "proxies.json"
    config.write_text(
        json.dumps([{"name": "cfg", "upstream": echo.address, "listen": f"127.0.0.1:{proxy_port}"}])
    )
    log = open(tmp_path / "toxiproxy.log", "wb")  # noqa: SIM115 - closed in the finally
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "chaos.toxiproxy",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--config",
            str(config),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    saved = (APIConsumer.host, APIConsumer.port)
    APIConsumer.host, APIConsumer.port = "127.0.0.1", port
    try:
        client = Toxiproxy()
        deadline = time.monotonic() + 30
        while not client.running():
            assert proc.poll() is None, (tmp_path / "toxiproxy.log").read_text()
            assert time.monotonic() < deadline, "the server did not start in 30 s"
            time.sleep(0.1)
        assert client.get_proxy("cfg").listen == f"127.0.0.1:{proxy_port}"
        assert round_trip_s(connect(f"127.0.0.1:{proxy_port}"), b"via cli") < 5
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
        assert refused(f"127.0.0.1:{proxy_port}")
    finally:
        APIConsumer.host, APIConsumer.port = saved
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        log.close()


def test_garbage_on_the_api_port_gets_400_and_the_server_lives_on(
    client: Toxiproxy, server, connect
) -> None:
    """Not a client call: raw bytes, to show bad input never takes the server down."""
    for garbage in (
        b"HELLO\r\n\r\n",
        b"GET / SPDY/9\r\n\r\n",
        b"POST /proxies HTTP/1.1\r\nContent-Length: nine\r\n\r\n",
        b"POST /proxies HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
    ):
        sock = connect(f"{server.host}:{server.port}")
        sock.sendall(garbage)
        data, _ = recv_until_closed(sock)
        assert data.split(b" ")[1] in (b"400", b"411"), data
    huge = connect(f"{server.host}:{server.port}")
    huge.sendall(b"POST /proxies HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n")
    assert recv_until_closed(huge)[0].split(b" ")[1] == b"413"
    assert client.running() and client.proxies() == {}


def test_serve_on_a_busy_port_raises(server) -> None:
    with pytest.raises(OSError):
        serve(server.host, server.port)
    assert server.url == f"http://127.0.0.1:{server.port}"
