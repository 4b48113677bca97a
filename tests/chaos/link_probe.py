"""Measures the link faults of a ChaosCluster from inside its client namespace; run as its
own process (it enters a network namespace) by tests/chaos/test_links.py:

    python -m tests.chaos.link_probe <directory> <namespace name>

No kraftlog node is started: a small TCP echo server listens on each broker's port inside the
broker's namespace, so the probe measures the network path alone. Prints one JSON object of
measurements on stdout; every process and namespace is removed before it exits.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from chaos.cluster import CLIENT, ChaosCluster

ECHO_SERVER = """
import socket, sys, threading
srv = socket.create_server(("0.0.0.0", int(sys.argv[1])))
def serve(conn):
    with conn:
        while data := conn.recv(65536):
            conn.sendall(data)
while True:
    conn, _ = srv.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
"""
CONNECT_TIMEOUT_S = 1.5
ROUND_TRIPS = 3


def round_trip_s(address: tuple[str, int], sock: socket.socket | None = None) -> float | str:
    """Seconds for ROUND_TRIPS echoes of 100 bytes (on ``sock``, else a new connection), or
    the error's name."""
    own = sock is None
    try:
        if sock is None:
            sock = socket.create_connection(address, timeout=CONNECT_TIMEOUT_S)
        sock.settimeout(5.0)
        t0 = time.monotonic()
        for _ in range(ROUND_TRIPS):
            sock.sendall(b"x" * 100)
            got = 0
            while got < 100:
                chunk = sock.recv(100 - got)
                if not chunk:
                    return "closed"
                got += len(chunk)
        return time.monotonic() - t0
    except OSError as e:
        return type(e).__name__
    finally:
        if own and sock is not None:
            sock.close()


def wait_listening(address: tuple[str, int], timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(address, timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"echo server at {address} did not start")


def hub_rules(cluster: ChaosCluster) -> str:
    name = cluster.topology.name
    out = []
    for table in ("filter", "nat"):
        done = subprocess.run(
            ["ip", "netns", "exec", name, "iptables", "-t", table, "-S"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        out.append(done.stdout)
    return "".join(out)


def probe(directory: Path, name: str) -> dict[str, Any]:
    cluster = ChaosCluster.create(directory, name=name, controllers=1, brokers=2)
    echoes: list[subprocess.Popen[bytes]] = []
    try:
        cluster.enter_client_namespace()
        cluster.start_proxy_server(seed=1)
        b1, b2 = cluster.local.broker_ids
        addr = {}
        for b in (b1, b2):
            port = cluster.local.node(b).broker_port
            assert port is not None
            ns = cluster.topology.node_namespace(b)
            echoes.append(
                subprocess.Popen(
                    ["ip", "netns", "exec", ns, sys.executable, "-c", ECHO_SERVER, str(port)]
                )
            )
            addr[b] = (cluster.topology.address(b), port)
            wait_listening(addr[b])
        out: dict[str, Any] = {"baseline": round_trip_s(addr[b1])}
        held = socket.create_connection(addr[b1], timeout=CONNECT_TIMEOUT_S)
        out["held_before"] = round_trip_s(addr[b1], held)
        latency = {"latency": 200, "jitter": 0}
        cluster.slow(
            CLIENT,
            b1,
            [
                {"type": "latency", "name": f"latency_{s}", "stream": s, "attributes": latency}
                for s in ("upstream", "downstream")
            ],
        )
        out["held_after_slow"] = round_trip_s(addr[b1], held)  # reset: must reconnect
        held.close()
        out["slow"] = round_trip_s(addr[b1])
        out["other_broker_while_slow"] = round_trip_s(addr[b2])
        cluster.unslow(CLIENT, b1)
        out["after_unslow"] = round_trip_s(addr[b1])
        cluster.cut(CLIENT, b1)
        out["cut"] = round_trip_s(addr[b1])
        out["other_broker_while_cut"] = round_trip_s(addr[b2])
        cluster.uncut(CLIENT, b1)
        out["after_uncut"] = round_trip_s(addr[b1])
        cluster.cut(b1, CLIENT)  # the reverse direction alone also breaks TCP
        out["reverse_cut"] = round_trip_s(addr[b1])
        cluster.lossy(CLIENT, b2, 0.5)
        cluster.slow(CLIENT, b2, [{"type": "bandwidth", "attributes": {"rate": 16}}])
        out["rules_while_faulty"] = hub_rules(cluster)
        cluster.heal_network()
        out["rules_after_heal"] = hub_rules(cluster)
        out["after_heal"] = round_trip_s(addr[b1])
        return out
    finally:
        for echo in echoes:
            echo.kill()
            echo.wait(10)
        cluster.close()


def main(argv: list[str]) -> int:
    print(json.dumps(probe(Path(argv[0]), argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
