"""Security records in the metadata log: record codec, image replay and snapshots, the
controller's validation, and the gRPC round trip through a controller on an in-memory log."""

from __future__ import annotations

import secrets
import time
import uuid
from collections.abc import Iterator

import pytest

from common.error_codes import ErrorCode
from common.security.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from common.security.plain import scram_plain_check
from common.security.scram import (
    MIN_ITERATIONS,
    ScramClient,
    ScramMechanism,
    ScramServer,
    salted_password,
)
from metadata import security_control as ctl
from metadata import security_messages as sm
from metadata.client import ControllerClient
from metadata.controller_config import ControllerConfig
from metadata.delta import MetadataDelta, apply_records
from metadata.image import MetadataImage
from metadata.records import (
    AccessControlEntryRecord,
    ClientQuotaRecord,
    RemoveAccessControlEntryRecord,
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
    decode_record,
    encode_record,
)
from metadata.security_client import (
    alter_client_quotas,
    create_acls,
    delete_acls,
    delete_scram_credentials,
    describe_acls,
    describe_client_quotas,
    describe_scram_credentials,
    set_scram_password,
)
from metadata.service import ControllerServer
from metadata.snapshot import build_snapshot
from raft.api import LogEntry, Snapshot
from tests.unit.metadata.memlog import InMemoryQuorum

SHA256 = ScramMechanism.SCRAM_SHA_256
SHA512 = ScramMechanism.SCRAM_SHA_512
ACL_ID = uuid.UUID(int=7, version=4)


def upsertion(user: str, password: str, mech=SHA512, iterations=MIN_ITERATIONS, salt=b"salt"):
    return sm.ScramCredentialUpsertion(
        user, int(mech), iterations, salt, salted_password(mech, password, salt, iterations)
    )


def commit(image: MetadataImage, result) -> MetadataImage:
    assert list(result.encoded) == [encode_record(r) for r in result.records]
    return apply_records(image, [decode_record(e) for e in result.encoded])


def test_records_round_trip() -> None:
    records = [
        UserScramCredentialRecord("alice", 2, b"s", b"k" * 64, b"v" * 64, 4096),
        RemoveUserScramCredentialRecord("alice", 2),
        AccessControlEntryRecord(ACL_ID, 2, "t", 3, "User:a", "*", 3, 3),
        RemoveAccessControlEntryRecord(ACL_ID),
        ClientQuotaRecord("alice", None, "producer_byte_rate", 1048576.0, False),
        ClientQuotaRecord(None, "<default>", "consumer_byte_rate", 0.0, True),
    ]
    for r in records:
        assert decode_record(encode_record(r)) == r


def test_scram_credentials_in_the_image_authenticate() -> None:
    image = MetadataImage()
    req = sm.AlterUserScramCredentialsRequest(upsertions=[upsertion("alice", "pw")])
    result = ctl.alter_user_scram_credentials(image, req)
    assert result.response.results == [sm.AlterUserScramCredentialsResult("alice")]
    rec = result.records[0]
    assert isinstance(rec, UserScramCredentialRecord)
    assert b"pw" not in encode_record(rec)
    image = commit(image, result)
    server = ScramServer(SHA512, image.security.scram_credential)
    client = ScramClient(SHA512, "alice", "pw")
    final = client.final_message(server.evaluate(client.first_message()))
    client.verify_server_final(server.evaluate(final))
    assert scram_plain_check(image.security.scram_credential)("alice", "pw")
    # The snapshot carries the credentials (format 3) and decodes to an equal image.
    again = MetadataImage.decode(image.encode())
    assert again == image and again.encode() == image.encode()
    assert MetadataImage().encode()[1] == 2  # msgpack fixarray + format 2 without security
    # Describe and delete.
    described = ctl.describe_user_scram_credentials(
        image, sm.DescribeUserScramCredentialsRequest(["alice", "bob"])
    )
    assert described.results[0].credential_infos == [sm.ScramCredentialInfo(2, MIN_ITERATIONS)]
    assert described.results[1].error_code == ErrorCode.RESOURCE_NOT_FOUND
    image = commit(
        image,
        ctl.alter_user_scram_credentials(
            image,
            sm.AlterUserScramCredentialsRequest(deletions=[sm.ScramCredentialDeletion("alice", 2)]),
        ),
    )
    assert image.security.is_empty()


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        (
            sm.AlterUserScramCredentialsRequest(
                upsertions=[upsertion("a", "pw", iterations=MIN_ITERATIONS - 1)]
            ),
            ErrorCode.UNACCEPTABLE_CREDENTIAL,
        ),
        (
            sm.AlterUserScramCredentialsRequest(
                upsertions=[sm.ScramCredentialUpsertion("a", 2, MIN_ITERATIONS, b"s", b"short")]
            ),
            ErrorCode.UNACCEPTABLE_CREDENTIAL,
        ),
        (
            sm.AlterUserScramCredentialsRequest(
                upsertions=[sm.ScramCredentialUpsertion("a", 9, MIN_ITERATIONS, b"s", b"x" * 64)]
            ),
            ErrorCode.UNSUPPORTED_SASL_MECHANISM,
        ),
        (
            sm.AlterUserScramCredentialsRequest(
                deletions=[sm.ScramCredentialDeletion("a", 1)], upsertions=[upsertion("a", "pw")]
            ),
            ErrorCode.DUPLICATE_RESOURCE,
        ),
        (
            sm.AlterUserScramCredentialsRequest(deletions=[sm.ScramCredentialDeletion("a", 1)]),
            ErrorCode.RESOURCE_NOT_FOUND,
        ),
    ],
)
def test_scram_validation(request_, code) -> None:
    result = ctl.alter_user_scram_credentials(MetadataImage(), request_)
    assert result.records == []
    assert {r.error_code for r in result.response.results} == {code}


def creation(
    name="orders",
    principal="User:reader",
    op=AclOperation.READ,
    perm=AclPermissionType.ALLOW,
    ptype=PatternType.LITERAL,
):
    return sm.AclCreation(
        int(ResourceType.TOPIC), name, int(ptype), principal, "*", int(op), int(perm)
    )


def test_acls_create_describe_delete() -> None:
    ids = iter(uuid.UUID(int=i, version=4) for i in range(1, 100))
    image = MetadataImage()
    req = sm.CreateAclsRequest(
        [
            creation(),
            creation(op=AclOperation.WRITE, perm=AclPermissionType.DENY),
            creation(),  # duplicate: success, nothing new
            creation(op=AclOperation.ANY),  # not concrete
        ]
    )
    result = ctl.create_acls(image, req, lambda: next(ids))
    assert [r.error_code for r in result.response.results] == [0, 0, 0, ErrorCode.INVALID_REQUEST]
    image = commit(image, result)
    assert len(image.security.acls) == 2
    assert MetadataImage.decode(image.encode()) == image
    listed = ctl.describe_acls(
        image, sm.DescribeAclsRequest(sm.AclFilter(operation=int(AclOperation.WRITE)))
    )
    assert [a.permission_type for a in listed.acls] == [int(AclPermissionType.DENY)]
    match = sm.AclFilter(
        resource_type=2, resource_name="orders", pattern_type=int(PatternType.MATCH)
    )
    deleted = ctl.delete_acls(image, sm.DeleteAclsRequest([match]))
    assert len(deleted.response.filter_results[0].matching_acls) == 2
    image = commit(image, deleted)
    assert not image.security.acls
    # Replaying a removal of an absent ACL is skipped, not fatal.
    delta = MetadataDelta(image)
    delta.replay(RemoveAccessControlEntryRecord(ACL_ID))
    assert delta.skipped_records == 1 and delta.apply().security == image.security


def test_quotas_alter_describe_remove() -> None:
    image = MetadataImage()
    alice = sm.ClientQuotaEntity(user="alice")
    req = sm.AlterClientQuotasRequest(
        [
            sm.ClientQuotaAlteration(alice, [sm.ClientQuotaOp("producer_byte_rate", 1e6)]),
            sm.ClientQuotaAlteration(
                sm.ClientQuotaEntity(), [sm.ClientQuotaOp("producer_byte_rate", 1.0)]
            ),
            sm.ClientQuotaAlteration(alice, [sm.ClientQuotaOp("bogus", 1.0)]),
            sm.ClientQuotaAlteration(alice, [sm.ClientQuotaOp("consumer_byte_rate", -1.0)]),
        ]
    )
    result = ctl.alter_client_quotas(image, req)
    assert [r.error_code for r in result.response.entries] == [0] + [ErrorCode.INVALID_REQUEST] * 3
    image = commit(image, result)
    assert image.security.quotas == {("alice", None): {"producer_byte_rate": 1e6}}
    assert MetadataImage.decode(image.encode()) == image
    desc = ctl.describe_client_quotas(image, sm.DescribeClientQuotasRequest(user="alice"))
    assert desc.entries == [sm.ClientQuotaEntry(alice, {"producer_byte_rate": 1e6})]
    remove = sm.AlterClientQuotasRequest(
        [sm.ClientQuotaAlteration(alice, [sm.ClientQuotaOp("producer_byte_rate", remove=True)])]
    )
    image = commit(image, ctl.alter_client_quotas(image, remove))
    assert image.security.quotas == {}


def test_snapshot_builder_folds_security_records() -> None:
    entries_image = apply_records(
        MetadataImage(),
        [
            UserScramCredentialRecord("u", 1, b"s", b"k" * 32, b"v" * 32, 4096),
            ClientQuotaRecord(None, "c", "consumer_byte_rate", 5.0, False),
        ],
    )
    entries = [
        LogEntry(
            0, 1, encode_record(UserScramCredentialRecord("u", 1, b"s", b"k" * 32, b"v" * 32, 4096))
        ),
        LogEntry(
            1, 1, encode_record(ClientQuotaRecord(None, "c", "consumer_byte_rate", 5.0, False))
        ),
    ]
    data = build_snapshot(None, entries)
    image = MetadataImage.decode(data)
    assert image.security == entries_image.security
    again = MetadataImage.decode(build_snapshot(Snapshot(1, 1, data), []))
    assert again.security == image.security


@pytest.fixture
def controller() -> Iterator[ControllerClient]:
    quorum = InMemoryQuorum(build_snapshot, 100_000)
    server = ControllerServer(
        1, quorum.voter(1), ControllerConfig(broker_session_timeout_ms=60_000), "127.0.0.1", 0
    )
    server.start()
    quorum.elect(1)
    client = ControllerClient(server.address, timeout_s=10.0)
    try:
        deadline = time.monotonic() + 10
        while not server.is_active:
            assert time.monotonic() < deadline, "controller never became active"
            time.sleep(0.01)
        yield client
    finally:
        client.close()
        server.stop()


def test_grpc_round_trip(controller: ControllerClient) -> None:
    password = secrets.token_urlsafe(12)
    results = set_scram_password(controller, "alice", password, iterations=MIN_ITERATIONS)
    assert [r.error_code for r in results] == [0]
    described = describe_scram_credentials(controller)
    assert [(r.user, sorted(i.mechanism for i in r.credential_infos)) for r in described] == [
        ("alice", [1, 2])
    ]
    assert [r.error_code for r in delete_scram_credentials(controller, "alice", [SHA256])] == [0]
    described = describe_scram_credentials(controller, ["alice"])
    assert [i.mechanism for i in described[0].credential_infos] == [2]

    assert [r.error_code for r in create_acls(controller, [creation()])] == [0]
    assert len(describe_acls(controller).acls) == 1
    assert len(delete_acls(controller, [sm.AclFilter()])[0].matching_acls) == 1
    assert describe_acls(controller).acls == []

    entity = sm.ClientQuotaEntity(client_id="<default>")
    alter = [sm.ClientQuotaAlteration(entity, [sm.ClientQuotaOp("consumer_byte_rate", 2048.0)])]
    assert [r.error_code for r in alter_client_quotas(controller, alter)] == [0]
    assert describe_client_quotas(controller) == [
        sm.ClientQuotaEntry(entity, {"consumer_byte_rate": 2048.0})
    ]
