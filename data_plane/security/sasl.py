"""The SASL state of one Kafka connection (Kafka's SaslServerAuthenticator), sans-IO.

States and the requests each allows::

    HANDSHAKE_OR_VERSIONS --ApiVersions--> HANDSHAKE_OR_VERSIONS (clients retry ApiVersions at a
                                           lower version after UNSUPPORTED_VERSION)
    HANDSHAKE_OR_VERSIONS --SaslHandshake v0--> RAW_TOKENS   (old clients: the next frames are
                                                bare SASL tokens, no request header, and the
                                                replies are bare tokens with a length prefix)
    HANDSHAKE_OR_VERSIONS --SaslHandshake v1--> AUTHENTICATE (tokens wrapped in SaslAuthenticate;
                                                kafka-python and librdkafka use this)
    AUTHENTICATE / RAW_TOKENS --mechanism complete--> COMPLETE (every API allowed)
    any --rejected credentials / illegal request--> FAILED (the connection must be closed)

Before COMPLETE only ApiVersions, SaslHandshake and SaslAuthenticate are allowed; any other
request is an ILLEGAL_SASL_STATE and fails the connection. An unknown mechanism in the
handshake is answered UNSUPPORTED_SASL_MECHANISM with the enabled list (the client may try
another). A rejected SaslAuthenticate is answered SASL_AUTHENTICATION_FAILED with a message
that never holds the secret; then the connection is closed, as Kafka does.

Thread-safety: one instance per connection, used by the connection's task only.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from common.error_codes import ErrorCode
from common.security.errors import IllegalSaslStateError, SaslAuthenticationError
from common.security.plain import MECHANISM as PLAIN
from common.security.plain import PlainCredentialCheck, PlainServer
from common.security.principal import KafkaPrincipal, build_principal
from common.security.scram import CredentialLookup, ScramMechanism, ScramServer

API_VERSIONS_KEY = 18
SASL_HANDSHAKE_KEY = 17
SASL_AUTHENTICATE_KEY = 36
# A client that needs more round trips than this is misbehaving (SCRAM needs two, PLAIN one).
MAX_AUTHENTICATE_ROUNDS = 4


class SaslServerMechanism(Protocol):
    @property
    def is_complete(self) -> bool: ...

    @property
    def authorization_id(self) -> str: ...

    def evaluate(self, message: bytes) -> bytes: ...


class SaslState(enum.Enum):
    HANDSHAKE_OR_VERSIONS = "handshake-or-versions"
    AUTHENTICATE = "authenticate"
    RAW_TOKENS = "raw-tokens"
    COMPLETE = "complete"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class HandshakeResult:
    error_code: int
    mechanisms: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AuthenticateResult:
    """The SaslAuthenticate response fields; ``close`` = close the connection after sending."""

    error_code: int
    error_message: str | None
    auth_bytes: bytes
    session_lifetime_ms: int = 0
    close: bool = False


MechanismFactory = Callable[[str], SaslServerMechanism]


def default_mechanism_factory(
    lookup: CredentialLookup, plain_check: PlainCredentialCheck
) -> MechanismFactory:
    """PLAIN with ``plain_check``; SCRAM-SHA-256/512 against ``lookup``."""

    def factory(name: str) -> SaslServerMechanism:
        if name == PLAIN:
            return PlainServer(plain_check)
        return ScramServer(ScramMechanism.from_name(name), lookup)

    return factory


class SaslServerAuthenticator:
    def __init__(
        self,
        enabled_mechanisms: Sequence[str],
        mechanism_factory: MechanismFactory,
        *,
        peer_cert: dict[str, Any] | None = None,
    ) -> None:
        if not enabled_mechanisms:
            raise ValueError("sasl.enabled.mechanisms must name at least one mechanism")
        self.enabled_mechanisms = tuple(enabled_mechanisms)
        self._factory = mechanism_factory
        self._peer_cert = peer_cert
        self.state = SaslState.HANDSHAKE_OR_VERSIONS
        self.mechanism_name: str | None = None
        self._mechanism: SaslServerMechanism | None = None
        self._rounds = 0
        self.principal: KafkaPrincipal | None = None
        # Why the connection failed (for the log line; never holds a secret).
        self.failure: str | None = None

    @property
    def is_complete(self) -> bool:
        return self.state is SaslState.COMPLETE

    def allows(self, api_key: int) -> bool:
        """Whether a request with ``api_key`` may be processed now."""
        if self.state is SaslState.COMPLETE:
            return api_key != SASL_AUTHENTICATE_KEY
        if self.state is SaslState.HANDSHAKE_OR_VERSIONS:
            return api_key in (API_VERSIONS_KEY, SASL_HANDSHAKE_KEY)
        if self.state is SaslState.AUTHENTICATE:
            return api_key == SASL_AUTHENTICATE_KEY
        return False

    def reject(self, api_key: int) -> None:
        """Record that a request the state does not allow arrived: the connection fails."""
        self._fail(f"request with api key {api_key} not allowed in SASL state {self.state.value}")

    def handshake(self, version: int, mechanism: str) -> HandshakeResult:
        if self.state is not SaslState.HANDSHAKE_OR_VERSIONS:
            # Re-authentication (KIP-368) is not supported.
            self._fail("SaslHandshake after the handshake")
            return HandshakeResult(ErrorCode.ILLEGAL_SASL_STATE, self.enabled_mechanisms)
        if mechanism not in self.enabled_mechanisms:
            return HandshakeResult(ErrorCode.UNSUPPORTED_SASL_MECHANISM, self.enabled_mechanisms)
        try:
            self._mechanism = self._factory(mechanism)
        except ValueError:
            return HandshakeResult(ErrorCode.UNSUPPORTED_SASL_MECHANISM, self.enabled_mechanisms)
        self.mechanism_name = mechanism
        self.state = SaslState.RAW_TOKENS if version == 0 else SaslState.AUTHENTICATE
        return HandshakeResult(0, self.enabled_mechanisms)

    def authenticate(self, auth_bytes: bytes) -> AuthenticateResult:
        """A SaslAuthenticate request (handshake v1)."""
        if self.state is not SaslState.AUTHENTICATE:
            self._fail("SaslAuthenticate without a SaslHandshake v1")
            return AuthenticateResult(
                ErrorCode.ILLEGAL_SASL_STATE,
                "SaslAuthenticate is only allowed after SaslHandshake v1",
                b"",
                close=True,
            )
        try:
            reply = self._evaluate(auth_bytes)
        except SaslAuthenticationError as exc:
            return AuthenticateResult(
                ErrorCode.SASL_AUTHENTICATION_FAILED, str(exc), b"", close=True
            )
        return AuthenticateResult(0, None, reply)

    def raw_token(self, token: bytes) -> bytes:
        """A bare token (handshake v0). Raises SaslAuthenticationError: close without reply."""
        if self.state is not SaslState.RAW_TOKENS:
            self._fail("raw SASL token outside the v0 handshake")
            raise IllegalSaslStateError("raw SASL token outside the v0 handshake")
        return self._evaluate(token)

    def _evaluate(self, token: bytes) -> bytes:
        mechanism = self._mechanism
        if mechanism is None:
            raise IllegalSaslStateError("no SASL mechanism chosen")
        self._rounds += 1
        if self._rounds > MAX_AUTHENTICATE_ROUNDS:
            self._fail("too many SASL rounds")
            raise SaslAuthenticationError("too many SASL authentication rounds")
        try:
            reply = mechanism.evaluate(token)
        except (SaslAuthenticationError, IllegalSaslStateError) as exc:
            self._fail(str(exc))
            raise SaslAuthenticationError(str(exc)) from None
        if mechanism.is_complete:
            self.principal = build_principal(
                sasl_authorization_id=mechanism.authorization_id, peer_cert=self._peer_cert
            )
            self.state = SaslState.COMPLETE
        return reply

    def _fail(self, why: str) -> None:
        self.state = SaslState.FAILED
        self.failure = why
