"""A campaign's run works in the code's directory, so the artifacts it is given are absolute:
a relative ``--artifacts`` lands where the caller meant, from any working directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.campaign import run_argv


def test_relative_artifacts_reach_the_run_as_the_callers_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = run_argv(7, 30.0, Path(".chaos") / "seed-7", "kill")
    assert argv[argv.index("--artifacts") + 1] == str(tmp_path.resolve() / ".chaos" / "seed-7")
