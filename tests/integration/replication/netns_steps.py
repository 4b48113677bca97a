"""Client steps run inside a cluster's hub network namespace (the only place its nodes are
reachable from in network-namespace mode): ``NetnsTopology.run`` starts

    python -m tests.integration.replication.netns_steps <cluster dir> <step> <json args>

which calls the helper named ``step`` with the cluster and the arguments and prints its result
as JSON on stdout."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from chaos.netns import open_cluster
from tests.integration.replication import helpers

STEPS: dict[str, Callable[..., Any]] = {
    "create_topic": helpers.create_topic,
    "produce_raw": lambda c, b, t, values, acks, timeout_ms: helpers.produce_raw(
        c, b, t, [v.encode() for v in values], acks, timeout_ms
    ),
    "wait_leader_seen": helpers.wait_leader_seen,
    "wait_isr": lambda c, t, want: helpers.wait_isr(c, t, set(want)),
    "list_latest": helpers.list_latest,
    "watch_session": helpers.watch_session,
}


def main(argv: list[str]) -> int:
    directory, step, args = argv[0], argv[1], json.loads(argv[2])
    result = STEPS[step](open_cluster(directory), *args)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
