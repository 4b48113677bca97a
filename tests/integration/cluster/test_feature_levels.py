"""Feature levels on real processes (3 controllers, 2 brokers): a cluster bootstrapped at
metadata.version 1 is described, upgraded once every node reported its range (controllers
through Raft node info, brokers through heartbeats), refuses a downgrade, keeps the level
across a controller restart, and brokers report it in ApiVersions v3."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.messages.api_versions import (
    ApiVersionsRequest,
    ApiVersionsResponseFinalizedFeature,
    ApiVersionsResponseSupportedFeature,
)
from deploy.cli import main
from deploy.local_cluster import LocalCluster, wait_until
from metadata import features
from tests.integration.clusters import FAST_OVERRIDES, running_cluster
from tests.integration.kafka_python_admin import kafka_python_admin
from tests.unit.broker.wire import WireClient

pytestmark = pytest.mark.integration

DEADLINE_S = 60.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    path: Path = tmp_path_factory.mktemp("features") / "cluster"
    overrides = {**FAST_OVERRIDES, "bootstrap.metadata.version": "1"}
    with running_cluster(path, controllers=3, brokers=2, overrides=overrides) as started:
        yield started


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


def describe(cluster: LocalCluster) -> dict:
    code, out = cli("features", "describe", "--dir", str(cluster.directory), "--json")
    assert code == 0, out
    return json.loads(out)


def finalized_in_api_versions(
    cluster: LocalCluster, broker_id: int
) -> tuple[ApiVersionsResponseSupportedFeature, ApiVersionsResponseFinalizedFeature]:
    port = cluster.node(broker_id).broker_port
    assert port is not None
    client = WireClient(port)
    try:
        response = client.call(
            ApiKey.API_VERSIONS,
            3,
            ApiVersionsRequest(client_software_name="kraftlog-test", client_software_version="1.0"),
        )
    finally:
        client.close()
    assert response.error_code == 0
    (supported,) = response.supported_features
    (finalized,) = response.finalized_features
    return supported, finalized


def every_node_reported(cluster: LocalCluster) -> bool:
    nodes = describe(cluster)["nodes"]
    expected = len(cluster.controller_ids) + len(cluster.broker_ids)
    return len(nodes) == expected and all(n["max"] == features.LATEST_LEVEL for n in nodes)


def test_describe_upgrade_and_refusals(cluster: LocalCluster) -> None:
    doc = describe(cluster)
    (feature,) = doc["features"]
    assert (feature["name"], feature["finalized_level"]) == (features.METADATA_VERSION, 1)
    assert [lv["level"] for lv in doc["levels"]] == sorted(features.METADATA_VERSIONS)
    wait_until(lambda: every_node_reported(cluster), DEADLINE_S, "every node reported its range")
    roles = sorted((n["role"], n["id"]) for n in describe(cluster)["nodes"])
    assert roles == sorted(
        [("controller", c) for c in cluster.controller_ids]
        + [("broker", b) for b in cluster.broker_ids]
    )
    supported, finalized = finalized_in_api_versions(cluster, cluster.broker_ids[0])
    assert supported == ApiVersionsResponseSupportedFeature(
        name=features.METADATA_VERSION,
        min_version=features.SUPPORTED.min_level,
        max_version=features.SUPPORTED.max_level,
    )
    assert (finalized.min_version_level, finalized.max_version_level) == (1, 1)

    target = ("--dir", str(cluster.directory))
    code, out = cli("features", "upgrade", *target, "--metadata", "2", "--dry-run")
    assert code == 0 and "can be upgraded" in out
    assert describe(cluster)["features"][0]["finalized_level"] == 1

    code, out = cli("features", "upgrade", "--dir", str(cluster.directory), "--metadata", "1.0-IV1")
    assert code == 0, out
    assert describe(cluster)["features"][0]["finalized_level"] == 2
    for broker_id in cluster.broker_ids:
        wait_until(
            lambda b=broker_id: finalized_in_api_versions(cluster, b)[1].max_version_level == 2,
            DEADLINE_S,
            f"broker {broker_id} reports level 2",
        )

    code, out = cli(
        "features",
        "upgrade",
        "--dir",
        str(cluster.directory),
        "--feature",
        "metadata.version=1",
        "--json",
    )
    assert code == 1
    answer = json.loads(out)
    assert answer["error"].startswith(ErrorCode.INVALID_UPDATE_VERSION.name)
    assert answer["finalized_level"] == 2


def test_the_level_survives_a_restart_of_every_controller(cluster: LocalCluster) -> None:
    wait_until(lambda: every_node_reported(cluster), DEADLINE_S, "every node reported its range")
    if describe(cluster)["features"][0]["finalized_level"] == 1:
        target = ("--dir", str(cluster.directory))
        assert cli("features", "upgrade", *target, "--metadata", "2")[0] == 0
    for controller_id in cluster.controller_ids:
        cluster.restart(controller_id)
        cluster.wait_ready(DEADLINE_S)
    wait_until(lambda: every_node_reported(cluster), DEADLINE_S, "ranges reported again")
    assert describe(cluster)["features"][0]["finalized_level"] == 2


def test_kafka_python_describes_and_updates_features(cluster: LocalCluster) -> None:
    """kafka-features.sh's APIs: ApiVersions for describe, UpdateFeatures for upgrade."""
    wait_until(lambda: every_node_reported(cluster), DEADLINE_S, "every node reported its range")
    with kafka_python_admin(cluster.bootstrap_servers()) as admin:
        described = admin.describe_features()[features.METADATA_VERSION]
        assert described["supported"] == (
            features.SUPPORTED.min_level,
            features.SUPPORTED.max_level,
        )
        if described["finalized"][1] == 1:
            answer = admin.update_features({features.METADATA_VERSION: 2}, validate_only=True)
            assert answer == {features.METADATA_VERSION: "OK"}
            assert admin.update_features({features.METADATA_VERSION: 2}) == {
                features.METADATA_VERSION: "OK"
            }
        refused = admin.update_features({features.METADATA_VERSION: ("SAFE_DOWNGRADE", 1)})
        assert "InvalidUpdateVersion" in refused[features.METADATA_VERSION]
        wait_until(
            lambda: admin.describe_features()[features.METADATA_VERSION]["finalized"] == (2, 2),
            DEADLINE_S,
            "the broker reports level 2",
        )
