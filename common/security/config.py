"""SecurityConfig: the security settings of a node, with Kafka's property names.

``listener.security.protocol.map`` maps each listener name to PLAINTEXT, SSL, SASL_PLAINTEXT or
SASL_SSL (Kafka's default map; a listener named like a protocol uses that protocol). ``ssl.*``
keys describe this node's certificate and the CAs it trusts, in PEM (Kafka's
``ssl.keystore.type=PEM``): ``ssl.keystore.location`` holds the certificate chain (and the key
unless ``ssl.key.location`` names a separate key file), ``ssl.truststore.location`` the CA
certificates. The same keys secure the gRPC control plane when
``control.plane.ssl.enabled=true`` (kraftlog's own key; mutual TLS between brokers and
controllers).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from common.configdef import ConfigError, prop

PLAINTEXT = "PLAINTEXT"
SSL = "SSL"
SASL_PLAINTEXT = "SASL_PLAINTEXT"
SASL_SSL = "SASL_SSL"
SECURITY_PROTOCOLS = (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
TLS_PROTOCOLS = ("TLSv1.2", "TLSv1.3")
CLIENT_AUTH_CHOICES = ("required", "requested", "none")

_DEFAULT_MAP = (
    "CONTROLLER:PLAINTEXT",
    "PLAINTEXT:PLAINTEXT",
    "SSL:SSL",
    "SASL_PLAINTEXT:SASL_PLAINTEXT",
    "SASL_SSL:SASL_SSL",
)


@dataclass(frozen=True, slots=True)
class SecurityConfig:
    listener_security_protocol_map: tuple[str, ...] = field(
        default=_DEFAULT_MAP,
        metadata=prop(
            "listener.security.protocol.map",
            doc="LISTENER:PROTOCOL pairs; the protocol is PLAINTEXT, SSL, SASL_PLAINTEXT or "
            "SASL_SSL.",
        ),
    )
    sasl_enabled_mechanisms: tuple[str, ...] = field(
        default=("SCRAM-SHA-256", "SCRAM-SHA-512"),
        metadata=prop(
            "sasl.enabled.mechanisms",
            choices=SASL_MECHANISMS,
            doc="Mechanisms offered on SASL listeners. PLAIN checks the password against the "
            "user's SCRAM credential (no password is stored).",
        ),
    )
    super_users: str = field(
        default="",
        metadata=prop(
            "super.users",
            doc="Principals allowed everything, separated by ';' as in Kafka "
            "(User:admin;User:CN=node-1,O=example: a certificate's principal holds commas). "
            "A list without ';' and without a distinguished name may use ',' instead.",
        ),
    )
    authorizer_enabled: bool = field(
        default=False,
        metadata=prop(
            "kraftlog.authorizer.enabled",
            doc="Check ACLs on every request (Kafka: authorizer.class.name set to "
            "StandardAuthorizer). Off: every principal may do everything.",
        ),
    )
    allow_everyone_if_no_acl_found: bool = field(
        default=False,
        metadata=prop(
            "allow.everyone.if.no.acl.found",
            doc="Allow a request on a resource that no ACL names.",
        ),
    )
    quota_window_num: int = field(
        default=11,
        metadata=prop("quota.window.num", min=2, doc="Samples kept for client quota rates."),
    )
    quota_window_size_seconds: int = field(
        default=1,
        metadata=prop(
            "quota.window.size.seconds", min=1, doc="Length of each client quota sample."
        ),
    )
    ssl_keystore_location: str | None = field(
        default=None,
        metadata=prop(
            "ssl.keystore.location",
            doc="PEM file with this node's certificate chain (and private key unless "
            "ssl.key.location is set).",
        ),
    )
    ssl_key_location: str | None = field(
        default=None,
        metadata=prop("ssl.key.location", doc="PEM file with this node's private key."),
    )
    ssl_key_password: str | None = field(
        default=None,
        metadata=prop("ssl.key.password", doc="Password of an encrypted private key."),
    )
    ssl_truststore_location: str | None = field(
        default=None,
        metadata=prop(
            "ssl.truststore.location",
            doc="PEM file with the CA certificates this node trusts (peers' and clients').",
        ),
    )
    ssl_client_auth: str = field(
        default="none",
        metadata=prop(
            "ssl.client.auth",
            choices=CLIENT_AUTH_CHOICES,
            doc="Client certificates on SSL listeners: required, requested or none.",
        ),
    )
    ssl_enabled_protocols: tuple[str, ...] = field(
        default=TLS_PROTOCOLS,
        metadata=prop("ssl.enabled.protocols", choices=TLS_PROTOCOLS, doc="TLS versions."),
    )
    ssl_endpoint_identification_algorithm: str = field(
        default="https",
        metadata=prop(
            "ssl.endpoint.identification.algorithm",
            doc="'https' checks the server host name against its certificate; '' does not.",
        ),
    )
    control_plane_ssl_enabled: bool = field(
        default=False,
        metadata=prop(
            "kraftlog.control.plane.ssl.enabled",
            doc="Mutual TLS on the gRPC control plane (brokers <-> controllers) with the "
            "ssl.* keystore and truststore.",
        ),
    )

    def protocol_map(self) -> dict[str, str]:
        """listener name (upper case) -> security protocol; ConfigError on a bad entry."""
        out: dict[str, str] = {}
        for item in self.listener_security_protocol_map:
            name, sep, protocol = item.partition(":")
            name, protocol = name.strip().upper(), protocol.strip().upper()
            if not sep or not name or protocol not in SECURITY_PROTOCOLS:
                raise ConfigError(
                    f"listener.security.protocol.map: {item!r} is not LISTENER:PROTOCOL with "
                    f"PROTOCOL one of {', '.join(SECURITY_PROTOCOLS)}"
                )
            out[name] = protocol
        return out

    def protocol_of(self, listener_name: str) -> str:
        name = listener_name.upper()
        protocol = self.protocol_map().get(name)
        if protocol is None:
            if name in SECURITY_PROTOCOLS:
                return name
            raise ConfigError(
                f"listener.security.protocol.map: no security protocol for listener {name}"
            )
        return protocol

    def super_user_names(self) -> tuple[str, ...]:
        text = self.super_users
        # A distinguished name (User:CN=x,O=y) holds commas: only ';' separates then.
        separator = ";" if ";" in text or "=" in text else ","
        return tuple(p.strip() for p in text.split(separator) if p.strip())


def uses_ssl(protocol: str) -> bool:
    return protocol in (SSL, SASL_SSL)


def uses_sasl(protocol: str) -> bool:
    return protocol in (SASL_PLAINTEXT, SASL_SSL)
