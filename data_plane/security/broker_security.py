"""BrokerSecurity: everything a broker needs to secure its Kafka listeners, built from
:class:`SecurityConfig` and kept current from the metadata image; and ConnectionSecurity, the
per-connection state the connection layer consults.

Per listener (``listener.security.protocol.map``): PLAINTEXT and SASL_PLAINTEXT accept TCP;
SSL and SASL_SSL first complete a TLS handshake (:func:`tls_socket.tls_handshake` with the
server context of ``ssl.*``; ``ssl.client.auth`` applies to SSL listeners only). SASL
listeners then gate every request through :class:`sasl.SaslServerAuthenticator` (credentials:
the SCRAM credentials of the current metadata image). SSL listeners without SASL take the
principal from the client certificate; PLAINTEXT connections are ``User:ANONYMOUS``.

With ``kraftlog.authorizer.enabled`` every request then passes :class:`RequestAuthorizer`,
which applies the API's rule from the handler registry (``authorization_rules``) with the ACLs
of the current image, ``super.users`` and ``allow.everyone.if.no.acl.found``. Produce and
Fetch bytes are metered by the client quota managers (``producer_byte_rate`` /
``consumer_byte_rate`` of the image); the connection answers with ``throttle_time_ms`` and
stops reading from the client for that long.

Thread-safety: :meth:`BrokerSecurity.on_image` and the per-connection objects run on the
broker's event loop thread; the authorizer and quota managers are themselves thread-safe.
"""

from __future__ import annotations

import dataclasses
import logging
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.codec import RequestHeader
from common.security.acl import Authorizer
from common.security.config import (
    PLAINTEXT,
    SSL,
    SecurityConfig,
    uses_sasl,
    uses_ssl,
)
from common.security.plain import scram_plain_check
from common.security.principal import ANONYMOUS, KafkaPrincipal, build_principal
from common.security.quota import QuotaType
from common.security.scram import ScramCredential, ScramMechanism
from common.security.tls import server_context
from data_plane.security.quota_manager import ClientQuotaManager
from data_plane.security.request_authz import (
    AuthorizationRule,
    RequestAuthorizer,
    Session,
    Verdict,
)
from data_plane.security.sasl import (
    SaslServerAuthenticator,
    SaslState,
    default_mechanism_factory,
)
from metadata.image import MetadataImage
from metadata.security_image import SecurityImage

logger = logging.getLogger(__name__)

Body = dict[str, Any]
_KNOWN = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_ILLEGAL_SASL_STATE = int(ErrorCode.ILLEGAL_SASL_STATE)


@dataclass(frozen=True, slots=True)
class SaslReply:
    """What the connection does with a request the SASL layer handled itself: answer with
    ``body`` (None: no answer) and close afterwards if ``close``."""

    body: Body | None
    close: bool = False


class BrokerSecurity:
    def __init__(
        self,
        config: SecurityConfig,
        *,
        clock_ms: Callable[[], int],
        topic_exists: Callable[[str], bool] | None = None,
        authorization_rules: Mapping[int, AuthorizationRule] | None = None,
    ) -> None:
        self.config = config
        self._protocols = config.protocol_map()
        self._image = SecurityImage()
        self.authorizer = Authorizer(
            config.super_user_names(),
            allow_everyone_if_no_acl_found=config.allow_everyone_if_no_acl_found,
        )
        self.request_authorizer: RequestAuthorizer | None = None
        if config.authorizer_enabled:
            # Without the rules every request would pass: refuse to build such a broker.
            if authorization_rules is None:
                raise ValueError("kraftlog.authorizer.enabled needs the APIs' authorization rules")
            self.request_authorizer = RequestAuthorizer(
                self.authorizer, topic_exists or (lambda _name: True), authorization_rules
            )
        self.produce_quotas = ClientQuotaManager(
            QuotaType.PRODUCE,
            window_num=config.quota_window_num,
            window_size_seconds=config.quota_window_size_seconds,
            clock_ms=clock_ms,
        )
        self.fetch_quotas = ClientQuotaManager(
            QuotaType.FETCH,
            window_num=config.quota_window_num,
            window_size_seconds=config.quota_window_size_seconds,
            clock_ms=clock_ms,
        )
        # protocol (SSL / SASL_SSL) -> server context, built on first use.
        self._server_contexts: dict[str, ssl.SSLContext] = {}

    # --- configuration ------------------------------------------------------------------------

    def protocol_of(self, listener_name: str) -> str:
        name = listener_name.upper()
        return self._protocols.get(name, name if name in _KNOWN else PLAINTEXT)

    def tls_context(self, listener_name: str) -> ssl.SSLContext | None:
        """The server TLS context for an SSL / SASL_SSL listener (built once), else None.
        ``ssl.client.auth`` applies to SSL listeners; SASL_SSL listeners authenticate clients
        by SASL and do not ask for certificates (Kafka's behaviour without a listener-prefixed
        ``ssl.client.auth``)."""
        protocol = self.protocol_of(listener_name)
        if not uses_ssl(protocol):
            return None
        ctx = self._server_contexts.get(protocol)
        if ctx is None:
            cfg = self.config
            if protocol != SSL:
                cfg = dataclasses.replace(cfg, ssl_client_auth="none")
            ctx = self._server_contexts[protocol] = server_context(cfg)
        return ctx

    def validate(self, listener_names: list[str]) -> None:
        """Fail at start-up (TlsConfigError / ConfigError naming the key), not on the first
        client: every listener has a protocol and TLS listeners have a usable context."""
        for name in listener_names:
            self.config.protocol_of(name)
            self.tls_context(name)

    # --- metadata -----------------------------------------------------------------------------

    def on_image(self, image: MetadataImage) -> None:
        """Pick up ACLs, quotas and credentials of a new image (cheap when unchanged)."""
        security = image.security
        if security is self._image:
            return
        if security.acls is not self._image.acls:
            self.authorizer.update(security.acl_bindings())
        if security.quotas is not self._image.quotas:
            self.produce_quotas.update_quotas(security.quotas)
            self.fetch_quotas.update_quotas(security.quotas)
        self._image = security

    def credential(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        return self._image.scram_credential(user, mechanism)

    # --- connections --------------------------------------------------------------------------

    def for_connection(
        self, listener_name: str, client_host: str, peer_cert: dict[str, Any] | None
    ) -> ConnectionSecurity:
        protocol = self.protocol_of(listener_name)
        authenticator = None
        if uses_sasl(protocol):
            authenticator = SaslServerAuthenticator(
                self.config.sasl_enabled_mechanisms,
                default_mechanism_factory(self.credential, scram_plain_check(self.credential)),
                peer_cert=peer_cert,
            )
            principal = None
        else:
            principal = build_principal(peer_cert=peer_cert)
        return ConnectionSecurity(self, protocol, client_host, authenticator, principal)


class ConnectionSecurity:
    """The security state of one connection (see the module docstring)."""

    def __init__(
        self,
        broker: BrokerSecurity,
        protocol: str,
        client_host: str,
        authenticator: SaslServerAuthenticator | None,
        principal: KafkaPrincipal | None,
    ) -> None:
        self._broker = broker
        self.protocol = protocol
        self.client_host = client_host
        self.authenticator = authenticator
        self._principal = principal

    @property
    def principal(self) -> KafkaPrincipal:
        if self._principal is not None:
            return self._principal
        if self.authenticator is not None and self.authenticator.principal is not None:
            return self.authenticator.principal
        return ANONYMOUS

    @property
    def authenticated(self) -> bool:
        return self.authenticator is None or self.authenticator.is_complete

    @property
    def expects_raw_token(self) -> bool:
        """After SaslHandshake v0 the next frame is a bare SASL token, not a request."""
        return self.authenticator is not None and self.authenticator.state is SaslState.RAW_TOKENS

    def raw_token(self, token: bytes) -> bytes | None:
        """The bare reply to a v0 token, or None: authentication failed, close."""
        authenticator = self.authenticator
        if authenticator is None:
            return None
        try:
            return authenticator.raw_token(token)
        except Exception as exc:  # any failure ends the connection; never echo the token
            logger.warning("SASL authentication from %s failed: %s", self.client_host, _reason(exc))
            return None

    def intercept(self, api_key: int, api_version: int, body: Body) -> SaslReply | None:
        """None: go on to authorization and the handler. Otherwise the SASL layer answered
        (SaslHandshake, SaslAuthenticate) or refused the request (not authenticated yet)."""
        authenticator = self.authenticator
        if api_key == ApiKey.SASL_HANDSHAKE:
            if authenticator is None:
                return SaslReply({"error_code": _ILLEGAL_SASL_STATE, "mechanisms": []}, close=True)
            result = authenticator.handshake(api_version, body.get("mechanism", ""))
            return SaslReply(
                {"error_code": result.error_code, "mechanisms": list(result.mechanisms)},
                close=result.error_code == _ILLEGAL_SASL_STATE,
            )
        if api_key == ApiKey.SASL_AUTHENTICATE:
            if authenticator is None:
                return SaslReply(
                    {
                        "error_code": _ILLEGAL_SASL_STATE,
                        "error_message": "this listener does not use SASL",
                        "auth_bytes": b"",
                    },
                    close=True,
                )
            auth = authenticator.authenticate(body.get("auth_bytes") or b"")
            if auth.close:
                logger.warning(
                    "SASL authentication from %s failed: %s",
                    self.client_host,
                    authenticator.failure or auth.error_message,
                )
            elif authenticator.is_complete:
                logger.info(
                    "SASL/%s authenticated %s from %s",
                    authenticator.mechanism_name,
                    self.principal,
                    self.client_host,
                )
            return SaslReply(
                {
                    "error_code": auth.error_code,
                    "error_message": auth.error_message,
                    "auth_bytes": auth.auth_bytes,
                    "session_lifetime_ms": auth.session_lifetime_ms,
                },
                close=auth.close,
            )
        if authenticator is not None and not authenticator.allows(api_key):
            authenticator.reject(api_key)
            logger.warning(
                "connection from %s sent api key %d before authenticating; closing it",
                self.client_host,
                api_key,
            )
            return SaslReply(None, close=True)
        return None

    def authorize(self, api_key: int, api_version: int, body: Body) -> Verdict | None:
        """The ACL verdict, or None when authorization is off."""
        ra = self._broker.request_authorizer
        if ra is None:
            return None
        return ra.check(Session(self.principal, self.client_host), api_key, api_version, body)

    @property
    def fetch_quota_enabled(self) -> bool:
        return self._broker.fetch_quotas.enabled

    def throttle_ms(self, api_key: int, client_id: str | None, size_bytes: int) -> int:
        """Record ``size_bytes`` of a Produce request or a Fetch response against the client's
        quota and return how long to throttle it (0: not throttled)."""
        if api_key == ApiKey.PRODUCE:
            manager = self._broker.produce_quotas
        elif api_key == ApiKey.FETCH:
            manager = self._broker.fetch_quotas
        else:
            return 0
        if not manager.enabled:
            return 0
        user = self.principal.name
        return manager.record(user, client_id or "", size_bytes).throttle_time_ms


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class HeaderedRequest(Protocol):
    """What :func:`sasl_not_enabled` reads of the broker's request (``Request`` in
    data_plane.broker.apis, which this package sits below)."""

    @property
    def header(self) -> RequestHeader: ...


def sasl_not_enabled(_apis: object, request: HeaderedRequest) -> Body:
    """The handler of SaslHandshake / SaslAuthenticate on a server built without
    BrokerSecurity (every listener PLAINTEXT): ILLEGAL_SASL_STATE, as Kafka answers a SASL
    request on a listener that does not use SASL."""
    if request.header.api_key == ApiKey.SASL_HANDSHAKE:
        return {"error_code": _ILLEGAL_SASL_STATE, "mechanisms": []}
    return {
        "error_code": _ILLEGAL_SASL_STATE,
        "error_message": "this listener does not use SASL",
        "auth_bytes": b"",
    }
