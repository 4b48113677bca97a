"""The native client's connection security: configuration checks, the sans-IO SASL client
against the broker's own SASL server state machine, and BrokerConnection's AUTHENTICATING
phase against a scripted broker that runs the real SaslServerAuthenticator."""

from __future__ import annotations

import selectors
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from common.configdef import ConfigError
from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.codec import RequestHeader, encode_response, unsupported_version_response
from common.security.errors import SaslAuthenticationError
from common.security.plain import scram_plain_check
from common.security.scram import ScramCredential, ScramMechanism, make_credential
from data_plane.security import certs
from data_plane.security.sasl import SaslServerAuthenticator, default_mechanism_factory
from kraftlog_client.broker_connection import CLOSED, READY, BrokerConnection
from kraftlog_client.client_security import (
    AuthenticationFailedError,
    ClientSecurity,
    SaslClientAuthenticator,
    client_security,
)
from kraftlog_client.config import ProducerConfig, client_config
from tests.unit.client.scripted_broker import ScriptedBroker

PASSWORD = "s3cret-password"
DEADLINE_S = 20.0


def _lookup() -> Callable[[str, ScramMechanism], ScramCredential | None]:
    creds = {(m, "alice"): make_credential(m, PASSWORD, iterations=4096) for m in ScramMechanism}
    return lambda user, mech: creds.get((mech, user))


def _server() -> SaslServerAuthenticator:
    lookup = _lookup()
    return SaslServerAuthenticator(
        ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
        default_mechanism_factory(lookup, scram_plain_check(lookup)),
    )


# -- configuration ------------------------------------------------------------------------


def test_plaintext_has_no_security() -> None:
    assert client_security(client_config(ProducerConfig, {})) is None


def test_sasl_needs_username_and_password() -> None:
    config = client_config(ProducerConfig, {"security.protocol": "SASL_PLAINTEXT"})
    with pytest.raises(ConfigError, match=r"sasl\.username and sasl\.password"):
        client_security(config)


def test_ssl_needs_a_truststore() -> None:
    config = client_config(ProducerConfig, {"security.protocol": "SSL"})
    with pytest.raises(ConfigError, match=r"ssl\.truststore\.location"):
        client_security(config)


def test_unknown_mechanism_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"sasl\.mechanism"):
        client_config(ProducerConfig, {"sasl.mechanism": "GSSAPI"})


def test_ssl_context_from_pem_files(tmp_path: Path) -> None:
    certs.create_dev_pki(tmp_path, ["client"])
    props = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": PASSWORD,
        "ssl.truststore.location": str(tmp_path / "ca.pem"),
        "ssl.keystore.location": str(tmp_path / "client.pem"),
        "ssl.key.location": str(tmp_path / "client-key.pem"),
        "ssl.endpoint.identification.algorithm": "",
    }
    security = client_security(client_config(ProducerConfig, props))
    assert security is not None and security.uses_ssl and security.uses_sasl
    assert security.ssl_context is not None and not security.ssl_context.check_hostname
    assert PASSWORD not in repr(security)
    assert PASSWORD not in repr(client_config(ProducerConfig, props))


# -- the sans-IO exchange -------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_client_authenticates_against_the_broker_state_machine(mechanism: str) -> None:
    server = _server()
    assert server.handshake(1, mechanism).error_code == 0
    client = SaslClientAuthenticator(mechanism, "alice", PASSWORD)
    token: bytes | None = client.first_token()
    rounds = 0
    while token is not None:
        rounds += 1
        result = server.authenticate(token)
        assert result.error_code == 0
        token = client.on_server_token(result.auth_bytes)
    assert client.is_complete and server.is_complete
    assert server.principal is not None and server.principal.name == "alice"
    assert rounds == (1 if mechanism == "PLAIN" else 2)


def test_wrong_password_is_refused_by_the_server() -> None:
    server = _server()
    server.handshake(1, "SCRAM-SHA-512")
    client = SaslClientAuthenticator("SCRAM-SHA-512", "alice", "wrong")
    first = server.authenticate(client.first_token())
    final = server.authenticate(client.on_server_token(first.auth_bytes) or b"")
    assert final.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED and final.close
    assert "wrong" not in (final.error_message or "")


def test_a_forged_server_signature_is_refused_by_the_client() -> None:
    server = _server()
    server.handshake(1, "SCRAM-SHA-256")
    client = SaslClientAuthenticator("SCRAM-SHA-256", "alice", PASSWORD)
    first = server.authenticate(client.first_token())
    client.on_server_token(first.auth_bytes)
    with pytest.raises(SaslAuthenticationError, match="signature"):
        client.on_server_token(b"v=" + b"QUFBQQ==")


# -- BrokerConnection's AUTHENTICATING phase ------------------------------------------------


class SaslBroker:
    """Answers ApiVersions with the full list and runs one SaslServerAuthenticator per
    broker (the tests open one connection each); Metadata after authentication."""

    def __init__(self) -> None:
        self.server = _server()

    def __call__(self, header: RequestHeader, body: dict[str, Any]) -> bytes | None:
        if header.api_key == ApiKey.API_VERSIONS:
            return unsupported_version_response(header).to_bytes()
        if not self.server.allows(header.api_key):
            return None
        if header.api_key == ApiKey.SASL_HANDSHAKE:
            result = self.server.handshake(header.api_version, body["mechanism"])
            answer = {"error_code": result.error_code, "mechanisms": list(result.mechanisms)}
            return encode_response(header, answer).to_bytes()
        if header.api_key == ApiKey.SASL_AUTHENTICATE:
            auth = self.server.authenticate(body["auth_bytes"])
            return encode_response(
                header,
                {
                    "error_code": auth.error_code,
                    "error_message": auth.error_message,
                    "auth_bytes": auth.auth_bytes,
                    "session_lifetime_ms": 0,
                },
            ).to_bytes()
        return None


def _drive(conn: BrokerConnection) -> None:
    """Run the connection's selector loop until it is READY or CLOSED."""
    selector = selectors.DefaultSelector()
    deadline = time.monotonic() + DEADLINE_S
    conn.connect(time.monotonic())
    try:
        while conn.state not in (READY, CLOSED):
            assert time.monotonic() < deadline, f"connection stuck in {conn.state}"
            if conn.sock is not None:
                mask = selectors.EVENT_READ
                if conn.state == "CONNECTING" or conn.has_pending_writes:
                    mask |= selectors.EVENT_WRITE
                selector.register(conn.sock, mask)
                events = selector.select(0.1)
                selector.unregister(conn.sock)
                now = time.monotonic()
                for _key, ready in events:
                    if conn.state == "CONNECTING":
                        conn.finish_connect(now)
                        continue
                    if ready & selectors.EVENT_READ:
                        conn.read()
                    if ready & selectors.EVENT_WRITE and conn.state is not CLOSED:
                        conn.write()
            conn.check_timeouts(time.monotonic())
    finally:
        selector.close()


def _connection(port: int, security: ClientSecurity) -> BrokerConnection:
    return BrokerConnection(
        -1,
        "127.0.0.1",
        port,
        client_id="t",
        request_timeout_ms=10000,
        connect_timeout_ms=10000,
        security=security,
    )


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_connection_authenticates_before_ready(mechanism: str) -> None:
    handler = SaslBroker()
    broker = ScriptedBroker(handler)
    try:
        security = ClientSecurity("SASL_PLAINTEXT", None, mechanism, "alice", PASSWORD)
        conn = _connection(broker.port, security)
        states: list[str] = []
        conn.on_ready = lambda c: states.append(c.state)
        _drive(conn)
        assert conn.state is READY, conn.error
        assert states == [READY] and handler.server.is_complete
        keys = [key for key, _version in broker.requests]
        assert keys[:2] == [ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE]
        assert set(keys[2:]) == {ApiKey.SASL_AUTHENTICATE}
        assert (ApiKey.SASL_HANDSHAKE, 1) in broker.requests
        conn.close()
    finally:
        broker.close()


def test_wrong_password_fails_the_connection_for_good() -> None:
    broker = ScriptedBroker(SaslBroker())
    try:
        security = ClientSecurity("SASL_PLAINTEXT", None, "SCRAM-SHA-512", "alice", "nope")
        conn = _connection(broker.port, security)
        _drive(conn)
        assert conn.state is CLOSED and conn.auth_failed
        assert isinstance(conn.error, AuthenticationFailedError)
        assert conn.error.code is ErrorCode.SASL_AUTHENTICATION_FAILED
        assert not conn.error.retriable
        assert "nope" not in str(conn.error)
    finally:
        broker.close()


def test_a_mechanism_the_broker_does_not_offer_fails_clearly() -> None:
    handler = SaslBroker()
    handler.server = SaslServerAuthenticator(
        ("SCRAM-SHA-256",), default_mechanism_factory(_lookup(), scram_plain_check(_lookup()))
    )
    broker = ScriptedBroker(handler)
    try:
        security = ClientSecurity("SASL_PLAINTEXT", None, "PLAIN", "alice", PASSWORD)
        conn = _connection(broker.port, security)
        _drive(conn)
        assert conn.auth_failed and conn.error is not None
        assert conn.error.code is ErrorCode.UNSUPPORTED_SASL_MECHANISM  # type: ignore[attr-defined]
        assert "SCRAM-SHA-256" in str(conn.error)
    finally:
        broker.close()


def test_not_ready_while_authenticating() -> None:
    """A broker that never answers SaslAuthenticate leaves the connection AUTHENTICATING:
    no other request may be sent, and the request timeout closes it."""

    def mute(header: RequestHeader, body: dict[str, Any]) -> bytes | None:
        if header.api_key == ApiKey.SASL_AUTHENTICATE:
            return None
        return SaslBroker()(header, body)

    broker = ScriptedBroker(mute)
    try:
        security = ClientSecurity("SASL_PLAINTEXT", None, "PLAIN", "alice", PASSWORD)
        conn = BrokerConnection(
            -1,
            "127.0.0.1",
            broker.port,
            client_id="t",
            request_timeout_ms=300,
            connect_timeout_ms=10000,
            security=security,
        )
        seen: list[str] = []
        conn.on_ready = lambda c: seen.append(c.state)
        _drive(conn)
        assert seen == [] and conn.state is CLOSED and not conn.auth_failed
        assert (ApiKey.SASL_HANDSHAKE, 1) in broker.requests
    finally:
        broker.close()
