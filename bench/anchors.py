"""Physical anchors of this machine: disk sequential write, fsync rate, loopback TCP (prints).

    .venv/bin/python -m bench.anchors

The ceilings every other figure is read against: kraftlog cannot append faster than the disk
writes sequentially, cannot fsync more often than :func:`fsync_rate` allows, and cannot move
bytes between two local processes faster than loopback TCP.

- :func:`disk_sequential_write` writes ``total_bytes`` in ``chunk_bytes`` writes to a new file
  and fdatasyncs once at the end (the time includes the sync): the page cache plus writeback
  rate that a log append sees.
- :func:`fsync_rate` appends ``write_bytes`` and fdatasyncs, over and over, for ``seconds``.
- :func:`loopback_tcp` sends ``total_bytes`` over one 127.0.0.1 connection to a forked
  reader process (two processes, as a broker and a client are).
- :func:`python_loop_rate`: additions per second of a plain Python loop, the speed of the
  interpreter every kraftlog process runs on. On a shared VM it moves from run to run (the
  same loop ran 2.6 times slower at one moment than at another within an hour on this
  machine) and every CPU-bound figure moves with it: read latency and throughput against it.
- :func:`ping_pong` bounces one byte between two processes over a socket pair: the time a
  message takes to wake the process it is for, paid at each of the four hops of a record
  from producer to consumer (producer -> leader -> followers -> leader -> consumer).
"""

from __future__ import annotations

import multiprocessing
import os
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MB = 1_000_000
MIB = 1024 * 1024
LOOPBACK_BUFFER_BYTES = 1 * MIB
READER_JOIN_TIMEOUT_S = 60.0


def disk_sequential_write(
    directory: str, total_bytes: int = 512 * MIB, chunk_bytes: int = 1 * MIB
) -> float:
    """MB/s of sequential writes ending with one fdatasync."""
    chunk = os.urandom(chunk_bytes)
    fd, path = tempfile.mkstemp(dir=directory, prefix="anchor-seq-")
    try:
        start = time.perf_counter()
        written = 0
        while written < total_bytes:
            written += os.write(fd, chunk)
        os.fdatasync(fd)
        return written / MB / (time.perf_counter() - start)
    finally:
        os.close(fd)
        os.unlink(path)


def fsync_rate(directory: str, seconds: float = 2.0, write_bytes: int = 4096) -> float:
    """fdatasync calls per second, each after appending ``write_bytes``."""
    block = os.urandom(write_bytes)
    fd, path = tempfile.mkstemp(dir=directory, prefix="anchor-fsync-")
    try:
        count = 0
        start = time.perf_counter()
        end = start + seconds
        while (now := time.perf_counter()) < end:
            os.write(fd, block)
            os.fdatasync(fd)
            count += 1
        return count / (now - start)
    finally:
        os.close(fd)
        os.unlink(path)


def _read_all(port: int, total_bytes: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as s:
        buf = bytearray(LOOPBACK_BUFFER_BYTES)
        got = 0
        while got < total_bytes:
            n = s.recv_into(buf)
            if not n:
                break
            got += n
        s.sendall(b"k")  # the sender stops its clock when everything arrived


def loopback_tcp(total_bytes: int = 4 * 1024 * MIB) -> float:
    """MB/s from this process to a forked reader over one loopback TCP connection."""
    chunk = memoryview(os.urandom(LOOPBACK_BUFFER_BYTES))
    with socket.create_server(("127.0.0.1", 0)) as server:  # never reused: a test-only port
        port = server.getsockname()[1]
        reader = multiprocessing.get_context("fork").Process(
            target=_read_all, args=(port, total_bytes)
        )
        reader.start()
        try:
            conn, _ = server.accept()
            with conn:
                start = time.perf_counter()
                sent = 0
                while sent < total_bytes:
                    conn.sendall(chunk)
                    sent += len(chunk)
                conn.recv(1)
                return sent / MB / (time.perf_counter() - start)
        finally:
            reader.join(READER_JOIN_TIMEOUT_S)
            if reader.is_alive():
                reader.kill()
                reader.join()


def python_loop_rate(seconds: float = 0.5) -> float:
    """Millions of ``total += i`` loop iterations per second: the median of rounds of 200,000
    over ``seconds`` (the median, not the best: the host's speed over the moment, stalls
    included)."""
    rates: list[float] = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or not rates:
        n = 200_000
        total = 0
        start = time.perf_counter()
        for i in range(n):
            total += i
        rates.append(n / (time.perf_counter() - start) / 1e6)
    rates.sort()
    return rates[len(rates) // 2]


def _echo(sock: socket.socket, round_trips: int) -> None:
    for _ in range(round_trips):
        if not sock.recv(1):
            return
        sock.sendall(b"p")


def ping_pong(round_trips: int = 2000) -> dict[str, float]:
    """Round trips of one byte to a forked process and back: median and p99 (us)."""
    ours, theirs = socket.socketpair()
    child = multiprocessing.get_context("fork").Process(target=_echo, args=(theirs, round_trips))
    child.start()
    times: list[float] = []
    try:
        with ours:
            for _ in range(round_trips):
                start = time.perf_counter()
                ours.sendall(b"p")
                if not ours.recv(1):
                    break
                times.append(time.perf_counter() - start)
    finally:
        theirs.close()
        child.join(READER_JOIN_TIMEOUT_S)
        if child.is_alive():
            child.kill()
            child.join()
    times.sort()
    if not times:
        return {"ping_pong_p50_us": float("nan"), "ping_pong_p99_us": float("nan")}
    return {
        "ping_pong_p50_us": times[len(times) // 2] * 1e6,
        "ping_pong_p99_us": times[min(len(times) - 1, int(len(times) * 0.99))] * 1e6,
    }


def host_speed() -> dict[str, float]:
    """The two figures that say how fast this VM host is right now (CPU, wake-ups),
    rounded to 0.1 for the results."""
    figures = {"python_loop_m_per_s": python_loop_rate(), **ping_pong()}
    return {k: round(v, 1) for k, v in figures.items()}


def measure(directory: str, quick: bool = False) -> dict[str, float]:
    scale = 0.25 if quick else 1.0
    return {
        "disk_seq_write_mb_s": disk_sequential_write(directory, int(512 * MIB * scale)),
        "fsync_per_s": fsync_rate(directory, 2.0 * scale),
        "loopback_tcp_mb_s": loopback_tcp(int(4 * 1024 * MIB * scale)),
        **host_speed(),
    }


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="kraftlog-anchors-", dir="/tmp") as d:
        for k, v in measure(d).items():
            print(f"  {k:<24} {v:>12,.1f}")


if __name__ == "__main__":
    main()
