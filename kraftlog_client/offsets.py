"""ListOffsets for the consumer and the admin client: offsets by timestamp, by leader.

Timestamps -2 (earliest) and -1 (latest: the high watermark) are Kafka's special values; any
other value asks for the first offset whose timestamp is at or after it (-1 offset if none).
Requests go to each partition's leader; routing errors refresh metadata and retry until the
deadline. Runs on the calling thread through :meth:`NetworkClient.request`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import NamedTuple

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.messages.list_offsets import (
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
    ListOffsetsResponse,
    ListOffsetsResponsePartition,
)
from common.topic_partition import TopicPartition
from kraftlog_client.errors import KafkaError, KafkaTimeoutError
from kraftlog_client.metadata import REFRESH_ERRORS
from kraftlog_client.network_client import NetworkClient


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int


def list_offsets(
    client: NetworkClient,
    timestamps: Mapping[TopicPartition, int],
    timeout_ms: float,
    retry_backoff_ms: int,
    *,
    isolation_level: int = 0,
) -> dict[TopicPartition, OffsetAndTimestamp]:
    """Resolve each partition's timestamp to an offset (with ``isolation_level`` 1, "latest"
    is the last stable offset, not the high watermark); raises :class:`KafkaError` for a
    non-retriable partition error and :class:`KafkaTimeoutError` at the deadline."""
    lookup = _OffsetLookup(client, timestamps, timeout_ms, retry_backoff_ms, isolation_level)
    while lookup.pending:
        remaining_ms = lookup.remaining_ms()
        if remaining_ms <= 0:
            raise lookup.timeout_error()
        if not lookup.leaders_known(remaining_ms):
            continue
        retry = False
        for leader, topics in lookup.by_leader().items():
            retry |= lookup.ask(leader, topics)
        if retry and lookup.pending:
            lookup.refresh_leaders()
    return lookup.out


class _OffsetLookup:
    """The state of one :func:`list_offsets` call: the partitions still to resolve, the
    answers so far and the last retriable error (named in the timeout error). Every
    partition is in exactly one of ``pending`` and ``out``. Used by one thread, once."""

    def __init__(
        self,
        client: NetworkClient,
        timestamps: Mapping[TopicPartition, int],
        timeout_ms: float,
        retry_backoff_ms: int,
        isolation_level: int,
    ) -> None:
        self.client = client
        self.metadata = client.metadata
        self.timeout_ms = timeout_ms
        self.deadline = time.monotonic() + timeout_ms / 1000.0
        self.retry_backoff_ms = retry_backoff_ms
        self.isolation_level = isolation_level
        self.pending = dict(timestamps)
        self.out: dict[TopicPartition, OffsetAndTimestamp] = {}
        self.last_error: Exception | None = None

    def remaining_ms(self) -> float:
        return (self.deadline - time.monotonic()) * 1000.0

    def timeout_error(self) -> KafkaTimeoutError:
        return KafkaTimeoutError(
            f"ListOffsets for {len(self.pending)} partition(s) did not finish in "
            f"{self.timeout_ms} ms"
            + (f" (last error {self.last_error})" if self.last_error else "")
        )

    def leaders_known(self, remaining_ms: float) -> bool:
        """Whether every pending partition has a leader, after a metadata fetch for the
        topics without one; when some still have none, backs off before saying so."""
        missing = {tp.topic for tp in self.pending if self.metadata.leader_for(tp) is None}
        if not missing:
            return True
        self.metadata.add_interest(missing)
        try:
            self.client.fetch_metadata(sorted(self.metadata.interest), remaining_ms)
        except KafkaError as e:
            self.last_error = e
        if all(self.metadata.leader_for(tp) is not None for tp in self.pending):
            return True
        time.sleep(min(self.retry_backoff_ms / 1000.0, max(0.0, remaining_ms / 1000.0)))
        self.last_error = self.last_error or KafkaError(ErrorCode.LEADER_NOT_AVAILABLE)
        return False

    def by_leader(self) -> dict[int, dict[str, list[ListOffsetsRequestPartition]]]:
        """The pending partitions' request entries, by leader and then topic."""
        out: dict[int, dict[str, list[ListOffsetsRequestPartition]]] = {}
        for tp, ts in self.pending.items():
            leader = self.metadata.leader_for(tp)
            if leader is None:
                continue
            out.setdefault(leader, {}).setdefault(tp.topic, []).append(
                ListOffsetsRequestPartition(
                    partition_index=tp.partition, current_leader_epoch=-1, timestamp=ts
                )
            )
        return out

    def ask(self, leader: int, topics: dict[str, list[ListOffsetsRequestPartition]]) -> bool:
        """Send one ListOffsets to ``leader`` and take its answers; whether a retriable error
        calls for another round."""
        body = ListOffsetsRequest(
            replica_id=-1,
            isolation_level=self.isolation_level,
            topics=[ListOffsetsRequestTopic(name=t, partitions=ps) for t, ps in topics.items()],
        )
        try:
            response: ListOffsetsResponse = self.client.request(
                leader, ApiKey.LIST_OFFSETS, body, (self.deadline - time.monotonic()) * 1000.0
            )
        except KafkaError as e:
            self.last_error = e
            if not e.retriable:
                raise
            self.metadata.request_update()
            return True
        retry = False
        for topic in response.topics:
            for part in topic.partitions:
                retry |= self._take(TopicPartition(topic.name, part.partition_index), part)
        return retry

    def _take(self, tp: TopicPartition, part: ListOffsetsResponsePartition) -> bool:
        """Record one partition's answer; whether its error is worth a retry. Raises
        :class:`KafkaError` for an error that is not."""
        code = part.error_code
        if code == 0:
            self.out[tp] = OffsetAndTimestamp(part.offset, part.timestamp)
            self.pending.pop(tp, None)
            return False
        if code in REFRESH_ERRORS or KafkaError(code).retriable:
            self.last_error = KafkaError(code, f"{tp.topic}-{tp.partition}")
            self.metadata.request_update()
            return True
        raise KafkaError(code, f"ListOffsets {tp.topic}-{tp.partition}")

    def refresh_leaders(self) -> None:
        """Forget stale leaders so the next round asks the cluster again, then back off."""
        try:
            self.client.fetch_metadata(
                sorted({tp.topic for tp in self.pending}),
                max(1.0, (self.deadline - time.monotonic()) * 1000.0),
            )
        except KafkaError as e:
            self.last_error = e
        time.sleep(min(self.retry_backoff_ms / 1000.0, max(0.0, self.deadline - time.monotonic())))
