"""Admin commands that reach a cluster either way: through the brokers' Kafka listeners
(``--bootstrap-server``, kraftlog's Admin client over the Kafka protocol) or through the
controllers' control plane (``--dir``, ``--bootstrap-controller`` and the other target options of
:func:`deploy.admin.add_target_args`). One command gives one of the two, never both."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from common.configdef import ConfigError
from deploy.admin import (
    AdminCommand,
    AdminError,
    add_admin_command,
    controller_target_flags,
    fail,
    run_admin_command,
)
from deploy.kafka_style_args import usage_error
from kraftlog_client import Admin, KafkaError

BrokerCommand = Callable[[Admin, argparse.Namespace], int]


def add_dual_target_command(
    p: argparse.ArgumentParser,
    on_controllers: AdminCommand,
    on_brokers: BrokerCommand,
    command: Callable[[argparse.Namespace], str],
) -> None:
    """The controller target options and ``--json`` of :func:`add_admin_command`, plus
    ``--bootstrap-server``; ``on_brokers`` runs with an Admin on the brokers, ``on_controllers``
    with a control-plane client. ``command(args)`` names the command in usage errors."""
    add_admin_command(
        p, on_controllers, run=lambda f, args: run_dual_target(f, on_brokers, command(args), args)
    )
    group = p.add_argument_group("or where the brokers are (Kafka protocol)")
    group.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT[,...]",
        help="brokers' Kafka listeners (bootstrap.servers)",
    )


def run_dual_target(
    on_controllers: AdminCommand,
    on_brokers: BrokerCommand,
    command: str,
    args: argparse.Namespace,
) -> int:
    """Run the command on the target ``args`` name; errors print and give 1, a command that
    names both targets is a usage error."""
    if not args.bootstrap_server:
        try:
            return run_admin_command(on_controllers, args)
        except KafkaError as e:
            return fail(str(e))
    conflicting = controller_target_flags(args)
    if conflicting:
        return usage_error(
            command, f"--bootstrap-server and {conflicting[0][0]} both name the target: give one"
        )
    try:
        config = {
            "bootstrap.servers": args.bootstrap_server,
            "default.api.timeout.ms": int(args.timeout * 1000),
        }
        with Admin(config) as admin:
            return int(on_brokers(admin, args))
    except (AdminError, ConfigError, KafkaError, ValueError) as e:
        return fail(str(e))
