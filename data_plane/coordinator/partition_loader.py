"""Reading a coordinator's partition (``__consumer_offsets``, ``__transaction_state``) from
its log start to its log end when this broker becomes its leader: whole batches, decoded,
handed to the coordinator in log order, yielding to the event loop every
:data:`LOAD_YIELD_RECORDS` records so a large load never stalls the broker's connections.

Thread-safety: none; runs as a task on the broker's event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from common.errors import ApiError
from data_plane.storage import DecodedRecord, FetchIsolation, Log, RecordBatchHeader, decode_records

# Records handed over between two yields to the event loop: decoding a 5 MB read in one go
# would stall every connection of the broker for a noticeable time.
LOAD_YIELD_RECORDS = 2000

# Applies one batch (its records at or above the given offset); returns how many it applied.
BatchConsumer = Callable[[RecordBatchHeader, list[DecodedRecord], int], int]


async def load_partition(
    log: Log,
    load_buffer_bytes: int,
    still_current: Callable[[], bool],
    apply: BatchConsumer,
) -> tuple[int, int]:
    """Feed every batch of ``log`` up to its end at the time of the call to ``apply``,
    reading ``load_buffer_bytes`` per step, while ``still_current()`` (the leadership being
    loaded for has not moved on). Returns (records applied, offset reached). Raises
    :class:`ApiError` on a storage error (the caller retries)."""
    end = log.log_end_offset
    offset = log.log_start_offset
    records = since_yield = 0
    while offset < end and still_current():
        data = log.read(
            offset, load_buffer_bytes, isolation=FetchIsolation.LOG_END, max_offset=end
        ).read_bytes()
        pos, progressed = 0, False
        while len(data) - pos > 0:
            try:
                header, batch = decode_records(data, pos)
            except ApiError:
                break  # the slice ended inside a batch: read on from there
            pos += header.size_in_bytes
            if header.next_offset <= offset:
                continue
            applied = apply(header, batch, offset)
            records += applied
            since_yield += applied
            offset = header.next_offset
            progressed = True
            if since_yield >= LOAD_YIELD_RECORDS:
                since_yield = 0
                await asyncio.sleep(0)
                if not still_current():
                    return records, offset
        if not progressed:
            break
        await asyncio.sleep(0)
    return records, offset
