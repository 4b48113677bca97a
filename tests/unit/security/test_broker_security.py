"""BrokerSecurity / ConnectionSecurity (SASL gating, principals, ACL verdicts, quotas) and the
TLS socket adapter over a real socket pair."""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
import uuid
from pathlib import Path

import pytest

from common.configdef import from_props
from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePattern,
    ResourceType,
)
from common.security.config import SecurityConfig
from common.security.errors import TlsConfigError
from common.security.plain import plain_message
from common.security.principal import ANONYMOUS, KafkaPrincipal
from common.security.scram import MIN_ITERATIONS, ScramClient, ScramMechanism, make_credential
from common.security.tls import client_context
from common.security.tls_socket import TlsHandshakeError, TlsSocket, tls_handshake
from data_plane.broker.handlers import authorization_rules
from data_plane.security import certs
from data_plane.security.broker_security import BrokerSecurity
from metadata.image import MetadataImage
from metadata.security_image import SecurityImage

SHA512 = ScramMechanism.SCRAM_SHA_512


class Clock:
    now_ms = 0

    def __call__(self) -> int:
        return self.now_ms


def image_with(**kw) -> MetadataImage:
    return MetadataImage(security=SecurityImage(**kw))


def broker(**props: str) -> BrokerSecurity:
    cfg = from_props(
        SecurityConfig,
        {
            "listener.security.protocol.map": "PLAIN_L:PLAINTEXT,SASL_L:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
            **props,
        },
    )
    b = BrokerSecurity(cfg, clock_ms=Clock(), authorization_rules=authorization_rules())
    cred = make_credential(SHA512, "pw", iterations=MIN_ITERATIONS)
    b.on_image(image_with(scram={("alice", SHA512): cred}))
    return b


def test_plaintext_connection_is_anonymous_and_ungated() -> None:
    c = broker().for_connection("PLAIN_L", "10.0.0.1", None)
    assert c.principal == ANONYMOUS and c.authenticated
    assert c.intercept(ApiKey.PRODUCE, 7, {}) is None
    assert c.authorize(ApiKey.PRODUCE, 7, {}) is None  # authorizer off
    reply = c.intercept(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    assert reply.close and reply.body["error_code"] == ErrorCode.ILLEGAL_SASL_STATE


def test_sasl_gates_until_authenticated_then_passes() -> None:
    c = broker().for_connection("SASL_L", "10.0.0.1", None)
    assert not c.authenticated
    assert c.intercept(ApiKey.API_VERSIONS, 2, {}) is None
    reply = c.intercept(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-512"})
    assert reply.body == {"error_code": 0, "mechanisms": ["PLAIN", "SCRAM-SHA-512"]}
    client = ScramClient(SHA512, "alice", "pw")
    r1 = c.intercept(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": client.first_message()})
    r2 = c.intercept(
        ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": client.final_message(r1.body["auth_bytes"])}
    )
    client.verify_server_final(r2.body["auth_bytes"])
    assert c.authenticated and c.principal == KafkaPrincipal("User", "alice")
    assert c.intercept(ApiKey.PRODUCE, 7, {}) is None


def test_request_before_authentication_closes(caplog) -> None:
    c = broker().for_connection("SASL_L", "10.0.0.9", None)
    reply = c.intercept(ApiKey.METADATA, 8, {})
    assert reply.body is None and reply.close
    assert "10.0.0.9" in caplog.text


def test_wrong_password_logged_without_the_secret(caplog) -> None:
    c = broker().for_connection("SASL_L", "10.0.0.1", None)
    c.intercept(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    reply = c.intercept(
        ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": plain_message("alice", "hunter2")}
    )
    assert reply.close and reply.body["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert "failed" in caplog.text and "hunter2" not in caplog.text


def test_v0_raw_tokens() -> None:
    c = broker().for_connection("SASL_L", "10.0.0.1", None)
    c.intercept(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})
    assert c.expects_raw_token
    assert c.raw_token(plain_message("alice", "pw")) == b""
    assert c.authenticated and not c.expects_raw_token
    bad = broker().for_connection("SASL_L", "10.0.0.1", None)
    bad.intercept(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})
    assert bad.raw_token(plain_message("alice", "nope")) is None


def test_acls_and_quotas_follow_the_image() -> None:
    b = broker(**{"kraftlog.authorizer.enabled": "true"})
    c = b.for_connection("PLAIN_L", "10.0.0.1", None)
    body = {"topic_data": [{"name": "t", "partition_data": [{"index": 0}]}]}
    assert c.authorize(ApiKey.PRODUCE, 7, body).body["topic_data"] == []
    allow = AclBinding(
        ResourcePattern(ResourceType.TOPIC, "t"),
        AccessControlEntry("User:ANONYMOUS", "*", AclOperation.WRITE, AclPermissionType.ALLOW),
    )
    quotas = {("ANONYMOUS", None): {"producer_byte_rate": 100.0}}
    b.on_image(image_with(acls={uuid.UUID(int=1): allow}, quotas=quotas))
    assert c.authorize(ApiKey.PRODUCE, 7, body).body is body
    assert c.throttle_ms(ApiKey.PRODUCE, "cid", 10) == 0
    assert c.throttle_ms(ApiKey.PRODUCE, "cid", 10_000) > 0
    assert c.throttle_ms(ApiKey.FETCH, "cid", 10**9) == 0  # no consumer quota
    assert c.throttle_ms(ApiKey.METADATA, "cid", 10**9) == 0


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("pki")
    certs.create_dev_pki(out, ["server", "client"])
    return out


def _server_cfg(pki: Path, client_auth: str = "none", protocol: str = "SASL_SSL"):
    return from_props(
        SecurityConfig,
        {
            "listener.security.protocol.map": f"S:{protocol}",
            "ssl.keystore.location": str(pki / "server.pem"),
            "ssl.key.location": str(pki / "server-key.pem"),
            "ssl.truststore.location": str(pki / "ca.pem"),
            "ssl.client.auth": client_auth,
        },
    )


def _run_pair(server_ctx: ssl.SSLContext, client_fn) -> tuple[object, list]:
    """Run the async server side on a loop and ``client_fn(sock)`` on a thread."""
    a, b = socket.socketpair()
    a.setblocking(False)
    results: list = []

    def client() -> None:
        try:
            results.append(client_fn(b))
        except Exception as exc:
            results.append(exc)
        finally:
            b.close()

    async def main():
        thread = threading.Thread(target=client, daemon=True)
        thread.start()
        loop = asyncio.get_running_loop()
        try:
            tls = await tls_handshake(loop, a, server_ctx, timeout_ms=10_000)
        except TlsHandshakeError as exc:
            outcome: object = exc
        else:
            tls.close()  # lets the client's read end
            outcome = "handshake completed"
        await loop.run_in_executor(None, thread.join, 10)
        return outcome

    return asyncio.run(main()), results


def test_tls_handshake_and_socket_adapter(pki: Path) -> None:
    b = BrokerSecurity(_server_cfg(pki), clock_ms=Clock())
    ctx = b.tls_context("S")
    client_ctx = client_context(
        from_props(
            SecurityConfig,
            {
                "ssl.truststore.location": str(pki / "ca.pem"),
                "ssl.endpoint.identification.algorithm": "",
            },
        )
    )
    payload = bytes(range(256)) * 2000  # 512 KB: many TLS records

    def client(sock):
        with client_ctx.wrap_socket(sock) as tls:
            tls.sendall(payload)
            got = b""
            while len(got) < 3 * 100_000:
                chunk = tls.recv(65536)
                if not chunk:
                    break
                got += chunk
            return got

    # The handshake returns the SSL socket; then exercise the adapter in blocking-free style.
    a, c = socket.socketpair()
    a.setblocking(False)
    out: list = []

    def run_client() -> None:
        try:
            out.append(client(c))
        finally:
            c.close()

    thread = threading.Thread(target=run_client, daemon=True)

    async def main():
        thread.start()
        loop = asyncio.get_running_loop()
        tls = await tls_handshake(loop, a, ctx)
        sock = TlsSocket(tls)
        received = b""
        for _ in range(10_000):
            try:
                received += sock.recv(256 * 1024)
            except BlockingIOError:
                await asyncio.sleep(0.001)
            if len(received) >= len(payload):
                break
        bufs = [b"x" * 100_000, b"y" * 100_000, b"z" * 100_000]
        sent = 0
        flat = b"".join(bufs)
        for _ in range(10_000):
            if sent == len(flat):
                break
            try:
                sent += sock.sendmsg([flat[sent:]])
            except BlockingIOError:
                await asyncio.sleep(0.001)
        await loop.run_in_executor(None, thread.join, 10)
        sock.close()
        return received

    received = asyncio.run(main())
    assert received == payload
    assert out[0] == b"x" * 100_000 + b"y" * 100_000 + b"z" * 100_000


def test_plaintext_client_on_tls_port_and_missing_client_cert_fail(pki: Path) -> None:
    b = BrokerSecurity(_server_cfg(pki), clock_ms=Clock())
    result, _ = _run_pair(b.tls_context("S"), lambda s: s.sendall(b"\x00\x00\x00\x10plain kafka"))
    assert isinstance(result, TlsHandshakeError)
    strict = BrokerSecurity(_server_cfg(pki, "required", "SSL"), clock_ms=Clock())
    anon_client = client_context(
        from_props(
            SecurityConfig,
            {
                "ssl.truststore.location": str(pki / "ca.pem"),
                "ssl.endpoint.identification.algorithm": "",
            },
        )
    )

    def connect(sock):
        with anon_client.wrap_socket(sock) as tls:
            return tls.recv(1)

    result, _ = _run_pair(strict.tls_context("S"), connect)
    assert isinstance(result, TlsHandshakeError)
    # SASL_SSL listeners ignore ssl.client.auth: SASL authenticates the client.
    sasl = BrokerSecurity(_server_cfg(pki, "required", "SASL_SSL"), clock_ms=Clock())
    result, _ = _run_pair(sasl.tls_context("S"), connect)
    assert result == "handshake completed"


def test_validate_fails_early_on_bad_tls_config(tmp_path: Path) -> None:
    cfg = from_props(SecurityConfig, {"listener.security.protocol.map": "S:SSL"})
    with pytest.raises(TlsConfigError, match=r"ssl\.keystore\.location"):
        BrokerSecurity(cfg, clock_ms=Clock()).validate(["S"])
