"""The client's cluster metadata cache: brokers, topics, partition leaders.

Filled from Metadata responses (any broker answers for the whole cluster). A refresh is due
when the cache is older than ``metadata.max.age.ms``, when a topic of interest is missing, or
when a caller reports a routing error (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
LEADER_NOT_AVAILABLE...) with :meth:`ClusterMetadata.request_update`; refreshes are spaced by
``retry.backoff.ms``. ``version`` increments on every update so waiters can tell.

Sans-IO: methods take ``now_ms``; the client that owns the cache sends the requests.
Not thread-safe by itself: the producer guards it with a Condition (see sender.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from common.error_codes import ErrorCode
from common.topic_partition import TopicPartition

# Errors that mean "our metadata is stale": refresh and retry.
REFRESH_ERRORS = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.KAFKA_STORAGE_ERROR,
    }
)


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int  # -1 = no leader
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    error_code: int


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    error_code: int
    is_internal: bool
    partitions: tuple[PartitionInfo, ...]


class ClusterMetadata:
    def __init__(self, metadata_max_age_ms: int, retry_backoff_ms: int) -> None:
        self._max_age_ms = metadata_max_age_ms
        self._backoff_ms = retry_backoff_ms
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.cluster_id: str | None = None
        self.controller_id = -1
        self.version = 0
        self.last_refresh_ms = float("-inf")
        self.last_attempt_ms = float("-inf")
        self._leaders: dict[TopicPartition, int] = {}
        self._need_update = True
        self.interest: set[str] = set()
        self.topic_errors: dict[str, int] = {}
        # Partitions whose answered leader epoch went back: since when (ms) it has.
        self._regressed_since: dict[TopicPartition, float] = {}

    # -- queries -------------------------------------------------------------------------

    def leader_for(self, tp: TopicPartition) -> int | None:
        return self._leaders.get(tp)

    def leader_epoch_for(self, tp: TopicPartition) -> int:
        """The leader epoch of ``tp`` as last learnt (-1 when unknown): sent with fetches so
        that a broker on another epoch fences them (KIP-320)."""
        part = _partition_of(self.topics.get(tp.topic), tp.partition)
        return part.leader_epoch if part is not None else -1

    def partition_count(self, topic: str) -> int | None:
        info = self.topics.get(topic)
        if info is None or info.error_code != ErrorCode.NO_ERROR or not info.partitions:
            return None
        return len(info.partitions)

    def partitions_for(self, topic: str) -> tuple[PartitionInfo, ...]:
        info = self.topics.get(topic)
        return info.partitions if info is not None else ()

    def broker(self, node_id: int) -> BrokerInfo | None:
        return self.brokers.get(node_id)

    def add_broker(self, node_id: int, host: str, port: int) -> None:
        """Learn a broker's address outside a Metadata answer (a FindCoordinator answer
        names its coordinator); the next Metadata answer replaces the whole list."""
        if node_id not in self.brokers:
            self.brokers = {**self.brokers, node_id: BrokerInfo(node_id, host, port)}

    # -- refresh policy ------------------------------------------------------------------

    def add_interest(self, topics: set[str] | list[str] | tuple[str, ...]) -> None:
        new = set(topics) - self.interest
        if new:
            self.interest |= new
            self._need_update = True

    def request_update(self) -> None:
        self._need_update = True

    def time_to_next_update_ms(self, now_ms: float) -> float:
        """0 when a refresh should be sent now; otherwise how long until one is due."""
        backoff_left = self.last_attempt_ms + self._backoff_ms - now_ms
        if self._need_update or any(t not in self.topics for t in self.interest):
            return max(0.0, backoff_left)
        return max(0.0, backoff_left, self.last_refresh_ms + self._max_age_ms - now_ms)

    def request_body(self) -> dict[str, Any]:
        return {
            "topics": [{"name": t} for t in sorted(self.interest)],
            "allow_auto_topic_creation": False,
        }

    def mark_attempt(self, now_ms: float) -> None:
        self.last_attempt_ms = now_ms

    # -- updates -------------------------------------------------------------------------

    def update(self, body: dict[str, Any], now_ms: float, *, all_topics: bool = False) -> None:
        """Apply a Metadata response (v1+); ``all_topics`` when it answered a request for
        every topic (then topics it does not list are gone).

        A partition whose answered leader epoch is older than the one already known keeps
        what is known (KIP-320): the answer came from a broker that has not learnt of the
        newer leader yet (a deposed leader cut from the controllers still names itself), and
        following it would send fetches to a log that may end before the consumer's position.
        Another update is asked for. An older epoch still answered after ``metadata.max.age.ms``
        is believed: the topic was deleted and created again (its epochs start over)."""
        self.brokers = {
            b["node_id"]: BrokerInfo(b["node_id"], b["host"], b["port"], b.get("rack"))
            for b in body.get("brokers", [])
        }
        self.cluster_id = body.get("cluster_id")
        self.controller_id = body.get("controller_id", -1)
        topics: dict[str, TopicInfo] = {}
        leaders: dict[TopicPartition, int] = {}
        missing_leader = False
        stale = False
        for t in body.get("topics", []):
            name = t["name"]
            parts = []
            known = self.topics.get(name)
            for p in sorted(t.get("partitions", []), key=lambda p: p["partition_index"]):
                info = PartitionInfo(
                    name,
                    p["partition_index"],
                    p["leader_id"],
                    p.get("leader_epoch", -1),
                    tuple(p.get("replica_nodes", ())),
                    tuple(p.get("isr_nodes", ())),
                    tuple(p.get("offline_replicas", ())),
                    p.get("error_code", 0),
                )
                kept = self._unless_stale(known, info, now_ms)
                if kept is not info:
                    info = kept
                    stale = True
                parts.append(info)
                if info.leader >= 0 and info.leader in self.brokers:
                    leaders[TopicPartition(name, info.partition)] = info.leader
                else:
                    missing_leader = True
            topics[name] = TopicInfo(
                name, t.get("error_code", 0), t.get("is_internal", False), tuple(parts)
            )
            self.topic_errors[name] = t.get("error_code", 0)
        # Keep topics a request for some topics only did not mention.
        for name, topic_info in ({} if all_topics else self.topics).items():
            if name not in topics and name not in self.interest:
                topics[name] = topic_info
                for p in topic_info.partitions:
                    tp = TopicPartition(name, p.partition)
                    if tp in self._leaders:
                        leaders[tp] = self._leaders[tp]
        self.topics = topics
        self._leaders = leaders
        self.version += 1
        self.last_refresh_ms = now_ms
        self._need_update = missing_leader or stale

    def _unless_stale(
        self, known: TopicInfo | None, info: PartitionInfo, now_ms: float
    ) -> PartitionInfo:
        """``info``, or the known partition when ``info`` names an older leader epoch
        (see :meth:`update`)."""
        tp = TopicPartition(info.topic, info.partition)
        old = _partition_of(known, info.partition)
        if old is None or not 0 <= info.leader_epoch < old.leader_epoch:
            self._regressed_since.pop(tp, None)
            return info
        since = self._regressed_since.setdefault(tp, now_ms)
        if now_ms - since >= self._max_age_ms:
            del self._regressed_since[tp]
            return info
        return old


def _partition_of(info: TopicInfo | None, partition: int) -> PartitionInfo | None:
    """Partition ``partition`` of a topic's metadata (kept sorted by index), None if absent."""
    if info is None or partition >= len(info.partitions):
        return None
    part = info.partitions[partition]
    return part if part.partition == partition else None
