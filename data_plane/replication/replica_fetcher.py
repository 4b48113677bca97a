"""Replica fetchers: followers pull from their leaders with the Kafka Fetch API (I/O module).

:class:`ReplicaFetcherManager` keeps one :class:`ReplicaFetcher` per (source broker, fetcher
index); a partition goes to fetcher ``hash(tp) % num.replica.fetchers`` of its leader. When a
partition's leader or leader epoch changes (the ReplicaManager calls :meth:`add_partition`
again), it moves to the new leader's fetcher and starts over with truncation; a fetcher left
without partitions is cancelled (even mid-request to a dead or paused leader).

Each fetcher is one asyncio task on the broker's event loop, with one connection to its
source broker (endpoint looked up in the metadata image each time it connects). Its loop:

1. **Truncate.** Partitions that just got this leader (state TRUNCATING) are asked about in
   one OffsetForLeaderEpoch v4 request (replica_id = this broker, the follower's latest epoch,
   the current leader epoch). :func:`data_plane.replication.follower.truncation_offset` says
   where the local log diverges; the partition is truncated there (or asked again with an
   older epoch). A follower with no epoch in its cache truncates to its high watermark.
2. **Fetch.** One Fetch v17 request (this broker in ``replica_state``,
   ``replica.fetch.wait.max.ms``, ``replica.fetch.min.bytes``) for every FETCHING partition at
   its log end offset with the current leader epoch, naming each topic by the id this broker's
   metadata gave it (KIP-516): a leader whose topic of that name is another one (deleted and
   re-created) answers UNKNOWN_TOPIC_ID instead of serving the other topic's records. A
   partition added without a topic id makes the round a Fetch v12 by name. The round is in an
   incremental fetch session with the leader (KIP-227,
   :mod:`data_plane.replication.fetch_session_handler`): after the first full fetch only the
   partitions whose position changed are listed and only those with news come back, so idle
   partitions cost next to nothing per round. The leader long-polls it; its appends answer
   it at once. Whole batches of the answer are appended with
   ``Partition.append_records_as_follower`` (the leader sends a sendfile slice that may end
   inside a batch); HW = min(leader's, own LEO). A session error or a lost answer makes the
   next round a full fetch.
3. **Errors.** Connection or protocol failures close the connection and back off
   ``replica.fetch.backoff.ms``. Per partition: OFFSET_OUT_OF_RANGE truncates (below the
   leader's log start offset: start the log afresh there; else truncate again by epoch);
   FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH / NOT_LEADER_OR_FOLLOWER /
   UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID / INCONSISTENT_TOPIC_ID delay that partition
   by the backoff until the metadata moves it (by METADATA_LAG_RETRY_MS for the errors that
   mean that one side has not applied the newest metadata yet, see fetch_state).

Every reply is applied only if the partition is still a follower of the same leader epoch
(the metadata may have moved while the request was out).

Thread-safety: everything runs on the broker's event loop.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from common.error_codes import ErrorCode
from common.errors import ApiError
from common.protocol.api_keys import ApiKey
from common.protocol.codec import Body
from common.protocol.errors import ProtocolError
from common.protocol.message_base import Message
from common.protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochRequestPartition,
    OffsetForLeaderEpochRequestTopic,
    OffsetForLeaderEpochResponse,
)
from common.protocol.topic_id_versions import FETCH_TOPIC_IDS_SINCE, ZERO_ID
from common.topic_partition import TopicPartition
from data_plane.replication.fetch_session_handler import (
    SESSION_ERRORS,
    FetchSessionHandler,
    PartitionFields,
)
from data_plane.replication.fetch_state import PartitionFetchState
from data_plane.replication.follower import truncation_offset
from data_plane.replication.inter_broker_connection import EndpointLookup, InterBrokerConnection
from data_plane.storage import Log, LogAppendInfo
from data_plane.storage.leader_epoch_cache import UNDEFINED_EPOCH, EpochEndOffset

logger = logging.getLogger(__name__)

# Kafka 3.9's follower versions: Fetch by topic id with the replica in the tagged
# replica_state, and by name (the newest version that has names) for partitions without an id.
FETCH_VERSION = 17
FETCH_BY_NAME_VERSION = FETCH_TOPIC_IDS_SINCE - 1
OFFSET_FOR_LEADER_EPOCH_VERSION = 4
# replica_state.replica_epoch: the broker epoch KIP-903 fences stale replicas with; -1 (not
# given) because this broker's leaders do not check it.
NO_REPLICA_EPOCH = -1
# Offsets of batchLength in a RecordBatch header and the bytes before it are counted.
_BATCH_LENGTH = struct.Struct(">i")
_LOG_OVERHEAD = 12


# How long broker shutdown waits for cancelled fetcher tasks to finish.
FETCHER_CLOSE_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True)
class ReplicaFetcherConfig:
    broker_id: int
    listener_name: str
    fetch_max_bytes: int = 1_048_576
    response_max_bytes: int = 10_485_760
    fetch_wait_max_ms: int = 500
    fetch_min_bytes: int = 1
    fetch_backoff_ms: int = 1000
    socket_timeout_ms: int = 30_000
    num_fetchers: int = 1
    # Client TLS for an SSL inter-broker listener (None = plaintext); the host name is checked
    # only if the context says so (ssl.endpoint.identification.algorithm).
    ssl_context: ssl.SSLContext | None = None


class FollowerPartition(Protocol):
    """What a fetcher needs from a partition (data_plane.broker.partition.Partition)."""

    leader_epoch: int
    leader_id: int

    @property
    def is_leader(self) -> bool: ...

    @property
    def log(self) -> Log: ...

    def append_records_as_follower(
        self, records: memoryview | bytes, leader_high_watermark: int, leader_log_start_offset: int
    ) -> LogAppendInfo | None: ...

    def truncate_to(self, offset: int, reason: str) -> int: ...


PartitionLookup = Callable[[TopicPartition], FollowerPartition | None]


def _by_topic(
    fields: dict[TopicPartition, PartitionFields], by_id: bool
) -> dict[tuple[str | None, bytes], list[tuple[int, PartitionFields]]]:
    """Partitions grouped under their topic's (name, id); by id the name is None (Fetch v13+
    has no names), by name the id is all zero."""
    out: dict[tuple[str | None, bytes], list[tuple[int, PartitionFields]]] = {}
    for tp, f in fields.items():
        key = (None, f[4]) if by_id else (tp.topic, ZERO_ID)
        out.setdefault(key, []).append((tp.partition, f))
    return out


def _fetch_topics(
    fields: dict[TopicPartition, PartitionFields], by_id: bool
) -> list[dict[str, Any]]:
    """The ``topics`` of a follower's Fetch request."""
    return [
        {
            "topic": name,
            "topic_id": tid,
            "partitions": [
                {
                    "partition": partition,
                    "current_leader_epoch": epoch,
                    "fetch_offset": offset,
                    "log_start_offset": log_start,
                    "partition_max_bytes": part_max,
                }
                for partition, (offset, epoch, log_start, part_max, _) in ps
            ],
        }
        for (name, tid), ps in _by_topic(fields, by_id).items()
    ]


def whole_batches_length(records: memoryview | bytes) -> int:
    """Bytes of the complete RecordBatches at the start of ``records`` (a sendfile slice may
    end inside a batch)."""
    pos, n = 0, len(records)
    while pos + _LOG_OVERHEAD <= n:
        (length,) = _BATCH_LENGTH.unpack_from(records, pos + 8)
        end = pos + _LOG_OVERHEAD + length
        if length <= 0 or end > n:
            break
        pos = end
    return pos


class ReplicaFetcherManager:
    def __init__(
        self,
        config: ReplicaFetcherConfig,
        partitions: PartitionLookup,
        endpoint: EndpointLookup,
    ) -> None:
        self.config = config
        self._partitions = partitions
        self._endpoint = endpoint
        self._fetchers: dict[tuple[int, int], ReplicaFetcher] = {}
        self._retiring: set[asyncio.Task[None]] = set()
        self._assignment: dict[TopicPartition, tuple[int, int]] = {}

    def fetcher_count(self) -> int:
        return len(self._fetchers)

    def assigned(self) -> dict[TopicPartition, PartitionFetchState]:
        out = {}
        for f in self._fetchers.values():
            out.update(f.partitions)
        return out

    def add_partition(
        self, tp: TopicPartition, leader_id: int, leader_epoch: int, topic_id: bytes = ZERO_ID
    ) -> None:
        """Follow ``leader_id`` in ``leader_epoch`` (truncation first), fetching the topic by
        ``topic_id`` (16 bytes; all zero: by name). Re-adding with another leader, epoch or
        topic id moves the partition and restarts it."""
        key = (leader_id, hash(tp) % self.config.num_fetchers)
        old = self._assignment.get(tp)
        if old is not None:
            fetcher = self._fetchers.get(old)
            state = fetcher.partitions.get(tp) if fetcher else None
            if (
                old == key
                and state is not None
                and state.leader_epoch == leader_epoch
                and state.topic_id == topic_id
            ):
                return
            self.remove_partition(tp)
        fetcher = self._fetchers.get(key)
        if fetcher is None:
            fetcher = ReplicaFetcher(self.config, leader_id, self._partitions, self._endpoint)
            self._fetchers[key] = fetcher
        fetcher.add(tp, PartitionFetchState(leader_id, leader_epoch, topic_id=topic_id))
        self._assignment[tp] = key

    def remove_partition(self, tp: TopicPartition) -> None:
        key = self._assignment.pop(tp, None)
        if key is None:
            return
        fetcher = self._fetchers.get(key)
        if fetcher is None:
            return
        fetcher.remove(tp)
        if not fetcher.partitions:
            del self._fetchers[key]
            self._retire(fetcher)

    def _retire(self, fetcher: ReplicaFetcher) -> None:
        fetcher.close()
        # Keep the cancelled task until it has finished, so wait_closed() can await it: a task
        # destroyed while still pending (the loop closing under it) is an asyncio error.
        self._retiring.add(fetcher.task)
        fetcher.task.add_done_callback(self._retiring.discard)

    def close(self) -> None:
        for f in self._fetchers.values():
            self._retire(f)
        self._fetchers.clear()
        self._assignment.clear()

    async def wait_closed(self) -> None:
        """Await every cancelled fetcher task (call after close(), on the event loop)."""
        if self._retiring:
            _, pending = await asyncio.wait(set(self._retiring), timeout=FETCHER_CLOSE_TIMEOUT_S)
            for task in pending:
                logger.warning("replica fetcher task %s did not stop in time", task.get_name())


class ReplicaFetcher:
    """One source broker's fetcher task (see the module docstring)."""

    def __init__(
        self,
        config: ReplicaFetcherConfig,
        source_broker_id: int,
        partitions: PartitionLookup,
        endpoint: EndpointLookup,
    ) -> None:
        self.config = config
        self.source_broker_id = source_broker_id
        self._lookup = partitions
        self._endpoint = endpoint
        self.partitions: dict[TopicPartition, PartitionFetchState] = {}
        self._session = FetchSessionHandler()
        self._wake = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"replica-fetcher-{config.broker_id}-from-{source_broker_id}"
        )
        self._conn = InterBrokerConnection(
            source_broker_id,
            endpoint,
            listener_name=config.listener_name,
            client_id=f"replica-fetcher-{config.broker_id}",
            ssl_context=config.ssl_context,
            connect_timeout_ms=config.socket_timeout_ms,
        )
        self._closed = False
        self.fetches = 0
        # Whether the session names topics by id (Fetch v13+) or by name.
        self._by_id = True
        # Topic id (16 bytes) -> name, of every partition added by id: answers by id name no
        # topic.
        self._topic_names: dict[bytes, str] = {}

    def add(self, tp: TopicPartition, state: PartitionFetchState) -> None:
        self.partitions[tp] = state
        if state.topic_id != ZERO_ID:
            # Ids are never reused, so an entry left by a removed partition misleads nobody.
            self._topic_names[state.topic_id] = tp.topic
        self._wake.set()

    def remove(self, tp: TopicPartition) -> None:
        self.partitions.pop(tp, None)

    @property
    def task(self) -> asyncio.Task[None]:
        return self._task

    def close(self) -> None:
        # The flag, not only the cancellation, ends the loop: on Python 3.11 asyncio.wait_for
        # can swallow a cancellation when its inner read finishes at the same moment (here with
        # "not connected", because _disconnect() below drops the reader), and the loop would
        # then go on retrying forever.
        self._closed = True
        self._task.cancel()
        self._disconnect()

    # -- the loop ------------------------------------------------------------------------------

    async def _run(self) -> None:
        backoff_s = self.config.fetch_backoff_ms / 1000
        while not self._closed:
            if not self.partitions:
                self._wake.clear()
                await self._wake.wait()
                continue
            try:
                await self._connect()
                now_s = time.monotonic()
                if any(s.ready_to_truncate(now_s) for s in self.partitions.values()):
                    await self._truncate()
                if not await self._fetch():
                    await asyncio.sleep(self._idle_wait_s())
            except asyncio.CancelledError:
                self._disconnect()
                raise
            except (OSError, EOFError, ProtocolError, TimeoutError, ConnectionError) as e:
                if self._closed:
                    return
                logger.info(
                    "broker %d: fetcher from broker %d: %s; retrying in %d ms",
                    self.config.broker_id,
                    self.source_broker_id,
                    e or type(e).__name__,
                    self.config.fetch_backoff_ms,
                )
                self._disconnect()
                await asyncio.sleep(backoff_s)
            except Exception:
                if self._closed:
                    return
                logger.exception(
                    "broker %d: fetcher from broker %d failed; retrying",
                    self.config.broker_id,
                    self.source_broker_id,
                )
                self._disconnect()
                await asyncio.sleep(backoff_s)

    def _idle_wait_s(self) -> float:
        """Nothing to fetch now (every partition delayed): sleep until the earliest is due."""
        now_s = time.monotonic()
        due = [s.delayed_until_s - now_s for s in self.partitions.values()]
        return max(
            0.001, min([d for d in due if d > 0], default=self.config.fetch_backoff_ms / 1000)
        )

    async def _connect(self) -> None:
        await self._conn.connect()

    def _disconnect(self) -> None:
        self._conn.close()
        # The answer of a request in flight is lost: the leader may have moved the session's
        # epoch on, so start over with a full fetch (which also closes the old session).
        self._session.reset()

    async def _call(self, api_key: ApiKey, version: int, body: dict[str, Any] | Message) -> Body:
        timeout_s = (self.config.socket_timeout_ms + self.config.fetch_wait_max_ms) / 1000
        return await self._conn.call(api_key, version, body, timeout_s)

    def _current(self, tp: TopicPartition, state: PartitionFetchState) -> FollowerPartition | None:
        """The partition if it is still ours to fetch in the same epoch, else None."""
        if self.partitions.get(tp) is not state:
            return None
        part = self._lookup(tp)
        if part is None or part.is_leader or part.leader_epoch != state.leader_epoch:
            return None
        return part

    # -- truncation ----------------------------------------------------------------------------

    async def _truncate(self) -> None:
        asked: dict[TopicPartition, tuple[PartitionFetchState, int]] = {}
        by_topic: dict[str, list[OffsetForLeaderEpochRequestPartition]] = {}
        now_s = time.monotonic()
        for tp, state in list(self.partitions.items()):
            if not state.ready_to_truncate(now_s):
                continue
            part = self._current(tp, state)
            if part is None:
                continue
            epoch = part.log.leader_epoch_cache.latest_epoch
            if epoch == UNDEFINED_EPOCH:
                # Nothing to compare by epoch: keep only what was committed.
                part.truncate_to(part.log.high_watermark, "no leader epoch known locally")
                state.truncation_completed()
                continue
            asked[tp] = (state, epoch)
            # The request's structs are built positionally, in wire order: a slotted
            # dataclass built from keywords costs about twice as much, which would make
            # this call dearer than the dict body it replaced.
            by_topic.setdefault(tp.topic, []).append(
                # (partition, current_leader_epoch, leader_epoch)
                OffsetForLeaderEpochRequestPartition(tp.partition, state.leader_epoch, epoch)
            )
        if not asked:
            return
        body = OffsetForLeaderEpochRequest(  # (replica_id, topics: [(topic, partitions)])
            self.config.broker_id,
            [OffsetForLeaderEpochRequestTopic(t, ps) for t, ps in by_topic.items()],
        )
        answer: OffsetForLeaderEpochResponse = await self._call(
            ApiKey.OFFSET_FOR_LEADER_EPOCH, OFFSET_FOR_LEADER_EPOCH_VERSION, body
        )
        now_s = time.monotonic()
        for topic in answer.topics:
            for p in topic.partitions:
                tp = TopicPartition(topic.topic, p.partition)
                entry = asked.get(tp)
                if entry is None:
                    continue
                state, epoch = entry
                part = self._current(tp, state)
                if part is None:
                    continue
                if p.error_code != ErrorCode.NO_ERROR:
                    state.partition_error(p.error_code, now_s, self.config.fetch_backoff_ms)
                    continue
                leader = EpochEndOffset(p.leader_epoch, p.end_offset)
                log_ = part.log
                decision = truncation_offset(
                    leader,
                    log_.leader_epoch_cache.end_offset_for(leader.epoch, log_.log_end_offset),
                    log_.log_end_offset,
                    log_.high_watermark,
                )
                part.truncate_to(
                    decision.offset,
                    f"diverged from leader {state.leader_id} epoch {state.leader_epoch}: "
                    f"asked epoch {epoch}, leader answered {leader.epoch}@{leader.end_offset}",
                )
                if decision.truncation_completed:
                    state.truncation_completed()

    # -- fetching ------------------------------------------------------------------------------

    async def _fetch(self) -> bool:
        """One Fetch round in the fetcher's session with its leader (an incremental fetch
        lists only partitions whose position changed); False when nothing could be fetched
        (all partitions delayed)."""
        now_s = time.monotonic()
        states: dict[TopicPartition, PartitionFetchState] = {}
        wanted: dict[TopicPartition, PartitionFields] = {}
        max_bytes = self.config.fetch_max_bytes
        by_id = True  # every partition fetched has a topic id
        for tp, state in list(self.partitions.items()):
            if not state.ready_to_fetch(now_s):
                continue
            part = self._current(tp, state)
            if part is None:
                continue
            log_ = part.log
            states[tp] = state
            if state.topic_id == ZERO_ID:
                by_id = False
            wanted[tp] = (
                log_.log_end_offset,
                state.leader_epoch,
                log_.log_start_offset,
                max_bytes,
                state.topic_id,
            )
        if not wanted:
            return False
        if by_id != self._by_id:
            # A session names its topics one way only: switching starts a new one.
            self._session.reset()
            self._by_id = by_id
        request = self._session.build(wanted)
        body = {
            "max_wait_ms": self.config.fetch_wait_max_ms,
            "min_bytes": self.config.fetch_min_bytes,
            "max_bytes": self.config.response_max_bytes,
            "isolation_level": 0,
            "session_id": request.session_id,
            "session_epoch": request.epoch,
            "topics": _fetch_topics(request.to_send, by_id),
            "forgotten_topics_data": [
                {"topic": name, "topic_id": tid, "partitions": [p[0] for p in ps]}
                for (name, tid), ps in _by_topic(request.forgotten, by_id).items()
            ],
            "rack_id": "",
        }
        if by_id:
            body["replica_state"] = {
                "replica_id": self.config.broker_id,
                "replica_epoch": NO_REPLICA_EPOCH,
            }
            version = FETCH_VERSION
        else:
            body["replica_id"] = self.config.broker_id
            version = FETCH_BY_NAME_VERSION
        answer = await self._call(ApiKey.FETCH, version, body)
        self.fetches += 1
        error_code = answer.get("error_code", 0)
        if not self._session.handle_response(request, error_code, answer.get("session_id", 0)):
            if error_code in SESSION_ERRORS:
                logger.info(
                    "broker %d: fetch session with broker %d: error %d; fetching in full",
                    self.config.broker_id,
                    self.source_broker_id,
                    error_code,
                )
                return True
            raise ProtocolError(f"fetch failed with error {error_code}")
        for topic in answer.get("responses") or ():
            # By id the answer names topics only by id: the name is the one this fetcher
            # added the id with, and a partition counts only if asked for under that id.
            tid = topic.get("topic_id", ZERO_ID) if by_id else ZERO_ID
            name = self._topic_names.get(tid) if by_id else topic["topic"]
            if name is None:
                continue
            for p in topic.get("partitions") or ():
                tp = TopicPartition(name, p["partition_index"])
                fields = wanted.get(tp)
                if fields is not None and (not by_id or fields[4] == tid):
                    self._apply_fetched(tp, states[tp], fields[0], p)
        return True

    def _apply_fetched(
        self, tp: TopicPartition, state: PartitionFetchState, offset: int, p: dict[str, Any]
    ) -> None:
        part = self._current(tp, state)
        if part is None or part.log.log_end_offset != offset:
            return
        code = p["error_code"]
        if code == ErrorCode.NO_ERROR:
            records = p.get("records") or b""
            size = whole_batches_length(records)
            try:
                part.append_records_as_follower(
                    records[:size], p["high_watermark"], p.get("log_start_offset", -1)
                )
            except ApiError as e:
                logger.warning("%s: follower append failed: %s; truncating again", tp, e)
                state.append_failed()
            return
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            restart_at = state.offset_out_of_range(offset, p.get("log_start_offset", -1))
            if restart_at is not None:
                part.log.truncate_fully_and_start_at(restart_at)
                logger.info(
                    "%s: behind the leader's log start offset, restarted at %d", tp, restart_at
                )
            return
        self._session.resend(tp)
        if state.partition_error(code, time.monotonic(), self.config.fetch_backoff_ms):
            logger.warning("%s: fetch from broker %d: error %d", tp, self.source_broker_id, code)
