"""``kraftlog quorum``: the controller quorum, like ``kafka-metadata-quorum``.

    kraftlog quorum status [--json]
    kraftlog quorum add-controller --config NEW_CONTROLLER.properties
    kraftlog quorum remove-controller --id N           (or --controller-id N)

``status`` prints the leader, its epoch, the high watermark (last committed offset), every voter
with its match offset and lag as the leader sees them, and the observers: brokers, and
controllers that follow the log without voting (a controller started but not yet added, or one
removed). ``--json`` prints the document described in :mod:`deploy.cluster_info` (with every
node's id, roles, pid and listeners, the bootstrap servers and the quorum leader id).

``add-controller`` reads the new controller's config (its ``node.id`` and Raft address) and
asks the active controller to make it a voter. The new controller must be formatted and
running: it follows the log as an observer, and the leader adds it once it is caught up (the
command waits for that, up to ``--timeout``). ``remove-controller`` takes a voter out; the
active controller hands leadership over first when it is the one removed. One change at a
time: each waits for the previous one to commit. The procedure to replace a controller's
host is in docs/operations.md.
"""

from __future__ import annotations

import argparse

from common.configdef import ConfigError
from deploy.admin import (
    AdminError,
    add_admin_command,
    add_target_args,
    error_text,
    fail,
    print_json,
    run_admin_command,
)
from deploy.cluster_info import render_quorum
from deploy.cmd_cluster import STATUS_TIMEOUT_S, cluster_status_doc
from deploy.command_group import add_command_group
from deploy.node_config import load_node_config
from metadata.client import ControllerClient, ControllerError
from raft.membership import voters_text

# How long add-controller / remove-controller wait by default (catching up included).
VOTER_CHANGE_TIMEOUT_S = 120.0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    _, quorum_sub = add_command_group(
        sub, "quorum", "the controller quorum (status, add-controller, remove-controller)"
    )
    p = quorum_sub.add_parser("status", help="leader, epoch, voters, observers and their lag")
    add_target_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_status, timeout=STATUS_TIMEOUT_S)

    p = quorum_sub.add_parser(
        "add-controller", help="make a running, formatted controller a voter of the quorum"
    )
    p.add_argument(
        "--config",
        required=True,
        metavar="FILE",
        help="the new controller's server.properties (its node.id and Raft address)",
    )
    add_admin_command(p, _add_controller, run=_run_with_config_target)
    p.set_defaults(timeout=VOTER_CHANGE_TIMEOUT_S)

    p = quorum_sub.add_parser("remove-controller", help="take a voter out of the quorum")
    p.add_argument(
        "--id", "--controller-id", dest="controller_id", type=int, required=True, metavar="N"
    )
    add_admin_command(p, _remove_controller)
    p.set_defaults(timeout=VOTER_CHANGE_TIMEOUT_S)


def _status(args: argparse.Namespace) -> int:
    try:
        doc = cluster_status_doc(args)
    except AdminError as e:
        return fail(str(e))
    if args.json:
        print_json(doc)
        return 0
    print(render_quorum(doc))
    return 0 if doc.get("quorum") is not None else 1


def _run_with_config_target(func: object, args: argparse.Namespace) -> int:
    """Read ``--config``; without --bootstrap-controller or --dir, reach the controllers its
    controller.quorum.bootstrap.servers names."""
    try:
        settings = load_node_config(args.config)
    except ConfigError as e:
        return fail(f"--config {args.config}: {e}")
    if settings.raft is None:
        return fail(f"--config {args.config}: not a controller (process.roles)")
    args.new_voter = (settings.node_id, settings.raft.own_address)
    if not args.bootstrap_controller and not args.dir:
        servers = [s for s in settings.bootstrap_controllers if s not in _own_listener(settings)]
        if not servers:
            return fail(
                f"--config {args.config}: no controller.quorum.bootstrap.servers besides "
                "itself; give --bootstrap-controller"
            )
        args.bootstrap_controller = ",".join(servers)
    return run_admin_command(func, args)  # type: ignore[arg-type]


def _own_listener(settings: object) -> set[str]:
    listener = getattr(settings, "controller_listener", None)
    return set() if listener is None else {f"{listener.host}:{listener.port}"}


def _add_controller(client: ControllerClient, args: argparse.Namespace) -> int:
    node_id, address = args.new_voter
    try:
        voters = client.add_raft_voter(node_id, address, timeout_s=args.timeout)
    except ControllerError as e:
        return fail(f"controller {node_id} was not added: {error_text(e.error_code, e.message)}")
    return _print_voters(args, f"added controller {node_id} ({address})", voters)


def _remove_controller(client: ControllerClient, args: argparse.Namespace) -> int:
    try:
        voters = client.remove_raft_voter(args.controller_id, timeout_s=args.timeout)
    except ControllerError as e:
        return fail(
            f"controller {args.controller_id} was not removed: "
            f"{error_text(e.error_code, e.message)}"
        )
    return _print_voters(args, f"removed controller {args.controller_id}", voters)


def _print_voters(args: argparse.Namespace, what: str, voters: dict[int, str]) -> int:
    if args.json:
        print_json({"voters": [{"id": i, "raft_address": a} for i, a in sorted(voters.items())]})
    else:
        print(f"{what}; voters now {voters_text(voters)}")
    return 0
