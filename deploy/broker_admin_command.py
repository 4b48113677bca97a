"""Shared plumbing of the commands that talk to the brokers through the Kafka protocol's
:class:`Admin` (``kraftlog groups``, ``kraftlog transactions``; the controller-side commands use
:mod:`deploy.admin`): the common options (where the brokers are, ``--timeout-ms``, ``--json``),
one Admin per run, and errors printed as one line with exit status 1 instead of a
traceback."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from common.configdef import ConfigError
from deploy.cmd_produce import CommandError, add_bootstrap_args, resolve_bootstrap
from kraftlog_client import Admin, KafkaError

DEFAULT_TIMEOUT_MS = 30_000

AdminAction = Callable[[Admin, argparse.Namespace], int]


def add_broker_admin_command(p: argparse.ArgumentParser, action: AdminAction) -> None:
    """Give ``p`` the common options and make it run ``action`` with an open Admin."""
    add_bootstrap_args(p)
    p.add_argument("--timeout-ms", type=int, default=DEFAULT_TIMEOUT_MS)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=lambda args: run_with_admin(action, args))


def run_with_admin(action: AdminAction, args: argparse.Namespace) -> int:
    try:
        config = {
            "bootstrap.servers": resolve_bootstrap(args),
            "default.api.timeout.ms": args.timeout_ms,
        }
        with Admin(config) as admin:
            return int(action(admin, args))
    except (CommandError, ConfigError, ValueError, KafkaError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
