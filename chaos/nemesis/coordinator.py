"""Transaction-coordinator faults: the broker coordinating a workload transactional id (found
with DescribeTransactions) is killed, isolated, or cut from the clients.

Modes (``mode`` in the history):

- ``kill``: kill -9 of the coordinator; the heal restarts it. Its ``__transaction_state``
  partition moves to another broker, which must finish or abort what was in flight;
- ``isolate``: the coordinator cut from every other broker, both ways: it can neither
  replicate its transaction log nor write markers to other leaders, and loses its
  leadership once the controller fences it;
- ``client``: the clients cut from the coordinator, both ways: producers keep reaching the
  partition leaders but not their coordinator (a producer partitioned from its coordinator).
"""

from __future__ import annotations

from chaos.cluster import CLIENT
from chaos.nemesis.base import ActiveFault, Nemesis, NemesisContext, NoTargetError
from chaos.nemesis.network import cut_links

COORDINATOR_MODES = ("kill", "isolate", "client")


class TxnCoordinatorNemesis(Nemesis):
    name = "txn-coordinator"

    def start(self, ctx: NemesisContext) -> ActiveFault:
        mode = ctx.rng.choice(COORDINATOR_MODES)
        txn_id, coordinator = ctx.transaction_coordinator()
        local = ctx.local
        if coordinator not in local.broker_ids or not local.is_running(coordinator):
            raise NoTargetError(f"coordinator {coordinator} of {txn_id} is not running")
        detail = {"mode": mode, "transactional_id": txn_id}
        if mode == "kill":
            ctx.begin("txn-coordinator", [coordinator], detail)
            local.kill(coordinator)

            def heal() -> None:
                if not local.is_running(coordinator):
                    local.start([coordinator])

            return ActiveFault("txn-coordinator", [coordinator], heal, detail)
        if mode == "isolate":
            others = [b for b in local.broker_ids if b != coordinator]
            links = [(coordinator, b) for b in others] + [(b, coordinator) for b in others]
        else:
            links = [(CLIENT, coordinator), (coordinator, CLIENT)]
        return cut_links(ctx, links, "txn-coordinator", detail)
