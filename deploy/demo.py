"""``python -m deploy.demo`` (what ``make run`` runs): a local cluster, a topic, its state.

Starts a 3-controller + 3-broker cluster detached in ``.cluster`` (or reuses the one running
there), creates the topic ``demo`` (3 partitions, replication factor 3) unless it exists,
then shows ``topics describe``, ``quorum status`` and ``cluster status`` exactly as the
``kraftlog`` command prints them, and says how to stop it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from deploy.cli import main as kraftlog

CLUSTER_DIR = ".cluster"
DEMO_TOPIC = "demo"


def run_step(title: str, argv: Sequence[str]) -> int:
    print(f"\n$ kraftlog {' '.join(argv)}    # {title}", flush=True)
    rc = kraftlog(list(argv))
    sys.stdout.flush()
    return rc


def main() -> int:
    steps: list[tuple[str, list[str]]] = [
        ("start a local cluster", ["cluster", "up", "--dir", CLUSTER_DIR, "--detach"]),
        (
            "create a topic",
            [
                "topics",
                "create",
                DEMO_TOPIC,
                "--partitions",
                "3",
                "--replication-factor",
                "3",
                "--if-not-exists",
                "--dir",
                CLUSTER_DIR,
            ],
        ),
        ("partitions, leaders, ISR", ["topics", "describe", DEMO_TOPIC, "--dir", CLUSTER_DIR]),
        ("the controller quorum", ["quorum", "status", "--dir", CLUSTER_DIR]),
        ("every node", ["cluster", "status", "--dir", CLUSTER_DIR]),
    ]
    for title, argv in steps:
        rc = run_step(title, argv)
        if rc != 0:
            print(f"\nstep failed (exit {rc}); node logs are in {CLUSTER_DIR}/node-*/node.log")
            return rc
    print(
        f"\nThe cluster keeps running in {CLUSTER_DIR}. Stop it with `make stop` "
        f"(or `.venv/bin/kraftlog cluster down --dir {CLUSTER_DIR}`)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
