"""deploy.node (component ordering, rollback) and deploy.node_status (the status file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deploy.node import EXIT_LOG_DIRS_FAILED, Node
from deploy.node_status import NodeStatusWriter, read_status


class Recorder:
    def __init__(self, name: str, events: list[str], fail_start: bool = False) -> None:
        self.name = name
        self.events = events
        self.fail_start = fail_start

    def start(self) -> None:
        if self.fail_start:
            raise OSError(f"{self.name}: port in use")
        self.events.append(f"start {self.name}")

    def begin_shutdown(self) -> None:
        self.events.append(f"begin_shutdown {self.name}")

    def stop(self) -> None:
        self.events.append(f"stop {self.name}")

    def status(self) -> dict[str, object]:
        return {"name": self.name}


def test_components_start_in_order_and_stop_in_reverse(tmp_path: Path) -> None:
    events: list[str] = []
    writer = NodeStatusWriter(str(tmp_path / "status.json"), {"node_id": 7, "roles": ["x"]})
    node = Node(7, ["controller", "broker"], [Recorder("a", events), Recorder("b", events)], writer)
    node.start()
    doc = read_status(str(tmp_path / "status.json"))
    assert doc is not None and doc["state"] == "running" and doc["node_id"] == 7
    assert doc["components"] == {"a": {"name": "a"}, "b": {"name": "b"}}
    node.request_stop()
    node.wait_for_stop_request()
    node.shutdown()
    assert events == [
        "start a",
        "start b",
        "begin_shutdown b",
        "begin_shutdown a",
        "stop b",
        "stop a",
    ]
    assert read_status(str(tmp_path / "status.json"))["state"] == "stopped"  # type: ignore[index]


def test_a_failed_start_stops_what_already_started() -> None:
    events: list[str] = []
    node = Node(1, ["broker"], [Recorder("a", events), Recorder("b", events, fail_start=True)])
    with pytest.raises(OSError, match="port in use"):
        node.start()
    assert events == ["start a", "stop a"]


def test_status_writer_rewrites_only_on_change_and_survives_errors(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    writer = NodeStatusWriter(str(path), {"node_id": 1})
    state = {"n": 1}
    writer.write(lambda: {"c": dict(state)})
    first = json.loads(path.read_text())
    writer.write(lambda: {"c": dict(state)})
    assert json.loads(path.read_text())["updated_at_ms"] == first["updated_at_ms"]
    state["n"] = 2
    writer.write(lambda: {"c": dict(state)})
    assert json.loads(path.read_text())["components"] == {"c": {"n": 2}}

    def broken() -> dict[str, object]:
        raise RuntimeError("probe failed")

    writer.write(broken)  # logged, not raised
    assert json.loads(path.read_text())["components"] == {"c": {"n": 2}}
    path.write_text("{torn")
    assert read_status(str(path)) is None


class Fatal(Recorder):
    """A component that can tell the node it cannot go on."""

    def __init__(self, name: str, events: list[str]) -> None:
        super().__init__(name, events)
        self.on_fatal = None


def test_a_fatal_component_failure_stops_the_node_with_its_exit_code() -> None:
    events: list[str] = []
    failing = Fatal("broker", events)
    node = Node(3, ["broker"], [Recorder("metrics", events), failing])
    node.start()
    assert node.exit_code == 0 and not node.stop_requested
    assert failing.on_fatal is not None
    failing.on_fatal("every log directory failed")
    node.wait_for_stop_request()
    node.shutdown()
    assert node.exit_code == EXIT_LOG_DIRS_FAILED
    assert events[-2:] == ["stop broker", "stop metrics"]
