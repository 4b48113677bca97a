"""TransactionMarkerSender: writes a transaction coordinator's end markers to the leaders of
the transaction's partitions (Kafka's TransactionMarkerChannelManager), the I/O half of
:class:`~data_plane.coordinator.transaction_runtime.MarkerSender`.

For one :class:`MarkerRequest` a task loops until every partition is done:

1. Group the partitions still to do by their leader in the current metadata image. A
   partition whose topic no longer exists is done (nothing left to mark); one without a live
   leader waits for the next round.
2. Send one WriteTxnMarkers v0 per leader: to another broker over an
   :class:`InterBrokerConnection` on the inter-broker listener (one connection per
   destination, requests on it one at a time: :class:`InterBrokerClients`); to this broker
   through the handler's own
   :func:`write_markers`, without a socket.
3. NO_ERROR marks a partition done. INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED
   means a newer coordinator or producer epoch already took over: the request is abandoned
   (Kafka does the same; that coordinator finishes the transaction). Any other error
   (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, a timeout, a lost connection) is retried
   after ``kraftlog.transaction.marker.retry.backoff.ms``.
4. Before every round the ``still_needed`` check of the coordinator runs: a request whose
   transaction was completed or unloaded meanwhile stops.

When all partitions are done ``on_written`` is called once. Nothing here stops retrying on
its own while the request is still needed: a transaction's markers must all be written.

Thread-safety: none; everything runs on the broker's event loop.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Awaitable, Callable

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.errors import ProtocolError
from common.protocol.messages.write_txn_markers import (
    WriteTxnMarkersRequest,
    WriteTxnMarkersRequestMarker,
    WriteTxnMarkersRequestTopic,
    WriteTxnMarkersResponse,
    WriteTxnMarkersResponseMarker,
)
from data_plane.broker.inter_broker_clients import InterBrokerClients
from data_plane.coordinator.transaction_coordinator import MarkerRequest
from data_plane.replication.inter_broker_connection import EndpointLookup
from metadata.image import MetadataImage

logger = logging.getLogger(__name__)

WRITE_TXN_MARKERS_VERSION = 0
# A newer coordinator or producer epoch owns the transaction: stop writing its markers.
_ABANDON = frozenset({ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED})

LocalWriter = Callable[
    [list[WriteTxnMarkersRequestMarker]], Awaitable[list[WriteTxnMarkersResponseMarker]]
]


class TransactionMarkerSender:
    def __init__(
        self,
        broker_id: int,
        image: Callable[[], MetadataImage],
        local_write: LocalWriter,
        *,
        retry_backoff_ms: int,
        request_timeout_ms: int,
    ) -> None:
        self.broker_id = broker_id
        self._image = image
        self._local_write = local_write
        self._backoff_s = retry_backoff_ms / 1000
        self._timeout_s = request_timeout_ms / 1000
        self._brokers = InterBrokerClients(broker_id, "txn-marker-sender", request_timeout_ms)
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    def configure_inter_broker(
        self, endpoint: EndpointLookup, listener_name: str, tls: ssl.SSLContext | None
    ) -> None:
        """How to reach other brokers (the server knows its inter-broker listener once it
        starts); until then only partitions this broker leads are written."""
        self._brokers.configure(endpoint, listener_name, tls)

    def send(
        self,
        request: MarkerRequest,
        on_written: Callable[[], None],
        still_needed: Callable[[], bool] = lambda: True,
    ) -> None:
        if self._closed:
            return
        task = asyncio.get_running_loop().create_task(
            self._run(request, on_written, still_needed),
            name=f"txn-markers-{request.transactional_id}",
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(
        self,
        request: MarkerRequest,
        on_written: Callable[[], None],
        still_needed: Callable[[], bool],
    ) -> None:
        remaining = set(request.partitions)
        rounds = 0
        while remaining and not self._closed and still_needed():
            if rounds:
                await asyncio.sleep(self._backoff_s)
            rounds += 1
            by_leader: dict[int, list[tuple[str, int]]] = {}
            image = self._image()
            for topic, p in sorted(remaining):
                if image.topic(topic) is None:
                    remaining.discard((topic, p))  # deleted: nothing to mark
                    continue
                reg = image.partition(topic, p)
                broker = image.brokers.get(reg.leader) if reg is not None else None
                if broker is not None and not broker.fenced:
                    by_leader.setdefault(broker.broker_id, []).append((topic, p))
            results = await asyncio.gather(
                *(self._write_to(leader, request, parts) for leader, parts in by_leader.items())
            )
            for codes in results:
                for tp, code in codes.items():
                    if code == ErrorCode.NO_ERROR:
                        remaining.discard(tp)
                    elif code in _ABANDON:
                        logger.info(
                            "transaction %s: abandoning its markers (%s on %s-%d): a newer "
                            "epoch owns it",
                            request.transactional_id,
                            ErrorCode(code).name,
                            tp[0],
                            tp[1],
                        )
                        return
            if rounds % 50 == 0 and remaining:
                logger.warning(
                    "transaction %s: markers still unwritten on %s after %d rounds",
                    request.transactional_id,
                    sorted(remaining),
                    rounds,
                )
        if not remaining and not self._closed:
            on_written()

    async def _write_to(
        self, leader: int, request: MarkerRequest, partitions: list[tuple[str, int]]
    ) -> dict[tuple[str, int], int]:
        by_topic: dict[str, list[int]] = {}
        for topic, p in partitions:
            by_topic.setdefault(topic, []).append(p)
        markers = [
            WriteTxnMarkersRequestMarker(
                producer_id=request.producer_id,
                producer_epoch=request.producer_epoch,
                transaction_result=request.committed,
                topics=[
                    WriteTxnMarkersRequestTopic(name=t, partition_indexes=ps)
                    for t, ps in sorted(by_topic.items())
                ],
                coordinator_epoch=request.coordinator_epoch,
            )
        ]
        try:
            if leader == self.broker_id:
                answer = await self._local_write(markers)
            else:
                answer = await self._remote_write(leader, markers)
        except (OSError, EOFError, ProtocolError, TimeoutError, ConnectionError) as e:
            logger.info("markers to broker %d failed: %s; retrying", leader, e or type(e).__name__)
            return {}
        codes: dict[tuple[str, int], int] = {}
        for m in answer:
            for t in m.topics:
                for answered in t.partitions:
                    codes[(t.name, answered.partition_index)] = answered.error_code
        return codes

    async def _remote_write(
        self, leader: int, markers: list[WriteTxnMarkersRequestMarker]
    ) -> list[WriteTxnMarkersResponseMarker]:
        # The leader waits up to request.timeout.ms for replication before answering.
        body: WriteTxnMarkersResponse = await self._brokers.call(
            leader,
            ApiKey.WRITE_TXN_MARKERS,
            WRITE_TXN_MARKERS_VERSION,
            WriteTxnMarkersRequest(markers=markers),
            2 * self._timeout_s,
        )
        return body.markers

    def close(self) -> None:
        self._closed = True
        for task in self._tasks:
            task.cancel()
        self._brokers.close()
