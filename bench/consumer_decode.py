"""The native consumer's decoding cost alone: fetched payload -> ConsumerRecord (prints).

    .venv/bin/python -m bench.consumer_decode

A payload of 40 RecordBatches x 2,500 records of 100 B (null keys, timestamps a few ms apart,
as the producer writes them) is decoded with :class:`FetchedRecords` ``take()`` in slices of
``max.poll.records`` (500, Kafka's default, and 10,000), the records touched once as a poll
loop would. CPU time of this process (not wall time, which other load moves), best of 7.
This is the upper bound of a single consumer's records/s: the network, the Fetch round trips
and the caller's own work come on top.
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from data_plane.storage.record_codec import Record, build_batch
from kraftlog_client.record_decoder import FetchedRecords

BATCHES = 40
RECORDS_PER_BATCH = 2_500
RECORDS_PER_MS = 200  # records that share one timestamp
ROUNDS = 7


def payload(value_bytes: int = 100) -> bytes:
    ts = int(time.time() * 1000)
    return b"".join(
        bytes(
            build_batch(
                [
                    Record(None, os.urandom(value_bytes), ts + i // RECORDS_PER_MS)
                    for i in range(RECORDS_PER_BATCH)
                ],
                base_offset=b * RECORDS_PER_BATCH,
            )
        )
        for b in range(BATCHES)
    )


def decode_rate(data: bytes, max_poll_records: int) -> float:
    """Records/s of CPU time to decode ``data`` fully, best of ROUNDS."""
    best = 0.0
    for _ in range(ROUNDS):
        start = time.process_time()
        fetched = FetchedRecords("t", 0, data, 0)
        n = 0
        while not fetched.exhausted:
            out: list = []
            fetched.take(max_poll_records, out)
            for _r in out:
                pass
            n += len(out)
        best = max(best, n / max(1e-9, time.process_time() - start))
    return best


def main() -> None:
    data = payload()
    for mpr in (500, 10_000):
        print(
            f"  decode 100 B records, max.poll.records {mpr:>6,}: "
            f"{decode_rate(data, mpr):>12,.0f} records per CPU second",
            flush=True,
        )


if __name__ == "__main__":
    main()
