"""`kraftlog log dump` through the real command line entry point."""

from __future__ import annotations

import os
import struct
import warnings

import pytest

from common.log_config import LogConfig
from deploy.cli import main

from .conftest import batch

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record.default_records import DefaultRecordBatchBuilder


@pytest.fixture
def segment_dir(open_log):
    log = open_log(LogConfig(index_interval_bytes=100))
    for i in range(20):
        log.append(batch(3, tag=i, timestamp=5000 + i), leader_epoch=7)
    log.close()
    return log.dir_path


def test_dump_batches_records_and_verify_indexes(segment_dir, capsys) -> None:
    path = os.path.join(segment_dir, "00000000000000000000.log")
    rc = main(["log", "dump", "--records", "--verify-index", path])
    out = capsys.readouterr().out
    assert rc == 0, out
    lines = out.splitlines()
    assert lines[0] == f"Dumping {path}"
    batch_lines = [ln for ln in lines if ln.startswith("baseOffset:")]
    assert len(batch_lines) == 20
    assert batch_lines[1].startswith("baseOffset: 3 lastOffset: 5 count: 3 baseSequence: -1")
    assert "partitionLeaderEpoch: 7" in batch_lines[1]
    assert "CreateTime: 5003" in batch_lines[1] and "compresscodec: none" in batch_lines[1]
    assert batch_lines[1].endswith("isvalid: true")
    record_lines = [ln for ln in lines if ln.startswith("| offset:")]
    assert len(record_lines) == 60
    assert record_lines[4].startswith("| offset: 4 CreateTime: 5002 keySize: 1 valueSize: 20")
    assert record_lines[4].endswith("key: k payload: 1-1:" + "x" * 16)
    assert sum("matches its log" in ln for ln in lines) == 2


def test_index_files_dump_their_entries(segment_dir, capsys) -> None:
    index = os.path.join(segment_dir, "00000000000000000000.index")
    timeindex = os.path.join(segment_dir, "00000000000000000000.timeindex")
    assert main(["log", "dump", index, timeindex]) == 0
    out = capsys.readouterr().out
    assert "offset: 2 position: " not in out  # the first batch is never indexed
    assert any(ln.startswith("offset: ") for ln in out.splitlines())
    assert any(ln.startswith("timestamp: ") for ln in out.splitlines())
    # A wrong entry is caught by --verify-index.
    with open(index, "r+b") as f:
        f.write(struct.pack(">II", 1, 12345))
    assert main(["log", "dump", "--verify-index", index]) == 1
    assert "no batch starts there" in capsys.readouterr().out


def test_corrupt_batch_prints_what_it_can_and_fails(segment_dir, capsys) -> None:
    path = os.path.join(segment_dir, "00000000000000000000.log")
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.seek(size // 2 + 30)  # inside a batch, past the fields the CRC leaves out
        b = f.read(1)
        f.seek(size // 2 + 30)
        f.write(bytes([b[0] ^ 0xFF]))
    with open(path, "ab") as f:
        f.write(b"\x00" * 30)  # a torn tail
    rc = main(["log", "dump", "--records", path])
    out = capsys.readouterr().out
    assert rc == 1
    assert "isvalid: false" in out
    assert "Found 30 invalid bytes at the end" in out
    assert sum(ln.startswith("baseOffset:") for ln in out.splitlines()) == 20


def test_segment_written_by_kafka_python_dumps(tmp_path, capsys) -> None:
    path = tmp_path / "00000000000000000100.log"
    data = bytearray()
    offset = 100
    for codec in (0, 1, 4):
        builder = DefaultRecordBatchBuilder(2, codec, False, 55, 2, offset - 100, 1 << 20)
        for i in range(5):
            builder.append(i, 9000 + i, b"key-%d" % i, b"\xff\xfe" * 40, [("trace", b"abc")])
        built = builder.build()
        struct.pack_into(">q", built, 0, offset)  # a broker assigns the base offset
        data += built
        offset += 5
    path.write_bytes(bytes(data))
    assert main(["log", "dump", "--print-data-log", str(path)]) == 0
    out = capsys.readouterr().out
    batch_lines = [ln for ln in out.splitlines() if ln.startswith("baseOffset:")]
    assert [ln.split()[1] for ln in batch_lines] == ["100", "105", "110"]
    assert "compresscodec: gzip" in batch_lines[1] and "compresscodec: zstd" in batch_lines[2]
    assert "producerId: 55 producerEpoch: 2" in batch_lines[0]
    assert "baseSequence: 5 lastSequence: 9" in batch_lines[1]
    rec = next(ln for ln in out.splitlines() if ln.startswith("| offset: 113 "))
    assert "headerKeys: [trace]" in rec and "key: key-3" in rec
    assert "payload: 0x" + "fffe" * 40 in rec
    assert "sequence: 13" in rec


def test_bad_paths_are_errors_not_tracebacks(tmp_path, capsys) -> None:
    assert main(["log", "dump", str(tmp_path / "missing" / "00000000000000000000.log")]) == 2
    assert main(["log", "dump", str(tmp_path / "x.txt")]) == 2
    weird = tmp_path / "abc.log"
    weird.write_bytes(b"")
    assert main(["log", "dump", str(weird)]) == 2
    err = capsys.readouterr().err
    assert "No such file" in err and "not a .log" in err and "base offset" in err


def test_control_records_and_the_transaction_index_dump(open_log, capsys) -> None:
    from data_plane.storage.record_codec import Record, build_batch

    log = open_log()
    txn = build_batch(
        [Record(None, b"t", 1)],
        producer_id=9,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    log.append(txn, 0)
    log.append_end_txn_marker(
        producer_id=9, producer_epoch=0, coordinator_epoch=4, committed=False, leader_epoch=0
    )
    log.close()
    path = os.path.join(log.dir_path, "00000000000000000000.log")
    rc = main(["log", "dump", "--records", "--txn-index", path])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "isTransactional: true isControl: true" in out
    assert "| offset: 1 CreateTime:" in out and "endTxnMarker: ABORT coordinatorEpoch: 4" in out
    assert "version: 0 producerId: 9 firstOffset: 0 lastOffset: 1 lastStableOffset: 2" in out
    txn_index = path[:-4] + ".txnindex"
    with open(txn_index, "ab") as f:
        f.write(b"\x00\x01")  # a torn trailing entry: reported, the file is not changed
    rc = main(["log", "dump", txn_index])
    out = capsys.readouterr().out
    assert rc == 1 and "2 trailing bytes are not a whole entry" in out
    assert os.path.getsize(txn_index) == 36
