"""TransactionVerifier: before a partition leader appends the first batch of a producer's
transaction on a partition, it asks the transactional id's coordinator whether the partition
is in that transaction (Kafka's KIP-890 verification, ``transaction.partition.verification.
enable``). A batch whose partition was never added to the transaction, or whose transaction
already ended (a zombie's late write), would otherwise open a transaction on the partition
that no marker will ever close: a hanging transaction that holds the last stable offset.

The coordinator is the leader of ``__transaction_state`` partition
``partition_for(transactional_id, partition count)`` in the current metadata image. This
broker's own coordinator is asked directly (a read of its state, no I/O); another broker with
AddPartitionsToTxn v4 ``verify_only`` over :class:`InterBrokerClients` (one connection per
coordinator, requests to it in order).

Answers per partition: NO_ERROR, INVALID_TXN_STATE, or an error for all of them:
PRODUCER_FENCED, INVALID_PRODUCER_ID_MAPPING, and retriable ones (NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS, COORDINATOR_NOT_AVAILABLE when no
coordinator is known or it cannot be reached).

Thread-safety: none; everything runs on the broker's event loop.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.errors import ProtocolError
from common.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnRequestTopic,
    AddPartitionsToTxnRequestTransaction,
    AddPartitionsToTxnResponse,
)
from data_plane.broker.coordinator_location import coordinator_broker
from data_plane.broker.inter_broker_clients import InterBrokerClients
from data_plane.replication.inter_broker_connection import EndpointLookup
from metadata.image import MetadataImage
from metadata.topics import TRANSACTION_STATE_TOPIC

logger = logging.getLogger(__name__)

ADD_PARTITIONS_TO_TXN_VERIFY_VERSION = 4

Partition = tuple[str, int]
LocalVerify = Callable[[str, int, int, list[Partition]], dict[Partition, int]]


class TransactionVerifier:
    def __init__(
        self,
        broker_id: int,
        image: Callable[[], MetadataImage],
        local_verify: LocalVerify,
        *,
        request_timeout_ms: int,
    ) -> None:
        self.broker_id = broker_id
        self._image = image
        self._local_verify = local_verify
        self._timeout_s = request_timeout_ms / 1000
        self._brokers = InterBrokerClients(broker_id, "txn-verifier", request_timeout_ms)

    def configure_inter_broker(
        self, endpoint: EndpointLookup, listener_name: str, tls: ssl.SSLContext | None
    ) -> None:
        self._brokers.configure(endpoint, listener_name, tls)

    def coordinator_of(self, transactional_id: str) -> int | None:
        """The broker id leading the transactional id's ``__transaction_state`` partition,
        None if there is none (the topic does not exist, no live leader)."""
        broker = coordinator_broker(self._image(), TRANSACTION_STATE_TOPIC, transactional_id)
        return None if broker is None else broker.broker_id

    async def verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[Partition],
    ) -> dict[Partition, int]:
        coordinator = self.coordinator_of(transactional_id)
        if coordinator is None:
            return dict.fromkeys(partitions, int(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        if coordinator == self.broker_id:
            return self._local_verify(transactional_id, producer_id, producer_epoch, partitions)
        by_topic: dict[str, list[int]] = {}
        for topic, p in partitions:
            by_topic.setdefault(topic, []).append(p)
        request = AddPartitionsToTxnRequest(
            transactions=[
                AddPartitionsToTxnRequestTransaction(
                    transactional_id=transactional_id,
                    producer_id=producer_id,
                    producer_epoch=producer_epoch,
                    verify_only=True,
                    topics=[
                        AddPartitionsToTxnRequestTopic(name=t, partitions=ps)
                        for t, ps in by_topic.items()
                    ],
                )
            ]
        )
        try:
            answer: AddPartitionsToTxnResponse = await self._brokers.call(
                coordinator,
                ApiKey.ADD_PARTITIONS_TO_TXN,
                ADD_PARTITIONS_TO_TXN_VERIFY_VERSION,
                request,
                self._timeout_s,
            )
        except (OSError, EOFError, ProtocolError, TimeoutError, ConnectionError) as e:
            logger.info("verification by broker %d failed: %s", coordinator, e or type(e).__name__)
            return dict.fromkeys(partitions, int(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        # A top-level error (CLUSTER_AUTHORIZATION_FAILED) holds for every partition; a
        # partition missing from the answer is an unknown failure.
        missing = answer.error_code or ErrorCode.UNKNOWN_SERVER_ERROR
        codes = dict.fromkeys(partitions, int(missing))
        for txn in answer.results_by_transaction:
            for t in txn.topic_results:
                for r in t.results_by_partition:
                    tp = (t.name, r.partition_index)
                    if tp in codes:
                        codes[tp] = r.partition_error_code
        return codes

    def close(self) -> None:
        self._brokers.close()
