"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka uses them (KIP-84).

Credentials (what the metadata log stores, never the password)::

    SaltedPassword = PBKDF2-HMAC-H(password, salt, iterations)
    StoredKey      = H(HMAC(SaltedPassword, "Client Key"))
    ServerKey      = HMAC(SaltedPassword, "Server Key")

Exchange (client-first, server-first, client-final, server-final)::

    C: n,,n=<user>,r=<client nonce>
    S: r=<client nonce><server nonce>,s=<base64 salt>,i=<iterations>
    C: c=biws,r=<nonce>,p=<base64 ClientProof>
    S: v=<base64 ServerSignature>

    AuthMessage     = client-first-bare "," server-first "," client-final-without-proof
    ClientSignature = HMAC(StoredKey, AuthMessage);  ClientProof = ClientKey XOR ClientSignature
    ServerSignature = HMAC(ServerKey, AuthMessage)

The server recovers ClientKey = ClientProof XOR ClientSignature and accepts iff
H(ClientKey) == StoredKey (constant-time comparison). Channel binding is not supported (the
gs2 header must be ``n`` or ``y``, as Kafka requires). User names are escaped in messages
(``=2C`` for ``,`` and ``=3D`` for ``=``).

:class:`ScramServer` and :class:`ScramClient` are sans-IO state machines: feed a message, get
the reply. An illegal call raises :class:`IllegalSaslStateError` and leaves the state unchanged;
a rejected exchange raises :class:`SaslAuthenticationError`, whose message never holds a secret.

Thread-safety: one instance per connection, used by one thread; credentials are immutable.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from common.security.errors import (
    IllegalSaslStateError,
    InvalidCredentialError,
    SaslAuthenticationError,
)

# Kafka's bounds on SCRAM iterations (ScramMechanism.minIterations / maxIterations).
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
DEFAULT_ITERATIONS = 8192
SALT_BYTES = 32
# A client nonce / user name longer than this is refused before any hashing.
MAX_NONCE_CHARS = 256
MAX_USERNAME_CHARS = 256
# Largest client message accepted (first and final are far below this).
MAX_MESSAGE_BYTES = 4096
_FAILED = "Authentication failed during authentication due to invalid credentials with SASL"


class ScramMechanism(enum.IntEnum):
    """Kafka's ScramMechanism type ids (as in AlterUserScramCredentials and the metadata log)."""

    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        return self.name.replace("_", "-")

    @property
    def hash_name(self) -> str:
        return "sha256" if self is ScramMechanism.SCRAM_SHA_256 else "sha512"

    @staticmethod
    def from_name(name: str) -> ScramMechanism:
        """``"SCRAM-SHA-512"`` -> SCRAM_SHA_512; ValueError for anything else."""
        try:
            return ScramMechanism[name.upper().replace("-", "_")]
        except KeyError:
            raise ValueError(f"unknown SCRAM mechanism {name!r}") from None


MECHANISM_NAMES = tuple(m.mechanism_name for m in ScramMechanism)


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What the server stores for one user and mechanism."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def _hmac(mech: ScramMechanism, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, mech.hash_name).digest()


def _hash(mech: ScramMechanism, data: bytes) -> bytes:
    return hashlib.new(mech.hash_name, data).digest()


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


def salted_password(mech: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(mech.hash_name, password.encode("utf-8"), salt, iterations)


def check_iterations(iterations: int) -> None:
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise InvalidCredentialError(
            f"SCRAM iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}, "
            f"got {iterations}"
        )


def credential_from_salted(
    mech: ScramMechanism, salted: bytes, salt: bytes, iterations: int
) -> ScramCredential:
    client_key = _hmac(mech, salted, b"Client Key")
    return ScramCredential(
        salt=salt,
        stored_key=_hash(mech, client_key),
        server_key=_hmac(mech, salted, b"Server Key"),
        iterations=iterations,
    )


def make_credential(
    mech: ScramMechanism,
    password: str,
    *,
    iterations: int = DEFAULT_ITERATIONS,
    salt: bytes | None = None,
) -> ScramCredential:
    """A new credential for ``password`` (a fresh random salt unless ``salt`` is given)."""
    check_iterations(iterations)
    if not password:
        raise InvalidCredentialError("a SCRAM password must not be empty")
    salt = secrets.token_bytes(SALT_BYTES) if salt is None else salt
    if not salt:
        raise InvalidCredentialError("a SCRAM salt must not be empty")
    return credential_from_salted(
        mech, salted_password(mech, password, salt, iterations), salt, iterations
    )


def password_matches(mech: ScramMechanism, credential: ScramCredential, password: str) -> bool:
    """Whether ``password`` produces ``credential`` (used by SASL/PLAIN against stored SCRAM
    credentials). Constant-time comparison of the stored key."""
    candidate = credential_from_salted(
        mech,
        salted_password(mech, password, credential.salt, credential.iterations),
        credential.salt,
        credential.iterations,
    )
    return hmac.compare_digest(candidate.stored_key, credential.stored_key)


def escape_username(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def unescape_username(text: str) -> str:
    """RFC 5802 saslname -> user name; SaslAuthenticationError for a stray ``=``."""
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "=":
            code = text[i + 1 : i + 3]
            if code == "2C":
                out.append(",")
            elif code == "3D":
                out.append("=")
            else:
                raise SaslAuthenticationError("invalid escape in SCRAM user name")
            i += 3
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _attributes(message: str, what: str) -> list[tuple[str, str]]:
    out = []
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise SaslAuthenticationError(f"malformed SCRAM {what} message")
        out.append((part[0], part[2:]))
    return out


def _b64decode(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise SaslAuthenticationError(f"invalid base64 in SCRAM {what}") from None


def _printable_nonce(nonce: str) -> bool:
    return bool(nonce) and all(0x21 <= ord(c) <= 0x7E and c != "," for c in nonce)


class _ServerState(enum.Enum):
    RECEIVE_CLIENT_FIRST = "receive-client-first"
    RECEIVE_CLIENT_FINAL = "receive-client-final"
    COMPLETE = "complete"
    FAILED = "failed"


CredentialLookup = Callable[[str, ScramMechanism], ScramCredential | None]


class ScramServer:
    """The server side of one SCRAM exchange (Kafka's ScramSaslServer).

    ``lookup(user, mechanism)`` returns the stored credential or None. ``evaluate`` takes each
    client message and returns the reply; after the second call ``is_complete`` is True and
    ``authorization_id`` names the authenticated user.
    """

    def __init__(
        self,
        mechanism: ScramMechanism,
        lookup: CredentialLookup,
        *,
        nonce_factory: Callable[[], str] | None = None,
    ) -> None:
        self.mechanism = mechanism
        self._lookup = lookup
        self._nonce_factory = nonce_factory or (lambda: secrets.token_urlsafe(24))
        self._state = _ServerState.RECEIVE_CLIENT_FIRST
        self._username: str | None = None
        self._credential: ScramCredential | None = None
        self._nonce = ""
        self._gs2_header = ""
        self._client_first_bare = ""
        self._server_first = ""

    @property
    def is_complete(self) -> bool:
        return self._state is _ServerState.COMPLETE

    @property
    def authorization_id(self) -> str:
        if self._state is not _ServerState.COMPLETE or self._username is None:
            raise IllegalSaslStateError("SCRAM authentication has not completed")
        return self._username

    def evaluate(self, message: bytes) -> bytes:
        if self._state is _ServerState.RECEIVE_CLIENT_FIRST:
            handler = self._client_first
        elif self._state is _ServerState.RECEIVE_CLIENT_FINAL:
            handler = self._client_final
        else:
            raise IllegalSaslStateError(f"SCRAM server got a message in state {self._state.value}")
        if len(message) > MAX_MESSAGE_BYTES:
            self._state = _ServerState.FAILED
            raise SaslAuthenticationError("SCRAM message too large")
        try:
            text = message.decode("utf-8")
            return handler(text).encode("utf-8")
        except UnicodeDecodeError:
            self._state = _ServerState.FAILED
            raise SaslAuthenticationError("SCRAM message is not UTF-8") from None
        except SaslAuthenticationError:
            self._state = _ServerState.FAILED
            raise

    def _client_first(self, text: str) -> str:
        # gs2-header = cbind-flag "," [authzid] ","
        parts = text.split(",", 2)
        if len(parts) != 3:
            raise SaslAuthenticationError("malformed SCRAM client-first message")
        cbind, authzid, bare = parts
        if cbind not in ("n", "y"):
            raise SaslAuthenticationError("SCRAM channel binding is not supported")
        if authzid and not authzid.startswith("a="):
            raise SaslAuthenticationError("malformed SCRAM authorization id")
        attrs = _attributes(bare, "client-first")
        if len(attrs) < 2 or attrs[0][0] != "n" or attrs[1][0] != "r":
            raise SaslAuthenticationError("malformed SCRAM client-first message")
        if attrs[0][1] == "" or len(attrs[0][1]) > MAX_USERNAME_CHARS:
            raise SaslAuthenticationError("invalid SCRAM user name")
        username = unescape_username(attrs[0][1])
        nonce = attrs[1][1]
        if len(nonce) > MAX_NONCE_CHARS or not _printable_nonce(nonce):
            raise SaslAuthenticationError("invalid SCRAM client nonce")
        # Extensions (e.g. tokenauth=true for delegation tokens) are not supported.
        if any(key == "t" or key == "m" for key, _ in attrs[2:]):
            raise SaslAuthenticationError("SCRAM extensions are not supported")
        if authzid and unescape_username(authzid[2:]) != username:
            raise SaslAuthenticationError(
                "authorization id must be empty or equal to the authenticated user"
            )
        credential = self._lookup(username, self.mechanism)
        if credential is None:
            raise SaslAuthenticationError(_FAILED + " " + self.mechanism.mechanism_name)
        self._username = username
        self._credential = credential
        self._gs2_header = f"{cbind},{authzid},"
        self._client_first_bare = bare
        self._nonce = nonce + self._nonce_factory()
        salt = base64.b64encode(credential.salt).decode("ascii")
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        self._state = _ServerState.RECEIVE_CLIENT_FINAL
        return self._server_first

    def _client_final(self, text: str) -> str:
        attrs = _attributes(text, "client-final")
        if len(attrs) < 3 or attrs[0][0] != "c" or attrs[1][0] != "r" or attrs[-1][0] != "p":
            raise SaslAuthenticationError("malformed SCRAM client-final message")
        channel = _b64decode(attrs[0][1], "channel binding")
        if channel != self._gs2_header.encode("utf-8"):
            raise SaslAuthenticationError("SCRAM channel binding does not match the gs2 header")
        if attrs[1][1] != self._nonce:
            raise SaslAuthenticationError("SCRAM nonce mismatch")
        proof = _b64decode(attrs[-1][1], "proof")
        credential = self._credential
        if credential is None:  # unreachable: set with the state change
            raise IllegalSaslStateError("SCRAM server lost its credential")
        without_proof = text[: text.rindex(",p=")]
        auth_message = ",".join((self._client_first_bare, self._server_first, without_proof))
        auth_bytes = auth_message.encode("utf-8")
        signature = _hmac(self.mechanism, credential.stored_key, auth_bytes)
        if len(proof) != len(signature):
            raise SaslAuthenticationError(_FAILED + " " + self.mechanism.mechanism_name)
        client_key = _xor(proof, signature)
        if not hmac.compare_digest(_hash(self.mechanism, client_key), credential.stored_key):
            raise SaslAuthenticationError(_FAILED + " " + self.mechanism.mechanism_name)
        server_signature = _hmac(self.mechanism, credential.server_key, auth_bytes)
        self._state = _ServerState.COMPLETE
        return "v=" + base64.b64encode(server_signature).decode("ascii")


class _ClientState(enum.Enum):
    SEND_CLIENT_FIRST = "send-client-first"
    RECEIVE_SERVER_FIRST = "receive-server-first"
    RECEIVE_SERVER_FINAL = "receive-server-final"
    COMPLETE = "complete"
    FAILED = "failed"


class ScramClient:
    """The client side (used by kraftlog's own clients and by tests as an independent peer).

    ``first_message()`` -> send; ``final_message(server_first)`` -> send;
    ``verify_server_final(server_final)`` checks the server's signature (mutual authentication).
    """

    def __init__(
        self,
        mechanism: ScramMechanism,
        username: str,
        password: str,
        *,
        nonce: str | None = None,
        max_iterations: int = MAX_ITERATIONS,
    ) -> None:
        self.mechanism = mechanism
        self._username = username
        self._password = password
        self._nonce = nonce or secrets.token_urlsafe(24)
        self._max_iterations = max_iterations
        self._state = _ClientState.SEND_CLIENT_FIRST
        self._client_first_bare = ""
        self._server_signature = b""

    @property
    def is_complete(self) -> bool:
        return self._state is _ClientState.COMPLETE

    def first_message(self) -> bytes:
        if self._state is not _ClientState.SEND_CLIENT_FIRST:
            raise IllegalSaslStateError(f"SCRAM client-first in state {self._state.value}")
        self._client_first_bare = f"n={escape_username(self._username)},r={self._nonce}"
        self._state = _ClientState.RECEIVE_SERVER_FIRST
        return ("n,," + self._client_first_bare).encode("utf-8")

    def final_message(self, server_first: bytes) -> bytes:
        if self._state is not _ClientState.RECEIVE_SERVER_FIRST:
            raise IllegalSaslStateError(f"SCRAM server-first in state {self._state.value}")
        try:
            text = server_first.decode("utf-8")
            attrs = dict(_attributes(text, "server-first"))
            nonce, salt_b64, iterations_text = attrs["r"], attrs["s"], attrs["i"]
        except (UnicodeDecodeError, KeyError, SaslAuthenticationError):
            self._state = _ClientState.FAILED
            raise SaslAuthenticationError("malformed SCRAM server-first message") from None
        if not nonce.startswith(self._nonce) or nonce == self._nonce:
            self._state = _ClientState.FAILED
            raise SaslAuthenticationError("SCRAM server nonce does not extend the client nonce")
        if not iterations_text.isdigit() or not (
            MIN_ITERATIONS <= int(iterations_text) <= self._max_iterations
        ):
            self._state = _ClientState.FAILED
            raise SaslAuthenticationError("SCRAM iteration count out of range")
        salt = _b64decode(salt_b64, "salt")
        salted = salted_password(self.mechanism, self._password, salt, int(iterations_text))
        client_key = _hmac(self.mechanism, salted, b"Client Key")
        stored_key = _hash(self.mechanism, client_key)
        without_proof = f"c=biws,r={nonce}"
        auth = ",".join((self._client_first_bare, text, without_proof)).encode("utf-8")
        proof = _xor(client_key, _hmac(self.mechanism, stored_key, auth))
        server_key = _hmac(self.mechanism, salted, b"Server Key")
        self._server_signature = _hmac(self.mechanism, server_key, auth)
        self._state = _ClientState.RECEIVE_SERVER_FINAL
        return (without_proof + ",p=" + base64.b64encode(proof).decode("ascii")).encode("utf-8")

    def verify_server_final(self, server_final: bytes) -> None:
        if self._state is not _ClientState.RECEIVE_SERVER_FINAL:
            raise IllegalSaslStateError(f"SCRAM server-final in state {self._state.value}")
        try:
            attrs = dict(_attributes(server_final.decode("utf-8"), "server-final"))
        except (UnicodeDecodeError, SaslAuthenticationError):
            self._state = _ClientState.FAILED
            raise SaslAuthenticationError("malformed SCRAM server-final message") from None
        if "e" in attrs:
            self._state = _ClientState.FAILED
            raise SaslAuthenticationError(f"SCRAM server error: {attrs['e']}")
        signature = _b64decode(attrs.get("v", ""), "server signature")
        if not hmac.compare_digest(signature, self._server_signature):
            self._state = _ClientState.FAILED
            raise SaslAuthenticationError("SCRAM server signature is wrong")
        self._state = _ClientState.COMPLETE
