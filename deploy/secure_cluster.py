"""A secure local cluster in one command (``kraftlog cluster up --security MODE``).

Modes: ``plaintext`` (the default, what ``make run`` starts), ``ssl``, ``sasl_ssl`` and
``sasl_plaintext``. Any mode but plaintext, when the cluster is created:

- makes a development CA and certificates in ``D/certs`` (one per node, ``node-<id>``, and
  ``admin``; :mod:`data_plane.security.certs`);
- turns on mutual TLS on the gRPC control plane and the authorizer on every node, with
  ``super.users`` = the nodes' and the admin certificate's principals and ``User:admin``;
- gives each broker its client listener on its port: ``SSL`` (client certificates required),
  ``SASL_SSL`` or ``SASL_PLAINTEXT`` with SCRAM-SHA-512; with SASL the brokers replicate
  over an ``INTERNAL`` SSL listener of their own (mutual TLS), because replica fetchers do
  not speak SASL;
- once the cluster is up, creates the SCRAM user ``admin`` (SASL modes) with a random
  password, and writes the client settings next to the cluster (mode 0600)::

      D/client.properties              kraftlog's client (Kafka's Java property names)
      D/client-librdkafka.properties   confluent-kafka / librdkafka, kcat
      D/client-kafka-python.json       kafka-python's keyword arguments
      D/admin.properties               the control plane: --command-config of kraftlog's
                                       admin commands (topics, users, acls, quotas)

The mode is kept in ``cluster.json``; :meth:`LocalCluster.client` then talks to the
controllers with the admin certificate.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from enum import Enum
from pathlib import Path

from data_plane.security import certs
from deploy.cluster_layout import ClusterLayout, NodeLayout, write_private

CERTS_DIR = "certs"
ADMIN_CERT = "admin"
ADMIN_USER = "admin"
SCRAM_MECHANISM = "SCRAM-SHA-512"
# Hashing rounds of the admin user's SCRAM credential (Kafka's minimum is 4096).
SCRAM_ITERATIONS = 8192
INTERNAL_LISTENER = "INTERNAL"


class SecurityMode(Enum):
    PLAINTEXT = "plaintext"
    SSL = "ssl"
    SASL_SSL = "sasl_ssl"
    SASL_PLAINTEXT = "sasl_plaintext"

    @property
    def protocol(self) -> str:
        """Kafka's security.protocol of the client listener."""
        return self.value.upper()

    @property
    def sasl(self) -> bool:
        return self in (SecurityMode.SASL_SSL, SecurityMode.SASL_PLAINTEXT)

    @property
    def tls_to_clients(self) -> bool:
        return self in (SecurityMode.SSL, SecurityMode.SASL_SSL)


def certs_dir(layout: ClusterLayout) -> Path:
    return layout.directory / CERTS_DIR


def cert_principal(name: str) -> str:
    """The principal an SSL listener and the control plane give certificate ``name``."""
    return f"User:CN={name},O={certs.ORGANIZATION}"


def node_cert_name(node: NodeLayout) -> str:
    return f"node-{node.node_id}"


def create_certificates(layout: ClusterLayout) -> Path:
    """The development CA and every node's and the admin's certificate, in ``D/certs``."""
    out = certs_dir(layout)
    names = [node_cert_name(n) for n in layout.nodes] + [ADMIN_CERT]
    certs.create_dev_pki(out, names, hosts=("localhost", layout.host))
    return out


def node_security_properties(
    layout: ClusterLayout, node: NodeLayout, mode: SecurityMode
) -> dict[str, str]:
    """The keys ``mode`` sets in one node's server.properties (nothing for plaintext)."""
    if mode is SecurityMode.PLAINTEXT:
        return {}
    pki = certs_dir(layout)
    name = node_cert_name(node)
    super_users = [cert_principal(node_cert_name(n)) for n in layout.nodes]
    super_users += [cert_principal(ADMIN_CERT), f"User:{ADMIN_USER}"]
    props = {
        "ssl.keystore.location": str(pki / f"{name}.pem"),
        "ssl.key.location": str(pki / f"{name}-key.pem"),
        "ssl.truststore.location": str(pki / "ca.pem"),
        "ssl.client.auth": "required",
        "kraftlog.control.plane.ssl.enabled": "true",
        "kraftlog.authorizer.enabled": "true",
        "super.users": ";".join(super_users),
    }
    if mode.sasl:
        props["sasl.enabled.mechanisms"] = SCRAM_MECHANISM
    if node.is_broker:
        host = layout.host
        client = f"{mode.protocol}://{host}:{node.broker_port}"
        protocols = [f"{mode.protocol}:{mode.protocol}"]
        if mode.sasl:
            internal = f"{INTERNAL_LISTENER}://{host}:{node.internal_port}"
            listeners = f"{client},{internal}"
            protocols.append(f"{INTERNAL_LISTENER}:SSL")
            props["inter.broker.listener.name"] = INTERNAL_LISTENER
        else:
            listeners = client
        props["listeners"] = listeners
        props["advertised.listeners"] = listeners
        props["listener.security.protocol.map"] = ",".join(["CONTROLLER:PLAINTEXT", *protocols])
    return props


def admin_control_plane_properties(layout: ClusterLayout) -> dict[str, str]:
    """The client side of the control plane's mutual TLS, with the admin certificate."""
    pki = certs_dir(layout)
    return {
        "kraftlog.control.plane.ssl.enabled": "true",
        "ssl.keystore.location": str(pki / f"{ADMIN_CERT}.pem"),
        "ssl.key.location": str(pki / f"{ADMIN_CERT}-key.pem"),
        "ssl.truststore.location": str(pki / "ca.pem"),
    }


def new_admin_password() -> str:
    return secrets.token_urlsafe(24)


def client_settings(
    layout: ClusterLayout, mode: SecurityMode, password: str | None
) -> dict[str, dict[str, str]]:
    """Client settings of the admin identity: ``kraftlog`` (Java names), ``librdkafka`` and
    ``kafka-python`` (keyword arguments)."""
    pki = certs_dir(layout)
    ca = str(pki / "ca.pem")
    cert, key = str(pki / f"{ADMIN_CERT}.pem"), str(pki / f"{ADMIN_CERT}-key.pem")
    bootstrap = ",".join(layout.bootstrap_servers())
    java = {"bootstrap.servers": bootstrap, "security.protocol": mode.protocol}
    rdkafka = {"bootstrap.servers": bootstrap, "security.protocol": mode.protocol}
    kp: dict[str, str] = {"bootstrap_servers": bootstrap, "security_protocol": mode.protocol}
    if mode.tls_to_clients:
        java["ssl.truststore.location"] = ca
        rdkafka["ssl.ca.location"] = ca
        kp["ssl_cafile"] = ca
    if mode is SecurityMode.SSL:
        java.update({"ssl.keystore.location": cert, "ssl.key.location": key})
        rdkafka.update({"ssl.certificate.location": cert, "ssl.key.location": key})
        kp.update({"ssl_certfile": cert, "ssl_keyfile": key})
    if mode.sasl:
        if password is None:
            raise ValueError("a SASL mode needs the admin password")
        sasl = {"sasl.mechanism": SCRAM_MECHANISM, "sasl.username": ADMIN_USER}
        java.update({**sasl, "sasl.password": password})
        rdkafka.update({**sasl, "sasl.password": password})
        kp.update(
            {
                "sasl_mechanism": SCRAM_MECHANISM,
                "sasl_plain_username": ADMIN_USER,
                "sasl_plain_password": password,
            }
        )
    return {"kraftlog": java, "librdkafka": rdkafka, "kafka-python": kp}


def _properties_text(props: Mapping[str, str], title: str) -> str:
    lines = [f"# {title}", "# written by `kraftlog cluster up --security` (mode 0600: secrets)"]
    return "\n".join([*lines, *(f"{k}={v}" for k, v in props.items())]) + "\n"


def client_files(layout: ClusterLayout) -> dict[str, Path]:
    """Where :func:`write_client_files` puts each file, by name."""
    d = layout.directory
    return {
        "kraftlog": d / "client.properties",
        "librdkafka": d / "client-librdkafka.properties",
        "kafka-python": d / "client-kafka-python.json",
        "admin": d / "admin.properties",
    }


def write_client_files(
    layout: ClusterLayout, mode: SecurityMode, password: str | None
) -> dict[str, Path]:
    """Write the client settings files (see the module docstring); their paths by name."""
    settings = client_settings(layout, mode, password)
    paths = client_files(layout)
    write_private(paths["kraftlog"], _properties_text(settings["kraftlog"], "kraftlog clients"))
    write_private(
        paths["librdkafka"],
        _properties_text(settings["librdkafka"], "confluent-kafka / librdkafka clients"),
    )
    write_private(paths["kafka-python"], json.dumps(settings["kafka-python"], indent=2) + "\n")
    write_private(
        paths["admin"],
        _properties_text(admin_control_plane_properties(layout), "kraftlog admin commands"),
    )
    return paths
