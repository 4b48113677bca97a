"""SASL/PLAIN (RFC 4616) as Kafka uses it: one client message, no server challenge.

    message = [authzid] NUL authcid NUL passwd        (UTF-8)

Kafka requires ``authzid`` to be empty or equal to ``authcid``. The password check is
pluggable (:data:`PlainCredentialCheck`); the broker checks it against the SCRAM credentials
in the metadata log (:func:`scram_plain_check`), so one ``kraftlog users add`` serves PLAIN and
both SCRAM mechanisms and no password is ever stored.

Thread-safety: one :class:`PlainServer` per connection; the check function must be thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from common.security.errors import IllegalSaslStateError, SaslAuthenticationError
from common.security.scram import CredentialLookup, ScramMechanism, password_matches

MECHANISM = "PLAIN"
# Larger PLAIN messages are refused before they are parsed.
MAX_MESSAGE_BYTES = 4096

# (username, password) -> whether they are valid.
PlainCredentialCheck = Callable[[str, str], bool]


class PlainMessage(NamedTuple):
    authorization_id: str
    username: str
    password: str


def parse_plain(message: bytes) -> PlainMessage:
    """Split a PLAIN message; SaslAuthenticationError (without the password) if malformed."""
    if len(message) > MAX_MESSAGE_BYTES:
        raise SaslAuthenticationError("SASL/PLAIN message too large")
    try:
        text = message.decode("utf-8")
    except UnicodeDecodeError:
        raise SaslAuthenticationError("SASL/PLAIN message is not UTF-8") from None
    parts = text.split("\x00")
    if len(parts) != 3:
        raise SaslAuthenticationError(
            "invalid SASL/PLAIN message: expected authorization id, user name and password "
            "separated by NUL"
        )
    authzid, username, password = parts
    if not username:
        raise SaslAuthenticationError("SASL/PLAIN: user name must not be empty")
    if not password:
        raise SaslAuthenticationError("SASL/PLAIN: password must not be empty")
    if authzid and authzid != username:
        raise SaslAuthenticationError(
            "SASL/PLAIN: authorization id must be empty or equal to the user name"
        )
    return PlainMessage(authzid, username, password)


def plain_message(username: str, password: str) -> bytes:
    return f"\x00{username}\x00{password}".encode()


def scram_plain_check(lookup: CredentialLookup) -> PlainCredentialCheck:
    """A PLAIN check against stored SCRAM credentials: the password is accepted if it derives
    the stored key of the user's SCRAM-SHA-512 credential, else of its SCRAM-SHA-256 one."""

    def check(username: str, password: str) -> bool:
        for mech in (ScramMechanism.SCRAM_SHA_512, ScramMechanism.SCRAM_SHA_256):
            credential = lookup(username, mech)
            if credential is not None:
                return password_matches(mech, credential, password)
        return False

    return check


class PlainServer:
    """The server side of SASL/PLAIN for one connection."""

    def __init__(self, check: PlainCredentialCheck) -> None:
        self._check = check
        self._username: str | None = None
        self._done = False

    @property
    def is_complete(self) -> bool:
        return self._username is not None

    @property
    def authorization_id(self) -> str:
        if self._username is None:
            raise IllegalSaslStateError("SASL/PLAIN authentication has not completed")
        return self._username

    def evaluate(self, message: bytes) -> bytes:
        if self._done:
            raise IllegalSaslStateError("SASL/PLAIN takes exactly one client message")
        self._done = True
        parsed = parse_plain(message)
        if not self._check(parsed.username, parsed.password):
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        self._username = parsed.username
        return b""
