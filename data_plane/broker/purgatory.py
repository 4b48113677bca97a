"""DelayedOperationPurgatory: requests parked until a condition holds or a deadline passes.

Sans-IO (Kafka's DelayedOperationPurgatory without the timer thread): the caller drives it.

- :meth:`try_complete_else_watch` checks an operation once; if it cannot complete yet it is
  parked under its watch keys (topic-partitions) with a deadline from the injected clock.
- :meth:`check_and_complete` re-checks the operations watching one key (call it when that
  partition's log end offset or high watermark moves, or when it changes leader).
- :meth:`expire` completes every operation whose deadline has passed (``forced``), and
  :meth:`next_deadline_ms` says when to call it next.
- :meth:`cancel` drops an operation without completing it (its client disconnected).

Every operation completes exactly once (``on_complete(forced)``), or is cancelled and never
completes. Bound: at most ``max_operations`` parked at once; a new operation over the bound is
completed at once as if its deadline had passed, so memory stays bounded whatever clients send.

Both classes are generic in ``K``, the type of the watch keys (TopicPartition for the
broker's Fetch and Produce purgatories).

Thread-safety: none; one thread (the broker's event loop) owns a purgatory.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar

Clock = Callable[[], int]

K = TypeVar("K", bound=Hashable)


class DelayedOperation(Generic[K]):
    """Base class: override :meth:`try_complete` (return True when the condition holds; do not
    complete inside it) and :meth:`on_complete`."""

    def __init__(self, delay_ms: int) -> None:
        if delay_ms < 0:
            raise ValueError(f"delay_ms must be >= 0, got {delay_ms}")
        self.delay_ms = delay_ms
        self.deadline_ms = 0
        self.completed = False
        self.cancelled = False

    def try_complete(self) -> bool:
        raise NotImplementedError

    def try_complete_after(self, key: K) -> bool:
        """Re-check after a change under ``key`` (one the operation watches). The default
        re-checks everything; an operation whose condition is a conjunction over its keys
        re-checks only ``key``'s part, since only it can have changed."""
        return self.try_complete()

    def on_complete(self, forced: bool) -> None:
        raise NotImplementedError


class DelayedOperationPurgatory(Generic[K]):
    def __init__(self, name: str, clock_ms: Clock, max_operations: int) -> None:
        if max_operations < 1:
            raise ValueError(f"max_operations must be >= 1, got {max_operations}")
        self.name = name
        self._clock_ms = clock_ms
        self.max_operations = max_operations
        self._watchers: dict[K, set[DelayedOperation[K]]] = {}
        self._keys: dict[DelayedOperation[K], tuple[K, ...]] = {}
        # (deadline_ms, sequence, op): the sequence keeps ties from comparing operations.
        self._deadlines: list[tuple[int, int, DelayedOperation[K]]] = []
        self._seq = itertools.count()
        self.expired_count = 0
        self.overflow_count = 0

    def __len__(self) -> int:
        return len(self._keys)

    def watched(self, key: K) -> int:
        return len(self._watchers.get(key, ()))

    def try_complete_else_watch(self, op: DelayedOperation[K], keys: Iterable[K]) -> bool:
        """Complete ``op`` now if it can, else park it; True when it completed now."""
        if op.completed or op.cancelled or op in self._keys:
            raise ValueError("operation already completed, cancelled or watched")
        if op.try_complete():
            self._finish(op, forced=False)
            return True
        if len(self._keys) >= self.max_operations:
            self.overflow_count += 1
            self._finish(op, forced=True)
            return True
        key_tuple = tuple(keys)
        op.deadline_ms = self._clock_ms() + op.delay_ms
        self._keys[op] = key_tuple
        for key in key_tuple:
            self._watchers.setdefault(key, set()).add(op)
        heapq.heappush(self._deadlines, (op.deadline_ms, next(self._seq), op))
        return False

    def check_and_complete(self, key: K) -> int:
        """Re-check the operations watching ``key``; return how many completed."""
        ops = self._watchers.get(key)
        if not ops:
            return 0
        done = [op for op in list(ops) if op.try_complete_after(key)]
        for op in done:
            self._finish(op, forced=False)
        return len(done)

    def expire(self) -> int:
        """Complete (forced) every parked operation whose deadline has passed."""
        now = self._clock_ms()
        count = 0
        while self._deadlines and self._deadlines[0][0] <= now:
            _, _, op = heapq.heappop(self._deadlines)
            if op in self._keys:
                self.expired_count += 1
                count += 1
                self._finish(op, forced=True)
        return count

    def next_deadline_ms(self) -> int | None:
        """The earliest deadline of a parked operation (clock ms), None when nothing is parked."""
        while self._deadlines and self._deadlines[0][2] not in self._keys:
            heapq.heappop(self._deadlines)  # completed or cancelled earlier
        return self._deadlines[0][0] if self._deadlines else None

    def cancel(self, op: DelayedOperation[K]) -> bool:
        """Drop ``op`` without completing it; True if it was parked."""
        if op.completed or op.cancelled:
            return False
        op.cancelled = True
        return self._unwatch(op)

    def cancel_all(self) -> int:
        ops = list(self._keys)
        for op in ops:
            self.cancel(op)
        self._deadlines.clear()
        return len(ops)

    def _unwatch(self, op: DelayedOperation[K]) -> bool:
        keys = self._keys.pop(op, None)
        if keys is None:
            return False
        for key in keys:
            watchers = self._watchers.get(key)
            if watchers is not None:
                watchers.discard(op)
                if not watchers:
                    del self._watchers[key]
        if not self._keys:
            self._deadlines.clear()
        return True

    def _finish(self, op: DelayedOperation[K], *, forced: bool) -> None:
        self._unwatch(op)
        op.completed = True
        op.on_complete(forced)
