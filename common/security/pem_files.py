"""Reading the PEM files that ``ssl.keystore.location``, ``ssl.key.location`` and
``ssl.truststore.location`` name, with a bound on their size and errors that name the key.
Used by the brokers' TLS contexts and by the controllers' control-plane authorizer."""

from __future__ import annotations

from pathlib import Path

from common.security.errors import TlsConfigError

# Refuse absurd PEM files before reading them whole.
MAX_PEM_FILE_BYTES = 1 << 20


def check_pem_file(key: str, path: str | None) -> str:
    """``path`` if it names a readable file of at most MAX_PEM_FILE_BYTES; else
    TlsConfigError naming ``key``."""
    if not path:
        raise TlsConfigError(f"{key}: required for TLS")
    p = Path(path)
    if not p.is_file():
        raise TlsConfigError(f"{key}: {path} is not a readable file")
    if p.stat().st_size > MAX_PEM_FILE_BYTES:
        raise TlsConfigError(f"{key}: {path} is larger than {MAX_PEM_FILE_BYTES} bytes")
    return path


def pem_bytes(path: str | None, key: str) -> bytes:
    """The bytes of the PEM file at ``path`` (checked by :func:`check_pem_file`)."""
    return Path(check_pem_file(key, path)).read_bytes()
