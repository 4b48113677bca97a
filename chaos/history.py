"""The history of a chaos run: an append-only JSONL file, one operation per line.

Workloads, nemeses and the final reader append to one :class:`HistoryWriter`; the checker
(``chaos.checker``) reads it back with :func:`read_history`. The model is Jepsen's: a client
*invokes* an operation and later *completes* it with ``ok`` (it happened), ``fail`` (it
definitely did not happen) or ``info`` (the outcome is unknown, e.g. a timeout). An invoke
without a completion at the end of the file counts as ``info``.

Line format (one JSON object per line, UTF-8, ``\\n`` terminated, keys in this order)::

    {"index": 17, "time": 3.021455, "wall": 1763771000.123, "process": "producer-0",
     "type": "ok", "f": "send", "ref": 12,
     "value": {"value": "v-0-000042", "topic": "chaos", "partition": 1, "offset": 40}}

- ``index``   int, 0, 1, 2, ... in file order, no gaps (assigned under the writer's lock).
- ``time``    float seconds on the monotonic clock since the writer opened; never decreases
              along the file. The checker orders everything by it.
- ``wall``    float Unix seconds, only to match events against node logs.
- ``process`` str naming the actor: one per client thread (``producer-0``, ``consumer-3``),
              ``nemesis`` for faults, ``observer`` for leader observations, ``final-0`` ...
- ``type``    ``invoke`` | ``ok`` | ``fail`` | ``info``.
- ``f``       the operation, one of :data:`OPERATIONS` (below).
- ``ref``     on a completion: the index of the invoke it completes (so one process may have
              several operations in flight, as asynchronous producers do). Absent on invokes
              and on standalone events. A completion without ``ref`` completes the latest
              open invoke of the same process (Jepsen's rule).
- ``value``   a JSON object (or null). A completion's value is the invoke's value updated
              with the result fields, so every line is self-contained.

Operations and their values:

``send`` (invoke -> ok | fail | info): one record produced.
    invoke ``{"value": str, "topic": str, "partition": int}`` plus ``"acks"`` (``"all"``
    when absent; acks=1 losses are not violations) and ``"idempotent"`` (true when absent;
    duplicates of a non-idempotent producer are not violations). ``value`` is globally
    unique.
    ok adds ``"offset": int`` (the offset the broker acknowledged; -1 if the client could
    not tell it: the value must then still be read, at any offset). fail (the broker
    definitely did not append it, e.g. NOT_ENOUGH_REPLICAS) and info (unknown: timeout,
    connection lost, NOT_ENOUGH_REPLICAS_AFTER_APPEND) add ``"error": str``.
``poll`` (invoke -> ok | fail | info): one consumer poll.
    invoke value null or descriptive, with ``"isolation": "read_committed"`` when the
    consumer reads committed data only (``read_uncommitted`` when absent); ok adds
    ``"records": [[topic, partition, offset, value], ...]`` in the order the consumer
    returned them.
``assign`` (invoke -> ok): the partitions a consumer reads from now on; also written by
    group consumers at every rebalance (in the assignment callback). ok value
    ``{"partitions": [[topic, partition, position], ...], "group": str | null}`` with
    ``position`` the offset of the next record the consumer will read, or null when the
    consumer does not know it (a group member resuming from a committed offset). An assign
    replaces the previous assignment of that process.
``final-read`` (invoke -> ok | fail | info): after the heal, a fresh consumer reads one
    partition from offset 0 to its high watermark. invoke ``{"topic", "partition"}``
    (plus ``"start_offset"`` when the log no longer starts at 0, and ``"isolation"`` as for
    ``poll``); ok adds ``"high_watermark": int`` and ``"records": [[topic, partition,
    offset, value], ...]``, and means every offset below the high watermark was read
    (anything less is recorded as info, or is an ``incomplete-final-read``). A read_committed
    final read also adds ``"last_stable_offset": int``: it read every committed record below
    it, and it equals the high watermark unless a transaction was still open.
``txn`` (invoke -> ok | fail | info): one transaction of a transactional producer.
    invoke ``{"id": str, "intent": "commit" | "abort", "writes": [[topic, partition, value],
    ...]}``; a consume-transform-produce transaction adds ``"group": str``, ``"offsets":
    [[topic, partition, next_offset], ...]`` (committed with the transaction) and ``"reads":
    [[topic, partition, offset, value], ...]`` (the input records it transformed). ``id`` and
    every written value are globally unique; a transform's output value is
    ``<input value>|<transaction id>`` (:func:`transform_output`).
    ok = the transaction ended as intended, with ``"outcome": "commit" | "abort"``; a commit
    also adds ``"commit_at"``, the history time at which the client began to commit (no
    read_committed reader may see a write of the transaction before it). fail = definitely
    not committed (the coordinator acknowledged an abort); info = unknown (a commit that
    timed out, a fenced producer). A transaction whose intent is ``abort`` never asks for a
    commit, so it can never become visible.
``group-offsets`` (invoke -> ok | info): after the final read, the committed offsets of a
    consumer group (OffsetFetch of stable offsets). invoke ``{"group": str}``; ok adds
    ``"offsets": [[topic, partition, offset], ...]``.
``nemesis`` (standalone ``info`` events): ``{"phase": "start" | "heal", "fault": str,
    "targets": [...], "id": str | null, ...}``. A fault window runs from a ``start`` to the
    ``heal`` with the same ``id`` (or, without ids, the same ``fault``); a heal with
    ``"fault": "all"`` closes every open window.
``leader`` (standalone ``info`` events): an observed leader, from metadata responses or node
    status. ``{"topic": str, "partition": int, "epoch": int, "leader": int, "source": str}``;
    the controller quorum is recorded as topic :data:`CONTROLLER_TOPIC`, partition 0.

Thread-safety: :class:`HistoryWriter` methods may be called from any thread; each line is
written and flushed under one lock, so lines never interleave and index/time order agree.
:func:`read_history` tolerates a torn last line (the runner was killed mid-write) and raises
:class:`HistoryFormatError` for any other malformed line.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

INVOKE = "invoke"
OK = "ok"
FAIL = "fail"
INFO = "info"
TYPES = frozenset({INVOKE, OK, FAIL, INFO})
COMPLETIONS = frozenset({OK, FAIL, INFO})

SEND = "send"
POLL = "poll"
ASSIGN = "assign"
FINAL_READ = "final-read"
NEMESIS = "nemesis"
LEADER = "leader"
TXN = "txn"
GROUP_OFFSETS = "group-offsets"
OPERATIONS = frozenset({SEND, POLL, ASSIGN, FINAL_READ, NEMESIS, LEADER, TXN, GROUP_OFFSETS})
READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"

NEMESIS_PROCESS = "nemesis"
OBSERVER_PROCESS = "observer"
# Kafka's name for the KRaft metadata log; leader observations of the controller quorum use it.
CONTROLLER_TOPIC = "__cluster_metadata"
HEAL_ALL = "all"

# A record as consumers report it: (topic, partition, offset, value).
Record = tuple[str, int, int, str]


def transform_output(input_value: str, txn_id: str) -> str:
    """The value a transform transaction writes for ``input_value``: unique per attempt,
    and naming its input (:func:`transform_input`)."""
    return f"{input_value}|{txn_id}"


def transform_input(output_value: str) -> str:
    """The input value an output value was made from (inverse of :func:`transform_output`)."""
    return output_value.rpartition("|")[0]


class HistoryFormatError(ValueError):
    """A history line is not valid JSON or breaks the format; the message names the line."""


@dataclass(frozen=True, slots=True)
class Op:
    """One history line. ``value`` is the decoded JSON object (or None)."""

    index: int
    time: float
    process: str
    type: str
    f: str
    value: Any = None
    ref: int | None = None
    wall: float | None = None

    def to_json(self) -> str:
        obj: dict[str, Any] = {
            "index": self.index,
            "time": self.time,
            "wall": self.wall,
            "process": self.process,
            "type": self.type,
            "f": self.f,
        }
        if self.ref is not None:
            obj["ref"] = self.ref
        obj["value"] = self.value
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, line: str, *, lineno: int = 0) -> Op:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise HistoryFormatError(f"line {lineno}: not JSON: {e}") from None
        return cls.from_dict(obj, lineno=lineno)

    @classmethod
    def from_dict(cls, obj: Any, *, lineno: int = 0) -> Op:
        if not isinstance(obj, dict):
            raise HistoryFormatError(f"line {lineno}: expected a JSON object")
        try:
            index, t, process = obj["index"], obj["time"], obj["process"]
            op_type, f = obj["type"], obj["f"]
        except KeyError as e:
            raise HistoryFormatError(f"line {lineno}: missing field {e.args[0]!r}") from None
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise HistoryFormatError(f"line {lineno}: index must be an int >= 0, got {index!r}")
        if not isinstance(t, int | float) or isinstance(t, bool):
            raise HistoryFormatError(f"line {lineno}: time must be a number, got {t!r}")
        if op_type not in TYPES:
            raise HistoryFormatError(f"line {lineno}: unknown type {op_type!r}")
        if not isinstance(f, str):
            raise HistoryFormatError(f"line {lineno}: f must be a string, got {f!r}")
        ref = obj.get("ref")
        if ref is not None and (not isinstance(ref, int) or isinstance(ref, bool)):
            raise HistoryFormatError(f"line {lineno}: ref must be an int, got {ref!r}")
        wall = obj.get("wall")
        return cls(
            index=index,
            time=float(t),
            process=str(process),
            type=op_type,
            f=f,
            value=obj.get("value"),
            ref=ref,
            wall=float(wall) if isinstance(wall, int | float) else None,
        )


class HistoryWriter:
    """Appends operations to a JSONL history (format: module docstring). Thread-safe.

    ``clock`` (monotonic seconds) and ``wall_clock`` are injectable for tests. Each line is
    flushed to the OS as it is written, so a crash of the runner loses at most the line being
    written; ``fsync=True`` also fsyncs every line (slow, for runs where the host may die).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        fsync: bool = False,
    ) -> None:
        self.path = os.fspath(path)
        self._clock = clock
        self._wall_clock = wall_clock
        self._fsync = fsync
        self._lock = threading.Lock()
        self._file: TextIO | None = open(self.path, "x", encoding="utf-8")  # noqa: SIM115
        self._t0 = clock()
        self._next_index = 0
        # Invokes not yet completed: index -> (process, f, value), to fill in completions.
        self._open: dict[int, tuple[str, str, Any]] = {}

    # -- client operations -------------------------------------------------------------

    def invoke(self, process: str, f: str, value: Mapping[str, Any] | None = None) -> int:
        """Record the start of an operation; returns its index, to pass to a completion."""
        if f not in OPERATIONS:
            raise ValueError(f"unknown operation {f!r}; expected one of {sorted(OPERATIONS)}")
        copied = dict(value) if value is not None else None
        with self._lock:
            index = self._append_locked(process, INVOKE, f, copied, None)
            self._open[index] = (process, f, copied)
        return index

    def ok(self, invoke_index: int, result: Mapping[str, Any] | None = None) -> int:
        """The operation happened; ``result`` fields (``offset``, ``records``...) are merged
        into the invoke's value."""
        return self._complete(invoke_index, OK, result)

    def fail(self, invoke_index: int, result: Mapping[str, Any] | None = None) -> int:
        """The operation definitely did not happen (add ``error``)."""
        return self._complete(invoke_index, FAIL, result)

    def info(self, invoke_index: int, result: Mapping[str, Any] | None = None) -> int:
        """The outcome is unknown (a timeout, a lost connection; add ``error``)."""
        return self._complete(invoke_index, INFO, result)

    # -- standalone events -------------------------------------------------------------

    def nemesis_start(
        self,
        fault: str,
        targets: Iterable[Any] = (),
        *,
        fault_id: str | None = None,
        **detail: Any,
    ) -> int:
        """A fault begins (``fault`` e.g. ``kill``, ``partition``; ``targets`` node ids or
        links). ``detail`` adds JSON fields (``seed``, ``mode``...)."""
        return self._nemesis("start", fault, targets, fault_id, detail)

    def nemesis_heal(
        self,
        fault: str,
        targets: Iterable[Any] = (),
        *,
        fault_id: str | None = None,
        **detail: Any,
    ) -> int:
        """A fault ends; ``fault="all"`` (:data:`HEAL_ALL`) closes every open fault window."""
        return self._nemesis("heal", fault, targets, fault_id, detail)

    def leader(
        self, topic: str, partition: int, epoch: int, leader: int, *, source: str = ""
    ) -> int:
        """An observation: ``leader`` leads ``topic``/``partition`` in leader epoch ``epoch``."""
        value = {
            "topic": topic,
            "partition": partition,
            "epoch": epoch,
            "leader": leader,
            "source": source,
        }
        return self.event(OBSERVER_PROCESS, LEADER, value)

    def event(self, process: str, f: str, value: Mapping[str, Any] | None) -> int:
        """A standalone ``info`` line (no invoke): nemesis events and observations."""
        if f not in OPERATIONS:
            raise ValueError(f"unknown operation {f!r}; expected one of {sorted(OPERATIONS)}")
        with self._lock:
            return self._append_locked(
                process, INFO, f, dict(value) if value is not None else None, None
            )

    # -- lifecycle ---------------------------------------------------------------------

    @property
    def open_invokes(self) -> int:
        """How many invokes have no completion yet."""
        with self._lock:
            return len(self._open)

    def elapsed_s(self) -> float:
        """Seconds since the history began, on the clock the ``time`` fields use."""
        return self._clock() - self._t0

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------------

    def _nemesis(
        self,
        phase: str,
        fault: str,
        targets: Iterable[Any],
        fault_id: str | None,
        detail: Mapping[str, Any],
    ) -> int:
        value: dict[str, Any] = {
            "phase": phase,
            "fault": fault,
            "targets": list(targets),
            "id": fault_id,
        }
        for key, item in detail.items():
            if key in value:
                raise ValueError(f"nemesis detail may not override {key!r}")
            value[key] = item
        return self.event(NEMESIS_PROCESS, NEMESIS, value)

    def _complete(self, invoke_index: int, op_type: str, result: Mapping[str, Any] | None) -> int:
        with self._lock:
            try:
                process, f, value = self._open.pop(invoke_index)
            except KeyError:
                raise ValueError(
                    f"index {invoke_index} is not an open invoke (completed twice, or unknown)"
                ) from None
            merged: dict[str, Any] | None
            if result is None:
                merged = value
            else:
                merged = dict(value) if value is not None else {}
                merged.update(result)
            return self._append_locked(process, op_type, f, merged, invoke_index)

    def _append_locked(
        self, process: str, op_type: str, f: str, value: Any, ref: int | None
    ) -> int:
        if self._file is None:
            raise ValueError(f"history {self.path} is closed")
        op = Op(
            index=self._next_index,
            time=round(self._clock() - self._t0, 6),
            process=process,
            type=op_type,
            f=f,
            value=value,
            ref=ref,
            wall=round(self._wall_clock(), 6),
        )
        self._file.write(op.to_json() + "\n")
        self._file.flush()
        if self._fsync:
            os.fsync(self._file.fileno())
        self._next_index += 1
        return op.index


def iter_history(path: str | os.PathLike[str]) -> Iterator[Op]:
    """Yield the operations of a history file in order (torn last line skipped)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    # A file written to the end ends with "\n", so the last element is "". Anything else there
    # is a line the writer did not finish: ignore it rather than reject the whole run.
    last = lines.pop()
    if last.strip():
        try:
            Op.from_json(last, lineno=len(lines) + 1)
        except HistoryFormatError:
            last = ""
        if last:
            lines.append(last)
    expected = 0
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        op = Op.from_json(line, lineno=lineno)
        if op.index != expected:
            raise HistoryFormatError(f"line {lineno}: index {op.index}, expected {expected}")
        expected += 1
        yield op


def read_history(path: str | os.PathLike[str]) -> list[Op]:
    """All operations of a history file (see :func:`iter_history`)."""
    return list(iter_history(path))


def write_history(path: str | os.PathLike[str], ops: Iterable[Op]) -> None:
    """Write ``ops`` as a history file verbatim (for tools and tests that build histories)."""
    with open(path, "w", encoding="utf-8") as f:
        for op in ops:
            f.write(op.to_json() + "\n")


@dataclass(frozen=True, slots=True)
class Operation:
    """An invoke paired with its completion; ``completion`` is None if the run ended first,
    and ``type`` is then ``info`` (unknown outcome)."""

    invoke: Op
    completion: Op | None

    @property
    def type(self) -> str:
        return self.completion.type if self.completion is not None else INFO

    @property
    def f(self) -> str:
        return self.invoke.f

    @property
    def process(self) -> str:
        return self.invoke.process

    @property
    def value(self) -> Any:
        return self.completion.value if self.completion is not None else self.invoke.value

    @property
    def end_time(self) -> float | None:
        return self.completion.time if self.completion is not None else None


def pair_operations(ops: Iterable[Op]) -> tuple[list[Operation], list[Op]]:
    """Split a history into client operations (invoke + completion, in invoke order) and
    standalone events (``info`` lines with no invoke: nemesis, leader observations).

    Raises :class:`HistoryFormatError` for a completion whose ``ref`` names no open invoke
    of the same process and operation.
    """
    by_index: dict[int, Op] = {}
    completion_of: dict[int, Op] = {}
    open_by_process: dict[str, list[int]] = {}
    events: list[Op] = []
    invokes: list[Op] = []
    for op in ops:
        if op.type == INVOKE:
            by_index[op.index] = op
            invokes.append(op)
            open_by_process.setdefault(op.process, []).append(op.index)
            continue
        if op.ref is None:
            stack = open_by_process.get(op.process)
            if op.type == INFO and (not stack or by_index[stack[-1]].f != op.f):
                events.append(op)
                continue
            if not stack:
                raise HistoryFormatError(f"op {op.index}: completion without an open invoke")
            ref = stack[-1]
        else:
            ref = op.ref
        invoke = by_index.get(ref)
        if invoke is None or ref in completion_of:
            raise HistoryFormatError(f"op {op.index}: ref {ref} is not an open invoke")
        if invoke.process != op.process or invoke.f != op.f:
            raise HistoryFormatError(
                f"op {op.index}: completes {invoke.f} of {invoke.process} "
                f"but is {op.f} of {op.process}"
            )
        completion_of[ref] = op
        open_by_process[op.process].remove(ref)
    operations = [Operation(inv, completion_of.get(inv.index)) for inv in invokes]
    return operations, events
