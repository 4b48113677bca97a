"""A ``kraftlog`` command made of subcommands (``kraftlog topics create ...``).

:func:`add_command_group` declares it; called without a subcommand it prints its help and
exits with status 2, as argparse does for a usage error. The subcommand chosen is kept in the
parsed arguments as ``<command>_command`` (``topics_command``).
"""

from __future__ import annotations

import argparse
from typing import Any


def add_command_group(
    sub: argparse._SubParsersAction,  # type: ignore[type-arg]
    name: str,
    help: str,
    **parser_args: Any,
) -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:  # type: ignore[type-arg]
    """The command ``name``'s parser and the action its subcommands are added to."""
    parser = sub.add_parser(name, help=help, **parser_args)
    commands = parser.add_subparsers(dest=f"{name}_command", metavar="SUBCOMMAND")
    parser.set_defaults(func=lambda _args: _print_help(parser))
    return parser, commands


def _print_help(parser: argparse.ArgumentParser) -> int:
    """For a command group called without a subcommand: its help, exit code 2."""
    parser.print_help()
    return 2
