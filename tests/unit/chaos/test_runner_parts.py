"""Pieces of the chaos runner that need no cluster: disk damage, the progress bar, the
command line's parsing and the run configuration's validation."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from chaos.cli import _pair, _producers
from chaos.nemesis.disk import active_segment, damage_tail, recovery_point, unflushed_position
from chaos.progress import ProgressBar
from chaos.runner import RunConfig
from chaos.workload.producer import ProducerSpec


def test_damage_tail_truncates_or_overwrites_only_the_tail(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(b"a" * 100)
    seg = part / "00000000000000000100.log"
    seg.write_bytes(bytes(range(200)))
    assert active_segment(part) == seg
    assert damage_tail(seg, "truncate", 30, seed=1) == {"size_before": 200, "bytes_cut": 30}
    assert seg.read_bytes() == bytes(range(170))
    done = damage_tail(seg, "corrupt", 10, seed=2)
    assert done == {"size_before": 170, "bytes_overwritten": 10}
    data = seg.read_bytes()
    assert (
        len(data) == 170
        and data[:160] == bytes(range(160))
        and data[160:] != bytes(range(160, 170))
    )
    with pytest.raises(ValueError):
        damage_tail(seg, "shred", 1, seed=0)
    assert active_segment(tmp_path) is None


def _batch(base_offset: int, body_bytes: int) -> bytes:
    return base_offset.to_bytes(8, "big") + body_bytes.to_bytes(4, "big") + b"x" * body_bytes


def test_damage_stays_in_the_unflushed_tail(tmp_path: Path) -> None:
    log_dir = tmp_path / "data"
    part = log_dir / "t-0"
    part.mkdir(parents=True)
    seg = part / "00000000000000000000.log"
    seg.write_bytes(_batch(0, 50) + _batch(3, 50) + _batch(7, 50))
    (log_dir / "recovery-point-offset-checkpoint").write_text("0\n1\nt 0 7\n")
    point = recovery_point(log_dir, "t", 0)
    assert point == 7 and recovery_point(log_dir, "t", 1) == 0
    floor = unflushed_position(seg, point)
    assert floor == 124  # two whole batches of 62 bytes are below the recovery point
    assert unflushed_position(seg, 100) == 186
    done = damage_tail(seg, "truncate", 4096, seed=1, floor_position=floor)
    assert done == {"size_before": 186, "bytes_cut": 62}
    assert seg.read_bytes() == _batch(0, 50) + _batch(3, 50)
    assert damage_tail(seg, "corrupt", 10, seed=1, floor_position=124)["bytes_overwritten"] == 0


def test_progress_bar_draws_only_when_enabled() -> None:
    out = io.StringIO()
    bar = ProgressBar(out, 100, enabled=True)
    bar.update(50, {"send-ok": 7, "send-info": 1, "read": 9}, "kill [101]")
    bar.finish()
    text = out.getvalue()
    assert text.startswith("\r[##########..........]")
    assert "send ok 7 info 1 fail 0  read 9  fault: kill [101]" in text
    assert text.endswith("\n")
    quiet = io.StringIO()
    off = ProgressBar(quiet, 100, enabled=False)
    off.update(1, {}, "")
    off.finish()
    assert quiet.getvalue() == ""


def test_cli_parsing_helpers() -> None:
    assert _producers("idempotent:2,acks1:1") == {"idempotent": 2, "acks1": 1}
    with pytest.raises(ValueError):
        _producers("fast:2")
    assert _pair("3,10", "--hold") == (3.0, 10.0)
    with pytest.raises(ValueError):
        _pair("3", "--hold")


def test_run_config_rejects_nemeses_against_a_foreign_cluster(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="nemeses need a cluster"):
        RunConfig(["kill"], 10, 1, tmp_path, bootstrap="127.0.0.1:9092")
    with pytest.raises(ValueError, match="unknown nemesis"):
        RunConfig(["nope"], 10, 1, tmp_path)
    with pytest.raises(ValueError, match="producer kinds"):
        RunConfig([], 10, 1, tmp_path, producers={"fast": 1})
    assert RunConfig([], 10, 1, tmp_path, bootstrap="h:1").session_timeout_ms > 0


def test_producer_spec_maps_kinds_to_client_settings() -> None:
    idem = ProducerSpec("p", "idempotent", 10).client_config("h:1")
    assert idem["acks"] == "all" and idem["enable.idempotence"] is True
    acks1 = ProducerSpec("p", "acks1", 10).client_config("h:1")
    assert acks1["acks"] == "1" and acks1["enable.idempotence"] is False
    with pytest.raises(ValueError):
        ProducerSpec("p", "turbo", 10)
