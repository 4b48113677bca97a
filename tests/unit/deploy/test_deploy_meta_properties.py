"""deploy.meta_properties: formatting storage and refusing foreign or unformatted directories."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from common.configdef import ConfigError
from deploy.meta_properties import (
    MetaPropertiesError,
    check_directories,
    format_directories,
    random_uuid,
    read_meta_properties,
    validate_uuid,
)


def test_random_uuid_is_kafkas_base64url_form() -> None:
    ids = {random_uuid() for _ in range(200)}
    assert len(ids) == 200
    for text in ids:
        assert len(text) == 22 and not text.startswith("-")
        assert len(base64.urlsafe_b64decode(text + "==")) == 16
        assert validate_uuid(text) == text


@pytest.mark.parametrize("bad", ["", "short", "A" * 23, "!" * 22, "AAAAAAAAAAAAAAAAAAAAAA"])
def test_validate_uuid_rejects_malformed_and_reserved_ids(bad: str) -> None:
    with pytest.raises(ConfigError):
        validate_uuid(bad)


def test_format_then_check(tmp_path: Path) -> None:
    dirs = [str(tmp_path / "a"), str(tmp_path / "b")]
    cid = random_uuid()
    assert format_directories(dirs, cluster_id=cid, node_id=5) == dirs
    metas = [read_meta_properties(d) for d in dirs]
    assert all(m is not None and m.cluster_id == cid and m.node_id == 5 for m in metas)
    assert metas[0].directory_id != metas[1].directory_id  # type: ignore[union-attr]
    text = (tmp_path / "a" / "meta.properties").read_text()
    assert "version=1" in text and f"cluster.id={cid}" in text and "node.id=5" in text
    assert check_directories(dirs, node_id=5) == cid


def test_format_refuses_a_formatted_directory_unless_told(tmp_path: Path) -> None:
    d = str(tmp_path / "a")
    cid = random_uuid()
    format_directories([d], cluster_id=cid, node_id=1)
    with pytest.raises(MetaPropertiesError, match="already formatted"):
        format_directories([d], cluster_id=cid, node_id=1)
    assert format_directories([d], cluster_id=cid, node_id=1, ignore_formatted=True) == []
    with pytest.raises(MetaPropertiesError, match=r"formatted for cluster\.id"):
        format_directories([d], cluster_id=random_uuid(), node_id=1, ignore_formatted=True)


def test_check_refuses_unformatted_foreign_and_mixed_directories(tmp_path: Path) -> None:
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    with pytest.raises(MetaPropertiesError, match="is not formatted"):
        check_directories([a], node_id=1)
    format_directories([a], cluster_id=random_uuid(), node_id=1)
    with pytest.raises(
        MetaPropertiesError, match=r"belongs to node\.id=1, but this node is node\.id=2"
    ):
        check_directories([a], node_id=2)
    format_directories([b], cluster_id=random_uuid(), node_id=1)
    with pytest.raises(MetaPropertiesError, match="directories from different clusters"):
        check_directories([a, b], node_id=1)


def test_check_refuses_a_copied_directory(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    format_directories([str(a)], cluster_id=random_uuid(), node_id=1)
    b.mkdir()
    (b / "meta.properties").write_bytes((a / "meta.properties").read_bytes())
    with pytest.raises(MetaPropertiesError, match=r"same directory\.id"):
        check_directories([str(a), str(b)], node_id=1)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version=0\nnode.id=1\ncluster.id=x\ndirectory.id=y\n", "unsupported"),
        ("version=1\nnode.id=one\ncluster.id=x\ndirectory.id=y\n", "must be integers"),
        ("version=1\nnode.id=1\n", "are required"),
        ("garbage line\n", "expected key=value"),
    ],
)
def test_corrupt_meta_properties_is_a_clear_error(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "meta.properties").write_text(text)
    with pytest.raises(MetaPropertiesError, match=message):
        read_meta_properties(str(tmp_path))
