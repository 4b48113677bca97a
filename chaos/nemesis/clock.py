"""Clock skew: restart one node (broker or controller) with its clocks shifted by libfaketime
(Debian package ``faketime``), and restart it with the real clock on heal. Timestamps,
session and election timers of that node then disagree with its peers'; safety must not
depend on synchronised clocks."""

from __future__ import annotations

from chaos.nemesis.base import ActiveFault, Nemesis, NemesisContext, NoTargetError

SKEW_S_CHOICES = (-300, -60, -10, 10, 60, 300)


class ClockSkewNemesis(Nemesis):
    name = "clock"

    def start(self, ctx: NemesisContext) -> ActiveFault:
        local = ctx.local
        running = [n for n in local.node_ids if local.is_running(n) and not local.is_paused(n)]
        if not running:
            raise NoTargetError("no running node")
        node_id = ctx.rng.choice(sorted(running))
        skew_s = ctx.rng.choice(SKEW_S_CHOICES)
        cluster = ctx.cluster
        ctx.begin("clock", [node_id], {"skew_s": skew_s})
        cluster.set_clock_skew(node_id, skew_s)
        local.restart(node_id)

        def heal() -> None:
            cluster.set_clock_skew(node_id, None)
            local.restart(node_id)

        return ActiveFault("clock", [node_id], heal, {"skew_s": skew_s})
