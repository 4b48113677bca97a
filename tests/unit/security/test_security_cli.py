"""``kraftlog users|acls|quotas|certs`` against a controller on an in-memory metadata log."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy.cli import main
from metadata.controller_config import ControllerConfig
from metadata.service import ControllerServer
from metadata.snapshot import build_snapshot
from tests.unit.metadata.memlog import InMemoryQuorum


@pytest.fixture
def bootstrap() -> Iterator[str]:
    quorum = InMemoryQuorum(build_snapshot, 100_000)
    server = ControllerServer(
        1, quorum.voter(1), ControllerConfig(broker_session_timeout_ms=60_000), "127.0.0.1", 0
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


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_users(bootstrap: str, capsys, monkeypatch) -> None:
    b = ("--bootstrap-controller", bootstrap)
    monkeypatch.setattr("sys.stdin", io.StringIO("secret-pw\n"))
    code, out, _ = run(
        capsys, "users", "add", "alice", "--password-stdin", "--iterations", "4096", *b
    )
    assert code == 0 and "SCRAM-SHA-256, SCRAM-SHA-512" in out and "secret-pw" not in out
    code, out, _ = run(
        capsys, "users", "add", "bob", "--password", "x", "--mechanism", "SCRAM-SHA-512", *b
    )
    assert code == 0
    code, out, _ = run(capsys, "users", "list", "--json", *b)
    rows = json.loads(out)
    assert [r["user"] for r in rows] == ["alice", "bob"]
    assert [c["mechanism"] for c in rows[0]["credentials"]] == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
    code, out, _ = run(capsys, "users", "remove", "alice", *b)
    assert code == 0 and "removed" in out
    code, _, err = run(capsys, "users", "remove", "alice", *b)
    assert code == 1 and "RESOURCE_NOT_FOUND" in err
    code, _, err = run(capsys, "users", "add", "carol", "--password", "p", "--iterations", "10", *b)
    assert code == 1 and "4096" in err


def test_acls(bootstrap: str, capsys) -> None:
    b = ("--bootstrap-controller", bootstrap)
    code, out, _ = run(
        capsys,
        "acls",
        "add",
        "--allow-principal",
        "User:reader",
        "--operation",
        "Read",
        "--operation",
        "Describe",
        "--topic",
        "orders",
        *b,
    )
    assert code == 0 and out.count("added") == 2
    code, out, _ = run(
        capsys,
        "acls",
        "add",
        "--deny-principal",
        "User:reader",
        "--operation",
        "write",
        "--topic",
        "logs-",
        "--prefixed",
        "--host",
        "10.0.0.1",
        *b,
    )
    assert code == 0
    code, out, _ = run(capsys, "acls", "list", "--json", *b)
    rows = json.loads(out)
    assert len(rows) == 3
    deny = [r for r in rows if r["permission"] == "DENY"]
    assert deny == [
        {
            "resource_type": "Topic",
            "resource_name": "logs-",
            "pattern_type": "PREFIXED",
            "principal": "User:reader",
            "host": "10.0.0.1",
            "operation": "Write",
            "permission": "DENY",
        }
    ]
    code, out, _ = run(capsys, "acls", "list", "--topic", "orders", *b)
    assert out.count("ALLOW User:reader") == 2
    code, _, err = run(capsys, "acls", "remove", *b)
    assert code == 1 and "--yes" in err
    code, out, _ = run(capsys, "acls", "remove", "--topic", "orders", "--operation", "Read", *b)
    assert code == 0 and out.count("removed") == 1
    code, _, err = run(
        capsys,
        "acls",
        "add",
        "--allow-principal",
        "User:x",
        "--operation",
        "Create",
        "--topic",
        "*",
        "--prefixed",
        *b,
    )
    assert code == 1 and "INVALID_REQUEST" in err


def test_quotas(bootstrap: str, capsys) -> None:
    b = ("--bootstrap-controller", bootstrap)
    code, out, _ = run(
        capsys, "quotas", "set", "--user", "alice", "--producer-byte-rate", "1048576", *b
    )
    assert code == 0 and "producer_byte_rate = 1.04858e+06" in out
    code, out, _ = run(
        capsys, "quotas", "set", "--client-id-default", "--consumer-byte-rate", "5e6", *b
    )
    assert code == 0
    code, out, _ = run(capsys, "quotas", "describe", "--json", *b)
    rows = json.loads(out)
    assert rows == [
        {"entity": "client-id=<default>", "quotas": {"consumer_byte_rate": 5e6}},
        {"entity": "user=alice", "quotas": {"producer_byte_rate": 1048576.0}},
    ]
    code, out, _ = run(
        capsys, "quotas", "set", "--user", "alice", "--remove", "producer_byte_rate", *b
    )
    assert code == 0
    code, out, _ = run(capsys, "quotas", "describe", "--user", "alice", *b)
    assert out == ""
    code, _, err = run(capsys, "quotas", "set", "--producer-byte-rate", "5", *b)
    assert code == 1 and "--user" in err
    code, _, err = run(capsys, "quotas", "set", "--user", "x", "--request-percentage", "-1", *b)
    assert code == 1 and "INVALID_REQUEST" in err


def test_quotas_take_one_target(bootstrap: str, capsys) -> None:
    code, _, err = run(
        capsys,
        "quotas",
        "describe",
        "--bootstrap-server",
        "127.0.0.1:1",
        "--bootstrap-controller",
        bootstrap,
    )
    assert code == 2 and "both name the target" in err


def test_certs(tmp_path: Path, capsys) -> None:
    out_dir = tmp_path / "pki"
    code, out, _ = run(capsys, "certs", "create", "--out", str(out_dir), "--name", "b1", "--json")
    assert code == 0
    doc = json.loads(out)
    assert Path(doc["certificates"]["b1"]["key"]).is_file()
    assert (out_dir / "ca.pem").is_file()
    code, _, err = run(capsys, "certs", "create", "--out", str(out_dir), "--name", "ca")
    assert code == 1 and "reserved" in err
