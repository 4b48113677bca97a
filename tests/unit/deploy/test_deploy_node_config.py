"""deploy.node_config: a node's server.properties onto every subsystem's config."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.configdef import ConfigError
from deploy.node_config import load_node_config, node_settings_from_props

EXAMPLES = Path(__file__).resolve().parents[3] / "deploy" / "examples"

CONTROLLER = {
    "process.roles": "controller",
    "node.id": "1",
    "controller.quorum.voters": "1@127.0.0.1:9094,2@127.0.0.1:9095,3@127.0.0.1:9096",
    "controller.quorum.secret": "s3cret",
    "listeners": "CONTROLLER://127.0.0.1:9093",
    "log.dirs": "/tmp/c1",
}
BROKER = {
    "process.roles": "broker",
    "node.id": "101",
    "listeners": "PLAINTEXT://0.0.0.0:9092",
    "advertised.listeners": "PLAINTEXT://broker1.example.com:9092",
    "controller.quorum.bootstrap.servers": "127.0.0.1:9093",
    "log.dirs": "/tmp/b1,/tmp/b2",
}


def settings(props: dict[str, str], **changes: str | None):  # type: ignore[no-untyped-def]
    merged = dict(props)
    for key, value in changes.items():
        key = key.replace("_", ".")
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return node_settings_from_props(merged, source="test.properties")


def test_controller_maps_onto_raft_and_controller_configs() -> None:
    s = settings(CONTROLLER)
    assert s.raft is not None
    assert s.raft.node_id == 1 and s.raft.quorum_secret == "s3cret"
    # Kafka's default: the metadata log lives in the first log dir.
    assert s.raft.metadata_log_dir == "/tmp/c1"
    assert s.controller_listener is not None and s.controller_listener.port == 9093
    assert s.bootstrap_controllers == ("127.0.0.1:9093",)
    assert s.storage_dirs() == ["/tmp/c1"]


def test_broker_maps_log_dirs_and_advertised_listeners() -> None:
    s = settings(BROKER)
    assert s.raft is None
    assert s.log.log_dirs == ("/tmp/b1", "/tmp/b2")
    assert [str(lis) for lis in s.advertised_listeners] == ["PLAINTEXT://broker1.example.com:9092"]
    assert s.storage_dirs() == ["/tmp/b1", "/tmp/b2"]


def test_unknown_key_is_rejected_with_the_closest_known_name() -> None:
    with pytest.raises(
        ConfigError,
        match=r"test.properties: unknown config key\(s\): "
        r"log\.segmnt\.bytes \(did you mean log\.segment\.bytes\?\)",
    ):
        settings(BROKER, **{"log.segmnt.bytes": "100"})


@pytest.mark.parametrize(
    ("base", "changes", "message"),
    [
        (BROKER, {"process.roles": None}, "process.roles: required"),
        (BROKER, {"process.roles": "broker,zookeeper"}, "'zookeeper' is not one of"),
        (BROKER, {"node.id": None}, "node.id: required"),
        (BROKER, {"controller.quorum.bootstrap.servers": None}, "required on a broker"),
        (BROKER, {"listeners": "CONTROLLER://127.0.0.1:9093"}, "no controller"),
        (BROKER, {"listeners": ""}, "needs a non-controller"),
        (BROKER, {"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}, "no routable host"),
        (BROKER, {"listeners": "PLAINTEXT://h:notaport"}, "has no valid port"),
        (CONTROLLER, {"listeners": "PLAINTEXT://127.0.0.1:9092"}, "a controller needs a listener"),
        (CONTROLLER, {"node.id": "7"}, "7 is not one of the voters"),
        (CONTROLLER, {"controller.quorum.secret": None}, "controller.quorum.secret: required"),
        (CONTROLLER, {"listeners": "CONTROLLER://127.0.0.1:9094"}, "two different ports"),
        (CONTROLLER, {"broker.session.timeout.ms": "soon"}, "expected an integer"),
    ],
)
def test_invalid_configs_name_the_key(
    base: dict[str, str], changes: dict[str, str | None], message: str
) -> None:
    merged = dict(base)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    with pytest.raises(ConfigError, match=message):
        node_settings_from_props(merged, source="test.properties")


def test_combined_node_defaults_its_bootstrap_to_its_own_controller_listener() -> None:
    props = dict(CONTROLLER)
    props["process.roles"] = "broker,controller"
    props["listeners"] = "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
    s = node_settings_from_props(props, source="x")
    assert s.node.is_broker and s.node.is_controller
    assert s.bootstrap_controllers == ("127.0.0.1:9093",)
    assert [lis.name for lis in s.advertised_listeners] == ["PLAINTEXT"]


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_node_config(str(tmp_path / "absent.properties"))


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.properties")), ids=lambda p: p.name)
def test_every_example_config_is_valid(path: Path) -> None:
    s = load_node_config(str(path))
    assert s.node_id >= 0 and s.roles
