"""Process nemeses: kill -9 and restart, SIGSTOP/SIGCONT pauses, rolling restarts.

Kill targets (``mode``): ``leader`` (the leader of a random partition), ``controller`` (the
active controller), ``follower`` (a non-leader replica of a random partition), ``minority``
(one broker and one controller: a minority of each quorum), ``all`` (every node). The heal
restarts what was killed. A pause stops one process (leader, active controller or follower)
for longer than the broker session timeout, so it is fenced and replaced while frozen, and
wakes with stale state: the classic zombie-leader test.
"""

from __future__ import annotations

import time

from chaos.nemesis.base import ActiveFault, Nemesis, NemesisContext, NoTargetError

KILL_MODES = ("leader", "controller", "follower", "minority", "all")
PAUSE_MODES = ("leader", "controller", "follower")
# A rolling restart waits this long for each restarted node before moving to the next.
ROLLING_NODE_READY_TIMEOUT_S = 30.0
# SIGTERM -> SIGKILL grace of each restart (a controlled shutdown fits in it).
ROLLING_STOP_GRACE_S = 10.0
# Measured on a loaded 2-core machine: a node stops and is ready again in 9-17 s.
ROLLING_EXPECTED_S_PER_NODE = 15.0
_POLL_S = 0.2


def pick_targets(ctx: NemesisContext, mode: str) -> list[int]:
    local = ctx.local
    if mode == "leader":
        return [ctx.pick_partition().leader]
    if mode == "controller":
        return [ctx.active_controller()]
    if mode == "follower":
        p = ctx.pick_partition()
        followers = [r for r in p.replicas if r != p.leader and local.is_running(r)]
        if not followers:
            raise NoTargetError(f"partition {p.partition} has no running follower")
        return [ctx.rng.choice(sorted(followers))]
    if mode == "minority":
        return [ctx.rng.choice(local.broker_ids), ctx.rng.choice(local.controller_ids)]
    if mode == "all":
        return list(local.node_ids)
    raise ValueError(f"unknown target mode {mode!r}")


def node_ready(ctx: NemesisContext, node_id: int) -> bool:
    """The node runs; a broker also has registered and is unfenced (its status file)."""
    local = ctx.local
    if node_id in local.broker_ids:
        broker = local.broker_status(node_id)
        return broker is not None and broker.get("fenced") is False
    status = local.node_status(node_id)
    return status is not None and status.get("state") == "running"


class KillNemesis(Nemesis):
    name = "kill"

    def start(self, ctx: NemesisContext) -> ActiveFault:
        mode = ctx.rng.choice(KILL_MODES)
        local = ctx.local
        targets = [t for t in pick_targets(ctx, mode) if local.is_running(t)]
        if not targets:
            raise NoTargetError(f"kill {mode}: no running target")
        ctx.begin("kill", targets, {"mode": mode, "signal": "SIGKILL"})
        for node_id in targets:
            local.kill(node_id)

        def heal() -> None:
            local.start([t for t in targets if not local.is_running(t)])

        return ActiveFault("kill", targets, heal, {"mode": mode, "signal": "SIGKILL"})


class PauseNemesis(Nemesis):
    name = "pause"

    def start(self, ctx: NemesisContext) -> ActiveFault:
        mode = ctx.rng.choice(PAUSE_MODES)
        local = ctx.local
        targets = [t for t in pick_targets(ctx, mode) if local.is_running(t)]
        if not targets or any(local.is_paused(t) for t in targets):
            raise NoTargetError(f"pause {mode}: no running target")
        detail = {"mode": mode, "min_hold_ms": ctx.session_timeout_ms}
        ctx.begin("pause", targets, detail)
        for node_id in targets:
            local.pause(node_id)

        def heal() -> None:
            for node_id in targets:
                if local.is_paused(node_id):
                    local.resume(node_id)

        return ActiveFault("pause", targets, heal, detail)


class RollingRestartNemesis(Nemesis):
    """Restart every node in turn (SIGTERM, controlled shutdown), each once the previous one
    runs again (a broker: registered and unfenced), waiting at most
    ROLLING_NODE_READY_TIMEOUT_S per node."""

    name = "rolling-restart"

    def expected_duration_s(self, ctx: NemesisContext) -> float:
        return ROLLING_EXPECTED_S_PER_NODE * len(ctx.local.node_ids)

    def start(self, ctx: NemesisContext) -> ActiveFault:
        local = ctx.local
        order = list(local.broker_ids) + list(local.controller_ids)
        ctx.rng.shuffle(order)
        ctx.begin("rolling-restart", order)
        slow: list[int] = []
        seconds: dict[str, float] = {}
        for node_id in order:
            t0 = time.monotonic()
            local.restart(node_id, ROLLING_STOP_GRACE_S)
            deadline = time.monotonic() + ROLLING_NODE_READY_TIMEOUT_S
            while time.monotonic() < deadline:
                if node_ready(ctx, node_id):
                    break
                time.sleep(_POLL_S)
            else:
                slow.append(node_id)
            seconds[str(node_id)] = round(time.monotonic() - t0, 1)
        return ActiveFault(
            "rolling-restart",
            order,
            lambda: None,
            {"not_ready_in_time": slow, "seconds_per_node": seconds},
            True,
        )
