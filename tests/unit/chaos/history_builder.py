"""Build chaos histories by hand for the checker tests, through the real HistoryWriter with
an injected clock (so every test also exercises the writer and the reader)."""

from __future__ import annotations

import os
from typing import Any

from chaos.checker import CheckResult, check
from chaos.history import HistoryWriter

TOPIC = "chaos"


class ManualClock:
    def __init__(self) -> None:
        self.now_s = 0.0

    def __call__(self) -> float:
        return self.now_s


class HistoryBuilder:
    """Write operations at given times; ``check()`` closes the file and runs the checker."""

    def __init__(self, directory: str | os.PathLike[str], name: str = "history.jsonl") -> None:
        self.path = os.path.join(os.fspath(directory), name)
        self.clock = ManualClock()
        self.writer = HistoryWriter(self.path, clock=self.clock, wall_clock=lambda: 0.0)

    def at(self, t: float) -> HistoryWriter:
        if t < self.clock.now_s:
            self.writer.close()
            raise ValueError(f"time goes back: {t} < {self.clock.now_s}")
        self.clock.now_s = t
        return self.writer

    # -- operations in two steps (for interleavings) --------------------------------------

    def invoke_send(
        self,
        value: str,
        partition: int,
        t: float,
        *,
        process: str = "producer-0",
        acks: str = "all",
        topic: str = TOPIC,
    ) -> int:
        return self.at(t).invoke(
            process, "send", {"value": value, "topic": topic, "partition": partition, "acks": acks}
        )

    def ack(self, index: int, offset: int, t: float) -> None:
        self.at(t).ok(index, {"offset": offset})

    # -- whole operations ------------------------------------------------------------------

    def send(
        self,
        value: str,
        partition: int,
        offset: int | None,
        t0: float,
        t1: float | None = None,
        *,
        outcome: str = "ok",
        acks: str = "all",
        process: str = "producer-0",
        topic: str = TOPIC,
    ) -> None:
        index = self.invoke_send(value, partition, t0, process=process, acks=acks, topic=topic)
        t1 = t0 + 0.01 if t1 is None else t1
        if outcome == "ok":
            if offset is None:
                raise ValueError("an ok send needs an offset")
            self.ack(index, offset, t1)
        elif outcome == "fail":
            self.at(t1).fail(index, {"error": "NOT_ENOUGH_REPLICAS"})
        elif outcome == "info":
            self.at(t1).info(index, {"error": "timeout"})
        elif outcome != "open":
            raise ValueError(outcome)

    def assign(
        self,
        process: str,
        positions: dict[int, int | None],
        t: float,
        *,
        group: str | None = None,
        topic: str = TOPIC,
    ) -> None:
        index = self.at(t).invoke(process, "assign", None)
        parts = [[topic, p, pos] for p, pos in sorted(positions.items())]
        self.at(t).ok(index, {"partitions": parts, "group": group})

    def poll(
        self,
        process: str,
        records: list[tuple[int, int, str | None]],
        t0: float,
        t1: float | None = None,
        *,
        topic: str = TOPIC,
        committed: bool = False,
    ) -> None:
        invoke = {"isolation": "read_committed"} if committed else None
        index = self.at(t0).invoke(process, "poll", invoke)
        self.at(t0 + 0.01 if t1 is None else t1).ok(
            index, {"records": [[topic, p, o, v] for p, o, v in records]}
        )

    def final(
        self,
        partition: int,
        high_watermark: int,
        values: list[str | None] | None = None,
        t: float = 0.0,
        *,
        records: list[tuple[int, str | None]] | None = None,
        topic: str = TOPIC,
        committed: bool = False,
        last_stable_offset: int | None = None,
    ) -> None:
        """A final read; ``values`` = the values at offsets 0.., or explicit ``records``.
        ``committed``: a read_committed one, up to ``last_stable_offset`` (default the HW)."""
        if records is None:
            records = list(enumerate(values or []))
        invoke: dict[str, Any] = {"topic": topic, "partition": partition}
        result: dict[str, Any] = {
            "high_watermark": high_watermark,
            "records": [[topic, partition, o, v] for o, v in records],
        }
        if committed:
            invoke["isolation"] = "read_committed"
            result["last_stable_offset"] = (
                high_watermark if last_stable_offset is None else last_stable_offset
            )
        process = f"final-{'committed-' if committed else ''}{topic}-{partition}"
        index = self.at(t).invoke(process, "final-read", invoke)
        self.at(t + 0.01).ok(index, result)

    def txn(
        self,
        txn_id: str,
        writes: list[tuple[str, int, str]],
        t0: float,
        t1: float | None = None,
        *,
        intent: str = "commit",
        outcome: str = "ok",
        commit_at: float | None = None,
        process: str = "txn-producer-0",
        group: str | None = None,
        offsets: list[tuple[str, int, int]] | None = None,
        reads: list[tuple[str, int, int, str]] | None = None,
    ) -> None:
        """One ``txn`` operation; ``outcome`` ok | fail | info | open. An ok commit's
        ``commit_at`` defaults to just before its completion."""
        value: dict[str, Any] = {
            "id": txn_id,
            "intent": intent,
            "writes": [list(w) for w in writes],
        }
        if group is not None:
            value["group"] = group
            value["offsets"] = [list(o) for o in offsets or ()]
            value["reads"] = [list(r) for r in reads or ()]
        index = self.at(t0).invoke(process, "txn", value)
        t1 = t0 + 0.02 if t1 is None else t1
        if outcome == "ok":
            self.txn_ok(index, intent, t1, commit_at)
        elif outcome == "fail":
            self.at(t1).fail(index, {"error": "aborted"})
        elif outcome == "info":
            self.at(t1).info(index, {"error": "timeout"})
        elif outcome != "open":
            raise ValueError(outcome)

    def txn_ok(self, index: int, intent: str, t: float, commit_at: float | None = None) -> None:
        """Complete the ``txn`` invoke ``index`` as ended as intended."""
        result: dict[str, Any] = {"outcome": intent}
        if intent == "commit":
            result["commit_at"] = t - 0.01 if commit_at is None else commit_at
        self.at(t).ok(index, result)

    def group_offsets(self, group: str, offsets: list[tuple[str, int, int]], t: float) -> None:
        index = self.at(t).invoke("final-group", "group-offsets", {"group": group})
        self.at(t + 0.01).ok(index, {"offsets": [list(o) for o in offsets]})

    def fault(
        self,
        fault: str,
        start: float,
        heal: float | None,
        *,
        targets: Any = (1,),
        fault_id: str | None = None,
    ) -> None:
        self.at(start).nemesis_start(fault, targets, fault_id=fault_id)
        if heal is not None:
            self.at(heal).nemesis_heal(fault, targets, fault_id=fault_id)

    def leader(self, partition: int, epoch: int, leader: int, t: float) -> None:
        self.at(t).leader(TOPIC, partition, epoch, leader, source="test")

    def check(self, **kwargs: Any) -> CheckResult:
        self.writer.close()
        return check(self.path, **kwargs)
