"""EndTxn (26), v0-3 (v3 flexible): commit (``committed`` true) or abort the producer's
transaction. Answered once the coordinator wrote PrepareCommit/PrepareAbort to
``__transaction_state``; it then writes the end markers to every partition of the transaction
(WriteTxnMarkers) and, once all are written, CompleteCommit/CompleteAbort. A retry while markers
are in flight gets CONCURRENT_TRANSACTIONS; a retry after they are done NO_ERROR; the opposite
decision, or no transaction, INVALID_TXN_STATE.
"""

from __future__ import annotations

from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers.transaction_errors import for_version


async def handle(apis: KafkaApis, request: Request) -> Body:
    body = request.body
    code = await apis.transaction_coordinator.end_txn(
        body["transactional_id"],
        body["producer_id"],
        body["producer_epoch"],
        bool(body["committed"]),
    )
    return {"throttle_time_ms": 0, "error_code": for_version(code, request.header.api_version)}
