"""Availability, throughput and latency of the sends over time, in fixed-width buckets.

A send counts in the bucket where it completed (ok, fail or info); a send that never
completed counts as info in the bucket where it was invoked. Latency is invoke -> ok, in
milliseconds, for the sends acknowledged in the bucket. ``in_flight`` counts the sends still
open at a bucket's end, so a bucket in which the cluster answered nothing while sends waited
has availability 0 (not "no data").
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from chaos.checker.model import Bucket, Send

# Keep the report readable and bounded: a long run gets wider buckets, not more of them.
MAX_BUCKETS = 2000


def percentile(sorted_values: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile of an ascending list (None if empty)."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def build_timeline(sends: Iterable[Send], end_time: float, bucket_s: float) -> list[Bucket]:
    if bucket_s <= 0:
        raise ValueError(f"bucket_s must be > 0, got {bucket_s}")
    width = max(bucket_s, end_time / MAX_BUCKETS)
    count = max(1, math.ceil(end_time / width)) if end_time > 0 else 1
    invoked = [0] * count
    ok = [0] * count
    fail = [0] * count
    info = [0] * count
    latencies: list[list[float]] = [[] for _ in range(count)]
    # +1 where a send starts being open at a bucket's end, -1 where it stops (prefix sums).
    open_delta = [0] * (count + 1)

    def slot(t: float) -> int:
        return min(count - 1, max(0, int(t / width)))

    for send in sends:
        invoked[slot(send.invoke_time)] += 1
        closes = count if send.complete_time is None else slot(send.complete_time)
        opens = slot(send.invoke_time)
        if closes > opens:
            open_delta[opens] += 1
            open_delta[closes] -= 1
        if send.complete_time is None:
            info[slot(send.invoke_time)] += 1
            continue
        i = slot(send.complete_time)
        if send.type == "ok":
            ok[i] += 1
            latencies[i].append((send.complete_time - send.invoke_time) * 1000.0)
        elif send.type == "fail":
            fail[i] += 1
        else:
            info[i] += 1
    buckets: list[Bucket] = []
    in_flight = 0
    for i in range(count):
        in_flight += open_delta[i]
        lat = sorted(latencies[i])
        buckets.append(
            Bucket(
                start=i * width,
                width=width,
                invoked=invoked[i],
                ok=ok[i],
                fail=fail[i],
                info=info[i],
                latency_p50_ms=percentile(lat, 0.50),
                latency_p99_ms=percentile(lat, 0.99),
                latency_max_ms=lat[-1] if lat else None,
                in_flight=in_flight,
            )
        )
    return buckets
