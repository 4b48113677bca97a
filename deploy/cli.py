"""The ``kraftlog`` command line.

Each command group lives in its own ``deploy/cmd_*.py`` module exposing
``register(subparsers) -> None``; the module adds its sub-parser and sets ``func`` on it, a
callable taking the parsed arguments and returning the process exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from deploy import __version__

# Command modules, in the order they appear in --help.
COMMAND_MODULES: tuple[str, ...] = (
    "deploy.cmd_cluster",
    "deploy.cmd_topics",
    "deploy.cmd_quorum",
    "deploy.cmd_storage",
    "deploy.cmd_start",
    "deploy.cmd_log",
    "deploy.cmd_produce",
    "deploy.cmd_consume",
    "deploy.cmd_groups",
    "deploy.cmd_users",
    "deploy.cmd_acls",
    "deploy.cmd_quotas",
    "deploy.cmd_certs",
    "deploy.cmd_chaos",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kraftlog",
        description="kraftlog: a Kafka-style distributed log.",
    )
    parser.add_argument("--version", action="version", version=f"kraftlog {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
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
