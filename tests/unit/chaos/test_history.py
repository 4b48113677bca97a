"""The history file: writer, reader, pairing."""

from __future__ import annotations

import itertools
import json
import os
import threading

import pytest

from chaos.history import (
    HistoryFormatError,
    HistoryWriter,
    Op,
    pair_operations,
    read_history,
    write_history,
)


def test_lines_and_merged_completion_values(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(os.fspath(tmp_path), "h.jsonl")
    ticks = iter([100.0, 100.5, 101.0, 101.25, 102.0])
    with HistoryWriter(path, clock=lambda: next(ticks), wall_clock=lambda: 7.0) as h:
        i = h.invoke("producer-0", "send", {"value": "v", "topic": "t", "partition": 2})
        h.nemesis_start("kill", [3], fault_id="k", signal="SIGKILL")
        h.ok(i, {"offset": 9})
        h.leader("t", 2, epoch=4, leader=1, source="metadata")
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    assert [line["index"] for line in lines] == [0, 1, 2, 3]
    assert [line["time"] for line in lines] == [0.5, 1.0, 1.25, 2.0]
    assert lines[2] == {
        "index": 2,
        "time": 1.25,
        "wall": 7.0,
        "process": "producer-0",
        "type": "ok",
        "f": "send",
        "ref": 0,
        "value": {"value": "v", "topic": "t", "partition": 2, "offset": 9},
    }
    assert lines[1]["value"] == {
        "phase": "start",
        "fault": "kill",
        "targets": [3],
        "id": "k",
        "signal": "SIGKILL",
    }
    assert lines[3]["process"] == "observer"
    ops = read_history(path)
    assert [op.to_json() for op in ops] == [
        json.dumps(line, separators=(",", ":")) for line in lines
    ]


def test_writer_rejects_misuse(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(os.fspath(tmp_path), "h.jsonl")
    h = HistoryWriter(path)
    with pytest.raises(ValueError, match="unknown operation"):
        h.invoke("p", "write", None)
    i = h.invoke("p", "poll", None)
    h.ok(i, {"records": []})
    with pytest.raises(ValueError, match="not an open invoke"):
        h.fail(i)
    with pytest.raises(ValueError, match="may not override"):
        h.nemesis_start("kill", phase="heal")
    h.close()
    with pytest.raises(ValueError, match="closed"):
        h.invoke("p", "poll", None)
    with pytest.raises(FileExistsError):
        HistoryWriter(path)  # never appends to, or clobbers, an earlier run's history


def test_threads_never_interleave_lines(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(os.fspath(tmp_path), "h.jsonl")
    per_thread = 300
    with HistoryWriter(path) as h:

        def work(n: int) -> None:
            for j in range(per_thread):
                i = h.invoke(f"p{n}", "send", {"value": f"{n}-{j}", "topic": "t", "partition": 0})
                h.info(i, {"error": "x" * 100})

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert h.open_invokes == 0
    ops = read_history(path)
    assert len(ops) == 4 * per_thread * 2
    assert all(a.time <= b.time for a, b in itertools.pairwise(ops))
    operations, events = pair_operations(ops)
    assert events == []
    assert all(op.completion is not None and op.type == "info" for op in operations)


def _op(index: int, op_type: str, process: str = "p", f: str = "poll", **kw: object) -> Op:
    return Op(index=index, time=float(index), process=process, type=op_type, f=f, **kw)


def test_torn_last_line_is_skipped_but_a_bad_middle_line_is_an_error(
    tmp_path: os.PathLike[str],
) -> None:
    path = os.path.join(os.fspath(tmp_path), "h.jsonl")
    write_history(path, [_op(0, "invoke"), _op(1, "ok")])
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"index": 2, "time": 2.0, "pro')
    assert len(read_history(path)) == 2
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n" + _op(3, "invoke").to_json() + "\n")
    with pytest.raises(HistoryFormatError, match="line 3: not JSON"):
        read_history(path)


def test_reader_rejects_gaps_and_bad_fields(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(os.fspath(tmp_path), "h.jsonl")
    write_history(path, [_op(0, "invoke"), _op(2, "ok")])
    with pytest.raises(HistoryFormatError, match="index 2, expected 1"):
        read_history(path)
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"index": 0, "time": 0, "process": "p", "type": "done", "f": "poll"}\n')
    with pytest.raises(HistoryFormatError, match="unknown type"):
        read_history(path)
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"index": 0, "process": "p", "type": "ok", "f": "poll"}\n')
    with pytest.raises(HistoryFormatError, match="missing field 'time'"):
        read_history(path)


def test_pairing_by_ref_and_by_process() -> None:
    ops = [
        _op(0, "invoke", "a", "send"),
        _op(1, "invoke", "a", "send"),
        _op(2, "ok", "a", "send", ref=0),  # completes the first of two in flight
        _op(3, "invoke", "b"),
        _op(4, "info", "nemesis", "nemesis", value={"phase": "start", "fault": "kill"}),
        _op(5, "fail", "b"),  # no ref: the latest open invoke of b
    ]
    operations, events = pair_operations(ops)
    assert [(o.invoke.index, o.completion.index if o.completion else None) for o in operations] == [
        (0, 2),
        (1, None),
        (3, 5),
    ]
    assert operations[1].type == "info"  # never completed: unknown
    assert [e.index for e in events] == [4]
    with pytest.raises(HistoryFormatError, match="completes send of a but is poll of b"):
        pair_operations([_op(0, "invoke", "a", "send"), _op(1, "ok", "b", ref=0)])
    with pytest.raises(HistoryFormatError, match="without an open invoke"):
        pair_operations([_op(0, "ok", "a")])
