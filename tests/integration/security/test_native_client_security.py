"""kraftlog's native client connection (BrokerConnection with ClientSecurity) against the
secured cluster of test_security_cluster.py (SASL_SSL and SSL-with-client-certificate
listeners, the authorizer on):

- SASL_SSL with SCRAM-SHA-512 (host name verified): produce a batch to ``orders`` and fetch it
  back as User:app;
- SSL with a client certificate: the certificate's principal sees ``payments`` in Metadata;
- a wrong password: the connection fails with AuthenticationFailedError
  (SASL_AUTHENTICATION_FAILED, not retriable, no secret in the message);
- a broker certificate from another CA: AuthenticationFailedError, no retry.
"""

from __future__ import annotations

import os
import selectors
import time
from collections.abc import Callable
from typing import Any

import pytest

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from kraftlog_client import Admin, Consumer, KafkaError, Producer, TopicPartition
from kraftlog_client.broker_connection import CLOSED, CONNECTING, READY, BrokerConnection
from kraftlog_client.client_security import AuthenticationFailedError, client_security
from kraftlog_client.config import ConsumerConfig, client_config
from kraftlog_client.errors import ClientClosedError
from kraftlog_client.record_decoder import decode_fetched
from kraftlog_client.record_encoder import RecordBatchBuilder
from tests.integration.security import test_security_cluster as secured
from tests.integration.security.test_security_cluster import APP_PASSWORD, Secure

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:importlib.resources._legacy"),
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]

DEADLINE_S = 30.0
# The secured cluster of test_security_cluster.py (its users, ACLs and PKI), one per module.
secure = secured.secure


def _connect(address: str, props: dict[str, str]) -> BrokerConnection:
    config = client_config(ConsumerConfig, {"bootstrap.servers": address, **props})
    host, _, port = address.rpartition(":")
    return BrokerConnection(
        -1,
        host,
        int(port),
        client_id="native-security-test",
        request_timeout_ms=10000,
        connect_timeout_ms=10000,
        security=client_security(config),
    )


class Pump:
    """Drives one connection's socket events as NetworkClient.poll does: ``conn.sock``
    registered once at connect, its interest modified, unregistered after close (a closed
    connection must leave nothing registered: its descriptor may be reused)."""

    def __init__(self, conn: BrokerConnection) -> None:
        self.conn = conn
        self.selector = selectors.DefaultSelector()
        conn.connect(time.monotonic())
        assert conn.sock is not None, conn.error
        self.selector.register(conn.sock, selectors.EVENT_WRITE)

    def until(self, done: Callable[[], bool]) -> None:
        conn = self.conn
        deadline = time.monotonic() + DEADLINE_S
        while not done() and conn.state is not CLOSED:
            assert time.monotonic() < deadline, f"{conn} stuck in {conn.state}"
            events = self.selector.select(0.1)
            now = time.monotonic()
            if events and conn.state is CONNECTING:
                conn.finish_connect(now)
            elif events:
                if events[0][1] & selectors.EVENT_READ:
                    conn.read()
                if events[0][1] & selectors.EVENT_WRITE and conn.state is not CLOSED:
                    conn.write()
            conn.check_timeouts(time.monotonic())
            if conn.state is CLOSED:
                break
            mask = selectors.EVENT_READ
            if conn.state is CONNECTING or conn.has_pending_writes:
                mask |= selectors.EVENT_WRITE
            if self.selector.get_key(conn.sock).events != mask:
                self.selector.modify(conn.sock, mask)
        if conn.state is CLOSED:
            self.close()

    def request(self, api_key: int, body: dict[str, Any]) -> dict[str, Any]:
        box: list[tuple[dict[str, Any] | None, Exception | None]] = []
        self.conn.send(api_key, body, lambda b, e: box.append((b, e)), time.monotonic())
        self.until(lambda: bool(box))
        assert box, self.conn.error
        response, error = box[0]
        assert error is None and response is not None, error
        return response

    def close(self) -> None:
        self.conn.close()
        if self.selector.get_map() is None:
            return  # closed already
        if self.selector.get_map():
            self.selector.unregister(self.conn.sock)
        assert not self.selector.get_map(), "a closed connection left its descriptor registered"
        self.selector.close()


def _ready(address: str, props: dict[str, str]) -> Pump:
    pump = Pump(_connect(address, props))
    pump.until(lambda: pump.conn.state is READY)
    assert pump.conn.state is READY, pump.conn.error
    return pump


def _refused(address: str, props: dict[str, str]) -> BrokerConnection:
    pump = Pump(_connect(address, props))
    pump.until(lambda: pump.conn.state is READY)
    pump.close()
    return pump.conn


def _sasl_props(secure: Secure, password: str) -> dict[str, str]:
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "app",
        "sasl.password": password,
        "ssl.truststore.location": str(secure.pki / "ca.pem"),
    }


def test_sasl_ssl_scram_512_produce_and_fetch(secure: Secure) -> None:
    pump = _ready(secure.sasl_ssl, _sasl_props(secure, APP_PASSWORD))
    try:
        builder = RecordBatchBuilder()
        now_ms = int(time.time() * 1000)
        for i in range(3):
            builder.append(now_ms, f"k{i}".encode(), f"native-over-sasl-ssl-{i}".encode())
        # Larger than one bounded TLS write (MAX_JOIN_BYTES) and many TLS records each way.
        big = os.urandom(600 * 1024)
        builder.append(now_ms, b"big", big)
        produced = pump.request(
            ApiKey.PRODUCE,
            {
                "transactional_id": None,
                "acks": -1,
                "timeout_ms": 10000,
                "topic_data": [
                    {
                        "name": "orders",
                        "partition_data": [{"index": 0, "records": bytes(builder.build())}],
                    }
                ],
            },
        )
        part = produced["responses"][0]["partition_responses"][0]
        assert part["error_code"] == 0, part
        base = part["base_offset"]
        fetched = pump.request(
            ApiKey.FETCH,
            {
                "replica_id": -1,
                "max_wait_ms": 0,
                "min_bytes": 0,
                "max_bytes": 4 << 20,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [
                    {
                        "topic": "orders",
                        "partitions": [
                            {
                                "partition": 0,
                                "current_leader_epoch": -1,
                                "fetch_offset": base,
                                "log_start_offset": -1,
                                "partition_max_bytes": 4 << 20,
                            }
                        ],
                    }
                ],
                "forgotten_topics_data": [],
                "rack_id": "",
            },
        )
        fpart = fetched["responses"][0]["partitions"][0]
        assert fpart["error_code"] == 0, fpart
        records = decode_fetched("orders", 0, fpart["records"], base).records
        assert [r.value for r in records[:4]] == [
            *(f"native-over-sasl-ssl-{i}".encode() for i in range(3)),
            big,
        ]
    finally:
        pump.close()


def test_ssl_client_certificate_principal(secure: Secure) -> None:
    props = {
        "security.protocol": "SSL",
        "ssl.truststore.location": str(secure.pki / "ca.pem"),
        "ssl.keystore.location": str(secure.pki / "client.pem"),
        "ssl.key.location": str(secure.pki / "client-key.pem"),
    }
    pump = _ready(secure.ssl_addr, props)
    try:
        metadata = pump.request(
            ApiKey.METADATA,
            {
                "topics": None,
                "allow_auto_topic_creation": False,
            },
        )
        # User:CN=client,... may describe payments only (deny by default for the rest).
        assert [t["name"] for t in metadata["topics"]] == ["payments"]
    finally:
        pump.close()


def test_wrong_password_is_a_clear_non_retriable_error(secure: Secure) -> None:
    conn = _refused(secure.sasl_ssl, _sasl_props(secure, "not-the-password"))
    assert conn.state is CLOSED and conn.auth_failed
    error = conn.error
    assert isinstance(error, AuthenticationFailedError)
    assert error.code is ErrorCode.SASL_AUTHENTICATION_FAILED and not error.retriable
    assert "not-the-password" not in str(error)
    # The broker keeps serving: the right password still works.
    _ready(secure.sasl_ssl, _sasl_props(secure, APP_PASSWORD)).close()


def test_untrusted_broker_certificate(secure: Secure) -> None:
    props = {**_sasl_props(secure, APP_PASSWORD)}
    props["ssl.truststore.location"] = str(secure.pki / "rogue" / "ca.pem")
    conn = _refused(secure.sasl_ssl, props)
    assert conn.state is CLOSED and conn.auth_failed
    assert "not trusted" in str(conn.error)


def test_producer_consumer_admin_over_sasl_ssl(secure: Secure) -> None:
    """The whole native client (not just a connection) over SASL_SSL SCRAM-SHA-512, and a
    wrong password failing Admin and Producer at once instead of a retry loop."""
    props = {"bootstrap.servers": secure.sasl_ssl, **_sasl_props(secure, APP_PASSWORD)}
    producer = Producer({**props, "enable.idempotence": "false", "acks": "all"})
    try:
        futures = [
            producer.send("orders", value=b"whole-client-%d" % i, partition=0) for i in range(5)
        ]
        producer.flush(30)
        offsets = [f.get(timeout=30).offset for f in futures]
    finally:
        producer.close()
    consumer = Consumer(props)
    try:
        tp = TopicPartition("orders", 0)
        consumer.assign([tp])
        consumer.seek(tp, offsets[0])
        got: list[bytes] = []
        deadline = time.monotonic() + DEADLINE_S
        while len(got) < 5 and time.monotonic() < deadline:
            got += [r.value for r in consumer.poll(200)]
        assert got[:5] == [b"whole-client-%d" % i for i in range(5)]
    finally:
        consumer.close()

    wrong = {"bootstrap.servers": secure.sasl_ssl, **_sasl_props(secure, "not-the-password")}
    admin = Admin(wrong)
    try:
        started = time.monotonic()
        with pytest.raises(AuthenticationFailedError):
            admin.list_topics(timeout_ms=20_000)
        assert time.monotonic() - started < 10.0  # failed, not retried until the timeout
    finally:
        admin.close()
    producer = Producer({**wrong, "enable.idempotence": "false", "delivery.timeout.ms": "60000"})
    try:
        # The sender stops on the refusal: send() fails at once with the reason.
        with pytest.raises((KafkaError, ClientClosedError), match="SASL_AUTHENTICATION_FAILED"):
            producer.send("orders", value=b"refused", partition=0).get(timeout=15)
    finally:
        producer.close()
