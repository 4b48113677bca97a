"""TLS contexts (Python's ssl module) from :class:`SecurityConfig`'s ``ssl.*`` keys.

- :func:`server_context`: for SSL / SASL_SSL listeners; presents ``ssl.keystore.location``,
  trusts ``ssl.truststore.location`` for client certificates; ``ssl.client.auth`` =
  required (CERT_REQUIRED), requested (CERT_OPTIONAL) or none (CERT_NONE).
- :func:`client_context`: for kraftlog's own clients and tools; verifies the server against
  the truststore, and the host name when ``ssl.endpoint.identification.algorithm=https``;
  presents the keystore when one is set (mutual TLS).
- :func:`pem_bytes`: the PEM files as bytes, for gRPC's ssl credentials.

Versions: ``ssl.enabled.protocols`` picks the lowest and highest allowed TLS version (TLSv1.2,
TLSv1.3; nothing older is offered).

Thread-safety: the functions are pure; an SSLContext may be shared once built.
"""

from __future__ import annotations

import ssl

from common.security.config import SecurityConfig
from common.security.errors import TlsConfigError
from common.security.pem_files import check_pem_file, pem_bytes

_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


def _versions(ctx: ssl.SSLContext, protocols: tuple[str, ...]) -> None:
    try:
        versions = sorted(_VERSIONS[p] for p in protocols)
    except KeyError as exc:
        raise TlsConfigError(f"ssl.enabled.protocols: unknown protocol {exc.args[0]}") from None
    if not versions:
        raise TlsConfigError("ssl.enabled.protocols: no protocol enabled")
    ctx.minimum_version = versions[0]
    ctx.maximum_version = versions[-1]


def _load_keystore(ctx: ssl.SSLContext, config: SecurityConfig) -> None:
    certfile = check_pem_file("ssl.keystore.location", config.ssl_keystore_location)
    keyfile = (
        check_pem_file("ssl.key.location", config.ssl_key_location)
        if config.ssl_key_location
        else None
    )
    try:
        ctx.load_cert_chain(certfile, keyfile, password=config.ssl_key_password)
    except (ssl.SSLError, OSError) as exc:
        raise TlsConfigError(
            f"ssl.keystore.location / ssl.key.location: cannot load the certificate and key "
            f"({exc.__class__.__name__}: {exc})"
        ) from None


def _load_truststore(ctx: ssl.SSLContext, config: SecurityConfig) -> None:
    cafile = check_pem_file("ssl.truststore.location", config.ssl_truststore_location)
    try:
        ctx.load_verify_locations(cafile=cafile)
    except (ssl.SSLError, OSError) as exc:
        raise TlsConfigError(
            f"ssl.truststore.location: cannot load CA certificates ({exc})"
        ) from None


def server_context(config: SecurityConfig) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _versions(ctx, config.ssl_enabled_protocols)
    _load_keystore(ctx, config)
    mode = config.ssl_client_auth
    if mode == "required":
        ctx.verify_mode = ssl.CERT_REQUIRED
    elif mode == "requested":
        ctx.verify_mode = ssl.CERT_OPTIONAL
    else:
        ctx.verify_mode = ssl.CERT_NONE
    if mode != "none":
        _load_truststore(ctx, config)
    return ctx


def client_context(config: SecurityConfig) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _versions(ctx, config.ssl_enabled_protocols)
    _load_truststore(ctx, config)
    ctx.check_hostname = config.ssl_endpoint_identification_algorithm.lower() == "https"
    ctx.verify_mode = ssl.CERT_REQUIRED
    if config.ssl_keystore_location:
        _load_keystore(ctx, config)
    return ctx


def grpc_key_and_chain(config: SecurityConfig) -> tuple[bytes, bytes]:
    """(private key PEM, certificate chain PEM) for grpc.ssl_*_credentials. With a combined
    keystore file (key and certificates in one PEM) the key blocks are split out."""
    chain = pem_bytes(config.ssl_keystore_location, "ssl.keystore.location")
    if config.ssl_key_location:
        return pem_bytes(config.ssl_key_location, "ssl.key.location"), chain
    key_blocks, cert_blocks = _split_pem(chain)
    if not key_blocks:
        raise TlsConfigError("ssl.keystore.location: no private key (set ssl.key.location)")
    return key_blocks, cert_blocks


def _split_pem(data: bytes) -> tuple[bytes, bytes]:
    keys: list[bytes] = []
    certs: list[bytes] = []
    current: list[bytes] = []
    target: list[bytes] | None = None
    for line in data.splitlines(keepends=True):
        if line.startswith(b"-----BEGIN"):
            target = certs if b"CERTIFICATE" in line else keys
            current = [line]
        elif line.startswith(b"-----END") and target is not None:
            current.append(line)
            target.append(b"".join(current))
            target = None
        elif target is not None:
            current.append(line)
    return b"".join(keys), b"".join(certs)
