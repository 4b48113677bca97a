"""A fetch payload mixing transactions, markers and plain batches, for the read_committed
decoders' tests (the native client's and the Spark source's)."""

from __future__ import annotations

from data_plane.storage import Record, build_batch
from data_plane.storage.record_codec import build_end_txn_marker


def txn(pid: int, base: int, n: int, seq: int = 0) -> bytearray:
    records = [Record(None, b"%d-%d" % (pid, base + i), 1) for i in range(n)]
    return build_batch(
        records,
        base_offset=base,
        producer_id=pid,
        producer_epoch=0,
        base_sequence=seq,
        is_transactional=True,
    )


def marker(pid: int, base: int, committed: bool) -> bytearray:
    return build_end_txn_marker(
        producer_id=pid,
        producer_epoch=0,
        coordinator_epoch=0,
        committed=committed,
        timestamp_ms=1,
        base_offset=base,
    )


def mixed_payload() -> bytes:
    """Offsets 0-1: producer 1's aborted transaction; 2: producer 2's committed one; 3 and 4
    their markers; 5: producer 1's next transaction (not aborted); 6: a plain record. A
    read_committed answer lists (1, 0) as aborted: offsets 2, 5 and 6 are the data to keep."""
    return b"".join(
        [
            txn(1, 0, 2),
            txn(2, 2, 1),
            marker(1, 3, committed=False),
            marker(2, 4, committed=True),
            txn(1, 5, 1, seq=2),
            build_batch([Record(None, b"plain", 1)], base_offset=6),
        ]
    )


ABORTED = [(1, 0)]
COMMITTED_OFFSETS = [2, 5, 6]
ALL_DATA_OFFSETS = [0, 1, 2, 5, 6]
