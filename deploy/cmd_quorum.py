"""``kraftlog quorum status``: the controller quorum, like ``kafka-metadata-quorum describe``.

Prints the leader, its epoch, the high watermark (last committed offset), every voter with its
match offset and lag as the leader sees them, and the observers (brokers). ``--json`` prints
the document described in :mod:`deploy.cluster_info` (with every node's id, roles, pid and
listeners, the bootstrap servers and the quorum leader id).
"""

from __future__ import annotations

import argparse

from deploy.admin import AdminError, add_target_args, fail, print_json
from deploy.cluster_info import render_quorum
from deploy.cmd_cluster import STATUS_TIMEOUT_S, cluster_status_doc
from deploy.command_group import add_command_group


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    _, quorum_sub = add_command_group(sub, "quorum", "the controller quorum (status)")
    p = quorum_sub.add_parser("status", help="leader, epoch, voters and their lag")
    add_target_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_status, timeout=STATUS_TIMEOUT_S)


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
