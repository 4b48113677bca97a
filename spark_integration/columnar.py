"""Decoding fetched RecordBatch v2 payloads straight into columns (numpy arrays).

A fetch payload is a run of whole batches, possibly ending in a partial batch (ignored): see
:mod:`common.record_batch` for the 61-byte header and
:mod:`data_plane.storage.record_codec` for the record layout. Decoding is vectorised over the
whole payload, so its Python cost is per fetch and per record boundary, not per field:

1. each batch in the window has its CRC-32C checked and its records block decompressed; the
   blocks are joined into one buffer, with per-batch base offset, timestamps and count;
2. record boundaries: runs of same-size records are found with strided numpy comparisons of
   their length bytes (a loop handles varied records), and every batch must hold exactly its
   declared count;
3. numpy decodes the remaining varints of all records at once (variable widths included),
   derives offsets and timestamps, and gathers keys and values into contiguous buffers;
4. the few records with headers are decoded one by one (only those, and only if asked).

Every record must end exactly where its fields do (checked for all), so corrupt framing is
caught even though the CRC already passed. Only offsets in ``[min_offset, end_offset)`` are
kept: a fetch starts at the batch holding the requested offset and may run past the planned
end. Control batches are skipped, and so are the batches of the aborted transactions a
read_committed answer lists (Kafka's consumer rule). Corrupt data raises
:class:`CorruptDataError`.

Pure functions, no shared state: thread-safe.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from common.compression import decompress
from common.errors import ApiError
from common.record_batch import (
    CODEC_MASK,
    CONTROL_MASK,
    HEADER_SIZE,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    parse_header,
    validate_batch,
)
from kraftlog_client.record_decoder import AbortedTransactions

Header = tuple[str, bytes | None]
# Decompressed size bound of one batch (a fetch holds at most a few MiB of compressed data).
MAX_DECOMPRESSED_BATCH_BYTES = 256 * 1024 * 1024
_EMPTY_I64 = np.zeros(0, dtype=np.int64)
_EMPTY_I32 = np.zeros(0, dtype=np.int32)
# Zero bytes after the joined blocks, so vectorised varint reads never index past the end.
_PAD = bytes(16)
_MAX_VARINT_BYTES = 10
# Same-size records in a row below which a run is not worth numpy's set-up cost.
MIN_RUN_RECORDS = 8
# Records decoded one by one after a short run, before a run is looked for again.
_SLOW_STEP_RECORDS = 32


class CorruptDataError(ValueError):
    """A fetched batch failed its CRC or does not decode."""


@dataclass(slots=True)
class BinaryColumn:
    """Variable-length byte strings: ``lengths[i]`` bytes of ``data`` per row, -1 = null (no
    bytes). ``data`` is the rows' bytes back to back."""

    lengths: np.ndarray  # int32
    data: bytes

    def to_list(self) -> list[bytes | None]:
        out: list[bytes | None] = []
        pos = 0
        data = self.data
        for n in self.lengths.tolist():
            if n < 0:
                out.append(None)
            else:
                out.append(data[pos : pos + n])
                pos += n
        return out


@dataclass(slots=True)
class Columns:
    """Decoded records of one partition, column by column (row i across all arrays)."""

    offsets: np.ndarray  # int64
    timestamps_ms: np.ndarray  # int64
    timestamp_types: np.ndarray  # int32: 0 CreateTime, 1 LogAppendTime
    keys: BinaryColumn
    values: BinaryColumn
    headers: list[tuple[Header, ...]] | None  # None unless asked for
    next_offset: int  # the offset after the last whole batch of the payload

    def __len__(self) -> int:
        return len(self.offsets)


def decode_columns(
    payload: bytes | bytearray | memoryview,
    min_offset: int,
    end_offset: int,
    *,
    with_headers: bool = False,
    check_crcs: bool = True,
    aborted_transactions: Iterable[tuple[int, int]] | None = None,
) -> Columns:
    """The records of ``payload`` with offsets in ``[min_offset, end_offset)``;
    ``aborted_transactions`` (producer id, first offset; a read_committed Fetch answer's)
    drops the batches of aborted transactions."""
    aborted = AbortedTransactions(aborted_transactions) if aborted_transactions else None
    view = memoryview(payload)
    n = len(view)
    pos = 0
    next_offset = min_offset
    blocks: list[bytes | memoryview] = []
    meta: list[tuple[int, int, int, int, int]] = []  # base offset, base ts, max ts, type, count
    while n - pos >= HEADER_SIZE:
        try:
            header = parse_header(view, pos)
        except ApiError as e:
            raise CorruptDataError(str(e)) from None
        size = header.batch_length + LOG_OVERHEAD
        if n - pos < size:
            break  # a partial batch ends a fetch (sendfile of a segment slice)
        if header.base_offset >= end_offset:
            break
        next_offset = max(next_offset, header.next_offset)
        dropped = aborted is not None and aborted.skip(
            view, pos, pos + size, header.next_offset, header.producer_id, header.attributes
        )
        if (
            header.next_offset > min_offset
            and not header.attributes & CONTROL_MASK
            and header.records_count > 0
            and not dropped
        ):
            try:
                if check_crcs:
                    validate_batch(view, pos)
                block = view[pos + HEADER_SIZE : pos + size]
                codec = header.attributes & CODEC_MASK
                # Uncompressed blocks stay views of the payload: the one join below copies them.
                blocks.append(
                    block if codec == 0 else decompress(codec, block, MAX_DECOMPRESSED_BATCH_BYTES)
                )
            except ApiError as e:
                raise CorruptDataError(str(e)) from None
            ts_type = 1 if header.attributes & TIMESTAMP_TYPE_MASK else 0
            meta.append(
                (
                    header.base_offset,
                    header.base_timestamp,
                    header.max_timestamp,
                    ts_type,
                    header.records_count,
                )
            )
        pos += size
    if not blocks:
        return _empty(with_headers, next_offset)
    return _decode_blocks(blocks, meta, min_offset, end_offset, with_headers, next_offset)


def _empty(with_headers: bool, next_offset: int) -> Columns:
    return Columns(
        _EMPTY_I64,
        _EMPTY_I64,
        _EMPTY_I32,
        BinaryColumn(_EMPTY_I32, b""),
        BinaryColumn(_EMPTY_I32, b""),
        [] if with_headers else None,
        next_offset,
    )


def _record_bounds(
    data: bytes, arr: np.ndarray, block_ends: np.ndarray, counts: list[int]
) -> tuple[np.ndarray, np.ndarray]:
    """Start (after the length varint) and end of every record; checks each block holds
    exactly its declared number of records.

    Blocks whose framing :func:`_predicted_bounds` confirms (the common case: records of one
    shape) cost a few numpy passes over the whole payload; the others are walked by
    :func:`_block_bounds`.
    """
    count_arr = np.asarray(counts, dtype=np.int64)
    block_starts = np.concatenate(([0], block_ends[:-1]))
    starts, ends, confirmed = _predicted_bounds(arr, block_starts, block_ends, count_arr)
    if confirmed.all():
        return starts, ends
    first = np.cumsum(count_arr) - count_arr
    for b in np.flatnonzero(~confirmed).tolist():
        lo = int(first[b])
        hi = lo + counts[b]
        starts[lo:hi], ends[lo:hi] = _block_bounds(
            data, arr, int(block_starts[b]), int(block_ends[b]), counts[b]
        )
    return starts, ends


def _zigzag_width(values: np.ndarray) -> np.ndarray:
    """Bytes of the zig-zag varint of each value >= 0 (up to 5 bytes; wider values are
    under-counted, which the caller's check against the real varints catches)."""
    zz = values << 1
    return 1 + (zz >= 1 << 7) + (zz >= 1 << 14) + (zz >= 1 << 21) + (zz >= 1 << 28)


def _predicted_bounds(
    arr: np.ndarray, block_starts: np.ndarray, block_ends: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Record bounds of every block predicted from its first record, then checked.

    Prediction: record j of a block is its first record with the offset delta j (a batch
    that was never compacted numbers its records 0, 1, 2...) and everything else of the same
    size, so its length is the first record's plus the growth of the offset delta's varint.
    Check: the length varint really found at every predicted start has the predicted value
    and width, and the block's last record ends at the block's end. A confirmed block is
    framed exactly as a record-by-record walk would frame it (record 0 starts at the block
    start; each next start is the previous start plus the size read there). Returns (starts,
    ends, confirmed per block); the bounds of unconfirmed blocks are meaningless.
    """
    total = int(counts.sum())
    first = np.cumsum(counts) - counts
    limit = len(arr) - 2 * _MAX_VARINT_BYTES  # keeps the varint reads below inside the padding
    first_length, _w = _varints(arr, np.minimum(block_starts, limit), speculative=True)
    j = np.arange(total, dtype=np.int64) - np.repeat(first, counts)
    length = np.repeat(first_length - 1, counts) + _zigzag_width(j)
    length_width = _zigzag_width(np.maximum(length, 0))
    size = length_width + length
    before = np.cumsum(size) - size  # bytes of the payload's records before each record
    position = np.repeat(block_starts - before[first], counts) + before
    found, found_width = _varints(arr, np.clip(position, 0, limit), speculative=True)
    good = (found == length) & (found_width == length_width) & (length >= 0)
    starts = position + length_width
    ends = starts + length
    confirmed = np.logical_and.reduceat(good, first) & (ends[first + counts - 1] == block_ends)
    return starts, ends, confirmed


def _block_bounds(
    data: bytes, arr: np.ndarray, pos: int, block_end: int, count: int
) -> tuple[np.ndarray, np.ndarray]:
    """Record bounds of one block, walked from its start.

    Records of one size come in runs (a batch of fixed-size events is two or three runs: the
    offset delta takes a second varint byte from 64 on). At each position the length is read
    once; the run's extent is found by comparing, in one strided numpy view, the length bytes
    where the following records would start if they had the same size (equal bytes, equal
    size, so the next row is aligned too). Short runs (varied records) go through a plain
    loop for :data:`_SLOW_STEP_RECORDS` records before a run is looked for again.
    """
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    left = count
    while left > 0:
        if pos >= block_end:
            raise CorruptDataError(f"a batch declares {count} records but holds fewer")
        length, after = _length_at(data, pos, block_end)
        width = after - pos
        size = width + length
        run = 0
        candidates = min(left, (block_end - pos) // size)
        if candidates >= MIN_RUN_RECORDS:
            stop = pos + candidates * size
            same = arr[pos:stop:size] == data[pos]
            for i in range(1, width):
                same &= arr[pos + i : stop + i : size] == data[pos + i]
            run = candidates if same.all() else int(same.argmin())
        if run >= MIN_RUN_RECORDS:
            first = after + size * np.arange(run, dtype=np.int64)
            starts.append(first)
            ends.append(first + length)
            pos += run * size
            left -= run
            continue
        step = min(left, _SLOW_STEP_RECORDS)
        slow_starts, slow_ends, pos = _bounds_one_by_one(data, pos, block_end, step)
        starts.append(np.asarray(slow_starts, dtype=np.int64))
        ends.append(np.asarray(slow_ends, dtype=np.int64))
        left -= step
    if pos != block_end:
        raise CorruptDataError(
            f"a batch declares {count} records that do not fill its records block"
        )
    return np.concatenate(starts), np.concatenate(ends)


def _bounds_one_by_one(
    data: bytes, pos: int, block_end: int, count: int
) -> tuple[list[int], list[int], int]:
    starts: list[int] = []
    ends: list[int] = []
    for _ in range(count):
        length, pos = _length_at(data, pos, block_end)
        starts.append(pos)
        pos += length
        if pos > block_end:
            raise CorruptDataError("a record runs past the end of its batch")
        ends.append(pos)
    return starts, ends, pos


def _length_at(data: bytes, pos: int, block_end: int) -> tuple[int, int]:
    """A record length varint of any width: (length, position after it)."""
    raw = 0
    shift = 0
    p = pos
    while True:
        if p >= block_end or shift >= 7 * _MAX_VARINT_BYTES:
            raise CorruptDataError("a record length runs past the end of its batch")
        b = data[p]
        p += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    if raw & 1:
        raise CorruptDataError(f"negative record length at position {pos}")
    return raw >> 1, p


def _varints(
    arr: np.ndarray, pos: np.ndarray, *, speculative: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Zig-zag varints at every position of ``pos``: (values, widths).

    Record fields are almost always one or two bytes wide (lengths below 8 KiB, deltas below
    8192): both bytes are decoded for all positions at once, without branches; only the few
    wider varints go through :func:`_wide_varints`. With ``speculative`` (positions that are
    only a guess, as in :func:`_predicted_bounds`) a run of more than 10 bytes with the high
    bit set is no varint: its width comes back 0 instead of raising.
    """
    b0 = arr[pos]
    b1 = arr[pos + 1]
    second = (b0 >> 7).astype(np.int64)  # 1 where a second byte follows
    raw = (b0 & 0x7F).astype(np.int64) | ((b1 & 0x7F).astype(np.int64) << 7) * second
    width = 1 + second
    wide = np.flatnonzero((b0 & b1) >= 0x80)  # a third byte follows
    if len(wide):
        _wide_varints(arr, pos, wide, raw, width, speculative)
    return (raw >> 1) ^ -(raw & 1), width


def _wide_varints(
    arr: np.ndarray,
    pos: np.ndarray,
    wide: np.ndarray,
    raw: np.ndarray,
    width: np.ndarray,
    speculative: bool,
) -> None:
    """Adds the bytes from the third on to ``raw`` and ``width`` at the indices ``wide``."""
    at = pos[wide] + 2
    shift = 14
    while len(wide):
        if shift >= 7 * _MAX_VARINT_BYTES:
            if speculative:
                width[wide] = 0
                return
            raise CorruptDataError("a varint is longer than 10 bytes")
        b = arr[at]
        raw[wide] |= (b & 0x7F).astype(np.int64) << shift
        width[wide] += 1
        more = np.flatnonzero(b >= 0x80)
        wide = wide[more]
        at = at[more] + 1
        shift += 7


def _gather_fixed(arr: np.ndarray, starts: np.ndarray, size: int) -> bytes:
    """``size`` bytes at each start. Rows come in runs at a constant stride (records of one
    size): each run is a ``(rows, stride)`` reshape of the buffer cut to ``size`` columns,
    copied at memcpy speed, with no index arrays."""
    n = len(starts)
    d = np.diff(starts)
    changes = (np.flatnonzero(d[1:] != d[:-1]) + 1).tolist()  # d[k] != d[k - 1]
    out = []
    lo = 0
    while lo < n:
        if lo == n - 1:
            out.append(arr[int(starts[lo]) : int(starts[lo]) + size].tobytes())
            break
        j = bisect.bisect_right(changes, lo)
        hi = changes[j] if j < len(changes) else n - 1  # rows lo..hi share stride d[lo]
        stride = int(d[lo])
        if stride < size:  # cannot happen for well-formed records; stay correct anyway
            return arr[starts[:, None] + np.arange(size)].tobytes()
        first = int(starts[lo])
        rows = hi - lo + 1
        if first + rows * stride <= len(arr):
            out.append(arr[first : first + rows * stride].reshape(rows, stride)[:, :size].tobytes())
        else:  # the last row's stride would run past the buffer: copy it on its own
            whole = rows - 1
            head = arr[first : first + whole * stride].reshape(whole, stride)
            out.append(head[:, :size].tobytes())
            last = first + whole * stride
            out.append(arr[last : last + size].tobytes())
        lo = hi + 1
    return b"".join(out)


def _gather(arr: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> bytes:
    """The bytes ``arr[starts[i] : starts[i] + lengths[i]]`` back to back (lengths < 0 take
    nothing)."""
    sizes = np.maximum(lengths, 0)
    if not len(sizes):
        return b""
    first = int(sizes[0])
    if (sizes == first).all():
        if first == 0:
            return b""
        return _gather_fixed(arr, starts, first)
    total = int(sizes.sum())
    if total == 0:
        return b""
    # Index of every byte: each row's start, repeated per byte, plus its rank within the row.
    row_offsets = np.cumsum(sizes) - sizes
    index = np.repeat(starts - row_offsets, sizes) + np.arange(total)
    return arr[index].tobytes()


def _decode_blocks(
    blocks: list[bytes | memoryview],
    meta: list[tuple[int, int, int, int, int]],
    min_offset: int,
    end_offset: int,
    with_headers: bool,
    next_offset: int,
) -> Columns:
    # The padding is part of ``data``: every read below is bounded by a block end, not len().
    data = b"".join([*blocks, _PAD])
    block_ends = np.cumsum([len(b) for b in blocks])
    counts = [m[4] for m in meta]
    arr = np.frombuffer(data, dtype=np.uint8)
    starts, ends = _record_bounds(data, arr, block_ends, counts)
    p = starts + 1  # the attributes byte
    ts_delta, w = _varints(arr, p)
    p = p + w
    offset_delta, w = _varints(arr, p)
    p += w
    count_arr = np.asarray(counts, dtype=np.int64)
    offsets = np.repeat(np.asarray([m[0] for m in meta], dtype=np.int64), count_arr) + offset_delta
    lo = int(np.searchsorted(offsets, min_offset, side="left"))
    hi = int(np.searchsorted(offsets, end_offset, side="left"))
    if lo >= hi:
        return _empty(with_headers, next_offset)
    if not (np.diff(offsets) > 0).all():
        raise CorruptDataError("record offsets do not increase")
    sl = slice(lo, hi)
    p, ends, ts_delta, offsets = p[sl], ends[sl], ts_delta[sl], offsets[sl]
    key_len, w = _varints(arr, p)
    p += w
    key_start = p
    p = p + np.maximum(key_len, 0)
    value_len, w = _varints(arr, p)
    p += w
    value_start = p
    p = p + np.maximum(value_len, 0)
    header_count, w = _varints(arr, p)
    p += w
    if (key_len < -1).any() or (value_len < -1).any() or (header_count < 0).any():
        raise CorruptDataError("a record has a negative length or header count")
    with_hdrs = np.flatnonzero(header_count > 0)
    plain = header_count == 0
    if not (p[plain] == ends[plain]).all():
        raise CorruptDataError("a record's length does not match its fields")
    headers: list[tuple[Header, ...]] | None = [()] * (hi - lo) if with_headers else None
    for i in with_hdrs.tolist():
        parsed = _parse_headers(data, int(p[i]), int(ends[i]), int(header_count[i]))
        if headers is not None:
            headers[i] = parsed
    ts_type = np.repeat(np.asarray([m[3] for m in meta], dtype=np.int32), count_arr)[sl]
    base_ts = np.repeat(np.asarray([m[1] for m in meta], dtype=np.int64), count_arr)[sl]
    max_ts = np.repeat(np.asarray([m[2] for m in meta], dtype=np.int64), count_arr)[sl]
    timestamps = np.where(ts_type == 1, max_ts, base_ts + ts_delta)
    return Columns(
        offsets,
        timestamps,
        ts_type,
        BinaryColumn(key_len.astype(np.int32), _gather(arr, key_start, key_len)),
        BinaryColumn(value_len.astype(np.int32), _gather(arr, value_start, value_len)),
        headers,
        next_offset,
    )


def _varint_at(data: bytes, p: int, end: int) -> tuple[int, int]:
    """(zig-zag decoded value, position after it) of the varint at ``data[p]``."""
    raw = 0
    shift = 0
    while True:
        if p >= end or shift >= 7 * _MAX_VARINT_BYTES:
            raise CorruptDataError("a header field runs past the end of its record")
        b = data[p]
        p += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            return (raw >> 1) ^ -(raw & 1), p
        shift += 7


def _parse_headers(data: bytes, p: int, end: int, count: int) -> tuple[Header, ...]:
    out: list[Header] = []
    for _ in range(count):
        key_len, p = _varint_at(data, p, end)
        if key_len < 0 or p + key_len > end:
            raise CorruptDataError("a header key has a bad length")
        try:
            key = data[p : p + key_len].decode("utf-8")
        except UnicodeDecodeError:
            raise CorruptDataError("a header key is not UTF-8") from None
        p += key_len
        value_len, p = _varint_at(data, p, end)
        if value_len < -1 or p + max(value_len, 0) > end:
            raise CorruptDataError("a header value has a bad length")
        value = None if value_len < 0 else data[p : p + value_len]
        p += max(value_len, 0)
        out.append((key, value))
    if p != end:
        raise CorruptDataError("a record's length does not match its headers")
    return tuple(out)
