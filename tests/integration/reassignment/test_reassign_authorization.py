"""Authorization of the reassignment APIs on a real cluster with the authorizer on: one
controller and one broker with a PLAINTEXT listener (User:ANONYMOUS is a super user, as an
operator's admin would be) and a SASL_PLAINTEXT one (SCRAM users).

AlterPartitionReassignments needs Alter on the cluster and ListPartitionReassignments Describe
(which Alter implies). A principal without them gets CLUSTER_AUTHORIZATION_FAILED, as the whole
request's error: kraftlog's Admin raises KafkaError with that code, kafka-python raises
ClusterAuthorizationFailedError, and nothing moves.
"""

from __future__ import annotations

import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from common.error_codes import ErrorCode
from common.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePattern,
    ResourceType,
)
from kraftlog_client import Admin, KafkaError, TopicPartition
from metadata.messages import NewTopic
from tests.integration.clusters import ScramCluster as Secured
from tests.integration.clusters import scram_cluster

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:importlib.resources._legacy"),
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]

DEADLINE_S = 60.0
PASSWORDS = {user: f"{user}-{uuid.uuid4().hex}" for user in ("mover", "viewer", "nobody")}
TOPIC = "guarded"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    path = tmp_path_factory.mktemp("reassign-authz") / "c"
    with scram_cluster(path, PASSWORDS, DEADLINE_S) as secured:
        with secured.cluster.client(10.0) as client:
            (created,) = client.create_topics([NewTopic(TOPIC, 1, 1)])
            assert created.error_code == 0
        with Admin({"bootstrap.servers": secured.plaintext}) as admin:
            admin.create_acls(
                [
                    _on_cluster("User:mover", AclOperation.ALTER),
                    _on_cluster("User:viewer", AclOperation.DESCRIBE),
                ]
            )
            admin.wait_for_leaders([TOPIC])
        yield secured


def _on_cluster(principal: str, op: AclOperation) -> AclBinding:
    return AclBinding(
        ResourcePattern(ResourceType.CLUSTER, "kafka-cluster"),
        AccessControlEntry(principal, "*", op, AclPermissionType.ALLOW),
    )


def _as(s: Secured, user: str, call: Callable[[Admin], Any]) -> Any:
    """``call`` with an Admin logged in as ``user``, retried with a new Admin until the login
    works: credentials reach the broker after the controller commits them (and a refused
    login is final for the Admin that tried it). Errors of ``call`` itself are raised."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        with Admin(s.sasl_config(user, PASSWORDS[user])) as admin:
            try:
                admin.describe_cluster()
            except KafkaError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.2)
                continue
            return call(admin)


def test_alter_needs_alter_and_list_needs_describe_on_the_cluster(secured: Secured) -> None:
    tp = TopicPartition(TOPIC, 0)
    same_place = {tp: [secured.broker_id]}  # a reorder of one replica: accepted, moves nothing
    denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED

    def refused(call: Callable[[], Any]) -> ErrorCode:
        with pytest.raises(KafkaError) as err:
            call()
        return err.value.code

    assert _as(secured, "mover", lambda a: a.alter_partition_reassignments(same_place)) == {
        tp: None
    }
    assert _as(secured, "mover", lambda a: a.list_partition_reassignments()) == {}
    assert _as(secured, "viewer", lambda a: a.list_partition_reassignments()) == {}
    assert (
        _as(
            secured,
            "viewer",
            lambda a: refused(lambda: a.alter_partition_reassignments(same_place)),
        )
        == denied
    )
    assert (
        _as(
            secured,
            "nobody",
            lambda a: refused(lambda: a.alter_partition_reassignments(same_place)),
        )
        == denied
    )
    assert _as(secured, "nobody", lambda a: refused(a.list_partition_reassignments)) == denied


def test_kafka_python_sees_cluster_authorization_failed(secured: Secured) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka import TopicPartition as KafkaTopicPartition
        from kafka.admin import KafkaAdminClient
        from kafka.errors import ClusterAuthorizationFailedError

    def admin(user: str) -> Any:
        return KafkaAdminClient(
            bootstrap_servers=secured.sasl,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username=user,
            sasl_plain_password=PASSWORDS[user],
            request_timeout_ms=30_000,
        )

    ktp = KafkaTopicPartition(TOPIC, 0)
    _as(secured, "nobody", lambda a: None)  # the users' credentials have reached the broker
    nobody = admin("nobody")
    try:
        with pytest.raises(ClusterAuthorizationFailedError):
            nobody.alter_partition_reassignments({ktp: [secured.broker_id]})
        with pytest.raises(ClusterAuthorizationFailedError):
            nobody.list_partition_reassignments()
    finally:
        nobody.close()
    mover = admin("mover")
    try:
        assert mover.alter_partition_reassignments({ktp: [secured.broker_id]}) == {ktp: None}
        assert mover.list_partition_reassignments() == {}
    finally:
        mover.close()
