"""kraftlog's version is defined once (common/version.py): setuptools reads it from there,
``kraftlog --version`` prints it, and CHANGELOG.md has a release heading for it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from common.version import KRAFTLOG_VERSION
from deploy import cli

REPO = Path(__file__).resolve().parents[3]
# Semantic versioning's MAJOR.MINOR.PATCH, without pre-release or build suffixes.
SEMVER = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")


def test_the_version_is_semantic() -> None:
    assert SEMVER.fullmatch(KRAFTLOG_VERSION), KRAFTLOG_VERSION


def test_pyproject_takes_the_version_from_common_version() -> None:
    with open(REPO / "pyproject.toml", "rb") as f:
        pyproject = tomllib.load(f)
    assert "version" not in pyproject["project"]
    assert "version" in pyproject["project"]["dynamic"]
    dynamic = pyproject["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "common.version.KRAFTLOG_VERSION"}


def test_version_option_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"kraftlog {KRAFTLOG_VERSION}\n"


def test_the_changelog_has_a_heading_for_the_version() -> None:
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    heading = re.compile(rf"^## {re.escape(KRAFTLOG_VERSION)} - \d{{4}}-\d{{2}}-\d{{2}}$", re.M)
    assert heading.search(changelog), f"CHANGELOG.md has no '## {KRAFTLOG_VERSION} - DATE'"
