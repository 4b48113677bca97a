"""Kafka principals: who a connection is, as ACLs name it (``User:alice``).

The principal of a connection is decided once, when it is authenticated
(:func:`build_principal`, Kafka's DefaultKafkaPrincipalBuilder):

- SASL (PLAIN or SCRAM): ``User:<authorization id>``;
- SSL without SASL, with a client certificate: ``User:<subject distinguished name>`` in RFC 2253
  form (``CN=writer,O=kraftlog``), as Kafka's ``ssl.principal.mapping.rules=DEFAULT`` does;
- otherwise (PLAINTEXT, or SSL without a client certificate): ``User:ANONYMOUS``.

Thread-safety: immutable values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

USER_TYPE = "User"
ANONYMOUS_NAME = "ANONYMOUS"
# ACLs for every principal use this name (``User:*``).
WILDCARD_NAME = "*"


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @staticmethod
    def parse(text: str) -> KafkaPrincipal:
        """``"User:alice"`` -> KafkaPrincipal("User", "alice"). ValueError without a type."""
        kind, sep, name = text.partition(":")
        if not sep or not kind or not name:
            raise ValueError(f"principal {text!r} is not of the form Type:name (e.g. User:alice)")
        return KafkaPrincipal(kind, name)


ANONYMOUS = KafkaPrincipal(USER_TYPE, ANONYMOUS_NAME)


def user(name: str) -> KafkaPrincipal:
    return KafkaPrincipal(USER_TYPE, name)


def _rdn_text(rdn: Sequence[tuple[str, str]]) -> str:
    return "+".join(f"{key}={_escape_dn_value(value)}" for key, value in rdn)


def _escape_dn_value(value: str) -> str:
    out = []
    for i, ch in enumerate(value):
        if ch in ',+"\\<>;=' or (ch == "#" and i == 0) or (ch == " " and i in (0, len(value) - 1)):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


# Short attribute names Python's ssl module reports, as RFC 2253 writes them.
_DN_KEYS = {
    "commonName": "CN",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "countryName": "C",
    "stateOrProvinceName": "ST",
    "localityName": "L",
    "domainComponent": "DC",
    "userId": "UID",
    "streetAddress": "STREET",
}


def subject_dn(peer_cert: dict[str, Any]) -> str | None:
    """The RFC 2253 subject of a certificate as ``ssl.SSLSocket.getpeercert()`` returns it
    (most specific RDN first, as Java's X500Principal.getName() writes it)."""
    subject = peer_cert.get("subject")
    if not subject:
        return None
    rdns = [[(_DN_KEYS.get(k, k), v) for k, v in rdn] for rdn in subject]
    return ",".join(_rdn_text(rdn) for rdn in reversed(rdns))


def build_principal(
    *, sasl_authorization_id: str | None = None, peer_cert: dict[str, Any] | None = None
) -> KafkaPrincipal:
    """The principal of an authenticated connection (see the module docstring)."""
    if sasl_authorization_id is not None:
        return user(sasl_authorization_id)
    if peer_cert:
        dn = subject_dn(peer_cert)
        if dn:
            return user(dn)
    return ANONYMOUS
