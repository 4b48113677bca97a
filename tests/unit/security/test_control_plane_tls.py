"""Mutual TLS on the gRPC control plane: a controller on an in-memory log answers clients with
a certificate of the cluster CA and refuses plaintext clients and clients of another CA."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from common.configdef import from_props
from common.security.config import SecurityConfig
from data_plane.security import certs
from data_plane.security.grpc_tls import (
    channel_credentials,
    control_plane_credentials,
    server_credentials,
)
from metadata.client import ControllerClient, ControllerError
from metadata.controller_config import ControllerConfig
from metadata.service import ControllerServer
from metadata.snapshot import build_snapshot
from tests.unit.metadata.memlog import InMemoryQuorum


def cfg(pki: Path, name: str) -> SecurityConfig:
    return from_props(
        SecurityConfig,
        {
            "kraftlog.control.plane.ssl.enabled": "true",
            "ssl.keystore.location": str(pki / f"{name}.pem"),
            "ssl.key.location": str(pki / f"{name}-key.pem"),
            "ssl.truststore.location": str(pki / "ca.pem"),
        },
    )


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("pki")
    certs.create_dev_pki(out, ["controller", "broker"])
    certs.create_dev_pki(out / "rogue", ["intruder"])
    return out


@pytest.fixture
def address(pki: Path) -> Iterator[str]:
    quorum = InMemoryQuorum(build_snapshot, 100_000)
    server = ControllerServer(
        1,
        quorum.voter(1),
        ControllerConfig(broker_session_timeout_ms=60_000),
        "127.0.0.1",
        0,
        credentials=server_credentials(cfg(pki, "controller")),
    )
    server.start()
    quorum.elect(1)
    try:
        deadline = time.monotonic() + 10
        while not server.is_active:
            assert time.monotonic() < deadline, "controller never became active"
            time.sleep(0.01)
        yield server.address
    finally:
        server.stop()


def test_mutual_tls_client_is_served(pki: Path, address: str) -> None:
    with ControllerClient(
        address, 10.0, credentials=channel_credentials(cfg(pki, "broker"))
    ) as client:
        assert client.describe_cluster().controller_id == 1


def test_plaintext_and_foreign_clients_are_refused(pki: Path, address: str) -> None:
    with ControllerClient(address, 2.0) as client, pytest.raises(ControllerError):
        client.describe_cluster()
    # Trusts the controller, but its own certificate is signed by another CA.
    intruder = from_props(
        SecurityConfig,
        {
            "ssl.keystore.location": str(pki / "rogue" / "intruder.pem"),
            "ssl.key.location": str(pki / "rogue" / "intruder-key.pem"),
            "ssl.truststore.location": str(pki / "ca.pem"),
        },
    )
    with (
        ControllerClient(address, 2.0, credentials=channel_credentials(intruder)) as client,
        pytest.raises(ControllerError),
    ):
        client.describe_cluster()


def test_disabled_by_default(pki: Path) -> None:
    assert control_plane_credentials(SecurityConfig()) == (None, None)
    server, channel = control_plane_credentials(cfg(pki, "broker"))
    assert server is not None and channel is not None
