"""Request cost: the brokers' CPU time per acks=all Produce request of one record (prints;
never asserts; on demand, not in the suite).

    .venv/bin/python -m bench.request_cost [--requests 3000] [--partitions 100]

1 controller + 3 brokers; one topic of ``--partitions`` partitions, RF 3,
``min.insync.replicas`` 2. One client sends Produce v9 requests of one 100 B record each, one
at a time (the next once the previous is acknowledged), round-robin over the partitions,
each straight to its leader. Figure: the CPU time (user + system, from /proc) of the three
broker processes together divided by the requests, and the requests per second.

Why this shape: with one request in flight, every request costs its whole path (decode,
append, the two followers' fetch round trips that carry it, the high watermark, the answer)
and nothing is shared with another request, so the figure is what one more request costs the
cluster. Many partitions give each follower a fetch session of a third of them on each leader,
as in a real cluster, so work proportional to the session shows. The scale section's
latency is bounded by this cost (docs/benchmarks.md, Scale).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import replication
from bench.report import cpu_seconds, recv_frame
from bench.sections import local_cluster
from common.protocol.api_keys import ApiKey
from common.protocol.codec import decode_response, encode_request
from deploy.local_cluster import LocalCluster
from kraftlog_client.record_encoder import RecordBatchBuilder

TOPIC = "request-cost"
PRODUCE_VERSION = 9
VALUE_BYTES = 100
SOCKET_TIMEOUT_S = 30.0
# The brokers learn a new topic from the metadata log a little after the controller
# committed it; a leader probe answered UNKNOWN_TOPIC_OR_PARTITION is retried this long.
LEADER_PROBE_S = 60.0


def produce_request(partition: int, correlation_id: int) -> bytes:
    batch = RecordBatchBuilder()
    batch.append(int(time.time() * 1000), None, b"v" * VALUE_BYTES)
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": int(SOCKET_TIMEOUT_S * 1000),
        "topic_data": [
            {
                "name": TOPIC,
                "partition_data": [{"index": partition, "records": bytes(batch.build())}],
            }
        ],
    }
    return bytes(encode_request(ApiKey.PRODUCE, PRODUCE_VERSION, correlation_id, "cost", body))


def call(sock: socket.socket, request: bytes) -> int:
    """Send one request, wait for its answer; the partition's error code."""
    sock.sendall(request)
    _, body = decode_response(ApiKey.PRODUCE, PRODUCE_VERSION, recv_frame(sock))
    return int(body["responses"][0]["partition_responses"][0]["error_code"])


def leader_sockets(cluster: LocalCluster, partitions: int) -> list[socket.socket]:
    """A connection to each partition's leader (one per broker, shared)."""
    by_address: dict[str, socket.socket] = {}
    for address in cluster.bootstrap_servers():
        host, port = address.rsplit(":", 1)
        sock = socket.create_connection((host, int(port)), timeout=SOCKET_TIMEOUT_S)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        by_address[address] = sock
    leaders: list[socket.socket] = []
    deadline = time.monotonic() + LEADER_PROBE_S
    for p in range(partitions):
        while True:
            found = [s for s in by_address.values() if call(s, produce_request(p, 1)) == 0]
            if found:
                leaders.append(found[0])
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{TOPIC}-{p}: no broker accepted a produce")
            time.sleep(0.2)
    return leaders


def run(cluster: LocalCluster, partitions: int, requests: int) -> dict[str, float]:
    replication.create_topic(cluster, TOPIC, partitions)
    leaders = leader_sockets(cluster, partitions)
    work = [
        (leaders[i % partitions], produce_request(i % partitions, i + 2)) for i in range(requests)
    ]
    pids = [pid for pid in (cluster.pid(b) for b in cluster.broker_ids) if pid is not None]
    cpu_before = sum(cpu_seconds(pid) for pid in pids)
    started = time.perf_counter()
    for sock, request in work:
        code = call(sock, request)
        if code != 0:
            raise RuntimeError(f"produce failed with error {code}")
    elapsed = time.perf_counter() - started
    cpu_s = sum(cpu_seconds(pid) for pid in pids) - cpu_before
    for sock in set(leaders):
        sock.close()
    return {
        "requests_per_s": requests / elapsed,
        "broker_cpu_us_per_request": cpu_s / requests * 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=3_000)
    parser.add_argument("--partitions", type=int, default=100)
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="kraftlog-request-cost-")
    try:
        with local_cluster(workdir, 1, 3) as cluster:
            out = run(cluster, args.partitions, args.requests)
        print(
            f"acks=all Produce of one {VALUE_BYTES} B record, RF 3, {args.partitions} "
            f"partitions, one request in flight: {out['requests_per_s']:,.0f} requests/s, "
            f"{out['broker_cpu_us_per_request']:,.0f} us of broker CPU per request "
            f"(3 brokers together)"
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
