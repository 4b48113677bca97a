"""Mutual TLS on the gRPC control plane of a real cluster (kraftlog.control.plane.ssl.enabled on
every node): the broker registers and is unfenced through it, a plaintext control-plane client
gets no answer, and the admin command line works with --command-config."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from common.configdef import from_props
from common.security.config import SecurityConfig
from data_plane.security import certs
from data_plane.security.grpc_tls import channel_credentials
from deploy.cli import main as cli_main
from deploy.local_cluster import LocalCluster
from metadata.client import ControllerClient, ControllerError
from metadata.messages import NewTopic
from tests.integration.clusters import FAST_OVERRIDES

pytestmark = pytest.mark.integration

DEADLINE_S = 60.0


def test_control_plane_mutual_tls(tmp_path: Path, capsys) -> None:
    pki = tmp_path / "pki"
    certs.create_dev_pki(pki, ["node", "admin"])
    tls = {
        "kraftlog.control.plane.ssl.enabled": "true",
        "ssl.truststore.location": str(pki / "ca.pem"),
    }
    node_tls = {
        **tls,
        "ssl.keystore.location": str(pki / "node.pem"),
        "ssl.key.location": str(pki / "node-key.pem"),
    }
    admin_props = tmp_path / "admin.properties"
    admin_props.write_text(
        "\n".join(
            f"{k}={v}"
            for k, v in {
                **tls,
                "ssl.keystore.location": str(pki / "admin.pem"),
                "ssl.key.location": str(pki / "admin-key.pem"),
            }.items()
        )
        + "\n"
    )
    cluster = LocalCluster.create(
        tmp_path / "c", controllers=1, brokers=1, overrides={**FAST_OVERRIDES, **node_tls}
    )
    try:
        cluster.start()
        bootstrap = ",".join(cluster.bootstrap_controllers())
        credentials = channel_credentials(from_props(SecurityConfig, node_tls))
        with ControllerClient(bootstrap, 5.0, credentials=credentials) as client:
            deadline = time.monotonic() + DEADLINE_S
            while True:
                for node_id in cluster.node_ids:
                    assert cluster.is_running(node_id), cluster.log_tail(node_id)
                try:
                    brokers = client.describe_cluster().brokers
                except ControllerError:
                    brokers = []
                if brokers and not brokers[0].fenced:
                    break
                assert time.monotonic() < deadline, "the broker never registered over mTLS"
                time.sleep(0.2)
            assert client.create_topics([NewTopic("over-mtls", 1, 1)])[0].error_code == 0
        with ControllerClient(bootstrap, 2.0) as plain, pytest.raises(ControllerError):
            plain.describe_cluster()
        target = ["--bootstrap-controller", bootstrap]
        code = cli_main(["topics", "list", *target, "--command-config", str(admin_props)])
        out = capsys.readouterr()
        assert code == 0 and "over-mtls" in out.out
        code = cli_main(["topics", "list", *target, "--timeout", "2"])
        assert code == 1
    finally:
        cluster.close()
