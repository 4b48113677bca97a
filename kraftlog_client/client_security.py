"""The client side of Kafka's connection security: what kraftlog's native client needs to open
an SSL, SASL_PLAINTEXT or SASL_SSL connection.

- :func:`client_security` checks a client configuration's ``security.protocol``, ``sasl.*`` and
  ``ssl.*`` keys together and builds a :class:`ClientSecurity` (with the TLS context, built once
  and shared by every connection of the client), or None for PLAINTEXT.
- :class:`SaslClientAuthenticator` is the sans-IO SASL exchange of one connection, carried in
  SaslAuthenticate v1 requests after SaslHandshake v1 (Kafka's order: ApiVersions, SaslHandshake,
  SaslAuthenticate until complete)::

      PLAIN:  C: [] NUL user NUL password            S: (empty)            -> complete
      SCRAM:  C: client-first   S: server-first   C: client-final   S: server-final (verified)

- :class:`AuthenticationFailedError` is what a connection fails with when the broker refuses
  the credentials or the mechanism, or the broker's certificate is not trusted: a non-retriable
  Kafka error (SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM, or
  SASL_AUTHENTICATION_FAILED for TLS as Java's SslAuthenticationException maps), whose message
  never holds a secret.

Thread-safety: :class:`ClientSecurity` is immutable (an SSLContext may be shared);
one :class:`SaslClientAuthenticator` per connection, used by the connection's thread.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field

from common.configdef import ConfigError, from_props
from common.error_codes import ErrorCode
from common.security.config import SecurityConfig, uses_sasl, uses_ssl
from common.security.errors import IllegalSaslStateError, SaslAuthenticationError
from common.security.plain import MECHANISM as PLAIN
from common.security.plain import plain_message
from common.security.scram import ScramClient, ScramMechanism
from common.security.tls import client_context
from kraftlog_client.config import CommonClientConfig
from kraftlog_client.errors import KafkaError


class AuthenticationFailedError(KafkaError):
    """The broker refused this client's credentials or mechanism, or TLS verification failed.
    Not retriable: connecting again with the same settings fails the same way."""

    def __init__(self, code: ErrorCode | int, message: str) -> None:
        super().__init__(code, message)


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    """How a client's connections are secured (immutable, shared by its connections)."""

    protocol: str
    ssl_context: ssl.SSLContext | None = None
    sasl_mechanism: str = PLAIN
    sasl_username: str = ""
    sasl_password: str = field(default="", repr=False)

    @property
    def uses_ssl(self) -> bool:
        return self.ssl_context is not None

    @property
    def uses_sasl(self) -> bool:
        return uses_sasl(self.protocol)

    def authenticator(self) -> SaslClientAuthenticator:
        return SaslClientAuthenticator(self.sasl_mechanism, self.sasl_username, self.sasl_password)


def client_security(config: CommonClientConfig) -> ClientSecurity | None:
    """The security of ``config``'s connections; None for PLAINTEXT. Raises
    :class:`ConfigError` naming the missing key, :class:`TlsConfigError` for unreadable PEM
    files."""
    protocol = config.security_protocol
    if not uses_ssl(protocol) and not uses_sasl(protocol):
        return None
    context = None
    if uses_ssl(protocol):
        if not config.ssl_truststore_location:
            raise ConfigError(f"security.protocol={protocol} needs ssl.truststore.location")
        if config.ssl_key_location and not config.ssl_keystore_location:
            raise ConfigError("ssl.key.location needs ssl.keystore.location (the certificate)")
        props = {
            "ssl.truststore.location": config.ssl_truststore_location,
            "ssl.endpoint.identification.algorithm": config.ssl_endpoint_identification_algorithm,
        }
        for key, value in (
            ("ssl.keystore.location", config.ssl_keystore_location),
            ("ssl.key.location", config.ssl_key_location),
            ("ssl.key.password", config.ssl_key_password),
        ):
            if value:
                props[key] = value
        context = client_context(from_props(SecurityConfig, props))
    if not uses_sasl(protocol):
        return ClientSecurity(protocol, context)
    if not config.sasl_username or config.sasl_password is None:
        raise ConfigError(f"security.protocol={protocol} needs sasl.username and sasl.password")
    return ClientSecurity(
        protocol, context, config.sasl_mechanism, config.sasl_username, config.sasl_password
    )


class SaslClientAuthenticator:
    """One connection's SASL exchange, sans-IO: :meth:`first_token` is the first
    SaslAuthenticate payload; :meth:`on_server_token` takes each answer and returns the next
    payload, or None when authentication is complete. A broken exchange (a bad server
    signature, a malformed message) raises :class:`SaslAuthenticationError`; a call out of
    order :class:`IllegalSaslStateError`."""

    def __init__(self, mechanism: str, username: str, password: str) -> None:
        self.mechanism = mechanism
        self._scram: ScramClient | None = None
        self._plain = b""
        if mechanism == PLAIN:
            self._plain = plain_message(username, password)
        else:
            try:
                self._scram = ScramClient(ScramMechanism.from_name(mechanism), username, password)
            except ValueError:
                raise SaslAuthenticationError(f"unknown SASL mechanism {mechanism}") from None
        self._round = 0
        self.is_complete = False

    def first_token(self) -> bytes:
        if self._round != 0:
            raise IllegalSaslStateError("first SASL token already sent")
        self._round = 1
        if self._scram is not None:
            return self._scram.first_message()
        return self._plain

    def on_server_token(self, token: bytes) -> bytes | None:
        if self._round == 0 or self.is_complete:
            raise IllegalSaslStateError("SASL server token out of order")
        self._round += 1
        if self._scram is None:
            # PLAIN: the broker's empty answer to the one message means accepted.
            self.is_complete = True
            return None
        if self._round == 2:
            return self._scram.final_message(token)
        self._scram.verify_server_final(token)
        self.is_complete = True
        return None
