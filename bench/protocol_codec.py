"""Protocol codec benchmark: the hot paths, in microseconds per message (prints, never asserts).

    .venv/bin/python bench/protocol_codec.py            # about 5 s
    .venv/bin/python bench/protocol_codec.py --quick

Figures: the best of 40 rounds of N messages each (time.perf_counter); the minimum filters out
the noise of a shared machine.
1. decode_request of a Produce v7 request, 1 topic x 6 partitions, 1 KiB record batch each
   (the broker's produce path).
2. encode_response of a Fetch v11 response, 1 topic x 6 partitions: records as 1 KiB bytes
   (copied into the frame) and as file slices (emitted as sendfile parts, never read).
3. decode_response of that Fetch v11 response (the client's consume path).
4. For scale, kafka-python 3.x decoding the same Produce request (if installed).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from data_plane.protocol import codec

PARTITIONS = 6
BATCH = bytes(range(256)) * 4  # 1 KiB stand-in for a record batch (the codec never parses it)


@dataclass
class FileSlice:
    fileno: int
    position: int
    length: int


def produce_frame() -> bytes:
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 30000,
        "topic_data": [
            {
                "name": "bench-topic",
                "partition_data": [{"index": i, "records": BATCH} for i in range(PARTITIONS)],
            }
        ],
    }
    return codec.encode_request(0, 7, 1, "bench-client", body)


def fetch_body(records_for: Callable[[int], object]) -> dict:
    partitions = [
        {
            "partition_index": i,
            "error_code": 0,
            "high_watermark": 1_000_000 + i,
            "last_stable_offset": 1_000_000 + i,
            "log_start_offset": 0,
            "aborted_transactions": None,
            "preferred_read_replica": -1,
            "records": records_for(i),
        }
        for i in range(PARTITIONS)
    ]
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "session_id": 0,
        "responses": [{"topic": "bench-topic", "partitions": partitions}],
    }


def per_message_us(fn: Callable[[], object], n: int) -> float:
    best = float("inf")
    for _ in range(40):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, time.perf_counter() - start)
    return best / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    args = parser.parse_args()
    n = 100 if args.quick else 1_000

    codec.precompile()  # time the codecs, not their one-off generation
    produce = produce_frame()[4:]
    print(f"Produce v7 request, {PARTITIONS} partitions x 1 KiB: {len(produce)} bytes")
    us = per_message_us(lambda: codec.decode_request(produce), n)
    print(f"  decode_request                       {us:8.2f} us/message")

    header = codec.RequestHeader(1, 11, 7, None)
    with tempfile.TemporaryFile() as segment:
        segment.write(BATCH * PARTITIONS)
        segment.flush()
        fd = segment.fileno()
        bytes_body = fetch_body(lambda i: BATCH)
        slice_body = fetch_body(lambda i: FileSlice(fd, i * len(BATCH), len(BATCH)))
        print(f"Fetch v11 response, {PARTITIONS} partitions x 1 KiB")
        us = per_message_us(lambda: codec.encode_response(header, bytes_body), n)
        print(f"  encode_response (records as bytes)   {us:8.2f} us/message")
        us = per_message_us(lambda: codec.encode_response(header, slice_body), n)
        print(f"  encode_response (file slices)        {us:8.2f} us/message")
        fetch_frame = codec.encode_response(header, bytes_body).to_bytes()[4:]
        us = per_message_us(lambda: codec.decode_response(1, 11, fetch_frame), n)
        print(f"  decode_response                      {us:8.2f} us/message")

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from kafka.protocol.producer import ProduceRequest
    except ImportError:
        return
    body = produce[10 + len("bench-client") :]  # after the v1 request header
    us = per_message_us(lambda: ProduceRequest.decode(body, version=7), max(1, n // 4))
    print(f"For scale: kafka-python ProduceRequest.decode  {us:8.2f} us/message")


if __name__ == "__main__":
    main()
