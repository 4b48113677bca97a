"""Incremental fetch sessions (KIP-227) on the broker: a sans-IO cache of what each session's
client last asked for and was last told.

Without a session every Fetch lists every partition and every answer carries every partition,
even the idle ones: a follower of many partitions pays for encoding, sending and decoding
all of them on each round trip. With a session the client sends only the partitions whose
fetch position changed (and the ones it drops, ``forgotten_topics_data``), and the answer
carries only the partitions with news.

Request metadata (``session_id``, ``session_epoch``), Fetch v7+:

- epoch -1 (FINAL): no session; a session named by ``session_id`` is closed. Full fetch.
- epoch 0 (INITIAL): a full fetch that asks for a new session (``session_id`` names one to
  close first). The answer carries the new id, or 0 when the cache has no room.
- epoch > 0: an incremental fetch in session ``session_id``, whose epoch must be the one the
  session expects (else INVALID_FETCH_SESSION_EPOCH; an unknown id gets
  FETCH_SESSION_ID_NOT_FOUND). Its partitions are added or updated, forgotten ones removed,
  and the epoch moves on (after 2**31 - 1 it wraps to 1).

Invariants:

- The partitions of an incremental fetch are all of the session's, in the session's order,
  at their cached positions: a follower omitting an idle partition is still recorded as
  caught up on it (the leader's ISR bookkeeping sees every partition on every fetch). The
  handler need not read a *quiet* one (see ``handlers.fetch``): the answer would leave it out.
- An incremental answer holds a partition iff it has records, an error, or a high watermark
  or log start offset other than the one last sent in this session; what is sent is cached.
  A full answer holds every partition and fills the cache.
- Partitions that returned records move to the end of the session's order, so a partition
  with a deep backlog cannot take a response's whole byte budget on every round (KIP-227).
- At most ``max_slots`` sessions. A new session takes a free slot, else the least recently
  used session's slot if that one was idle for ``eviction_min_idle_ms`` or if the new
  session is a follower's (privileged) and the old one a consumer's; else no session is
  created and the client keeps fetching in full.

Not thread-safe: the broker's event loop owns it.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from common.error_codes import ErrorCode
from common.protocol.fetch_session_epochs import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    next_epoch,
)
from common.protocol.topic_id_versions import ZERO_ID
from common.topic_partition import TopicPartition

MAX_SESSION_ID = 2**31 - 1
# Kafka's defaults: max.incremental.fetch.session.cache.slots and
# min.incremental.fetch.session.eviction.ms.
DEFAULT_MAX_SLOTS = 1000
DEFAULT_EVICTION_MIN_IDLE_MS = 120_000


@dataclass(slots=True)
class CachedPartition:
    """One partition of a fetch: what the client asks for, and (in a session) what it was last
    told (-2 = nothing sent yet, so the first answer always carries the partition)."""

    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1
    # v12+: the epoch of the last batch the fetcher holds (-1: not given).
    last_fetched_epoch: int = -1
    # v13+: the id of the topic the fetcher means (16 bytes; zero: named by name).
    topic_id: bytes = ZERO_ID
    sent_high_watermark: int = -2
    sent_log_start_offset: int = -2

    @classmethod
    def from_request(cls, p: dict[str, Any]) -> CachedPartition:
        cached = cls(p["partition"], 0, 0)
        cached.update(p)
        return cached

    def update(self, p: dict[str, Any]) -> None:
        """Take the request fields of ``p`` (a Fetch request partition); what was sent stays."""
        self.fetch_offset = p["fetch_offset"]
        self.partition_max_bytes = p.get("partition_max_bytes", 0)
        self.current_leader_epoch = p.get("current_leader_epoch", -1)
        self.log_start_offset = p.get("log_start_offset", -1)
        self.last_fetched_epoch = p.get("last_fetched_epoch", -1)
        self.topic_id = p.get("topic_id", ZERO_ID)


@dataclass(slots=True)
class FetchSession:
    session_id: int
    privileged: bool
    partitions: dict[TopicPartition, CachedPartition]
    epoch: int  # the epoch the next incremental request must carry
    last_used_ms: int


@dataclass(slots=True)
class FetchContext:
    """How to answer one Fetch: read ``partitions``, then pass the built entries through
    :meth:`finish`."""

    error_code: int = ErrorCode.NO_ERROR
    session: FetchSession | None = None  # the session the answer belongs to, if any
    incremental: bool = False
    partitions: list[tuple[TopicPartition, CachedPartition]] = field(default_factory=list)
    # Incremental only: the partitions this request listed (new or moved positions).
    listed: frozenset[TopicPartition] = frozenset()

    @property
    def response_session_id(self) -> int:
        return self.session.session_id if self.session is not None else INVALID_SESSION_ID

    def finish(
        self, entries: Iterable[tuple[TopicPartition, dict[str, Any]]]
    ) -> list[dict[str, Any]]:
        """The ``responses`` array from (partition, entry) pairs in read order: every entry
        for a full fetch, only the changed ones for an incremental one; the session's cache
        records what was sent and rotates partitions that returned records to the end."""
        session = self.session
        by_topic: dict[str, list[dict[str, Any]]] = {}
        rotate: list[TopicPartition] = []
        for tp, entry in entries:
            cached = session.partitions.get(tp) if session is not None else None
            if cached is not None:
                hw, lso = entry["high_watermark"], entry["log_start_offset"]
                has_records = bool(records_length(entry["records"]))
                changed = (
                    has_records
                    or entry["error_code"] != ErrorCode.NO_ERROR
                    or hw != cached.sent_high_watermark
                    or lso != cached.sent_log_start_offset
                )
                cached.sent_high_watermark, cached.sent_log_start_offset = hw, lso
                if has_records:
                    rotate.append(tp)
                if self.incremental and not changed:
                    continue
            elif self.incremental:
                continue  # forgotten while the request waited: not the client's any more
            by_topic.setdefault(tp.topic, []).append(entry)
        if session is not None:
            for tp in rotate:
                cached = session.partitions.pop(tp, None)
                if cached is not None:
                    session.partitions[tp] = cached
        ids = {tp.topic: cached.topic_id for tp, cached in self.partitions}
        return [
            {"topic": t, "topic_id": ids.get(t, ZERO_ID), "partitions": ps}
            for t, ps in by_topic.items()
        ]


def records_length(records: Any) -> int:
    """Bytes of a response entry's records: a file slice's length or a buffer's size."""
    length = getattr(records, "length", None)
    return length if length is not None else len(records)


class FetchSessionCache:
    def __init__(
        self,
        max_slots: int = DEFAULT_MAX_SLOTS,
        eviction_min_idle_ms: int = DEFAULT_EVICTION_MIN_IDLE_MS,
        rng: random.Random | None = None,
    ) -> None:
        self.max_slots = max_slots
        self.eviction_min_idle_ms = eviction_min_idle_ms
        self._rng = rng or random.Random()
        self._sessions: dict[int, FetchSession] = {}  # least recently used first
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def remove(self, session_id: int) -> bool:
        return self._sessions.pop(session_id, None) is not None

    def session_ids(self) -> list[int]:
        return list(self._sessions)

    def new_context(
        self,
        session_id: int,
        epoch: int,
        requested: list[tuple[TopicPartition, dict[str, Any]]],
        forgotten: list[TopicPartition],
        *,
        privileged: bool,
        now_ms: int,
        forgotten_ids: Iterable[tuple[bytes, int]] = (),
    ) -> FetchContext:
        """The context of one Fetch (see the module docstring). ``forgotten_ids`` are forgotten
        partitions named by a topic id the metadata no longer knows (v13+, the topic was
        deleted): the session's partitions cached with that id go."""
        if epoch in (FINAL_EPOCH, INITIAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self._sessions.pop(session_id, None)
            partitions = [(tp, CachedPartition.from_request(p)) for tp, p in requested]
            session = None
            if epoch == INITIAL_EPOCH:
                session = self._create(dict(partitions), privileged, now_ms)
            return FetchContext(session=session, partitions=partitions)
        session = self._sessions.get(session_id)
        if session is None:
            return FetchContext(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if epoch != session.epoch:
            return FetchContext(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        for tp, p in requested:
            cached = session.partitions.get(tp)
            if cached is None:
                session.partitions[tp] = CachedPartition.from_request(p)
            else:
                cached.update(p)
        for tp in forgotten:
            session.partitions.pop(tp, None)
        gone = set(forgotten_ids)
        if gone:
            parts = session.partitions
            for tp in [t for t, c in parts.items() if (c.topic_id, t.partition) in gone]:
                del parts[tp]
        session.epoch = next_epoch(epoch)
        session.last_used_ms = now_ms
        self._sessions[session_id] = self._sessions.pop(session_id)  # most recently used
        return FetchContext(
            session=session,
            incremental=True,
            partitions=list(session.partitions.items()),
            listed=frozenset(tp for tp, _ in requested),
        )

    def _create(
        self, partitions: dict[TopicPartition, CachedPartition], privileged: bool, now_ms: int
    ) -> FetchSession | None:
        if self.max_slots <= 0:
            return None
        if len(self._sessions) >= self.max_slots and not self._evict_one(privileged, now_ms):
            return None
        session_id = self._rng.randint(1, MAX_SESSION_ID)
        while session_id in self._sessions:
            session_id = self._rng.randint(1, MAX_SESSION_ID)
        session = FetchSession(
            session_id, privileged, partitions, next_epoch(INITIAL_EPOCH), now_ms
        )
        self._sessions[session_id] = session
        return session

    def _evict_one(self, privileged: bool, now_ms: int) -> bool:
        """Free one slot for a new session (see the module docstring); False if none may go."""
        victim: FetchSession | None = next(iter(self._sessions.values()))
        if victim is not None and now_ms - victim.last_used_ms < self.eviction_min_idle_ms:
            # The least recently used session is not idle long enough, so none is; a
            # follower's session may still displace a consumer's.
            victim = (
                next((s for s in self._sessions.values() if not s.privileged), None)
                if privileged
                else None
            )
        if victim is None:
            return False
        del self._sessions[victim.session_id]
        self.evictions += 1
        return True
