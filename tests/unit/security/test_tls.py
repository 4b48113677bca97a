"""Development PKI and TLS contexts: handshakes run in memory (ssl.MemoryBIO), no sockets."""

from __future__ import annotations

import datetime
import ssl
from pathlib import Path

import pytest

from common.configdef import ConfigError, from_props
from common.security.config import SecurityConfig
from common.security.errors import TlsConfigError
from common.security.tls import client_context, grpc_key_and_chain, server_context
from data_plane.security import certs


def _handshake(server_ctx: ssl.SSLContext, client_ctx: ssl.SSLContext, hostname: str = "localhost"):
    """Pump bytes between two SSLObjects until both finish; returns the server object."""
    s_in, s_out, c_in, c_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    client = client_ctx.wrap_bio(c_in, c_out, server_hostname=hostname)
    done = {"s": False, "c": False}
    for _ in range(20):
        for name, obj in (("c", client), ("s", server)):
            if not done[name]:
                try:
                    obj.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if done["s"] and done["c"]:
            # TLS 1.3 client certificate errors arrive after the client thinks it is done.
            client.write(b"ping")
            s_in.write(c_out.read())
            assert server.read(4) == b"ping"
            return server
    raise AssertionError("handshake did not finish")


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("pki")
    certs.create_dev_pki(out, ["broker-1", "client-1"])
    return out


def config(pki: Path, name: str, **kw) -> SecurityConfig:
    props = {
        "ssl.keystore.location": str(pki / f"{name}.pem"),
        "ssl.key.location": str(pki / f"{name}-key.pem"),
        "ssl.truststore.location": str(pki / "ca.pem"),
        **kw,
    }
    return from_props(SecurityConfig, props)


def test_files_and_modes(pki: Path) -> None:
    for name in ("ca.pem", "ca-key.pem", "broker-1.pem", "broker-1-key.pem"):
        assert (pki / name).is_file()
    assert (pki / "ca-key.pem").stat().st_mode & 0o077 == 0
    assert (pki / "broker-1-key.pem").stat().st_mode & 0o077 == 0
    # Re-running reuses the CA.
    ca_before = (pki / "ca.pem").read_bytes()
    certs.create_dev_pki(pki, ["broker-2"])
    assert (pki / "ca.pem").read_bytes() == ca_before


def test_mutual_tls_handshake_and_client_principal(pki: Path) -> None:
    server = server_context(config(pki, "broker-1", **{"ssl.client.auth": "required"}))
    client = client_context(config(pki, "client-1"))
    s = _handshake(server, client)
    peer = s.getpeercert()
    assert ("commonName", "client-1") in [rdn[0] for rdn in peer["subject"]]


def test_client_without_certificate_refused_when_required(pki: Path) -> None:
    server = server_context(config(pki, "broker-1", **{"ssl.client.auth": "required"}))
    client = client_context(
        from_props(SecurityConfig, {"ssl.truststore.location": str(pki / "ca.pem")})
    )
    with pytest.raises(ssl.SSLError):
        _handshake(server, client)


def test_untrusted_and_expired_server_certificates_refused(pki: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    certs.create_dev_pki(other, ["rogue"])
    client = client_context(config(pki, "client-1"))
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(server_context(config(other, "rogue")), client)
    ca = certs.load_ca(pki)
    past = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=30)
    certs.write_issued(ca, tmp_path, "old", validity_days=1, not_before=past)
    old = from_props(
        SecurityConfig,
        {
            "ssl.keystore.location": str(tmp_path / "old.pem"),
            "ssl.key.location": str(tmp_path / "old-key.pem"),
        },
    )
    with pytest.raises(ssl.SSLCertVerificationError, match="expired"):
        _handshake(server_context(old), client)


def test_hostname_checked_unless_disabled(pki: Path) -> None:
    server = server_context(config(pki, "broker-1"))
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(server, client_context(config(pki, "client-1")), hostname="elsewhere.example")
    lax = config(pki, "client-1", **{"ssl.endpoint.identification.algorithm": ""})
    _handshake(server, client_context(lax), hostname="elsewhere.example")


def test_protocol_versions(pki: Path) -> None:
    server = server_context(config(pki, "broker-1", **{"ssl.enabled.protocols": "TLSv1.3"}))
    client = client_context(config(pki, "client-1", **{"ssl.enabled.protocols": "TLSv1.2"}))
    with pytest.raises(ssl.SSLError):
        _handshake(server, client)
    with pytest.raises(ConfigError):
        from_props(SecurityConfig, {"ssl.enabled.protocols": "SSLv3"})


def test_config_errors_name_the_key(pki: Path, tmp_path: Path) -> None:
    with pytest.raises(TlsConfigError, match=r"ssl\.keystore\.location"):
        server_context(SecurityConfig())
    bad = tmp_path / "bad.pem"
    bad.write_text("not a certificate")
    with pytest.raises(TlsConfigError, match=r"ssl\.truststore\.location"):
        client_context(from_props(SecurityConfig, {"ssl.truststore.location": str(bad)}))


def test_grpc_key_and_chain(pki: Path, tmp_path: Path) -> None:
    key, chain = grpc_key_and_chain(config(pki, "broker-1"))
    assert b"PRIVATE KEY" in key and chain.count(b"BEGIN CERTIFICATE") == 2
    combined = tmp_path / "combined.pem"
    combined.write_bytes(
        (pki / "broker-1-key.pem").read_bytes() + (pki / "broker-1.pem").read_bytes()
    )
    key2, chain2 = grpc_key_and_chain(
        from_props(SecurityConfig, {"ssl.keystore.location": str(combined)})
    )
    assert key2 == key and chain2 == chain


def test_protocol_map() -> None:
    cfg = from_props(
        SecurityConfig,
        {"listener.security.protocol.map": "INTERNAL:SASL_SSL,EXTERNAL:ssl"},
    )
    assert cfg.protocol_of("internal") == "SASL_SSL"
    assert cfg.protocol_of("EXTERNAL") == "SSL"
    with pytest.raises(ConfigError):
        cfg.protocol_of("OTHER")
    assert SecurityConfig().protocol_of("SASL_PLAINTEXT") == "SASL_PLAINTEXT"
    with pytest.raises(ConfigError):
        from_props(SecurityConfig, {"listener.security.protocol.map": "A:TLS"}).protocol_map()
    su = from_props(SecurityConfig, {"super.users": "User:admin;User:ops"})
    assert su.super_user_names() == ("User:admin", "User:ops")
    assert from_props(SecurityConfig, {"super.users": "User:a,User:b"}).super_user_names() == (
        "User:a",
        "User:b",
    )
    # A certificate's principal holds commas: ';' separates, as in Kafka.
    dn = from_props(SecurityConfig, {"super.users": "User:CN=node-1,O=dev;User:admin"})
    assert dn.super_user_names() == ("User:CN=node-1,O=dev", "User:admin")
    alone = from_props(SecurityConfig, {"super.users": "User:CN=node-1,O=dev"})
    assert alone.super_user_names() == ("User:CN=node-1,O=dev",)
