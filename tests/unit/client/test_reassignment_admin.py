"""Admin's partition reassignment calls against a scripted in-process broker (the protocol codec
on both sides): the request bodies they send, the answers they read, the errors they raise, and
the guard against sending allow_replication_factor_change=False in a version without it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from common.error_codes import ErrorCode
from common.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from common.protocol.codec import RequestHeader, api_versions_entries, encode_response
from common.protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterPartitionReassignmentsResponsePartition,
    AlterPartitionReassignmentsResponseResponse,
)
from common.protocol.messages.api_versions import ApiVersionsResponse
from common.protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsRequestTopic,
    ListPartitionReassignmentsResponse,
    ListPartitionReassignmentsResponsePartition,
    ListPartitionReassignmentsResponseTopic,
)
from kraftlog_client import Admin, KafkaError, PartitionReassignment, TopicPartition
from tests.unit.client.scripted_broker import Handler, ScriptedBroker, metadata_response

ALTER, LIST = ApiKey.ALTER_PARTITION_REASSIGNMENTS, ApiKey.LIST_PARTITION_REASSIGNMENTS


class Script:
    """A broker answering ApiVersions (with ``versions``), Metadata, and the reassignment APIs
    with ``alter`` / ``listing``; it keeps the request bodies it got."""

    def __init__(
        self,
        alter: AlterPartitionReassignmentsResponse | None = None,
        listing: ListPartitionReassignmentsResponse | None = None,
        versions: dict[ApiKey, tuple[int, int]] | None = None,
    ) -> None:
        self.alter = alter or AlterPartitionReassignmentsResponse()
        self.listing = listing or ListPartitionReassignmentsResponse()
        self.versions = versions or dict(SUPPORTED_VERSIONS)
        self.bodies: list[Any] = []
        self.port = 0

    def __call__(self, header: RequestHeader, body: Any) -> bytes | None:
        if header.api_key == ApiKey.API_VERSIONS:
            entries = api_versions_entries(self.versions)
            answer: Any = ApiVersionsResponse(error_code=0, api_keys=entries)
        elif header.api_key == ApiKey.METADATA:
            return metadata_response(header, port=self.port)
        elif header.api_key == ALTER:
            answer = self.alter
        elif header.api_key == LIST:
            answer = self.listing
        else:
            return None
        if header.api_key != ApiKey.API_VERSIONS:
            self.bodies.append((header.api_version, body))
        return encode_response(header, answer).to_bytes()


def admin_on(factory: Callable[[Handler], ScriptedBroker], script: Script) -> Admin:
    broker = factory(script)
    script.port = broker.port
    return Admin({"bootstrap.servers": f"127.0.0.1:{broker.port}"})


def test_alter_sends_targets_and_cancels_and_reads_each_partition(
    broker_factory: Callable[[Handler], ScriptedBroker],
) -> None:
    script = Script(
        alter=AlterPartitionReassignmentsResponse(
            responses=[
                AlterPartitionReassignmentsResponseResponse(
                    "t",
                    [
                        AlterPartitionReassignmentsResponsePartition(0, 0, None),
                        AlterPartitionReassignmentsResponsePartition(
                            1, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "nothing to cancel"
                        ),
                    ],
                )
            ]
        )
    )
    with admin_on(broker_factory, script) as admin:
        result = admin.alter_partition_reassignments(
            {TopicPartition("t", 0): [3, 1, 2], TopicPartition("t", 1): None}, timeout_ms=8000
        )
    assert result[TopicPartition("t", 0)] is None
    error = result[TopicPartition("t", 1)]
    assert error is not None and error.code == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    assert error.message == "nothing to cancel"
    ((version, body),) = script.bodies
    assert version == 1
    assert isinstance(body, AlterPartitionReassignmentsRequest)
    assert body.timeout_ms == 8000 and body.allow_replication_factor_change is True
    ((topic),) = body.topics
    assert topic.name == "t"
    assert [(p.partition_index, p.replicas) for p in topic.partitions] == [
        (0, [3, 1, 2]),
        (1, None),
    ]


def test_a_refusal_of_the_whole_request_raises(
    broker_factory: Callable[[Handler], ScriptedBroker],
) -> None:
    denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    script = Script(
        alter=AlterPartitionReassignmentsResponse(error_code=denied),
        listing=ListPartitionReassignmentsResponse(error_code=denied),
    )
    with admin_on(broker_factory, script) as admin:
        with pytest.raises(KafkaError) as err:
            admin.alter_partition_reassignments({TopicPartition("t", 0): [1]})
        assert err.value.code == denied
        with pytest.raises(KafkaError) as err:
            admin.list_partition_reassignments()
        assert err.value.code == denied


def test_disallowing_a_factor_change_needs_v1(
    broker_factory: Callable[[Handler], ScriptedBroker],
) -> None:
    old = {**SUPPORTED_VERSIONS, ALTER: (0, 0)}
    script = Script(versions=old)
    with admin_on(broker_factory, script) as admin:
        tp = TopicPartition("t", 0)
        with pytest.raises(KafkaError) as err:
            admin.alter_partition_reassignments({tp: [1, 2]}, allow_replication_factor_change=False)
        assert err.value.code == ErrorCode.UNSUPPORTED_VERSION
        assert script.bodies == []  # nothing was sent
        # Allowing it, v0 will do.
        admin.alter_partition_reassignments({tp: [1, 2]})
    assert [v for v, _ in script.bodies] == [0]

    script = Script()
    with admin_on(broker_factory, script) as admin:
        admin.alter_partition_reassignments({tp: [1, 2]}, allow_replication_factor_change=False)
    version, body = script.bodies[-1]
    assert version == 1 and body.allow_replication_factor_change is False


def test_list_names_partitions_or_asks_for_all(
    broker_factory: Callable[[Handler], ScriptedBroker],
) -> None:
    script = Script(
        listing=ListPartitionReassignmentsResponse(
            topics=[
                ListPartitionReassignmentsResponseTopic(
                    "t", [ListPartitionReassignmentsResponsePartition(2, [4, 1, 3], [4], [3])]
                )
            ]
        )
    )
    with admin_on(broker_factory, script) as admin:
        moving = admin.list_partition_reassignments(
            [TopicPartition("t", 2), TopicPartition("t", 0), TopicPartition("u", 1)]
        )
        assert moving == {TopicPartition("t", 2): PartitionReassignment((4, 1, 3), (4,), (3,))}
        admin.list_partition_reassignments()
    (_, named), (_, everything) = script.bodies
    assert isinstance(named, ListPartitionReassignmentsRequest)
    assert named.topics == [
        ListPartitionReassignmentsRequestTopic("t", [2, 0]),
        ListPartitionReassignmentsRequestTopic("u", [1]),
    ]
    assert everything.topics is None
