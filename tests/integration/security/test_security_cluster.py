"""Security end to end on a real cluster (docs/security.md): one controller and one broker
with PLAINTEXT (internal, User:ANONYMOUS is a super user as an inter-broker principal would be),
SASL_SSL and SSL (client certificates required) listeners, the authorizer on, users, ACLs and
quotas created through the controller.

- kafka-python and confluent-kafka produce and consume over SASL_SSL with SCRAM-SHA-512;
- a wrong password, an untrusted / expired / missing client certificate and a plaintext client
  on a TLS port are refused, and the broker keeps serving;
- a principal with Read on one topic cannot write it, cannot read another, cannot see it in
  Metadata; deny wins over allow.
"""

from __future__ import annotations

import datetime
import socket
import ssl
import time
import urllib.request
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.codec import decode_response, encode_request
from common.protocol.messages.api_versions import ApiVersionsRequest
from common.protocol.messages.find_coordinator import FindCoordinatorRequest
from common.protocol.messages.offset_fetch import OffsetFetchRequest
from common.security.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from common.security.plain import plain_message
from common.security.scram import ScramClient, ScramMechanism
from data_plane.security import certs
from deploy.local_cluster import LocalCluster
from deploy.ports import free_ports
from metadata import security_messages as sm
from metadata.messages import NewTopic
from metadata.security_client import create_acls, set_scram_password
from tests.integration.clusters import FAST_OVERRIDES, configured_ports

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:importlib.resources._legacy"),
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]

DEADLINE_S = 60.0
APP_PASSWORD = "app-" + uuid.uuid4().hex
READER_PASSWORD = "reader-" + uuid.uuid4().hex


@dataclass
class Secure:
    cluster: LocalCluster
    pki: Path
    sasl_ssl: str
    ssl_addr: str
    plaintext: str
    metrics_url: str


def _acl(
    principal: str,
    op: AclOperation,
    rtype: ResourceType,
    name: str,
    perm=AclPermissionType.ALLOW,
    ptype=PatternType.LITERAL,
):
    return sm.AclCreation(int(rtype), name, int(ptype), principal, "*", int(op), int(perm))


@pytest.fixture(scope="module")
def secure(tmp_path_factory) -> Iterator[Secure]:
    pki = tmp_path_factory.mktemp("pki")
    certs.create_dev_pki(pki, ["node", "client"])
    ca = certs.load_ca(pki)
    past = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=30)
    certs.write_issued(ca, pki, "expired", validity_days=1, not_before=past)
    certs.create_dev_pki(pki / "rogue", ["rogue"])
    path = tmp_path_factory.mktemp("cluster") / "c"
    overrides = {
        **FAST_OVERRIDES,
        "listener.security.protocol.map": (
            "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL"
        ),
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "ssl.keystore.location": str(pki / "node.pem"),
        "ssl.key.location": str(pki / "node-key.pem"),
        "ssl.truststore.location": str(pki / "ca.pem"),
        "ssl.client.auth": "required",
        "kraftlog.authorizer.enabled": "true",
        "super.users": "User:admin;User:ANONYMOUS",
        "auto.create.topics.enable": "false",
    }
    cluster = LocalCluster.create(path, controllers=1, brokers=1, overrides=overrides)
    try:
        (broker_id,) = cluster.broker_ids
        port = cluster.node(broker_id).broker_port
        sasl_port, ssl_port, metrics_port = free_ports(3, exclude=configured_ports(cluster))
        listeners = (
            f"PLAINTEXT://127.0.0.1:{port},SASL_SSL://127.0.0.1:{sasl_port},"
            f"SSL://127.0.0.1:{ssl_port}"
        )
        cluster.update_config(
            broker_id,
            {
                "listeners": listeners,
                "advertised.listeners": listeners,
                "metrics.port": str(metrics_port),
            },
        )
        cluster.start()
        cluster.wait_ready(DEADLINE_S)
        with cluster.client(10.0) as client:
            for name in ("orders", "payments", "secret-stuff"):
                assert client.create_topics([NewTopic(name, 1, 1)])[0].error_code == 0
            for user, password in (("app", APP_PASSWORD), ("reader", READER_PASSWORD)):
                results = set_scram_password(client, user, password, iterations=4096)
                assert [r.error_code for r in results] == [0]
            results = create_acls(
                client,
                [
                    _acl("User:app", AclOperation.WRITE, ResourceType.TOPIC, "orders"),
                    _acl("User:app", AclOperation.READ, ResourceType.TOPIC, "orders"),
                    _acl(
                        "User:app",
                        AclOperation.READ,
                        ResourceType.GROUP,
                        "app-",
                        ptype=PatternType.PREFIXED,
                    ),
                    _acl("User:reader", AclOperation.READ, ResourceType.TOPIC, "orders"),
                    _acl(
                        "User:reader",
                        AclOperation.READ,
                        ResourceType.TOPIC,
                        "secret-",
                        ptype=PatternType.PREFIXED,
                    ),
                    _acl(
                        "User:reader",
                        AclOperation.READ,
                        ResourceType.TOPIC,
                        "secret-stuff",
                        perm=AclPermissionType.DENY,
                    ),
                    _acl(
                        "User:reader",
                        AclOperation.READ,
                        ResourceType.GROUP,
                        "reader-",
                        ptype=PatternType.PREFIXED,
                    ),
                    _acl(
                        "User:CN=client,O=kraftlog development",
                        AclOperation.DESCRIBE,
                        ResourceType.TOPIC,
                        "payments",
                    ),
                ],
            )
            assert [r.error_code for r in results] == [0] * 8
            target = client.describe_cluster().metadata_offset
        metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
        _wait_metadata(metrics_url, target)
        yield Secure(
            cluster,
            pki,
            f"127.0.0.1:{sasl_port}",
            f"127.0.0.1:{ssl_port}",
            f"127.0.0.1:{port}",
            metrics_url,
        )
    finally:
        cluster.close()


def _scrape(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        text = resp.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def _wait_metadata(url: str, offset: int) -> None:
    """Until the broker applied the metadata log up to ``offset`` (its users and ACLs)."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        try:
            if _scrape(url).get("kraftlog_metadata_offset", -1) >= offset:
                return
        except OSError:
            pass
        assert time.monotonic() < deadline, f"broker never reached metadata offset {offset}"
        time.sleep(0.1)


def _kafka():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import kafka
        import kafka.errors

    return kafka


def _kp_security(s: Secure, user: str, password: str) -> dict:
    return {
        "bootstrap_servers": s.sasl_ssl,
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": user,
        "sasl_plain_password": password,
        "ssl_cafile": str(s.pki / "ca.pem"),
    }


def _cf_security(s: Secure, user: str, password: str) -> dict:
    return {
        "bootstrap.servers": s.sasl_ssl,
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": password,
        "ssl.ca.location": str(s.pki / "ca.pem"),
    }


def _kp_produce(
    s: Secure, user: str, password: str, topic: str, values: list[bytes], **extra: object
) -> None:
    kafka = _kafka()
    producer = kafka.KafkaProducer(acks="all", **_kp_security(s, user, password), **extra)
    try:
        futures = [producer.send(topic, value=v) for v in values]
        producer.flush(timeout=DEADLINE_S)
        for f in futures:
            f.get(timeout=DEADLINE_S)
    finally:
        producer.close(timeout=10)


def _kp_consume(
    s: Secure, user: str, password: str, topic: str, count: int, until: bytes | None = None
) -> list[bytes]:
    """Read partition 0 from the start (assigned: no consumer group involved) until ``count``
    records or the value ``until`` arrived."""
    kafka = _kafka()
    consumer = kafka.KafkaConsumer(
        group_id=None, enable_auto_commit=False, **_kp_security(s, user, password)
    )
    got: list[bytes] = []
    deadline = time.monotonic() + DEADLINE_S
    try:
        tp = kafka.TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        while len(got) < count and until not in got and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                got.extend(r.value for r in batch)
    finally:
        consumer.close()
    return got


def _cf_produce(s: Secure, user: str, password: str, topic: str, values: list[bytes]) -> None:
    from confluent_kafka import Producer

    errors: list[object] = []
    producer = Producer({**_cf_security(s, user, password), "acks": "all"})
    for v in values:
        producer.produce(topic, value=v, on_delivery=lambda err, _m: err and errors.append(err))
    assert producer.flush(DEADLINE_S) == 0
    assert errors == []


def _cf_consume(s: Secure, user: str, password: str, topic: str, count: int) -> list[bytes]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {**_cf_security(s, user, password), "group.id": "app-cf", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got: list[bytes] = []
    deadline = time.monotonic() + DEADLINE_S
    try:
        while len(got) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
    finally:
        consumer.close()
    return got


def test_sasl_ssl_scram_sha_512_with_both_clients(secure: Secure) -> None:
    kp_values = [b"kp-%d" % i for i in range(50)]
    cf_values = [b"cf-%d" % i for i in range(50)]
    _kp_produce(secure, "app", APP_PASSWORD, "orders", kp_values)
    _cf_produce(secure, "app", APP_PASSWORD, "orders", cf_values)
    expected = sorted(kp_values + cf_values)
    assert sorted(_kp_consume(secure, "app", APP_PASSWORD, "orders", 100)) == expected
    assert sorted(_cf_consume(secure, "app", APP_PASSWORD, "orders", 100)) == expected
    metrics = _scrape(secure.metrics_url)
    assert metrics.get('kraftlog_requests_total{api="SaslAuthenticate"}', 0) >= 4
    assert metrics.get('kraftlog_broker_topic_bytes_in_total{topic="orders"}', 0) > 0


# --- raw connections for the refusals -----------------------------------------------------------


def _client_ctx(s: Secure, cert: str | None = None, ca: Path | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(ca or s.pki / "ca.pem"))
    if cert is not None:
        base = s.pki if cert != "rogue" else s.pki / "rogue"
        ctx.load_cert_chain(str(base / f"{cert}.pem"), str(base / f"{cert}-key.pem"))
    return ctx


def _connect(addr: str, ctx: ssl.SSLContext | None) -> socket.socket:
    host, port = addr.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    if ctx is None:
        return sock
    try:
        return ctx.wrap_socket(sock, server_hostname=host)
    except BaseException:
        sock.close()
        raise


def _call(sock: socket.socket, api: ApiKey, version: int, body: dict) -> dict:
    sock.sendall(encode_request(int(api), version, 7, "security-test", body))
    size = int.from_bytes(_read(sock, 4), "big")
    _, response = decode_response(int(api), version, _read(sock, size))
    return response


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed by the broker")
        data += chunk
    return data


def _closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except (ConnectionError, ssl.SSLError):
        return True


def _scram_connect(s: Secure, user: str, password: str) -> socket.socket:
    """A raw connection to the SASL_SSL listener, authenticated with SCRAM-SHA-256."""
    sock = _connect(s.sasl_ssl, _client_ctx(s))
    try:
        assert (
            _call(sock, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-256"})["error_code"] == 0
        )
        scram = ScramClient(ScramMechanism.SCRAM_SHA_256, user, password)
        r1 = _call(sock, ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": scram.first_message()})
        final = scram.final_message(r1["auth_bytes"])
        r2 = _call(sock, ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": final})
        scram.verify_server_final(r2["auth_bytes"])
    except BaseException:
        sock.close()
        raise
    return sock


def _still_serving(s: Secure) -> None:
    with _connect(s.sasl_ssl, _client_ctx(s)) as sock:
        assert _call(sock, ApiKey.API_VERSIONS, 2, ApiVersionsRequest()).error_code == 0
        assert _call(sock, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})["error_code"] == 0
        auth = _call(
            sock, ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": plain_message("app", APP_PASSWORD)}
        )
        assert auth["error_code"] == 0
        meta = _call(sock, ApiKey.METADATA, 8, {"topics": [{"name": "orders"}]})
        assert meta["topics"][0]["error_code"] == 0


def test_refusals_and_the_broker_keeps_serving(secure: Secure) -> None:
    # Wrong password: SASL_AUTHENTICATION_FAILED, then the connection is closed.
    with _connect(secure.sasl_ssl, _client_ctx(secure)) as sock:
        assert _call(sock, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})["error_code"] == 0
        auth = _call(
            sock, ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": plain_message("app", "wrong")}
        )
        assert auth["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert "wrong" not in (auth["error_message"] or "")
        assert _closed(sock)
    # A request before authentication closes the connection.
    with _connect(secure.sasl_ssl, _client_ctx(secure)) as sock:
        sock.sendall(encode_request(int(ApiKey.METADATA), 8, 1, "x", {"topics": None}))
        assert _closed(sock)
    # A plaintext Kafka client on the TLS port.
    with _connect(secure.sasl_ssl, None) as sock:
        sock.sendall(encode_request(int(ApiKey.API_VERSIONS), 2, 1, "x", ApiVersionsRequest()))
        assert _closed(sock)
    # SSL listener (client certificates required): none, untrusted, expired are refused.
    for cert in (None, "rogue", "expired"):
        with (
            pytest.raises((ssl.SSLError, ConnectionError, OSError)),
            _connect(secure.ssl_addr, _client_ctx(secure, cert)) as sock,
        ):
            _call(sock, ApiKey.API_VERSIONS, 2, ApiVersionsRequest())
    # A kraftlog-trusted client certificate authenticates as its subject.
    with _connect(secure.ssl_addr, _client_ctx(secure, "client")) as sock:
        meta = _call(sock, ApiKey.METADATA, 8, {"topics": None})
        assert [t["name"] for t in meta["topics"]] == ["payments"]
    _still_serving(secure)
    # SaslHandshake v0 (old clients): the token travels bare, length-prefixed.
    with _connect(secure.sasl_ssl, _client_ctx(secure)) as sock:
        assert _call(sock, ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})["error_code"] == 0
        token = plain_message("app", APP_PASSWORD)
        sock.sendall(len(token).to_bytes(4, "big") + token)
        assert _read(sock, 4) == b"\x00\x00\x00\x00"  # an empty server token: accepted
        meta = _call(sock, ApiKey.METADATA, 8, {"topics": [{"name": "orders"}]})
        assert meta["topics"][0]["error_code"] == 0
    failures = _scrape(secure.metrics_url)
    assert failures.get('kraftlog_authentication_failures_total{listener="SASL_SSL"}', 0) >= 2
    assert failures.get('kraftlog_authentication_failures_total{listener="SSL"}', 0) >= 3


def test_read_only_principal(secure: Secure) -> None:
    kafka = _kafka()
    # Can read "orders" (written by app above or now).
    _kp_produce(secure, "app", APP_PASSWORD, "orders", [b"for-reader"])
    got = _kp_consume(secure, "reader", READER_PASSWORD, "orders", 10**6, until=b"for-reader")
    assert b"for-reader" in got
    # Cannot write it: Produce is refused per topic, and an idempotent producer does not even
    # get a producer id (no Write on any topic, no IdempotentWrite on the cluster; KIP-679).
    with pytest.raises(kafka.errors.TopicAuthorizationFailedError):
        _kp_produce(
            secure, "reader", READER_PASSWORD, "orders", [b"nope"], enable_idempotence=False
        )
    with pytest.raises(kafka.errors.KafkaError, match="ClusterAuthorizationFailed"):
        _kp_produce(secure, "reader", READER_PASSWORD, "orders", [b"nope"])
    # Cannot read another topic, and does not see it in Metadata.
    with _scram_connect(secure, "reader", READER_PASSWORD) as sock:
        meta = _call(sock, ApiKey.METADATA, 8, {"topics": None})
        # payments is hidden. secret-stuff stays visible: Describe is implied by the prefix's
        # Read ALLOW, and the DENY is on Read only (as in Kafka); reading it fails below.
        assert sorted(t["name"] for t in meta["topics"]) == ["orders", "secret-stuff"]
        meta = _call(sock, ApiKey.METADATA, 8, {"topics": [{"name": "payments"}]})
        assert meta["topics"][0]["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        fetch = {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 0,
            "topics": [
                {
                    "topic": t,
                    "partitions": [
                        {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024}
                    ],
                }
                for t in ("payments", "secret-stuff", "orders")
            ],
        }
        response = _call(sock, ApiKey.FETCH, 11, fetch)
        codes = {t["topic"]: t["partitions"][0]["error_code"] for t in response["responses"]}
        assert codes == {
            "payments": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            "secret-stuff": ErrorCode.TOPIC_AUTHORIZATION_FAILED,  # DENY wins over the prefix ALLOW
            "orders": 0,
        }


def test_group_consumer_and_group_acls(secure: Secure) -> None:
    kafka = _kafka()
    _kp_produce(secure, "app", APP_PASSWORD, "orders", [b"grp-1"])
    consumer = kafka.KafkaConsumer(
        "orders",
        group_id="app-grp",
        auto_offset_reset="earliest",
        **_kp_security(secure, "app", APP_PASSWORD),
    )
    got: list[bytes] = []
    deadline = time.monotonic() + DEADLINE_S
    try:
        while b"grp-1" not in got and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                got.extend(r.value for r in batch)
        consumer.commit()
    finally:
        consumer.close()
    assert b"grp-1" in got
    # reader may use reader-* groups only.
    with _scram_connect(secure, "reader", READER_PASSWORD) as sock:
        found = _call(sock, ApiKey.FIND_COORDINATOR, 2, FindCoordinatorRequest("app-grp", 0))
        assert found.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        every = OffsetFetchRequest(group_id="app-grp", topics=None)
        fetched = _call(sock, ApiKey.OFFSET_FETCH, 5, every)
        assert fetched.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        found = _call(sock, ApiKey.FIND_COORDINATOR, 2, FindCoordinatorRequest("reader-1", 0))
        assert found.error_code == 0


def test_scram_credentials_through_the_kafka_admin_apis(secure: Secure) -> None:
    """AlterUserScramCredentials / DescribeUserScramCredentials from confluent-kafka, as
    kafka-configs --entity-type users does: a user made this way logs in with SCRAM, a wrong
    password does not, and a principal without Alter on the cluster may not make users."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    password = "fresh-" + uuid.uuid4().hex
    admin = AdminClient({"bootstrap.servers": secure.plaintext})  # ANONYMOUS is a super user
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)
    upsert = UserScramCredentialUpsertion("fresh", info, password.encode())
    admin.alter_user_scram_credentials([upsert])["fresh"].result(DEADLINE_S)
    described = admin.describe_user_scram_credentials(["fresh"])["fresh"].result(DEADLINE_S)
    (cred,) = described.scram_credential_infos
    assert (cred.mechanism, cred.iterations) == (ScramMechanism.SCRAM_SHA_512, 8192)

    def can_log_in(pw: str) -> bool:
        client = AdminClient({**_cf_security(secure, "fresh", pw), "log_level": 0})
        try:
            client.list_topics(timeout=10)
            return True
        except KafkaException:
            return False

    deadline = time.monotonic() + DEADLINE_S
    while not can_log_in(password) and time.monotonic() < deadline:
        time.sleep(0.2)  # the broker applies the credential with its metadata
    assert can_log_in(password)
    assert not can_log_in(password + "x")
    reader = AdminClient(_cf_security(secure, "reader", READER_PASSWORD))
    refused = reader.alter_user_scram_credentials(
        [UserScramCredentialDeletion("fresh", ScramMechanism.SCRAM_SHA_512)]
    )
    try:
        refused["fresh"].result(DEADLINE_S)
        raise AssertionError("a reader altered a SCRAM credential")
    except KafkaException as e:
        assert "CLUSTER_AUTHORIZATION_FAILED" in str(e) or "authoriz" in str(e).lower()
    gone = admin.alter_user_scram_credentials(
        [UserScramCredentialDeletion("fresh", ScramMechanism.SCRAM_SHA_512)]
    )
    gone["fresh"].result(DEADLINE_S)
