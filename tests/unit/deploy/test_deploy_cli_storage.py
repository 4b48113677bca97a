"""`kraftlog storage` and the start-up refusals of `kraftlog start` (in-process, no node runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from deploy.cli import main
from deploy.cmd_start import EXIT_CONFIG
from deploy.meta_properties import random_uuid, read_meta_properties


def write_broker_config(tmp_path: Path, **extra: str) -> Path:
    path = tmp_path / "broker.properties"
    lines = [
        "process.roles=broker",
        "node.id=101",
        "listeners=PLAINTEXT://127.0.0.1:19092",
        "controller.quorum.bootstrap.servers=127.0.0.1:19093",
        f"log.dirs={tmp_path / 'd1'},{tmp_path / 'd2'}",
        *(f"{k}={v}" for k, v in extra.items()),
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_random_uuid_prints_an_id(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["storage", "random-uuid"]) == 0
    assert len(capsys.readouterr().out.strip()) == 22


def test_format_writes_every_log_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_broker_config(tmp_path)
    cid = random_uuid()
    assert main(["storage", "format", "--config", str(config), "--cluster-id", cid]) == 0
    for d in ("d1", "d2"):
        meta = read_meta_properties(str(tmp_path / d))
        assert meta is not None and meta.cluster_id == cid and meta.node_id == 101
    # A second format is refused (as in Kafka) but --ignore-formatted succeeds.
    assert main(["storage", "format", "--config", str(config), "--cluster-id", cid]) == 1
    assert "already formatted" in capsys.readouterr().err
    args = ["storage", "format", "--config", str(config), "--cluster-id", cid, "-g"]
    assert main(args) == 0


def test_format_rejects_a_malformed_cluster_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_broker_config(tmp_path)
    assert main(["storage", "format", "--config", str(config), "--cluster-id", "nope"]) == 1
    assert "expected 22 base64url characters" in capsys.readouterr().err


def test_start_refuses_an_unformatted_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_broker_config(tmp_path)
    assert main(["start", "--config", str(config)]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "is not formatted" in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_start_refuses_another_clusters_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_broker_config(tmp_path)
    main(["storage", "format", "--config", str(config), "--cluster-id", random_uuid()])
    # d3 formatted for another cluster, then used together with this cluster's d1.
    lone = tmp_path / "lone.properties"
    lone.write_text(
        config.read_text().replace(f"{tmp_path / 'd1'},{tmp_path / 'd2'}", str(tmp_path / "d3"))
    )
    main(["storage", "format", "--config", str(lone), "--cluster-id", random_uuid()])
    mixed = tmp_path / "mixed.properties"
    mixed.write_text(config.read_text().replace("d2", "d3"))
    capsys.readouterr()
    assert main(["start", "--config", str(mixed)]) == EXIT_CONFIG
    assert "directories from different clusters" in capsys.readouterr().err


def test_start_refuses_a_typo_with_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_broker_config(tmp_path, **{"log.retention.hour": "5"})
    assert main(["start", "--config", str(config)]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert "unknown config key(s): log.retention.hour" in err
    assert "Traceback" not in err and err.count("\n") == 1
