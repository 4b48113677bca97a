"""Mutual TLS for the gRPC control plane (brokers and admin tools <-> controllers), from the
same ``ssl.*`` keys as the Kafka listeners (:class:`SecurityConfig`), enabled by
``kraftlog.control.plane.ssl.enabled``.

The controller requires a client certificate signed by a CA of ``ssl.truststore.location``
(``require_client_auth``); clients verify the controller's certificate against the same
truststore and present their own. gRPC checks the server name against the certificate's
subjectAltName (the dev certificates of ``kraftlog certs create`` carry localhost and
127.0.0.1).

Thread-safety: pure functions.
"""

from __future__ import annotations

import grpc

from common.security.config import SecurityConfig
from common.security.pem_files import pem_bytes
from common.security.tls import grpc_key_and_chain


def server_credentials(config: SecurityConfig) -> grpc.ServerCredentials:
    key, chain = grpc_key_and_chain(config)
    roots = pem_bytes(config.ssl_truststore_location, "ssl.truststore.location")
    return grpc.ssl_server_credentials([(key, chain)], roots, require_client_auth=True)


def channel_credentials(config: SecurityConfig) -> grpc.ChannelCredentials:
    roots = pem_bytes(config.ssl_truststore_location, "ssl.truststore.location")
    key, chain = grpc_key_and_chain(config)
    return grpc.ssl_channel_credentials(roots, key, chain)


def control_plane_credentials(
    config: SecurityConfig,
) -> tuple[grpc.ServerCredentials | None, grpc.ChannelCredentials | None]:
    """(server, channel) credentials, or (None, None) when the control plane is plaintext."""
    if not config.control_plane_ssl_enabled:
        return None, None
    return server_credentials(config), channel_credentials(config)
