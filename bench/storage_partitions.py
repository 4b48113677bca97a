"""Benchmark: one broker's storage with many partitions.

Measures, on a LogManager in a temporary log dir (no cluster, no network):

1. creation: ``get_or_create_log`` for N empty logs (with a topic id, so ``partition.metadata``
   is written), logs per second, open descriptors per log and RSS afterwards;
2. one small batch appended to every log, then a clean close (time);
3. restart after the clean shutdown: a fresh process loads the N logs (time, fds, RSS);
4. restart after ``kill -9``: a process opens the logs, appends one more batch to each (so
   every log has unflushed data past its recovery point), flushes nothing and SIGKILLs
   itself; a fresh process then loads and recovers them (time);
5. reads across old segments: one log with many closed segments read end to end, open
   descriptors afterwards against the manager's ``max_open_segments`` bound.

Prints figures; asserts nothing. Usage::

    .venv/bin/python bench/storage_partitions.py [--logs 10000] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from data_plane.storage import LogConfig, LogManager, build_batch
from data_plane.storage.record_codec import Record

TOPIC = "bench"


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return -1.0


def payload(i: int) -> bytes:
    return bytes(build_batch([Record(key=None, value=b"v" * 100, timestamp=1_700_000_000_000 + i)]))


def manager(log_dir: str, **kw: int) -> LogManager:
    return LogManager(LogConfig(log_dirs=(log_dir,)), **kw)


def child_load(log_dir: str) -> None:
    """Run in a fresh process: load every log, print figures as JSON."""
    fds0 = open_fds()
    t0 = time.perf_counter()
    lm = manager(log_dir)
    load_s = time.perf_counter() - t0
    logs = lm.all_logs()
    out = {
        "load_s": load_s,
        "logs": len(logs),
        "fds_per_log": (open_fds() - fds0) / max(len(logs), 1),
        "rss_mib": rss_mib(),
        "leo_sum": sum(lg.log_end_offset for lg in logs),
    }
    t0 = time.perf_counter()
    lm.close()
    out["close_s"] = time.perf_counter() - t0
    print(json.dumps(out))


def child_append_and_kill(log_dir: str) -> None:
    """Run in a fresh process: open, append one batch to every log, SIGKILL ourselves."""
    lm = manager(log_dir)
    data = payload(1)
    for lg in lm.all_logs():
        lg.append(bytearray(data), 0)
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def run_child(mode: str, log_dir: str) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--dir", log_dir],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if mode == "kill":
        return {"returncode": proc.returncode}
    if proc.returncode != 0:
        raise RuntimeError(f"child {mode} failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench_many_logs(root: str, n_logs: int) -> None:
    log_dir = os.path.join(root, "many")
    lm = manager(log_dir)
    fds0, rss0 = open_fds(), rss_mib()
    topic_id = uuid.uuid4()
    t0 = time.perf_counter()
    for p in range(n_logs):
        lm.get_or_create_log(TOPIC, p, topic_id=topic_id)
    create_s = time.perf_counter() - t0
    rate = n_logs / create_s
    print(f"create {n_logs} empty logs:          {create_s:7.2f} s  {rate:8.0f} logs/s")
    print(f"open fds per log:                   {(open_fds() - fds0) / n_logs:7.2f}")
    print(f"RSS after creation:                 {rss_mib():7.1f} MiB (+{rss_mib() - rss0:.1f})")
    data = payload(0)
    t0 = time.perf_counter()
    for lg in lm.all_logs():
        lg.append(bytearray(data), 0)
    append_s = time.perf_counter() - t0
    print(f"append 1 batch to each log:         {append_s:7.2f} s  {n_logs / append_s:8.0f} logs/s")
    t0 = time.perf_counter()
    lm.close()
    print(f"clean close:                        {time.perf_counter() - t0:7.2f} s")

    clean = run_child("load", log_dir)
    print(
        f"restart after clean shutdown:       {clean['load_s']:7.2f} s  "
        f"({clean['logs']} logs, {clean['fds_per_log']:.2f} fds/log, "
        f"RSS {clean['rss_mib']:.0f} MiB)"
    )
    run_child("kill", log_dir)
    crashed = run_child("load", log_dir)
    print(
        f"restart after kill -9 (recovery):   {crashed['load_s']:7.2f} s  "
        f"({crashed['logs']} logs, offsets recovered {crashed['leo_sum']}, "
        f"RSS {crashed['rss_mib']:.0f} MiB)"
    )


def bench_old_segment_reads(root: str, segments: int, max_open: int) -> None:
    log_dir = os.path.join(root, "segments")
    cfg = LogConfig(log_dirs=(log_dir,), segment_bytes=16 * 1024)
    lm = LogManager(cfg, max_open_segments=max_open)
    lg = lm.get_or_create_log(TOPIC, 0, cfg)
    data = payload(0)
    while len(lg.segments()) < segments:
        lg.append(bytearray(data), 0)
    lm.close()
    fds0 = open_fds()
    t0 = time.perf_counter()
    lm = LogManager(cfg, max_open_segments=max_open)
    load_s = time.perf_counter() - t0
    lg = lm.get_log(TOPIC, 0)
    assert lg is not None
    lg.update_high_watermark(lg.log_end_offset)
    t0 = time.perf_counter()
    offset = lg.log_start_offset
    read_bytes = 0
    while offset < lg.log_end_offset:
        fs = lg.read(offset, 64 * 1024)
        read_bytes += fs.length
        offset = lg.segments()[-1].base_offset if fs.length == 0 else _next(fs)
    read_s = time.perf_counter() - t0
    print(
        f"{segments} segments: load {load_s:.3f} s, read all {read_bytes / 2**20:.1f} MiB in "
        f"{read_s:.2f} s; open fds now {open_fds() - fds0} (max_open_segments={max_open}, "
        f"evictions {lm.segment_cache.evictions})"
    )
    lm.close()


def _next(fs: object) -> int:
    """The offset after the last whole batch of a slice."""
    from common.record_batch import LOG_OVERHEAD, parse_header

    data = fs.read_bytes()  # type: ignore[attr-defined]
    pos, nxt = 0, -1
    while pos + 61 <= len(data):
        h = parse_header(data, pos)
        if pos + h.batch_length + LOG_OVERHEAD > len(data):
            break
        nxt = h.next_offset
        pos += h.batch_length + LOG_OVERHEAD
    return nxt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--logs", type=int, default=10_000)
    ap.add_argument("--segments", type=int, default=2000, help="closed segments read end to end")
    ap.add_argument("--max-open-segments", type=int, default=64)
    ap.add_argument("--dir", help="work directory (default: a new temporary one, removed)")
    ap.add_argument("--child", choices=("load", "kill"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "load":
        child_load(args.dir)
        return
    if args.child == "kill":
        child_append_and_kill(args.dir)
        return
    root = args.dir or tempfile.mkdtemp(prefix="kraftlog-partitions-")
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_NOFILE)
        print(f"open files limit {limit}, cpus {os.cpu_count()}, load {os.getloadavg()}")
        bench_many_logs(root, args.logs)
        bench_old_segment_reads(root, args.segments, args.max_open_segments)
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
