"""SCRAM: RFC 7677's SHA-256 test vector, kafka-python's ScramClient as an independent client,
and the rejections."""

from __future__ import annotations

import base64
import warnings

import pytest

from common.security.errors import (
    IllegalSaslStateError,
    InvalidCredentialError,
    SaslAuthenticationError,
)
from common.security.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramClient,
    ScramCredential,
    ScramMechanism,
    ScramServer,
    escape_username,
    make_credential,
    password_matches,
    unescape_username,
)

SHA256 = ScramMechanism.SCRAM_SHA_256
SHA512 = ScramMechanism.SCRAM_SHA_512

# RFC 7677 section 3.
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def _kafka_python_scram_client(user: str, password: str, mechanism: str):
    # kafka-python's package import loads JSON schemas through a deprecated importlib API.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.net.sasl.scram import ScramClient

    return ScramClient(user, password, mechanism)


def _store(creds: dict[tuple[str, ScramMechanism], ScramCredential]):
    return lambda user, mech: creds.get((user, mech))


def test_rfc7677_vector_server_side() -> None:
    cred = make_credential(SHA256, "pencil", iterations=4096, salt=RFC_SALT)
    server = ScramServer(
        SHA256, _store({("user", SHA256): cred}), nonce_factory=lambda: RFC_SERVER_NONCE
    )
    first = server.evaluate(b"n,,n=user,r=" + RFC_CLIENT_NONCE.encode())
    assert first == (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    assert server.evaluate(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert server.is_complete
    assert server.authorization_id == "user"


def test_rfc7677_vector_client_side() -> None:
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    assert client.first_message() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    assert client.final_message(server_first) == RFC_CLIENT_FINAL
    client.verify_server_final(RFC_SERVER_FINAL)
    assert client.is_complete


@pytest.mark.parametrize("mech", [SHA256, SHA512])
def test_kafka_python_client_authenticates(mech: ScramMechanism) -> None:
    cred = make_credential(mech, "s3cret-pw", iterations=MIN_ITERATIONS)
    server = ScramServer(mech, _store({("alice", mech): cred}))
    client = _kafka_python_scram_client("alice", "s3cret-pw", mech.mechanism_name)
    server_first = server.evaluate(client.first_message())
    client.process_server_first_message(server_first)
    server_final = server.evaluate(client.final_message())
    client.process_server_final_message(server_final)  # raises on a wrong server signature
    assert server.authorization_id == "alice"


@pytest.mark.parametrize("mech", [SHA256, SHA512])
def test_kafka_python_client_wrong_password_rejected(mech: ScramMechanism) -> None:
    cred = make_credential(mech, "right", iterations=MIN_ITERATIONS)
    server = ScramServer(mech, _store({("alice", mech): cred}))
    client = _kafka_python_scram_client("alice", "wrong", mech.mechanism_name)
    client.process_server_first_message(server.evaluate(client.first_message()))
    with pytest.raises(SaslAuthenticationError) as info:
        server.evaluate(client.final_message())
    assert "wrong" not in str(info.value) and "right" not in str(info.value)
    assert not server.is_complete
    with pytest.raises(IllegalSaslStateError):
        server.evaluate(b"anything")


def test_own_client_and_server_round_trip_with_escaped_name() -> None:
    name = "a,b=c"
    cred = make_credential(SHA512, "pw", iterations=MIN_ITERATIONS)
    server = ScramServer(SHA512, _store({(name, SHA512): cred}))
    client = ScramClient(SHA512, name, "pw")
    first = client.first_message()
    assert b"n=a=2Cb=3Dc," in first
    final = client.final_message(server.evaluate(first))
    client.verify_server_final(server.evaluate(final))
    assert server.authorization_id == name


def test_unknown_user_and_wrong_mechanism_rejected() -> None:
    cred = make_credential(SHA256, "pw", iterations=MIN_ITERATIONS)
    server = ScramServer(SHA512, _store({("alice", SHA256): cred}))
    with pytest.raises(SaslAuthenticationError):
        server.evaluate(ScramClient(SHA512, "alice", "pw").first_message())
    server = ScramServer(SHA256, _store({}))
    with pytest.raises(SaslAuthenticationError):
        server.evaluate(ScramClient(SHA256, "bob", "pw").first_message())


@pytest.mark.parametrize(
    "message",
    [
        b"p=tls-unique,,n=alice,r=abc",  # channel binding
        b"n,,r=abc,n=alice",  # attribute order
        b"n,,n=alice",  # no nonce
        b"n,,n=al=41ice,r=abc",  # bad escape
        b"n,,n=alice,r=a,bc",  # comma in nonce splits; 'bc' is not an attribute
        b"\xff\xfe",  # not UTF-8
        b"n,a=bob,n=alice,r=abc",  # authzid other than the user
        b"x" * 5000,
    ],
)
def test_malformed_client_first_rejected(message: bytes) -> None:
    cred = make_credential(SHA256, "pw", iterations=MIN_ITERATIONS)
    server = ScramServer(SHA256, _store({("alice", SHA256): cred}))
    with pytest.raises(SaslAuthenticationError):
        server.evaluate(message)


def test_client_final_with_other_nonce_or_binding_rejected() -> None:
    cred = make_credential(SHA256, "pw", iterations=MIN_ITERATIONS)
    for tamper in (
        lambda m: m.replace(b"r=", b"r=X"),
        lambda m: m.replace(b"c=biws", b"c=eSws"),
        lambda m: m[: m.rindex(b",p=")] + b",p=AAAA",
        lambda m: m[: m.rindex(b",p=")] + b",p=!!",
    ):
        server = ScramServer(SHA256, _store({("alice", SHA256): cred}))
        client = ScramClient(SHA256, "alice", "pw")
        final = client.final_message(server.evaluate(client.first_message()))
        with pytest.raises(SaslAuthenticationError):
            server.evaluate(tamper(final))


def test_client_refuses_forged_server_signature_and_bad_iterations() -> None:
    cred = make_credential(SHA256, "pw", iterations=MIN_ITERATIONS)
    server = ScramServer(SHA256, _store({("alice", SHA256): cred}))
    client = ScramClient(SHA256, "alice", "pw")
    client.final_message(server.evaluate(client.first_message()))
    with pytest.raises(SaslAuthenticationError):
        client.verify_server_final(b"v=" + base64.b64encode(b"x" * 32))
    client = ScramClient(SHA256, "alice", "pw", nonce="abc")
    client.first_message()
    with pytest.raises(SaslAuthenticationError):
        client.final_message(b"r=abcdef,s=AAAA,i=1")


def test_credential_rules() -> None:
    with pytest.raises(InvalidCredentialError):
        make_credential(SHA256, "pw", iterations=MIN_ITERATIONS - 1)
    with pytest.raises(InvalidCredentialError):
        make_credential(SHA256, "pw", iterations=MAX_ITERATIONS + 1)
    with pytest.raises(InvalidCredentialError):
        make_credential(SHA256, "", iterations=MIN_ITERATIONS)
    a = make_credential(SHA512, "pw", iterations=MIN_ITERATIONS)
    b = make_credential(SHA512, "pw", iterations=MIN_ITERATIONS)
    assert a.salt != b.salt and a.stored_key != b.stored_key  # fresh salt each time
    assert len(a.stored_key) == 64 and len(a.server_key) == 64
    assert password_matches(SHA512, a, "pw")
    assert not password_matches(SHA512, a, "pW")


def test_mechanism_names_and_escaping() -> None:
    assert ScramMechanism.from_name("scram-sha-512") is SHA512
    assert SHA256.mechanism_name == "SCRAM-SHA-256"
    with pytest.raises(ValueError):
        ScramMechanism.from_name("SCRAM-SHA-1")
    assert unescape_username(escape_username("x=,y")) == "x=,y"


def test_client_state_machine_refuses_out_of_order_calls() -> None:
    client = ScramClient(SHA256, "alice", "pw")
    with pytest.raises(IllegalSaslStateError):
        client.final_message(b"r=x,s=AAAA,i=4096")
    client.first_message()
    with pytest.raises(IllegalSaslStateError):
        client.first_message()
