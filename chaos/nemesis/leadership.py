"""Leadership moves: reorder a partition's replicas with a reassignment (the first replica is
the preferred leader) and run a preferred leader election, so leadership moves while clients
write. With as many brokers as replicas the reassignment only reorders; with more brokers it
also swaps one replica out (data moves)."""

from __future__ import annotations

import time

from chaos.nemesis.base import ActiveFault, Nemesis, NemesisContext, NoTargetError

REASSIGNMENT_TIMEOUT_S = 30.0
_CONTROL_TIMEOUT_S = 5.0
_POLL_S = 0.2


class LeadershipMoveNemesis(Nemesis):
    name = "leader-move"

    def start(self, ctx: NemesisContext) -> ActiveFault:
        p = ctx.pick_partition()
        others = [r for r in p.replicas if r != p.leader]
        if not others:
            raise NoTargetError(f"partition {p.partition} has one replica")
        new_leader = ctx.rng.choice(sorted(others))
        target = [new_leader] + [r for r in p.replicas if r != new_leader]
        spare = [b for b in ctx.local.broker_ids if b not in p.replicas]
        if spare and ctx.rng.random() < 0.5:
            target[-1] = ctx.rng.choice(spare)
        detail: dict[str, object] = {
            "partition": p.partition,
            "from": list(p.replicas),
            "to": target,
        }
        ctx.begin("leader-move", [new_leader], detail)
        with ctx.local.client(_CONTROL_TIMEOUT_S) as client:
            results = client.alter_partition_reassignments({(p.topic, p.partition): target})
            detail["reassign_errors"] = [
                f"{r.error_code}: {r.error_message}" for r in results if r.error_code
            ]
            deadline = time.monotonic() + REASSIGNMENT_TIMEOUT_S
            while time.monotonic() < deadline:
                if not client.list_partition_reassignments({p.topic: [p.partition]}):
                    break
                time.sleep(_POLL_S)
            else:
                detail["reassignment_unfinished"] = True
            elected = client.elect_leaders(True, {p.topic: [p.partition]})
            detail["elect_errors"] = [
                f"{e.error_code}: {e.error_message}" for e in elected if e.error_code
            ]
        return ActiveFault("leader-move", [new_leader], lambda: None, detail, True)
