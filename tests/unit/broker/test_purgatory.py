from __future__ import annotations

import pytest

from data_plane.broker.purgatory import DelayedOperation, DelayedOperationPurgatory


class Clock:
    def __init__(self) -> None:
        self.now = 1000

    def __call__(self) -> int:
        return self.now


class Op(DelayedOperation):
    def __init__(self, delay_ms: int, ready: list[bool]) -> None:
        super().__init__(delay_ms)
        self.ready = ready
        self.results: list[bool] = []

    def try_complete(self) -> bool:
        return self.ready[0]

    def on_complete(self, forced: bool) -> None:
        self.results.append(forced)


def test_completes_at_once_when_ready() -> None:
    p = DelayedOperationPurgatory("t", Clock(), 10)
    op = Op(100, [True])
    assert p.try_complete_else_watch(op, ["a"]) is True
    assert op.results == [False] and len(p) == 0


def test_parked_until_key_checked_and_condition_holds() -> None:
    clock = Clock()
    p = DelayedOperationPurgatory("t", clock, 10)
    ready = [False]
    op = Op(100, ready)
    assert p.try_complete_else_watch(op, ["a", "b"]) is False
    assert len(p) == 1 and p.watched("a") == 1 and p.watched("b") == 1
    assert p.check_and_complete("a") == 0
    ready[0] = True
    assert p.check_and_complete("c") == 0  # not watched under c
    assert p.check_and_complete("b") == 1
    assert op.results == [False]
    assert len(p) == 0 and p.watched("a") == 0 and p.watched("b") == 0
    assert p.check_and_complete("a") == 0  # never completes twice
    assert op.results == [False]


def test_expires_at_deadline_only() -> None:
    clock = Clock()
    p = DelayedOperationPurgatory("t", clock, 10)
    early, late = Op(50, [False]), Op(200, [False])
    p.try_complete_else_watch(late, ["a"])
    p.try_complete_else_watch(early, ["a"])
    assert p.next_deadline_ms() == 1050
    clock.now = 1049
    assert p.expire() == 0
    clock.now = 1050
    assert p.expire() == 1
    assert early.results == [True] and late.results == []
    assert p.next_deadline_ms() == 1200
    clock.now = 5000
    assert p.expire() == 1 and late.results == [True]
    assert p.next_deadline_ms() is None and p.expired_count == 2


def test_cancel_drops_without_completing() -> None:
    clock = Clock()
    p = DelayedOperationPurgatory("t", clock, 10)
    op = Op(10, [False])
    p.try_complete_else_watch(op, ["a"])
    assert p.cancel(op) is True
    assert p.cancel(op) is False
    clock.now = 10_000
    assert p.expire() == 0 and op.results == [] and len(p) == 0 and p.watched("a") == 0


def test_bound_completes_overflowing_operation_forced() -> None:
    p = DelayedOperationPurgatory("t", Clock(), 2)
    ops = [Op(100, [False]) for _ in range(3)]
    assert [p.try_complete_else_watch(op, ["k"]) for op in ops] == [False, False, True]
    assert ops[2].results == [True] and len(p) == 2 and p.overflow_count == 1


def test_rejects_reuse_and_bad_arguments() -> None:
    p = DelayedOperationPurgatory("t", Clock(), 2)
    op = Op(100, [False])
    p.try_complete_else_watch(op, ["k"])
    with pytest.raises(ValueError):
        p.try_complete_else_watch(op, ["k"])
    with pytest.raises(ValueError):
        Op(-1, [False])
    with pytest.raises(ValueError):
        DelayedOperationPurgatory("t", Clock(), 0)


def test_cancel_all_clears_everything() -> None:
    p = DelayedOperationPurgatory("t", Clock(), 10)
    ops = [Op(100, [False]) for _ in range(3)]
    for i, op in enumerate(ops):
        p.try_complete_else_watch(op, [i])
    assert p.cancel_all() == 3
    assert len(p) == 0 and p.next_deadline_ms() is None
    assert all(op.cancelled and not op.results for op in ops)


class KeyedOp(DelayedOperation):
    """Done once every key was seen ready; records which keys each wake-up re-checked."""

    def __init__(self, keys: list[str], ready: set[str]) -> None:
        super().__init__(1000)
        self.pending = set(keys)
        self.ready = ready
        self.checked: list[str] = []

    def try_complete(self) -> bool:
        for key in list(self.pending):
            self.try_complete_after(key)
        return not self.pending

    def try_complete_after(self, key) -> bool:
        self.checked.append(key)
        if key in self.ready:
            self.pending.discard(key)
        return not self.pending

    def on_complete(self, forced: bool) -> None:
        pass


def test_a_wake_up_re_checks_only_the_key_that_changed() -> None:
    p = DelayedOperationPurgatory("t", Clock(), 10)
    ready: set[str] = set()
    op = KeyedOp(["a", "b", "c"], ready)
    assert p.try_complete_else_watch(op, ["a", "b", "c"]) is False
    op.checked.clear()
    ready.add("b")
    assert p.check_and_complete("b") == 0
    assert op.checked == ["b"]
    ready.update({"a", "c"})
    p.check_and_complete("a")
    assert p.check_and_complete("c") == 1
    assert op.checked == ["b", "a", "c"] and op.completed


def test_the_default_wake_up_re_checks_everything() -> None:
    p = DelayedOperationPurgatory("t", Clock(), 10)
    ready = [False]
    op = Op(1000, ready)
    p.try_complete_else_watch(op, ["x"])
    ready[0] = True
    assert p.check_and_complete("x") == 1 and op.results == [False]
