"""Network nemeses: partitions (iptables DROP in the hub), lossy links (random DROP) and
slow links (per-link proxies with Toxiproxy toxics). See :mod:`chaos.cluster` for how each
ordered link is cut or degraded.

Partition modes:

- ``leader-followers``: a partition leader cut from the other brokers (both ways);
- ``leader-quorum``: a partition leader cut from every controller;
- ``controller-minority``: the active controller cut from the other controllers (the majority
  elects a new one; the old one must stop acting);
- ``client-leader``: the workload clients cut from a partition leader;
- ``one-way``: one random ordered pair of nodes, one direction only.
"""

from __future__ import annotations

from chaos.cluster import CLIENT
from chaos.nemesis.base import ActiveFault, Nemesis, NemesisContext, NoTargetError

PARTITION_MODES = (
    "leader-followers",
    "leader-quorum",
    "controller-minority",
    "client-leader",
    "one-way",
)
# Per-packet drop probabilities of the lossy nemesis (TCP retransmits; the link limps).
LOSS_PROBABILITIES = (0.1, 0.3, 0.5)
SLOW_KINDS = ("follower-leader", "client-leader", "broker-controller")
LATENCY_MS_CHOICES = (100, 300, 800)
BANDWIDTH_KBPS_CHOICES = (16, 128)


def cut_links(
    ctx: NemesisContext,
    links: list[tuple[int, int]],
    fault: str,
    detail: dict[str, object],
) -> ActiveFault:
    """Cut each ordered link (recorded as ``fault`` with ``detail``); the heal restores them."""
    cluster = ctx.cluster
    targets = [[_name(s), _name(d)] for s, d in links]
    ctx.begin(fault, targets, detail)
    done: list[tuple[int, int]] = []
    try:
        for src, dst in links:
            cluster.cut(src, dst)
            done.append((src, dst))
    except BaseException:
        for src, dst in done:
            cluster.uncut(src, dst)
        raise

    def heal() -> None:
        for src, dst in links:
            cluster.uncut(src, dst)

    return ActiveFault(fault, targets, heal, detail)


def _name(endpoint: int) -> int | str:
    return "client" if endpoint == CLIENT else endpoint


def _both(a: int, others: list[int]) -> list[tuple[int, int]]:
    return [(a, b) for b in others] + [(b, a) for b in others]


class PartitionNemesis(Nemesis):
    name = "partition"

    def start(self, ctx: NemesisContext) -> ActiveFault:
        mode = ctx.rng.choice(PARTITION_MODES)
        local = ctx.local
        if mode == "leader-followers":
            leader = ctx.pick_partition().leader
            links = _both(leader, [b for b in local.broker_ids if b != leader])
        elif mode == "leader-quorum":
            leader = ctx.pick_partition().leader
            links = _both(leader, list(local.controller_ids))
        elif mode == "controller-minority":
            active = ctx.active_controller()
            links = _both(active, [c for c in local.controller_ids if c != active])
        elif mode == "client-leader":
            links = _both(CLIENT, [ctx.pick_partition().leader])
        else:
            nodes = sorted(local.node_ids)
            src = ctx.rng.choice(nodes)
            dst = ctx.rng.choice([n for n in nodes if n != src])
            links = [(src, dst)]
        return cut_links(ctx, links, "partition", {"mode": mode})


class LossyNemesis(Nemesis):
    """Random packet loss both ways between a partition leader and one other endpoint (a
    follower, or the clients)."""

    name = "lossy"

    def start(self, ctx: NemesisContext) -> ActiveFault:
        p = ctx.pick_partition()
        peers = [r for r in p.replicas if r != p.leader] + [CLIENT]
        peer = ctx.rng.choice(peers)
        probability = ctx.rng.choice(LOSS_PROBABILITIES)
        links = [(p.leader, peer), (peer, p.leader)]
        cluster = ctx.cluster
        targets = [[_name(s), _name(d)] for s, d in links]
        ctx.begin("lossy", targets, {"probability": probability})
        for src, dst in links:
            cluster.lossy(src, dst, probability)

        def heal() -> None:
            for src, dst in links:
                cluster.unlossy(src, dst, probability)

        return ActiveFault(
            "lossy",
            targets,
            heal,
            {"probability": probability},
        )


class SlowNemesis(Nemesis):
    """A slow link through a proxy: latency with jitter, or a bandwidth cap, both streams.
    Kinds: a follower's fetches from its leader, the clients' requests to a leader, a
    broker's control-plane calls to the controllers."""

    name = "slow"

    def start(self, ctx: NemesisContext) -> ActiveFault:
        kind = ctx.rng.choice(SLOW_KINDS)
        local = ctx.local
        if kind == "follower-leader":
            p = ctx.pick_partition()
            followers = [r for r in p.replicas if r != p.leader]
            if not followers:
                raise NoTargetError("no follower")
            links = [(ctx.rng.choice(sorted(followers)), p.leader)]
        elif kind == "client-leader":
            links = [(CLIENT, ctx.pick_partition().leader)]
        else:
            broker = ctx.rng.choice(local.broker_ids)
            links = [(broker, c) for c in local.controller_ids]
        if ctx.rng.random() < 0.5:
            latency = ctx.rng.choice(LATENCY_MS_CHOICES)
            attrs: dict[str, object] = {"latency": latency, "jitter": latency // 4}
            toxic_type = "latency"
        else:
            attrs = {"rate": ctx.rng.choice(BANDWIDTH_KBPS_CHOICES)}
            toxic_type = "bandwidth"
        toxics: list[dict[str, object]] = [
            {
                "type": toxic_type,
                "name": f"{toxic_type}_{stream}",
                "stream": stream,
                "attributes": attrs,
            }
            for stream in ("upstream", "downstream")
        ]
        cluster = ctx.cluster
        targets = [[_name(s), _name(d)] for s, d in links]
        detail = {"kind": kind, "toxic": toxic_type, "attributes": attrs}
        ctx.begin("slow", targets, detail)
        done: list[tuple[int, int]] = []
        try:
            for src, dst in links:
                cluster.slow(src, dst, toxics)
                done.append((src, dst))
        except BaseException:
            for src, dst in done:
                cluster.unslow(src, dst)
            raise

        def heal() -> None:
            for src, dst in links:
                cluster.unslow(src, dst)

        return ActiveFault("slow", targets, heal, detail)
