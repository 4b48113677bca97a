"""SubscriptionState: which partitions the consumer reads and where it stands in each.

Independent of *how* partitions get assigned: ``assign()`` sets them by hand; ``subscribe()``
records topic names and the assignment comes from
:meth:`SubscriptionState.assign_from_subscription`, called by the consumer with every
partition of the subscribed topics (no group) and by the group coordinator client after a
rebalance. The fetcher only reads this state.

Per partition: ``position`` (the offset of the next record poll() returns; None until known),
``reset_strategy`` (a pending seek to earliest/latest, resolved with ListOffsets), ``paused``,
and the last ``high_watermark`` / ``log_start_offset`` a fetch reported.

Not thread-safe: a consumer is used by one thread, like Kafka's.
"""

from __future__ import annotations

from collections.abc import Iterable

from common.topic_partition import TopicPartition
from kraftlog_client.errors import IllegalStateError

EARLIEST = "earliest"
LATEST = "latest"

# ListOffsets timestamps of the two special positions.
EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1


class TopicPartitionState:
    __slots__ = ("high_watermark", "log_start_offset", "paused", "position", "reset_strategy")

    def __init__(self) -> None:
        self.position: int | None = None
        self.reset_strategy: str | None = None
        self.paused = False
        self.high_watermark = -1
        self.log_start_offset = -1

    @property
    def is_fetchable(self) -> bool:
        return not self.paused and self.position is not None and self.reset_strategy is None


class SubscriptionState:
    def __init__(self, default_reset_strategy: str) -> None:
        self.default_reset_strategy = default_reset_strategy  # earliest | latest | none
        self.subscription: set[str] = set()
        self.assignment: dict[TopicPartition, TopicPartitionState] = {}
        self.manual = False
        self.generation = 0  # bumps on every assignment change

    # -- how partitions are chosen --------------------------------------------------------

    def subscribe(self, topics: Iterable[str]) -> None:
        if self.manual and self.assignment:
            raise IllegalStateError("subscribe() after assign(): call unsubscribe() first")
        names = set(topics)
        if not names or any(not isinstance(t, str) or not t for t in names):
            raise ValueError("subscribe() takes a non-empty list of topic names")
        self.manual = False
        self.subscription = names
        self._set_assignment(tp for tp in self.assignment if tp.topic in names)

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        if self.subscription:
            raise IllegalStateError("assign() after subscribe(): call unsubscribe() first")
        self.manual = True
        self._set_assignment(TopicPartition(tp[0], tp[1]) for tp in partitions)

    def assign_from_subscription(self, partitions: Iterable[TopicPartition]) -> bool:
        """Set the assignment of a subscription (no group: all partitions; a group: this
        member's share). Returns True if it changed."""
        if self.manual:
            raise IllegalStateError("the consumer uses assign(), not subscribe()")
        wanted = [tp for tp in partitions if tp.topic in self.subscription]
        if set(wanted) == set(self.assignment):
            return False
        self._set_assignment(wanted)
        return True

    def unsubscribe(self) -> None:
        self.subscription = set()
        self.manual = False
        self._set_assignment(())

    def _set_assignment(self, partitions: Iterable[TopicPartition]) -> None:
        old = self.assignment
        self.assignment = {tp: old.get(tp) or TopicPartitionState() for tp in partitions}
        self.generation += 1

    # -- positions -----------------------------------------------------------------------

    def state(self, tp: TopicPartition) -> TopicPartitionState:
        st = self.assignment.get(tp)
        if st is None:
            raise IllegalStateError(f"{tp.topic}-{tp.partition} is not assigned to this consumer")
        return st

    def seek(self, tp: TopicPartition, offset: int) -> None:
        if offset < 0:
            raise ValueError(f"cannot seek to negative offset {offset}")
        st = self.state(tp)
        st.position = offset
        st.reset_strategy = None

    def request_reset(self, tp: TopicPartition, strategy: str) -> None:
        st = self.state(tp)
        st.reset_strategy = strategy
        st.position = None

    def initialize_missing_positions(self) -> None:
        """Partitions with no position get the default reset strategy (auto.offset.reset)."""
        for st in self.assignment.values():
            if st.position is None and st.reset_strategy is None:
                st.reset_strategy = self.default_reset_strategy

    def partitions_needing_reset(self) -> list[TopicPartition]:
        return [tp for tp, st in self.assignment.items() if st.reset_strategy is not None]

    def fetchable(self) -> list[TopicPartition]:
        return [tp for tp, st in self.assignment.items() if st.is_fetchable]

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.state(tp).paused = True

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.state(tp).paused = False
