"""Log cleaner benchmark: throughput of one cleaning in MB/s of dirty log (prints, never
asserts).

    .venv/bin/python bench/cleaner.py            # full run (about a minute)
    .venv/bin/python bench/cleaner.py --quick    # a small run
    .venv/bin/python bench/cleaner.py --size-mb 64

For each workload a compacted log of --size-mb MB of keyed records (in 16 KiB batches,
segment.bytes 16 MiB) is written and rolled, then cleaned once by a Cleaner (one thread, no
I/O throttle, 128 MiB offset map). Printed: MB/s and records/s of the dirty bytes cleaned,
the same per CPU second of the cleaning thread (the figure that does not depend on what
else the machine runs), and the share of bytes kept. Workloads: 100-byte values over
10,000 keys and 1 KiB values over 1,000 keys (most records superseded), 1 KiB values over as
many keys as records (nothing superseded: every batch copied unchanged), and zstd-compressed
batches (a quarter of --size-mb). Last, the latency of appends to the log's active segment
while another thread cleans it, and how long each swap holds the log lock. Files live in a
temporary directory under /tmp, removed at the end.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.report import MB, percentile
from common.compression import Compression
from common.log_config import LogConfig
from data_plane.storage.compaction.cleaner import Cleaner
from data_plane.storage.compaction.offset_map import OffsetMap
from data_plane.storage.compaction.throttler import Throttler
from data_plane.storage.log import Log
from data_plane.storage.record_codec import Record, build_batch

MIB = 1024 * 1024
BATCH_BYTES = 16 * 1024
CONFIG = LogConfig(
    cleanup_policy="compact",
    segment_bytes=16 * MIB,
    min_cleanable_dirty_ratio=0.0,
    file_delete_delay_ms=0,
    flush_ms=(1 << 62),
)


def write_log(path: str, size_bytes: int, value_bytes: int, keys: int | None, codec: int) -> Log:
    log = Log(path, CONFIG, topic="bench", partition=0)
    value = os.urandom(value_bytes)
    per_batch = max(1, BATCH_BYTES // (value_bytes + 20))
    i = 0
    written = 0
    while written < size_bytes:
        records = [
            Record(b"key-%09d" % ((i + j) % keys if keys else i + j), value, 1_700_000_000_000)
            for j in range(per_batch)
        ]
        i += per_batch
        info = log.append(build_batch(records, compression=codec), 0)
        written += info.valid_bytes
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    return log


def run(label: str, size_mb: int, value_bytes: int, keys: int | None, codec: int) -> None:
    tmp = tempfile.mkdtemp(prefix="kraftlog-bench-cleaner-", dir="/tmp")
    try:
        log = write_log(os.path.join(tmp, "bench-0"), size_mb * MIB, value_bytes, keys, codec)
        dirty = log.size_in_bytes
        records = log.log_end_offset
        cleaner = Cleaner(OffsetMap(128 * MIB), throttler=Throttler(math.inf), clock_ms=lambda: 0)
        started = time.perf_counter()
        cpu_started = time.process_time()
        result = cleaner.clean(log, None)
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
        s = result.stats
        kept = log.size_in_bytes
        log.close()
        print(
            f"  {label:<34} {dirty / MB:>5.1f} MB {dirty / MB / elapsed:>6.2f} MB/s "
            f"{records / elapsed:>8,.0f} rec/s | per CPU s: {dirty / MB / cpu:>6.2f} MB "
            f"{records / cpu:>8,.0f} rec | kept {kept / dirty:>6.1%} "
            f"({elapsed:.1f} s wall, {cpu:.1f} s CPU; {s.batches_copied} batches copied, "
            f"{s.batches_rebuilt} rebuilt)"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def appends_during_cleaning(size_mb: int) -> None:
    """Latency of 1 KiB appends to a log's active segment on one thread while another
    cleans the same log (the cleaner takes the log lock only to swap; it competes for the
    GIL the rest of the time), beside the same appends with no cleaning."""
    tmp = tempfile.mkdtemp(prefix="kraftlog-bench-cleaner-", dir="/tmp")
    try:
        log = write_log(os.path.join(tmp, "bench-0"), size_mb * MIB, 100, 10_000, 0)
        batch = build_batch([Record(b"live", b"x" * 1024, 1_700_000_000_000)])

        def append_for(seconds: float, stop: threading.Event | None = None) -> list[float]:
            out: list[float] = []
            deadline = time.perf_counter() + seconds
            while time.perf_counter() < deadline and not (stop and stop.is_set()):
                t = time.perf_counter()
                log.append(bytearray(batch), 0)
                out.append(time.perf_counter() - t)
                time.sleep(0.001)
            return out

        idle = append_for(2.0)
        cleaner = Cleaner(OffsetMap(128 * MIB), throttler=Throttler(math.inf), clock_ms=lambda: 0)
        done = threading.Event()
        swaps: list[float] = []
        real_replace = log.replace_segments

        def timed_replace(*args, **kwargs):  # how long the swap holds the log lock
            t = time.perf_counter()
            try:
                return real_replace(*args, **kwargs)
            finally:
                swaps.append(time.perf_counter() - t)

        log.replace_segments = timed_replace  # type: ignore[method-assign]

        def clean() -> None:
            try:
                cleaner.clean(log, None)
            finally:
                done.set()

        worker = threading.Thread(target=clean)
        worker.start()
        busy = append_for(600.0, done)
        worker.join()
        log.close()
        for label, lat in (("appends, no cleaning", idle), ("appends while cleaning", busy)):
            print(
                f"  {label:<34} {len(lat):>6} appends  p50 {percentile(lat, 0.5) * 1e3:6.2f} ms"
                f"  p99 {percentile(lat, 0.99) * 1e3:6.2f} ms  max {max(lat) * 1e3:7.2f} ms"
            )
        if swaps:
            print(
                f"  {'swap (log lock held)':<34} {len(swaps):>6} swaps    "
                f"p50 {percentile(swaps, 0.5) * 1e3:6.2f} ms  max {max(swaps) * 1e3:7.2f} ms"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=48)
    parser.add_argument("--quick", action="store_true", help="8 MB per workload")
    args = parser.parse_args()
    size = 8 if args.quick else args.size_mb
    print(f"log cleaner, one thread, {size} MB of dirty log per workload (2 shared cores)")
    run("100 B values, 10,000 keys", size, 100, 10_000, Compression.NONE)
    run("1 KiB values, 1,000 keys", size, 1024, 1_000, Compression.NONE)
    run("1 KiB values, all keys distinct", size, 1024, None, Compression.NONE)
    # Compressed batches cost about 5x more CPU per MB: a quarter of the size keeps the run
    # within the bench suite's time cap.
    run("1 KiB values, 1,000 keys, zstd", max(size // 4, 4), 1024, 1_000, Compression.ZSTD)
    print("produce while the same log is cleaned (100 B values, 10,000 keys):")
    appends_during_cleaning(size)


if __name__ == "__main__":
    main()
