"""Errors of the security layer. Each maps to one Kafka error code (common.error_codes)
so the connection layer can answer with it before closing the connection."""

from __future__ import annotations

from common.error_codes import ErrorCode


class SecurityError(Exception):
    """Base class; ``error_code`` is the Kafka error code to answer with."""

    error_code: int = ErrorCode.UNKNOWN_SERVER_ERROR


class SaslAuthenticationError(SecurityError):
    """The client's credentials (or its SASL messages) were rejected. The message is safe to
    send to the client and to log: it never contains a password, proof or key."""

    error_code = ErrorCode.SASL_AUTHENTICATION_FAILED


class IllegalSaslStateError(SecurityError):
    """A request arrived that the SASL state of the connection does not allow (for instance
    Produce before authentication, or SaslAuthenticate before SaslHandshake)."""

    error_code = ErrorCode.ILLEGAL_SASL_STATE


class InvalidCredentialError(SecurityError, ValueError):
    """A SCRAM credential or password does not satisfy the mechanism's rules (iterations out of
    range, empty password, malformed user name)."""

    error_code = ErrorCode.INVALID_REQUEST


class TlsConfigError(SecurityError, ValueError):
    """The ``ssl.*`` settings cannot produce a TLS context (missing file, bad PEM, unknown
    protocol name); the message names the key."""
