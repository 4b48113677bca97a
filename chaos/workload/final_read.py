"""The final read: after the heal and the recovery window, a fresh consumer per partition
reads from offset 0 to the high watermark, recorded as one ``final-read`` operation per
partition (invoke ``{"topic", "partition"}``, ok adds ``high_watermark`` and ``records``).

The high watermark is taken first (ListOffsets latest); the read then stops at it, so records
appended later (nothing should be writing) are not part of the final read. The read is done
when the consumer's position reaches it: past transaction markers and aborted records the
position moves without a record. Errors are retried until the deadline; a partition that
cannot be read ends as ``info``.

A read_committed final read (topics written in transactions) first waits, within the
deadline, for the last stable offset to reach the high watermark (open transactions end by
commit, abort or the coordinator's timeout), then reads up to the last stable offset and
records it as ``last_stable_offset``.

:func:`read_group_offsets` records a consumer group's committed offsets (``group-offsets``).
"""

from __future__ import annotations

import time

from chaos.history import READ_COMMITTED, READ_UNCOMMITTED, HistoryWriter
from chaos.workload.consumer import consumer_config, records_of
from kraftlog_client import Admin, Consumer, KafkaError, TopicPartition

_POLL_TIMEOUT_MS = 1000
_RETRY_BACKOFF_S = 0.5
# How often a read_committed final read asks whether the open transactions have ended.
_LSO_POLL_S = 0.5


def final_read(
    *,
    bootstrap: str,
    topic: str,
    partitions: int,
    history: HistoryWriter,
    timeout_s: float,
    isolation: str = READ_UNCOMMITTED,
) -> dict[int, int]:
    """Read every partition; returns partition -> high watermark of those read completely."""
    deadline = time.monotonic() + timeout_s
    hws: dict[int, int] = {}
    committed = isolation == READ_COMMITTED
    for p in range(partitions):
        process = f"final-{'committed-' if committed else ''}{topic}-{p}"
        invoke: dict[str, object] = {"topic": topic, "partition": p}
        if committed:
            invoke["isolation"] = READ_COMMITTED
        index = history.invoke(process, "final-read", invoke)
        last_error = "deadline passed before the first attempt"
        while time.monotonic() < deadline:
            try:
                result = _read_partition(bootstrap, process, topic, p, deadline, isolation)
            except (KafkaError, TimeoutError) as e:
                last_error = f"{type(e).__name__}: {e}"
                time.sleep(_RETRY_BACKOFF_S)
                continue
            history.ok(index, result)
            hws[p] = int(result["high_watermark"])  # type: ignore[call-overload]
            break
        else:
            history.info(index, {"error": last_error})
    return hws


def _end_offset(consumer: Consumer, tp: TopicPartition, deadline: float) -> int:
    """``tp``'s end for the consumer's isolation (HW, or LSO for read_committed)."""
    remaining_ms = min(max(1.0, (deadline - time.monotonic()) * 1000), 10_000)
    return consumer.end_offsets([tp], timeout_ms=remaining_ms)[tp]


def _ends(
    consumer: Consumer, bootstrap: str, process: str, tp: TopicPartition, deadline: float
) -> tuple[int, int]:
    """(high watermark, where the read ends). A read_committed read waits, within the
    deadline, for the last stable offset to reach the high watermark (a read_uncommitted
    probe tells the high watermark)."""
    end = _end_offset(consumer, tp, deadline)
    if consumer.config.isolation_level != READ_COMMITTED:
        return end, end
    probe = Consumer(consumer_config(bootstrap, process))
    try:
        while True:
            hw = _end_offset(probe, tp, deadline)
            if end >= hw or time.monotonic() + _LSO_POLL_S > deadline:
                return hw, end
            time.sleep(_LSO_POLL_S)
            end = _end_offset(consumer, tp, deadline)
    finally:
        probe.close()


def _read_partition(
    bootstrap: str,
    process: str,
    topic: str,
    partition: int,
    deadline: float,
    isolation: str,
) -> dict[str, object]:
    tp = TopicPartition(topic, partition)
    consumer = Consumer(consumer_config(bootstrap, process, **{"isolation.level": isolation}))
    try:
        hw, end = _ends(consumer, bootstrap, process, tp, deadline)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        records: list[list[object]] = []
        position = 0
        while position < end:
            if time.monotonic() > deadline:
                raise TimeoutError(f"read to {position} of {end} of {tp} by the deadline")
            for rec in records_of(consumer.poll(_POLL_TIMEOUT_MS)):
                if rec[2] < end:  # type: ignore[operator]
                    records.append(rec)
            position = consumer.position(tp, timeout_ms=10_000)
        result: dict[str, object] = {"high_watermark": hw, "records": records}
        if isolation == READ_COMMITTED:
            result["last_stable_offset"] = end
        return result
    finally:
        consumer.close()


def read_group_offsets(
    *, bootstrap: str, group: str, history: HistoryWriter, timeout_s: float
) -> dict[tuple[str, int], int]:
    """Record ``group``'s committed offsets (retried until the deadline)."""
    index = history.invoke("final-group", "group-offsets", {"group": group})
    deadline = time.monotonic() + timeout_s
    last_error = "deadline passed before the first attempt"
    while time.monotonic() < deadline:
        admin = Admin({"bootstrap.servers": bootstrap, "default.api.timeout.ms": 10_000})
        try:
            offsets = admin.list_consumer_group_offsets(group)
        except KafkaError as e:
            last_error = f"{type(e).__name__}: {e}"
            time.sleep(_RETRY_BACKOFF_S)
            continue
        finally:
            admin.close()
        out = {(tp.topic, tp.partition): int(o) for tp, o in offsets.items() if o is not None}
        history.ok(index, {"offsets": [[t, p, o] for (t, p), o in sorted(out.items())]})
        return out
    history.info(index, {"error": last_error})
    return {}
