"""``kraftlog log dump PATH...``: print segment files, like Kafka's kafka-dump-log.

For a ``.log`` file, one line per batch::

    baseOffset: 0 lastOffset: 2 count: 3 baseSequence: -1 lastSequence: -1 producerId: -1
    producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false
    position: 0 CreateTime: 1700000000000 size: 120 magic: 2 compresscodec: none
    crc: 123456 isvalid: true

(on one line), and with ``--records`` (alias ``--print-data-log``) one line per record::

    | offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 5 sequence: -1
    headerKeys: [h] key: k payload: hello

Keys and values print as UTF-8 text when they decode, else as ``0x`` hex; null prints
``null``. A control batch's record prints its end-transaction marker (``endTxnMarker: COMMIT
coordinatorEpoch: 3``). ``.index``, ``.timeindex`` and ``.txnindex`` files print their
entries (``--txn-index`` with a ``.log`` also prints the segment's aborted transactions);
``--verify-index`` checks the indexes against the segment's ``.log`` (and, given a ``.log``,
checks its two indexes). The
command reads files only (never creates or repairs), prints what it can of a damaged file, and
exits 1 after a corrupt batch or an index mismatch, 2 for an unreadable path.
"""

from __future__ import annotations

import argparse
import bisect
import os
import struct
import sys
from collections.abc import Iterator
from typing import TextIO

from common.compression import codec_name
from common.control_records import decode_end_txn_marker
from common.errors import ApiError
from common.record_batch import (
    HEADER_SIZE,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    RecordBatchHeader,
    compute_crc,
    parse_header,
)
from data_plane.storage.record_codec import DecodedRecord, decode_records
from data_plane.storage.transaction_index import TXN_INDEX_SUFFIX, decode_entries
from deploy.command_group import add_command_group

_INDEX_ENTRY = struct.Struct(">II")
_TIME_INDEX_ENTRY = struct.Struct(">qI")
# Largest batch the dump will read into memory; anything bigger is reported as corrupt.
MAX_DUMP_BATCH_BYTES = 256 * 1024 * 1024


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    _, log_sub = add_command_group(subparsers, "log", "inspect partition log files")
    dump = log_sub.add_parser(
        "dump",
        help="print the batches of .log files or the entries of .index/.timeindex files",
    )
    dump.add_argument(
        "paths", nargs="+", metavar="PATH", help=".log, .index, .timeindex or .txnindex"
    )
    dump.add_argument(
        "--records",
        "--print-data-log",
        dest="records",
        action="store_true",
        help="also print every record (offset, timestamp, key, value, headers)",
    )
    dump.add_argument(
        "--txn-index",
        action="store_true",
        help="with a .log, also print its segment's aborted transactions (.txnindex)",
    )
    dump.add_argument(
        "--verify-index",
        action="store_true",
        help="check .index and .timeindex entries against the .log",
    )
    dump.set_defaults(func=run_dump)


def run_dump(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    rc = 0
    for path in args.paths:
        try:
            if path.endswith(".log"):
                ok = dump_log(path, out, records=args.records)
                if args.txn_index:
                    ok = dump_txn_index(path[:-4] + TXN_INDEX_SUFFIX, out, missing_ok=True) and ok
                if args.verify_index:
                    ok = verify_index(path[:-4] + ".index", out) and ok
                    ok = verify_time_index(path[:-4] + ".timeindex", out) and ok
            elif path.endswith(".timeindex"):
                ok = dump_time_index(path, out)
                if args.verify_index:
                    ok = verify_time_index(path, out) and ok
            elif path.endswith(TXN_INDEX_SUFFIX):
                ok = dump_txn_index(path, out)
            elif path.endswith(".index"):
                ok = dump_index(path, out)
                if args.verify_index:
                    ok = verify_index(path, out) and ok
            else:
                print(f"{path}: not a .log, .index, .timeindex or .txnindex file", file=sys.stderr)
                rc = max(rc, 2)
                continue
        except OSError as e:
            print(f"{path}: {e.strerror or e}", file=sys.stderr)
            rc = max(rc, 2)
            continue
        if not ok:
            rc = max(rc, 1)
    return rc


def _base_offset(path: str) -> int:
    name = os.path.basename(path).split(".", 1)[0]
    if not name.isdigit():
        raise OSError(0, f"file name does not start with a base offset: {name!r}")
    return int(name)


# -- .log ------------------------------------------------------------------------------------


def _batches(f, size: int) -> Iterator[tuple[RecordBatchHeader, bytes | None, str]]:
    """(header, batch bytes or None, problem) for each batch; stops after a framing error."""
    pos = 0
    while pos < size:
        head = os.pread(f.fileno(), HEADER_SIZE, pos)
        try:
            header = parse_header(head, 0)
        except ApiError as e:
            # The header was read on its own, so the parser's position is 0: restate it.
            why = str(e).replace(" at position 0", "")
            yield RecordBatchHeader((0,) * 13, pos), None, f"at position {pos}: {why}"
            return
        header.position = pos
        batch_size = header.batch_length + LOG_OVERHEAD
        if batch_size > MAX_DUMP_BATCH_BYTES or pos + batch_size > size:
            yield (
                header,
                None,
                (f"batch at position {pos} claims {batch_size} bytes, {size - pos} remain"),
            )
            return
        data = os.pread(f.fileno(), batch_size, pos)
        problem = "" if compute_crc(data, 0, batch_size) == header.crc else "crc mismatch"
        yield header, data, problem
        pos += batch_size


def dump_log(path: str, out: TextIO, *, records: bool) -> bool:
    ok = True
    base_offset = _base_offset(path)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        print(f"Dumping {path}", file=out)
        print(f"Log starting offset: {base_offset}", file=out)
        for header, data, problem in _batches(f, size):
            if data is None:
                print(
                    f"Found {size - header.position} invalid bytes at the end of "
                    f"{os.path.basename(path)} (position {header.position}): {problem}",
                    file=out,
                )
                return False
            print(_batch_line(header, valid=not problem), file=out)
            if problem:
                ok = False
            if records:
                ok = _print_records(data, header, out) and ok
    return ok


def _ts_label(header: RecordBatchHeader) -> str:
    return "LogAppendTime" if header.timestamp_type == LOG_APPEND_TIME else "CreateTime"


def _batch_line(h: RecordBatchHeader, *, valid: bool) -> str:
    return (
        f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.records_count} "
        f"baseSequence: {h.base_sequence} lastSequence: {h.last_sequence} "
        f"producerId: {h.producer_id} producerEpoch: {h.producer_epoch} "
        f"partitionLeaderEpoch: {h.partition_leader_epoch} "
        f"isTransactional: {str(h.is_transactional).lower()} "
        f"isControl: {str(h.is_control).lower()} position: {h.position} "
        f"{_ts_label(h)}: {h.max_timestamp} size: {h.size_in_bytes} magic: {h.magic} "
        f"compresscodec: {codec_name(h.compression)} crc: {h.crc} "
        f"isvalid: {str(valid).lower()}"
    )


def _print_records(data: bytes, header: RecordBatchHeader, out: TextIO) -> bool:
    try:
        _, decoded = decode_records(data, verify_crc=False)
    except ApiError as e:
        print(f"| records not decodable: {e}", file=out)
        return False
    for r in decoded:
        print(_record_line(r, header), file=out)
    return True


def _record_line(r: DecodedRecord, header: RecordBatchHeader) -> str:
    key_size = -1 if r.key is None else len(r.key)
    value_size = -1 if r.value is None else len(r.value)
    header_keys = ",".join(k for k, _ in r.headers)
    head = (
        f"| offset: {r.offset} {_ts_label(header)}: {r.timestamp} keySize: {key_size} "
        f"valueSize: {value_size} sequence: {r.sequence} headerKeys: [{header_keys}] "
    )
    if header.is_control:
        try:
            marker = decode_end_txn_marker(r.key, r.value)
        except ApiError as e:
            return head + f"controlRecord: not decodable ({e})"
        if marker is None:
            return head + f"controlRecord: unknown type, key: {_show(r.key)}"
        return (
            head + f"endTxnMarker: {marker.control_type.name} "
            f"coordinatorEpoch: {marker.coordinator_epoch}"
        )
    return head + f"key: {_show(r.key)} payload: {_show(r.value)}"


def _show(data: bytes | None) -> str:
    if data is None:
        return "null"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "0x" + data.hex()
    return text if text.isprintable() else "0x" + data.hex()


# -- indexes ---------------------------------------------------------------------------------


def dump_txn_index(path: str, out: TextIO, *, missing_ok: bool = False) -> bool:
    """Print a ``.txnindex``'s aborted transactions; False if a trailing part is unreadable.
    A segment without one (``missing_ok``) has no aborted transaction."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        if not missing_ok:
            raise
        print(f"Dumping {path}\n(none: no aborted transaction in this segment)", file=out)
        return True
    entries, valid = decode_entries(data)
    print(f"Dumping {path}", file=out)
    for t in entries:
        print(
            f"version: 0 producerId: {t.producer_id} firstOffset: {t.first_offset} "
            f"lastOffset: {t.last_offset} lastStableOffset: {t.last_stable_offset}",
            file=out,
        )
    if valid != len(data):
        print(f"{path}: {len(data) - valid} trailing bytes are not a whole entry", file=out)
        return False
    return True


def _index_entries(path: str) -> list[tuple[int, int]]:
    """(absolute offset, position), stopping at the zero padding of an untrimmed file."""
    base = _base_offset(path)
    with open(path, "rb") as f:
        raw = f.read()
    entries: list[tuple[int, int]] = []
    for i, (rel, pos) in enumerate(_INDEX_ENTRY.iter_unpack(raw[: len(raw) // 8 * 8])):
        if i > 0 and rel == 0 and pos == 0:
            break
        entries.append((base + rel, pos))
    return entries


def _time_index_entries(path: str) -> list[tuple[int, int]]:
    """(timestamp, absolute offset), stopping at the zero padding of an untrimmed file."""
    base = _base_offset(path)
    with open(path, "rb") as f:
        raw = f.read()
    entries: list[tuple[int, int]] = []
    for ts, rel in _TIME_INDEX_ENTRY.iter_unpack(raw[: len(raw) // 12 * 12]):
        if ts == 0 and rel == 0 and entries:
            break
        entries.append((ts, base + rel))
    return entries


def dump_index(path: str, out: TextIO) -> bool:
    entries = _index_entries(path)
    print(f"Dumping {path}", file=out)
    for offset, position in entries:
        print(f"offset: {offset} position: {position}", file=out)
    return True


def dump_time_index(path: str, out: TextIO) -> bool:
    entries = _time_index_entries(path)
    print(f"Dumping {path}", file=out)
    for ts, offset in entries:
        print(f"timestamp: {ts} offset: {offset}", file=out)
    return True


def _log_headers(log_path: str) -> tuple[list[RecordBatchHeader], bool]:
    with open(log_path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        headers, ok = [], True
        for header, data, _problem in _batches(f, size):
            if data is None:
                ok = False
                break
            headers.append(header)
    return headers, ok


def verify_index(index_path: str, out: TextIO) -> bool:
    log_path = index_path[: -len(".index")] + ".log"
    headers, _ = _log_headers(log_path)
    by_position = {h.position: h for h in headers}
    problems = []
    prev = (-1, -1)
    for offset, position in _index_entries(index_path):
        h = by_position.get(position)
        if h is None:
            problems.append(f"entry offset {offset} position {position}: no batch starts there")
        elif h.last_offset != offset:
            problems.append(
                f"entry offset {offset} position {position}: the batch there ends at offset "
                f"{h.last_offset}"
            )
        if offset <= prev[0] or position <= prev[1]:
            problems.append(f"entry offset {offset} position {position}: not increasing")
        prev = (offset, position)
    return _report(index_path, problems, out)


def verify_time_index(time_index_path: str, out: TextIO) -> bool:
    log_path = time_index_path[: -len(".timeindex")] + ".log"
    headers, _ = _log_headers(log_path)
    bases = [h.base_offset for h in headers]
    running_max: list[int] = []
    for h in headers:
        running_max.append(max(h.max_timestamp, running_max[-1] if running_max else -1))
    problems = []
    prev_ts = -1
    for ts, offset in _time_index_entries(time_index_path):
        i = bisect.bisect_right(bases, offset) - 1
        if i < 0 or headers[i].last_offset < offset:
            problems.append(f"entry timestamp {ts} offset {offset}: no batch holds the offset")
            continue
        if running_max[i] != ts:
            problems.append(
                f"entry timestamp {ts} offset {offset}: largest timestamp up to that batch "
                f"is {running_max[i]}"
            )
        if ts <= prev_ts:
            problems.append(f"entry timestamp {ts} offset {offset}: not increasing")
        prev_ts = ts
    return _report(time_index_path, problems, out)


def _report(path: str, problems: list[str], out: TextIO) -> bool:
    if problems:
        print(f"Index mismatches in {path}:", file=out)
        for p in problems:
            print(f"  {p}", file=out)
        return False
    print(f"Index {path} matches its log", file=out)
    return True
