"""The final read: after the heal and the recovery window, a fresh consumer per partition
reads from offset 0 to the high watermark, recorded as one ``final-read`` operation per
partition (invoke ``{"topic", "partition"}``, ok adds ``high_watermark`` and ``records``).

The high watermark is taken first (ListOffsets latest); the read then stops at it, so records
appended later (nothing should be writing) are not part of the final read. Errors are retried
until the deadline; a partition that cannot be read ends as ``info``.
"""

from __future__ import annotations

import time

from chaos.history import HistoryWriter
from chaos.workload.consumer import consumer_config, records_of
from data_plane.client import Consumer, KafkaError, TopicPartition

_POLL_TIMEOUT_MS = 1000
_RETRY_BACKOFF_S = 0.5


def final_read(
    *,
    bootstrap: str,
    topic: str,
    partitions: int,
    history: HistoryWriter,
    timeout_s: float,
) -> dict[int, int]:
    """Read every partition; returns partition -> high watermark of those read completely."""
    deadline = time.monotonic() + timeout_s
    hws: dict[int, int] = {}
    for p in range(partitions):
        process = f"final-{p}"
        index = history.invoke(process, "final-read", {"topic": topic, "partition": p})
        last_error = "deadline passed before the first attempt"
        while time.monotonic() < deadline:
            try:
                hw, records = _read_partition(bootstrap, process, topic, p, deadline)
            except (KafkaError, TimeoutError) as e:
                last_error = f"{type(e).__name__}: {e}"
                time.sleep(_RETRY_BACKOFF_S)
                continue
            history.ok(index, {"high_watermark": hw, "records": records})
            hws[p] = hw
            break
        else:
            history.info(index, {"error": last_error})
    return hws


def _read_partition(
    bootstrap: str, process: str, topic: str, partition: int, deadline: float
) -> tuple[int, list[list[object]]]:
    tp = TopicPartition(topic, partition)
    consumer = Consumer(consumer_config(bootstrap, process))
    try:
        remaining_ms = max(1.0, (deadline - time.monotonic()) * 1000)
        hw = consumer.end_offsets([tp], timeout_ms=min(remaining_ms, 10_000))[tp]
        consumer.assign([tp])
        consumer.seek(tp, 0)
        records: list[list[object]] = []
        next_offset = 0
        while next_offset < hw:
            if time.monotonic() > deadline:
                raise TimeoutError(f"read {next_offset} of {hw} records of {tp} by the deadline")
            for rec in records_of(consumer.poll(_POLL_TIMEOUT_MS)):
                if rec[2] >= hw:
                    next_offset = hw
                    break
                records.append(rec)
                next_offset = int(rec[2]) + 1  # type: ignore[call-overload]
        return hw, records
    finally:
        consumer.close()
