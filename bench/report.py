"""Helpers shared by the benchmarks: percentiles, one throughput row per workload, the paced
sending of the latency runs, a process's CPU time and exact reads from a socket (bytes, or
one Kafka frame)."""

from __future__ import annotations

import os
import socket
import struct
import time
from collections.abc import Callable

MB = 1_000_000
# How long the paced publishers of the end-to-end latency runs (kraftlog and NATS alike) sleep
# between looking at the clock; each wake-up sends every record due by then. A record sent
# late still counts from its due time, so a longer pause costs latency and is measured. 0.5 ms
# because a shorter sleep is not shorter here: time.sleep(0.0002) measured 0.43 ms of wall
# time and 31 us of CPU per call on the 2-core VM, and the extra wake-ups took CPU from the
# brokers under test.
PACING_SLEEP_S = 0.0005


def now_ns() -> int:
    """CLOCK_MONOTONIC in ns: the same clock in every process of the machine, so a due time
    written by a producer process is comparable with a consumer process's clock."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def send_paced(
    send: Callable[[int, int], None], rate_per_s: float, start_ns: int, total: int
) -> None:
    """Call ``send(i, due_ns)`` for i in range(``total``), record i being due at ``start_ns`` +
    i / ``rate_per_s``: wait for ``start_ns``, then on each wake-up send every record due by
    then and sleep PACING_SLEEP_S. A sender that falls behind catches up in a burst; each
    record keeps its due time (no coordinated omission)."""
    step_ns = 1e9 / rate_per_s
    while now_ns() < start_ns:
        time.sleep(0.001)
    i = 0
    while i < total:
        due_count = min(total, int((now_ns() - start_ns) / step_ns) + 1)
        while i < due_count:
            send(i, start_ns + int(i * step_ns))
            i += 1
        time.sleep(PACING_SLEEP_S)


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) by nearest rank; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def row(label: str, n: int, size: int, seconds: float) -> str:
    """``n`` records of ``size`` bytes in ``seconds``: records/s and MB/s."""
    rate = n / seconds if seconds > 0 else float("nan")
    return f"  {label:<44} {n:>9,} rec {rate:>12,.0f} rec/s {rate * size / MB:>9.1f} MB/s"


def received_rate(latencies: list[float], seconds: float) -> float:
    """Records/s that arrived, from latencies in arrival order of records due evenly over
    ``seconds``: arrival = due + latency, so the arrivals span ``seconds`` plus the last
    latency minus the first (a system that falls behind shows a lower rate than offered)."""
    if len(latencies) < 2:
        return float("nan")
    span = seconds + latencies[-1] - latencies[0]
    return len(latencies) / span if span > 0 else float("nan")


def rate(n: int, seconds: float, size: int) -> dict[str, float]:
    """JSON figures of ``n`` records of ``size`` bytes in ``seconds``."""
    rps = n / seconds if seconds > 0 else float("nan")
    return {"records": n, "seconds": seconds, "records_per_s": rps, "mb_per_s": rps * size / MB}


def latency_summary(lat: list[float], offered: int, seconds: float) -> dict[str, float]:
    """JSON figures of a paced latency run: percentiles in ms and the received rate."""
    return {
        "offered_per_s": offered,
        "received_per_s": received_rate(lat, seconds),
        "samples": len(lat),
        "p50_ms": percentile(lat, 0.5) * 1e3,
        "p99_ms": percentile(lat, 0.99) * 1e3,
        "p999_ms": percentile(lat, 0.999) * 1e3,
        "max_ms": max(lat, default=float("nan")) * 1e3,
    }


_CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def cpu_times(pid: int) -> tuple[float, float]:
    """User and system CPU seconds process ``pid`` has used so far (/proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) / _CLOCK_TICKS_PER_S, int(fields[12]) / _CLOCK_TICKS_PER_S


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds process ``pid`` has used so far."""
    user, system = cpu_times(pid)
    return user + system


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    """``n`` bytes from a blocking ``sock``; ConnectionError if the peer closes first."""
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the peer closed the connection")
        buf += chunk
    return bytes(buf)


_FRAME_SIZE = struct.Struct(">i")


def recv_frame(sock: socket.socket) -> bytes:
    """The body of the next Kafka frame (int32 size prefix + body) from a blocking ``sock``."""
    (size,) = _FRAME_SIZE.unpack(recv_exactly(sock, _FRAME_SIZE.size))
    return recv_exactly(sock, size)
