"""Consumer-group administration over the Kafka protocol (used by :class:`Admin`).

Every group lives on one coordinator broker (FindCoordinator tells which); ListGroups is
answered per broker for the groups it coordinates, so listing asks every broker. Offsets are
read with OffsetFetch and changed with a "simple" OffsetCommit (generation -1, no member id),
which Kafka, and kraftlog, accept only while the group has no members: altering offsets under
running consumers would be overwritten by their next commit, so it is refused here first with
NON_EMPTY_GROUP, as kafka-consumer-groups does.

Functions block on the calling thread up to their deadline; coordinator moves and loading
are retried (:mod:`kraftlog_client.coordinator_lookup`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.messages.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupDescribeResponseAssignment,
    ConsumerGroupDescribeResponseTargetAssignment,
)
from common.protocol.messages.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from common.protocol.messages.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from common.protocol.messages.list_groups import ListGroupsRequest, ListGroupsResponse
from common.protocol.messages.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from common.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
)
from common.topic_partition import TopicPartition
from kraftlog_client.consumer_coordinator import error_code, offset_commit_topics
from kraftlog_client.consumer_protocol import (
    PROTOCOL_TYPE,
    ConsumerProtocolError,
    decode_assignment,
)
from kraftlog_client.coordinator_lookup import remaining_ms, with_coordinator
from kraftlog_client.errors import KafkaError
from kraftlog_client.network_client import NetworkClient

logger = logging.getLogger(__name__)

EMPTY_STATES = frozenset({"Empty", "Dead"})
CLASSIC_GROUP_TYPE = "classic"
CONSUMER_GROUP_TYPE = "consumer"


class GroupListing(NamedTuple):
    group_id: str
    protocol_type: str
    coordinator: int


class MemberDescription(NamedTuple):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: tuple[TopicPartition, ...]
    # Consumer-protocol (KIP-848) groups only: the member's epoch and target assignment.
    member_epoch: int = -1
    target_assignment: tuple[TopicPartition, ...] = ()


class GroupDescription(NamedTuple):
    group_id: str
    # Classic: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead; consumer
    # protocol: Empty, Assigning, Reconciling, Stable.
    state: str
    protocol_type: str
    protocol: str  # the assignor chosen for the generation (server-side for KIP-848 groups)
    members: tuple[MemberDescription, ...]
    coordinator: int
    group_type: str = CLASSIC_GROUP_TYPE  # or "consumer" (KIP-848)
    group_epoch: int = -1
    assignment_epoch: int = -1

    @property
    def is_empty(self) -> bool:
        return self.state in EMPTY_STATES


def list_groups(
    client: NetworkClient, deadline: float, per_broker_timeout_ms: float
) -> list[GroupListing]:
    """Every broker's groups. A broker that does not answer within ``per_broker_timeout_ms``
    is skipped (its groups move to the new leaders of its offsets partitions, which list
    them); if none answers, the last error is raised."""
    client.fetch_metadata([], remaining_ms(deadline, "Metadata"))
    out: dict[str, GroupListing] = {}
    answered = 0
    last_error: KafkaError | None = None
    for node in sorted(client.metadata.brokers):
        timeout = min(per_broker_timeout_ms, remaining_ms(deadline, "ListGroups"))
        try:
            response = client.request(node, ApiKey.LIST_GROUPS, ListGroupsRequest(), timeout)
        except KafkaError as e:
            logger.warning("ListGroups: broker %d did not answer: %s", node, e)
            last_error = e
            continue
        answered += 1
        if not isinstance(response, ListGroupsResponse):
            raise TypeError(f"ListGroups decoded as {type(response).__name__}")
        code = error_code(response.error_code)
        if code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            continue  # its groups are being loaded; they show on the next listing
        if code != ErrorCode.NO_ERROR:
            raise KafkaError(code, f"ListGroups on broker {node}")
        for g in response.groups:
            out[g.group_id] = GroupListing(g.group_id, g.protocol_type, node)
    if not answered and last_error is not None:
        raise last_error
    return sorted(out.values())


def describe_group(
    client: NetworkClient, group_id: str, deadline: float, backoff_ms: int
) -> GroupDescription:
    """A consumer-protocol group from ConsumerGroupDescribe when the coordinator serves it,
    else (a classic or unknown group, or an older broker) from DescribeGroups."""
    try:
        described = _describe_consumer_group(client, group_id, deadline, backoff_ms)
    except KafkaError as e:
        if e.code != ErrorCode.UNSUPPORTED_VERSION:
            raise
        described = None  # a broker without KIP-848
    if described is not None:
        return described
    return _describe_classic_group(client, group_id, deadline, backoff_ms)


def _describe_consumer_group(
    client: NetworkClient, group_id: str, deadline: float, backoff_ms: int
) -> GroupDescription | None:
    def first_error(response: ConsumerGroupDescribeResponse) -> int:
        return error_code(response.groups[0].error_code) if response.groups else 0

    node, response = with_coordinator(
        client,
        group_id,
        ApiKey.CONSUMER_GROUP_DESCRIBE,
        ConsumerGroupDescribeRequest(group_ids=[group_id], include_authorized_operations=False),
        deadline,
        backoff_ms,
        first_error,
    )
    if not isinstance(response, ConsumerGroupDescribeResponse):
        raise TypeError(f"ConsumerGroupDescribe decoded as {type(response).__name__}")
    if not response.groups:
        raise KafkaError(
            ErrorCode.UNKNOWN_SERVER_ERROR, f"CONSUMER_GROUP_DESCRIBE({group_id}): no answer"
        )
    g = response.groups[0]
    code = error_code(g.error_code)
    if code == ErrorCode.GROUP_ID_NOT_FOUND:
        return None  # a classic group, or none
    if code != ErrorCode.NO_ERROR:
        raise KafkaError(code, f"ConsumerGroupDescribe({group_id})")

    def partitions(
        assignment: ConsumerGroupDescribeResponseAssignment
        | ConsumerGroupDescribeResponseTargetAssignment,
    ) -> tuple[TopicPartition, ...]:
        return tuple(
            TopicPartition(t.topic_name, p)
            for t in assignment.topic_partitions
            for p in t.partitions
        )

    members = tuple(
        MemberDescription(
            m.member_id,
            m.instance_id,
            m.client_id,
            m.client_host,
            partitions(m.assignment),
            m.member_epoch,
            partitions(m.target_assignment),
        )
        for m in g.members
    )
    return GroupDescription(
        g.group_id,
        g.group_state,
        PROTOCOL_TYPE,
        g.assignor_name,
        members,
        node,
        CONSUMER_GROUP_TYPE,
        g.group_epoch,
        g.assignment_epoch,
    )


def _describe_classic_group(
    client: NetworkClient, group_id: str, deadline: float, backoff_ms: int
) -> GroupDescription:
    def first_error(response: DescribeGroupsResponse) -> int:
        return error_code(response.groups[0].error_code) if response.groups else 0

    node, response = with_coordinator(
        client,
        group_id,
        ApiKey.DESCRIBE_GROUPS,
        DescribeGroupsRequest(groups=[group_id], include_authorized_operations=False),
        deadline,
        backoff_ms,
        first_error,
    )
    if not isinstance(response, DescribeGroupsResponse):
        raise TypeError(f"DescribeGroups decoded as {type(response).__name__}")
    if not response.groups:
        raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"DESCRIBE_GROUPS({group_id}): no answer")
    g = response.groups[0]
    code = error_code(g.error_code)
    if code != ErrorCode.NO_ERROR:
        raise KafkaError(code, f"DescribeGroups({group_id})")
    members = []
    for m in g.members:
        assignment: tuple[TopicPartition, ...] = ()
        if g.protocol_type == PROTOCOL_TYPE and m.member_assignment:
            try:
                assignment = decode_assignment(m.member_assignment).partitions
            except ConsumerProtocolError:
                assignment = ()  # another client's private format: show no partitions
        members.append(
            MemberDescription(
                m.member_id, m.group_instance_id, m.client_id, m.client_host, assignment
            )
        )
    return GroupDescription(
        g.group_id, g.group_state, g.protocol_type, g.protocol_data, tuple(members), node
    )


def fetch_offsets(
    client: NetworkClient,
    group_id: str,
    partitions: Iterable[TopicPartition] | None,
    deadline: float,
    backoff_ms: int,
) -> dict[TopicPartition, int]:
    """Committed offsets of the group (all of them when ``partitions`` is None); partitions
    without a committed offset are left out."""
    topics = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        topics = [
            OffsetFetchRequestTopic(name=t, partition_indexes=sorted(p))
            for t, p in by_topic.items()
        ]

    def first_error(r: OffsetFetchResponse) -> int:
        if r.error_code:
            return error_code(r.error_code)
        for t in r.topics:
            for p in t.partitions:
                if p.error_code:
                    return error_code(p.error_code)
        return 0

    _node, response = with_coordinator(
        client,
        group_id,
        ApiKey.OFFSET_FETCH,
        OffsetFetchRequest(group_id=group_id, topics=topics),
        deadline,
        backoff_ms,
        first_error,
    )
    code = first_error(response)
    if code:
        raise KafkaError(code, f"OffsetFetch({group_id})")
    return {
        TopicPartition(t.name, p.partition_index): p.committed_offset
        for t in response.topics
        for p in t.partitions
        if p.committed_offset >= 0
    }


def commit_offsets_while_empty(
    client: NetworkClient,
    group_id: str,
    offsets: Mapping[TopicPartition, int],
    deadline: float,
    backoff_ms: int,
) -> None:
    """Set the group's committed offsets; refused with NON_EMPTY_GROUP while it has members."""
    for tp, offset in offsets.items():
        if offset < 0:
            raise ValueError(f"offset {offset} of {tp.topic}-{tp.partition} is negative")
    description = describe_group(client, group_id, deadline, backoff_ms)
    if not description.is_empty:
        raise KafkaError(
            ErrorCode.NON_EMPTY_GROUP,
            f"group {group_id} has {len(description.members)} active member(s) "
            f"(state {description.state}); stop its consumers first",
        )
    body = OffsetCommitRequest(
        group_id=group_id,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        retention_time_ms=-1,
        topics=offset_commit_topics(offsets),
    )

    def first_error(r: OffsetCommitResponse) -> int:
        for t in r.topics:
            for p in t.partitions:
                if p.error_code:
                    return error_code(p.error_code)
        return 0

    _node, response = with_coordinator(
        client, group_id, ApiKey.OFFSET_COMMIT, body, deadline, backoff_ms, first_error
    )
    code = first_error(response)
    if code == ErrorCode.UNKNOWN_MEMBER_ID:
        # A consumer joined between the check and the commit: the broker refused as Kafka.
        raise KafkaError(ErrorCode.NON_EMPTY_GROUP, f"group {group_id} is no longer empty")
    if code:
        raise KafkaError(code, f"OffsetCommit({group_id})")


def delete_group(client: NetworkClient, group_id: str, deadline: float, backoff_ms: int) -> None:
    """DeleteGroups (42): remove an empty group and its offsets (NON_EMPTY_GROUP otherwise)."""

    def first_error(r: DeleteGroupsResponse) -> int:
        return error_code(r.results[0].error_code) if r.results else 0

    _node, response = with_coordinator(
        client,
        group_id,
        ApiKey.DELETE_GROUPS,
        DeleteGroupsRequest(groups_names=[group_id]),
        deadline,
        backoff_ms,
        first_error,
    )
    code = first_error(response)
    if code:
        raise KafkaError(code, f"DeleteGroups({group_id})")
