"""SASL/PLAIN parsing and the per-connection SASL state machine."""

from __future__ import annotations

import pytest

from common.error_codes import ErrorCode
from common.security.errors import IllegalSaslStateError, SaslAuthenticationError
from common.security.plain import PlainServer, parse_plain, plain_message, scram_plain_check
from common.security.principal import ANONYMOUS, KafkaPrincipal, build_principal, subject_dn
from common.security.scram import MIN_ITERATIONS, ScramClient, ScramMechanism, make_credential
from data_plane.security.sasl import (
    API_VERSIONS_KEY,
    SASL_AUTHENTICATE_KEY,
    SASL_HANDSHAKE_KEY,
    SaslServerAuthenticator,
    SaslState,
    default_mechanism_factory,
)

PRODUCE_KEY = 0
SHA512 = ScramMechanism.SCRAM_SHA_512
CREDS = {("alice", SHA512): make_credential(SHA512, "alice-pw", iterations=MIN_ITERATIONS)}


def lookup(user: str, mech: ScramMechanism):
    return CREDS.get((user, mech))


def authenticator(mechanisms=("PLAIN", "SCRAM-SHA-512")) -> SaslServerAuthenticator:
    return SaslServerAuthenticator(
        mechanisms, default_mechanism_factory(lookup, scram_plain_check(lookup))
    )


def test_parse_plain() -> None:
    assert parse_plain(b"\x00bob\x00pw") == ("", "bob", "pw")
    assert parse_plain(b"bob\x00bob\x00pw").username == "bob"
    for bad in (
        b"bob\x00pw",
        b"eve\x00bob\x00pw",
        b"\x00\x00pw",
        b"\x00bob\x00",
        b"\xff\x00a\x00b",
    ):
        with pytest.raises(SaslAuthenticationError) as info:
            parse_plain(bad)
        assert "pw" not in str(info.value)


def test_plain_against_scram_credentials() -> None:
    check = scram_plain_check(lookup)
    assert check("alice", "alice-pw")
    assert not check("alice", "nope")
    assert not check("mallory", "alice-pw")
    server = PlainServer(check)
    assert server.evaluate(plain_message("alice", "alice-pw")) == b""
    assert server.authorization_id == "alice"
    with pytest.raises(IllegalSaslStateError):
        server.evaluate(plain_message("alice", "alice-pw"))


def test_only_handshake_and_versions_before_authentication() -> None:
    a = authenticator()
    assert a.allows(API_VERSIONS_KEY) and a.allows(SASL_HANDSHAKE_KEY)
    assert not a.allows(PRODUCE_KEY) and not a.allows(SASL_AUTHENTICATE_KEY)
    a.reject(PRODUCE_KEY)
    assert a.state is SaslState.FAILED and "api key 0" in (a.failure or "")


def test_unknown_mechanism_lists_enabled_ones_and_keeps_state() -> None:
    a = authenticator()
    result = a.handshake(1, "GSSAPI")
    assert result.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert result.mechanisms == ("PLAIN", "SCRAM-SHA-512")
    assert a.state is SaslState.HANDSHAKE_OR_VERSIONS
    assert a.handshake(1, "PLAIN").error_code == 0


def test_scram_over_sasl_authenticate_v1() -> None:
    a = authenticator()
    assert a.handshake(1, "SCRAM-SHA-512").error_code == 0
    assert a.allows(SASL_AUTHENTICATE_KEY) and not a.allows(PRODUCE_KEY)
    client = ScramClient(SHA512, "alice", "alice-pw")
    r1 = a.authenticate(client.first_message())
    assert r1.error_code == 0 and not r1.close
    r2 = a.authenticate(client.final_message(r1.auth_bytes))
    assert r2.error_code == 0
    client.verify_server_final(r2.auth_bytes)
    assert a.is_complete and a.principal == KafkaPrincipal("User", "alice")
    assert a.allows(PRODUCE_KEY) and not a.allows(SASL_AUTHENTICATE_KEY)
    # Re-authentication is not supported: a second handshake fails the connection.
    assert a.handshake(1, "PLAIN").error_code == ErrorCode.ILLEGAL_SASL_STATE
    assert a.state is SaslState.FAILED


def test_wrong_password_fails_and_closes_without_echoing_the_secret() -> None:
    a = authenticator()
    a.handshake(1, "PLAIN")
    result = a.authenticate(plain_message("alice", "hunter2"))
    assert result.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED and result.close
    assert "hunter2" not in (result.error_message or "")
    assert a.state is SaslState.FAILED and not a.allows(PRODUCE_KEY)


def test_v0_handshake_uses_raw_tokens() -> None:
    a = authenticator()
    a.handshake(0, "PLAIN")
    assert a.state is SaslState.RAW_TOKENS and not a.allows(SASL_AUTHENTICATE_KEY)
    assert a.authenticate(b"x").error_code == ErrorCode.ILLEGAL_SASL_STATE
    b = authenticator()
    b.handshake(0, "PLAIN")
    assert b.raw_token(plain_message("alice", "alice-pw")) == b""
    assert b.is_complete
    c = authenticator()
    c.handshake(0, "PLAIN")
    with pytest.raises(SaslAuthenticationError):
        c.raw_token(plain_message("alice", "bad"))


def test_authenticate_without_handshake_is_illegal() -> None:
    a = authenticator()
    result = a.authenticate(b"whatever")
    assert result.error_code == ErrorCode.ILLEGAL_SASL_STATE and result.close


def test_principals() -> None:
    cert = {"subject": ((("organizationName", "kraftlog"),), (("commonName", "writer,1"),))}
    assert subject_dn(cert) == "CN=writer\\,1,O=kraftlog"
    assert str(build_principal(peer_cert=cert)) == "User:CN=writer\\,1,O=kraftlog"
    assert build_principal(sasl_authorization_id="bob", peer_cert=cert) == KafkaPrincipal(
        "User", "bob"
    )
    assert build_principal() == ANONYMOUS
    assert KafkaPrincipal.parse("User:a:b") == KafkaPrincipal("User", "a:b")
    with pytest.raises(ValueError):
        KafkaPrincipal.parse("alice")
