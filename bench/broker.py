"""Broker server figures: produce and fetch throughput per event loop, and the broker CPU per
GB fetched with os.sendfile versus read+send (``kraftlog.fetch.zero.copy.enable``).

    .venv/bin/python -m bench.broker                 # all scenarios, prints a table
    .venv/bin/python -m bench.broker --records 300000

The broker runs in a child process (a KafkaServer over a LogManager in a temporary directory,
fed a hand-built metadata image: one topic, this broker leads it); this process is the load
generator: it pipelines pre-encoded Produce v7 requests (acks=1, 100-byte records, 1000 per
uncompressed batch) and then Fetch v11 requests from offset 0 to the end. Broker CPU comes
from the child's /proc/<pid>/stat (user + system). Other load on the machine moves the
figures by tens of percent between runs; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid

from bench.report import cpu_seconds

RECORD_BYTES = 100
RECORDS_PER_BATCH = 1000
PIPELINE_DEPTH = 16
FETCH_MAX_BYTES = 4 * 1024 * 1024
FETCH_PASSES = 10


# --- broker child ---------------------------------------------------------------------------


def serve(loop_choice: str, zero_copy: bool, directory: str, send_buffer_bytes: int) -> None:
    import asyncio  # noqa: F401  (the server thread imports it anyway)

    from data_plane.broker.apis import KafkaApis
    from data_plane.broker.config import BrokerConfig
    from data_plane.broker.metadata_publisher import MetadataPublisher
    from data_plane.broker.replica_manager import ReplicaManager
    from data_plane.broker.server import KafkaServer, ListenerSpec, ServerThread
    from data_plane.storage import LogConfig, LogManager
    from metadata.image import (
        BrokerRegistration,
        MetadataImage,
        PartitionRegistration,
        TopicImage,
    )
    from metadata.records import Listener

    config = BrokerConfig(
        event_loop=loop_choice,
        fetch_zero_copy_enable=zero_copy,
        socket_send_buffer_bytes=send_buffer_bytes,
    )
    log_config = LogConfig(log_dirs=(directory,), segment_bytes=1 << 30)
    log_manager = LogManager(log_config)
    log_manager.get_or_create_log("bench", 0, log_config)
    publisher = MetadataPublisher()

    def make() -> KafkaServer:
        apis = KafkaApis(
            1,
            "bench",
            config,
            ReplicaManager(1, log_manager),
            None,
            lambda: time.monotonic_ns() // 1_000_000,
        )
        return KafkaServer(
            config,
            apis,
            [ListenerSpec("PLAINTEXT", "127.0.0.1", 0)],
            metadata_events=publisher,
            log_manager=log_manager,
        )

    thread = ServerThread(make, loop_choice, "bench-kafka")
    thread.start()
    assert thread.server is not None
    port = thread.server.bound_addresses["PLAINTEXT"][1]
    tid = uuid.uuid4()
    topic = TopicImage("bench", tid, {0: PartitionRegistration((1,), (1,), 1, 0, 0)})
    listener = Listener("PLAINTEXT", "127.0.0.1", port)
    publisher.publish(
        MetadataImage(
            offset=1,
            brokers={1: BrokerRegistration(1, "x", 1, (listener,), None, False, False)},
            topics_by_name={"bench": topic},
            topics_by_id={tid: topic},
        )
    )
    print(port, flush=True)
    sys.stdin.read()  # until the parent closes our stdin
    thread.stop()
    log_manager.close()


# --- load generator -------------------------------------------------------------------------


def _recv_exact(sock: socket.socket, n: int, buf: bytearray) -> None:
    buf.clear()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        buf += chunk


def _pipeline(sock: socket.socket, requests: list[bytes]) -> list[bytes]:
    """Send ``requests`` keeping PIPELINE_DEPTH in flight; return the response frames."""
    out: list[bytes] = []
    sent = 0
    buf = bytearray()
    while len(out) < len(requests):
        while sent < len(requests) and sent - len(out) < PIPELINE_DEPTH:
            sock.sendall(requests[sent])
            sent += 1
        _recv_exact(sock, 4, buf)
        (size,) = struct.unpack(">i", buf)
        _recv_exact(sock, size, buf)
        out.append(bytes(buf) if not out else b"")
    return out


def _fetch_request(cid: int, offset: int) -> bytes:
    from common.protocol.codec import encode_request

    partition = {"partition": 0, "fetch_offset": offset, "partition_max_bytes": FETCH_MAX_BYTES}
    return encode_request(
        1,
        11,
        cid,
        "bench",
        {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 1,
            "max_bytes": FETCH_MAX_BYTES,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "forgotten_topics_data": [],
            "rack_id": "",
            "topics": [{"topic": "bench", "partitions": [partition]}],
        },
    )


def _next_offset(records: memoryview | None, offset: int) -> int:
    """The offset after the last whole batch in ``records`` (a fetch may end mid-batch)."""
    if not records:
        raise RuntimeError(f"fetch at {offset} returned no records")
    pos, end = 0, len(records)
    while pos + 12 <= end:
        base, length = struct.unpack_from(">qi", records, pos)
        if pos + 12 + length > end:
            break
        (last_delta,) = struct.unpack_from(">i", records, pos + 23)
        offset = base + last_delta + 1
        pos += 12 + length
    return offset


def run_scenario(
    loop_choice: str, zero_copy: bool, records: int, send_buffer_bytes: int
) -> dict[str, float]:
    from common.protocol.codec import decode_response, encode_request
    from data_plane.storage import Record, build_batch

    with tempfile.TemporaryDirectory() as d:
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.broker",
                "--serve",
                loop_choice,
                "--zero-copy",
                "1" if zero_copy else "0",
                "--dir",
                d,
                "--send-buffer-bytes",
                str(send_buffer_bytes),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        try:
            assert child.stdout is not None and child.stdin is not None
            port = int(child.stdout.readline())
            time.sleep(0.2)  # the server picks the image up on its next tick
            sock = socket.create_connection(("127.0.0.1", port))
            value = b"x" * RECORD_BYTES
            batch = build_batch([Record(None, value, 1) for _ in range(RECORDS_PER_BATCH)])
            n_batches = max(1, records // RECORDS_PER_BATCH)
            produce = [
                encode_request(
                    0,
                    7,
                    i,
                    "bench",
                    {
                        "transactional_id": None,
                        "acks": 1,
                        "timeout_ms": 30000,
                        "topic_data": [
                            {"name": "bench", "partition_data": [{"index": 0, "records": batch}]}
                        ],
                    },
                )
                for i in range(n_batches)
            ]
            cpu0, t0 = cpu_seconds(child.pid), time.perf_counter()
            answers = _pipeline(sock, produce)
            _, first = decode_response(0, 7, answers[0])
            code = first["responses"][0]["partition_responses"][0]["error_code"]
            if code != 0:
                raise RuntimeError(f"produce error {code}")
            t1, cpu1 = time.perf_counter(), cpu_seconds(child.pid)
            total_bytes = n_batches * len(batch)
            fetched = 0
            offset = 0
            buf = bytearray()
            position = passes = 0
            cpu2, t2 = cpu_seconds(child.pid), time.perf_counter()
            cid = 0
            # Sequential fetches: each response says where the next one starts. The log is
            # read FETCH_PASSES times so the CPU clock (10 ms ticks) sees enough work.
            end_offset = n_batches * RECORDS_PER_BATCH
            while offset < end_offset * FETCH_PASSES:
                cid += 1
                sock.sendall(_fetch_request(cid, position))
                _recv_exact(sock, 4, buf)
                (size,) = struct.unpack(">i", buf)
                _recv_exact(sock, size, buf)
                fetched += size
                _, body = decode_response(1, 11, bytes(buf))
                part = body["responses"][0]["partitions"][0]
                if part["error_code"] != 0:
                    raise RuntimeError(f"fetch error {part['error_code']}")
                position = _next_offset(part["records"], position)
                if position >= end_offset:
                    passes += 1
                    position = 0
                offset = passes * end_offset + position
            t3, cpu3 = time.perf_counter(), cpu_seconds(child.pid)
            sock.close()
        finally:
            if child.stdin is not None:
                child.stdin.close()
            child.wait(30)
    produced = n_batches * RECORDS_PER_BATCH
    return {
        "produce_rps": produced / (t1 - t0),
        "produce_cpu_s": cpu1 - cpu0,
        "fetch_rps": produced * FETCH_PASSES / (t3 - t2),
        "fetch_cpu_s_per_gb": (cpu3 - cpu2) / (fetched / 1e9),
        "fetch_gb": fetched / 1e9,
        "bytes": total_bytes,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--serve")
    ap.add_argument("--zero-copy", default="1")
    ap.add_argument("--dir")
    ap.add_argument("--records", type=int, default=500_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument(
        "--send-buffer-bytes",
        type=int,
        default=102_400,
        help="the broker's socket.send.buffer.bytes (-1: let Linux autotune)",
    )
    args = ap.parse_args()
    if args.serve:
        serve(args.serve, args.zero_copy == "1", args.dir, args.send_buffer_bytes)
        return
    scenarios = [("asyncio", True), ("uvloop", True), ("asyncio", False), ("uvloop", False)]
    print(
        f"socket.send.buffer.bytes={args.send_buffer_bytes}; "
        f"{args.records} records of {RECORD_BYTES} B, batches of {RECORDS_PER_BATCH}, "
        f"pipeline {PIPELINE_DEPTH}, {os.cpu_count()} cores (shared)"
    )
    print(
        f"{'loop':8} {'sendfile':8} {'produce rec/s':>14} {'fetch rec/s':>12} "
        f"{'fetch broker CPU s/GB':>22}"
    )
    for _ in range(args.rounds):
        for loop_choice, zero_copy in scenarios:
            r = run_scenario(loop_choice, zero_copy, args.records, args.send_buffer_bytes)
            print(
                f"{loop_choice:8} {zero_copy!s:8} {r['produce_rps']:14,.0f} "
                f"{r['fetch_rps']:12,.0f} {r['fetch_cpu_s_per_gb']:22.3f}"
            )


if __name__ == "__main__":
    main()
