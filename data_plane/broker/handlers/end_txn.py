"""EndTxn (26): commit (``committed`` true) or abort the producer's
transaction. Answered once the coordinator wrote PrepareCommit/PrepareAbort to
``__transaction_state``; it then writes the end markers to every partition of the transaction
(WriteTxnMarkers) and, once all are written, CompleteCommit/CompleteAbort. A retry while markers
are in flight gets CONCURRENT_TRANSACTIONS; a retry after they are done NO_ERROR; the opposite
decision, or no transaction, INVALID_TXN_STATE.
"""

from __future__ import annotations

from common.protocol.messages.end_txn import EndTxnRequest, EndTxnResponse
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers.transaction_errors import for_version
from data_plane.security.request_authz import TXN_DENIED, RequestAuthorizer, Session, Verdict


async def handle(apis: KafkaApis, request: Request) -> EndTxnResponse:
    body = request.body
    if not isinstance(body, EndTxnRequest):
        raise TypeError(f"EndTxn handler given {type(body).__name__}")
    code = await apis.transaction_coordinator.end_txn(
        body.transactional_id, body.producer_id, body.producer_epoch, body.committed
    )
    return EndTxnResponse(
        throttle_time_ms=0, error_code=for_version(code, request.header.api_version)
    )


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Write on the transactional id (refused: TRANSACTIONAL_ID_AUTHORIZATION_FAILED)."""
    if not isinstance(body, EndTxnRequest):
        raise TypeError(f"EndTxn rule given {type(body).__name__}")
    if authz.transactional_id(s, AclOperation.WRITE, body.transactional_id):
        return Verdict(body)
    return Verdict.refused(
        body,
        EndTxnResponse(throttle_time_ms=0, error_code=TXN_DENIED),
        ResourceType.TRANSACTIONAL_ID,
    )
