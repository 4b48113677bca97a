"""Plug-in commands: ``kraftlog chaos`` is an entry point the command line imports only when
it is the command given; a plug-in that cannot be imported names the extra to install."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

from deploy import cli

REPO = Path(__file__).resolve().parents[3]


def test_the_chaos_command_is_a_plugin_entry_point() -> None:
    entry_point = cli.plugin_commands()["chaos"]
    assert entry_point.value == "chaos.cli:register"


def test_other_commands_import_no_chaos_module() -> None:
    code = (
        "import sys; from deploy.cli import build_parser; "
        "build_parser(['topics', '--help'][:1]); build_parser([]).format_help(); "
        "print(sorted(m for m in sys.modules if m == 'chaos' or m.startswith('chaos.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_help_lists_the_plugin_and_the_plugin_parses_when_named() -> None:
    assert "chaos" in cli.build_parser([]).format_help()
    args = cli.build_parser(["chaos", "cleanup"]).parse_args(["chaos", "cleanup"])
    assert args.command == "chaos" and callable(args.func)


def test_a_plugin_that_cannot_be_imported_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = importlib.metadata.EntryPoint(
        name="chaos", value="kraftlog_missing_module:register", group=cli.PLUGIN_GROUP
    )
    monkeypatch.setattr(cli, "plugin_commands", lambda: {"chaos": broken})
    assert cli.main(["chaos", "run"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'kraftlog[chaos]'" in err
