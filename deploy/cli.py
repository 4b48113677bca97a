"""The ``kraftlog`` command line.

Each command group lives in its own ``deploy/cmd_*.py`` module exposing
``register(subparsers) -> None``; the module adds its sub-parser and sets ``func`` on it, a
callable taking the parsed arguments and returning the process exit code.

Plug-in commands (the chaos suite's ``kraftlog chaos``) are entry points of the group
``kraftlog.commands`` naming such a ``register`` function. A plug-in's module is imported only
when its command is the one given; otherwise ``--help`` lists it by name. A plug-in that cannot
be imported (its optional dependencies are missing) is reported with the extra to install.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import sys
from collections.abc import Sequence

from deploy import __version__

# Command modules, in the order they appear in --help.
COMMAND_MODULES: tuple[str, ...] = (
    "deploy.cmd_cluster",
    "deploy.cmd_topics",
    "deploy.cmd_configs",
    "deploy.cmd_quorum",
    "deploy.cmd_features",
    "deploy.cmd_storage",
    "deploy.cmd_start",
    "deploy.cmd_log",
    "deploy.cmd_produce",
    "deploy.cmd_consume",
    "deploy.cmd_groups",
    "deploy.cmd_transactions",
    "deploy.cmd_users",
    "deploy.cmd_acls",
    "deploy.cmd_quotas",
    "deploy.cmd_certs",
)
PLUGIN_GROUP = "kraftlog.commands"


def plugin_commands() -> dict[str, importlib.metadata.EntryPoint]:
    """The installed plug-in commands by name."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=PLUGIN_GROUP)}


def _command_word(argv: Sequence[str]) -> str | None:
    """The command the arguments name (the first one that is not an option)."""
    return next((a for a in argv if not a.startswith("-")), None)


def _add_unavailable(sub: argparse._SubParsersAction, name: str, error: ImportError) -> None:  # type: ignore[type-arg]
    """A stand-in for a plug-in that cannot be imported: it takes any arguments and fails with
    the extra to install."""

    def fail(_args: argparse.Namespace) -> int:
        print(
            f"kraftlog {name}: cannot load the command ({error}); install it with "
            f"pip install 'kraftlog[{name}]'",
            file=sys.stderr,
        )
        return 2

    parser = sub.add_parser(name, help="(plug-in command, not loadable)")
    parser.add_argument("arguments", nargs=argparse.REMAINDER)
    parser.set_defaults(func=fail)


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser for ``argv``: every built-in command, and the plug-in named by ``argv``
    loaded (the others only listed)."""
    parser = argparse.ArgumentParser(
        prog="kraftlog",
        description="kraftlog: a Kafka-style distributed log.",
    )
    parser.add_argument("--version", action="version", version=f"kraftlog {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    wanted = _command_word(argv)
    for name, entry_point in sorted(plugin_commands().items()):
        if name != wanted:
            sub.add_parser(name, help=f"(plug-in command from {entry_point.module})")
            continue
        try:
            register = entry_point.load()
        except ImportError as e:
            _add_unavailable(sub, name, e)
            continue
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `kraftlog log dump ... | head` closes stdout early; that is not an error.
        return 0


if __name__ == "__main__":
    sys.exit(main())
