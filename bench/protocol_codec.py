"""Protocol codec benchmark: the hot paths, in microseconds per message (prints, never asserts).

    .venv/bin/python bench/protocol_codec.py            # about 5 s
    .venv/bin/python bench/protocol_codec.py --quick

Figures: the best of 40 rounds of N messages each (time.perf_counter); the minimum filters out
the noise of other load. Each row sets the last non-flexible version beside the first
flexible one (Produce v8/v9, Fetch v11/v12, Metadata v8/v9) with the difference (target: the
flexible version within 10 %):
1. decode_request of each request (1 topic x 6 partitions, 1 KiB record batch each; Metadata
   for 10 topics): the broker's request path.
2. encode_response of each response: Produce acknowledgements; Fetch with records as 1 KiB
   bytes (copied into the frame) and as file slices (emitted as sendfile parts, never read);
   Metadata of 10 topics x 6 partitions.
3. decode_response of the Fetch response (the client's consume path).
4. Typed against dict bodies: the generated codec of each message above, in its flexible
   version, decoding into and encoding from the generated message classes beside the same
   codec on dicts (the compiled functions alone, without the frame header).
5. For scale, kafka-python 3.x decoding the same Produce v8 request (if installed).
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

from common.protocol import codec
from common.protocol.api_keys import ApiKey
from common.protocol.compiler import CompiledMessage, compile_message
from common.protocol.message_names import struct_classes
from common.protocol.schemas import MESSAGES, is_flexible
from common.protocol.typed_bodies import from_dict, message_class

PARTITIONS = 6
BATCH = bytes(range(256)) * 4  # 1 KiB stand-in for a record batch (the codec never parses it)


@dataclass
class FileSlice:
    fileno: int
    position: int
    length: int


def produce_request() -> dict:
    return {
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


def produce_response() -> dict:
    return {
        "responses": [
            {
                "name": "bench-topic",
                "partition_responses": [
                    {
                        "index": i,
                        "error_code": 0,
                        "base_offset": 1_000_000 + i,
                        "log_append_time_ms": -1,
                        "log_start_offset": 0,
                        "record_errors": [],
                        "error_message": None,
                    }
                    for i in range(PARTITIONS)
                ],
            }
        ],
        "throttle_time_ms": 0,
    }


def fetch_request() -> dict:
    return {
        "replica_id": -1,
        "max_wait_ms": 500,
        "min_bytes": 1,
        "max_bytes": 52_428_800,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": "bench-topic",
                "partitions": [
                    {
                        "partition": i,
                        "current_leader_epoch": 3,
                        "fetch_offset": 1_000_000 + i,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1_048_576,
                    }
                    for i in range(PARTITIONS)
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


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


def metadata_request() -> dict:
    return {
        "topics": [{"name": f"topic-{i}"} for i in range(10)],
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }


def metadata_response() -> dict:
    return {
        "throttle_time_ms": 0,
        "brokers": [
            {"node_id": b, "host": "127.0.0.1", "port": 9092 + b, "rack": None} for b in range(3)
        ],
        "cluster_id": "bench-cluster-id-0000",
        "controller_id": 1,
        "topics": [
            {
                "error_code": 0,
                "name": f"topic-{t}",
                "is_internal": False,
                "partitions": [
                    {
                        "error_code": 0,
                        "partition_index": p,
                        "leader_id": p % 3,
                        "leader_epoch": 5,
                        "replica_nodes": [0, 1, 2],
                        "isr_nodes": [0, 1, 2],
                        "offline_replicas": [],
                    }
                    for p in range(PARTITIONS)
                ],
                "topic_authorized_operations": -(2**31),
            }
            for t in range(10)
        ],
        "cluster_authorized_operations": -(2**31),
    }


def per_message_us(fn: Callable[[], object], n: int) -> float:
    best = float("inf")
    for _ in range(40):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, time.perf_counter() - start)
    return best / n * 1e6


# (message, the last non-flexible version, the first flexible one)
PAIRS = (("Produce", 0, 8, 9), ("Fetch", 1, 11, 12), ("Metadata", 3, 8, 9))
# Target: a flexible version costs at most this much more than the non-flexible one.
FLEXIBLE_OVERHEAD_TARGET = 0.10


def _row(label: str, old_us: float, new_us: float) -> None:
    ratio = new_us / old_us - 1
    verdict = "ok" if ratio <= FLEXIBLE_OVERHEAD_TARGET else "over the 10 % target"
    print(f"  {label:<50} {old_us:8.2f} {new_us:8.2f} us  {ratio:+6.1%}  {verdict}")


def _both(key: ApiKey, version: int, is_request: bool) -> tuple[CompiledMessage, CompiledMessage]:
    """The dict codec and the typed codec of one message."""
    fields = MESSAGES[key][0 if is_request else 1]
    flexible = is_flexible(key, version)
    classes = struct_classes(key, is_request, fields)
    return (
        compile_message(fields, version, "dict", flexible),
        compile_message(fields, version, "typed", flexible, classes),
    )


def per_message_us_pair(
    fn_a: Callable[[], object], fn_b: Callable[[], object], n: int
) -> tuple[float, float]:
    """Best per-message time of each of two functions, timed in alternating rounds so that
    whatever else loads the machine weighs on both alike."""
    best = [float("inf"), float("inf")]
    for _ in range(60):
        for i, fn in enumerate((fn_a, fn_b)):
            start = time.perf_counter()
            for _ in range(n):
                fn()
            best[i] = min(best[i], time.perf_counter() - start)
    return best[0] / n * 1e6, best[1] / n * 1e6


def _typed_row(label: str, dict_us: float, typed_us: float) -> None:
    ratio = typed_us / dict_us - 1
    verdict = "ok" if ratio <= 0 else "slower"
    print(f"  {label:<50} {dict_us:8.2f} {typed_us:8.2f} us  {ratio:+6.1%}  {verdict}")


def typed_against_dict(n: int, requests: dict[str, dict]) -> None:
    print("Typed against dict bodies, flexible versions (compiled functions alone, in rounds")
    print("alternating between the two):")
    print(f"  {'':<50} {'dict':>8} {'typed':>8}")
    cases = [
        ("Produce v9 decode request", ApiKey.PRODUCE, 9, True, requests["Produce"]),
        ("Fetch v12 decode request", ApiKey.FETCH, 12, True, requests["Fetch"]),
        ("Metadata v9 decode request", ApiKey.METADATA, 9, True, requests["Metadata"]),
        ("Fetch v12 decode response", ApiKey.FETCH, 12, False, fetch_body(lambda i: BATCH)),
    ]
    for label, key, version, is_request, body in cases:
        plain, typed = _both(key, version, is_request)
        out = bytearray()
        plain.encode(out, body, [])
        view = memoryview(bytes(out))
        cost = per_message_us_pair(
            lambda p=plain, v=view: p.decode(v, 0, 1_000_000),
            lambda t=typed, v=view: t.decode(v, 0, 1_000_000),
            n,
        )
        _typed_row(label, *cost)
    cases = [
        ("Produce v9 encode response", ApiKey.PRODUCE, 9, False, produce_response()),
        ("Fetch v12 encode response (bytes)", ApiKey.FETCH, 12, False, fetch_body(lambda i: BATCH)),
        ("Metadata v9 encode response", ApiKey.METADATA, 9, False, metadata_response()),
        ("Fetch v12 encode request", ApiKey.FETCH, 12, True, requests["Fetch"]),
    ]
    for label, key, version, is_request, body in cases:
        plain, typed = _both(key, version, is_request)
        instance = from_dict(message_class(key, is_request), body)

        def encode(c: CompiledMessage, b: object) -> None:
            c.encode(bytearray(), b, [])

        cost = per_message_us_pair(
            lambda p=plain, b=body: encode(p, b), lambda t=typed, i=instance: encode(t, i), n
        )
        _typed_row(label, *cost)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    args = parser.parse_args()
    n = 100 if args.quick else 1_000

    codec.precompile()  # time the codecs, not their one-off generation
    requests = {
        "Produce": produce_request(),
        "Fetch": fetch_request(),
        "Metadata": metadata_request(),
    }
    print(f"Per message, non-flexible against flexible ({PARTITIONS} partitions x 1 KiB):")
    print(f"  {'':<50} {'old':>8} {'flex':>8}")
    frames: dict[tuple[str, int], bytes] = {}
    for name, key, old, new in PAIRS:
        cost = {}
        for version in (old, new):
            frame = codec.encode_request(key, version, 1, "bench-client", requests[name])[4:]
            frames[(name, version)] = frame
            cost[version] = per_message_us(lambda f=frame: codec.decode_request(f), n)
        _row(f"{name} v{old}/v{new} decode_request", cost[old], cost[new])

    with tempfile.TemporaryFile() as segment:
        segment.write(BATCH * PARTITIONS)
        segment.flush()
        fd = segment.fileno()
        responses = {
            "Produce (records as bytes)": (0, produce_response()),
            "Fetch (records as bytes)": (1, fetch_body(lambda i: BATCH)),
            "Fetch (file slices)": (
                1,
                fetch_body(lambda i: FileSlice(fd, i * len(BATCH), len(BATCH))),
            ),
            "Metadata": (3, metadata_response()),
        }
        versions = {key: (old, new) for _name, key, old, new in PAIRS}
        for label, (key, body) in responses.items():
            old, new = versions[key]
            cost = {}
            for version in (old, new):
                header = codec.RequestHeader(key, version, 7, None)
                cost[version] = per_message_us(
                    lambda h=header, b=body: codec.encode_response(h, b), n
                )
            _row(f"{label} v{old}/v{new} encode_response", cost[old], cost[new])
        fetch = fetch_body(lambda i: BATCH)
        cost = {}
        for version in versions[1]:
            header = codec.RequestHeader(1, version, 7, None)
            frame = codec.encode_response(header, fetch).to_bytes()[4:]
            cost[version] = per_message_us(
                lambda v=version, f=frame: codec.decode_response(1, v, f), n
            )
        old, new = versions[1]
        _row(f"Fetch v{old}/v{new} decode_response (client)", cost[old], cost[new])

    typed_against_dict(n, requests)

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from kafka.protocol.producer import ProduceRequest
    except ImportError:
        return
    produce = frames[("Produce", 8)]
    body = produce[10 + len("bench-client") :]  # after the v1 request header
    us = per_message_us(lambda: ProduceRequest.decode(body, version=8), max(1, n // 4))
    print(f"For scale: kafka-python ProduceRequest.decode v8  {us:8.2f} us/message")


if __name__ == "__main__":
    main()
