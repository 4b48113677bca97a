"""The private pysyncobj names raft/ relies on exist in the pinned release, and a missing one
fails with a message that names it and the version to install."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from pysyncobj import SyncObj, SyncObjConf
from pysyncobj.poller import createPoller
from pysyncobj.tcp_connection import TcpConnection

from deploy.ports import free_ports
from raft.pysyncobj_internals import (
    PINNED_VERSION,
    PysyncobjMismatchError,
    check_pysyncobj_internals,
    installed_version,
    missing_internals,
)

ROOT = Path(__file__).resolve().parents[3]


def test_pyproject_pins_the_version_the_internals_were_checked_against() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = [d for d in deps if re.match(r"pysyncobj\b", d)]
    assert pins == [f"pysyncobj=={PINNED_VERSION}"]
    assert installed_version() == PINNED_VERSION


def test_every_private_name_exists_on_real_pysyncobj_objects() -> None:
    (port,) = free_ports(1)
    sync = SyncObj(f"127.0.0.1:{port}", [], conf=SyncObjConf(autoTick=False))
    try:
        connection = TcpConnection(createPoller("select"), onMessageReceived=None)
        assert missing_internals(sync, connection) == []
        check_pysyncobj_internals(sync, connection)
    finally:
        sync.destroy()


def test_a_missing_name_is_reported_with_the_version_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(SyncObj, "_SyncObj__setState")
    with pytest.raises(PysyncobjMismatchError) as info:
        check_pysyncobj_internals()
    message = str(info.value)
    assert "SyncObj._SyncObj__setState" in message
    assert f"pysyncobj=={PINNED_VERSION}" in message


def test_missing_instance_state_is_reported() -> None:
    class Bare:
        pass

    missing = missing_internals(Bare(), Bare())
    assert "SyncObj()._SyncObj__raftState" in missing
    assert "TcpConnection()._TcpConnection__readBuffer" in missing
