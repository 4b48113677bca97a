"""The task side of the exactly-once writer: one Spark task writes its rows in one Kafka
transaction and prepares it; the driver decides (:mod:`spark_integration.exactly_once`).

The task writing Spark partition ``p`` uses the stable transactional id ``<prefix>-p``:

1. ``init_transactions``: the coordinator fences every earlier producer of that id (an
   earlier attempt of this task, a run that crashed) and aborts the transaction it left
   open, unless it was decided: the driver rolls decisions forward before any task of a
   query starts, so an open transaction of this id is never a decided one;
2. ``begin_transaction``, send every row;
3. ``prepare_transaction``: every record is acknowledged by the in-sync replicas and the
   transaction stays open; the producer is closed without ending it;
4. return the :class:`PreparedTxnState` to the driver in the task's commit message.

A task that fails before step 4 aborts its transaction when it still can (so read_committed
readers are not held back); if it cannot, the next ``init_transactions`` of the id or the
coordinator's transaction.timeout.ms aborts it. A task with no rows prepares nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kraftlog_client import PreparedTxnState, Producer
from spark_integration.options import WriteOptions
from spark_integration.writer import FLUSH_TIMEOUT_S, DeliveryErrors, send_rows

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PreparedWrite:
    """What a task hands the driver: its partition, how many records it wrote, and the
    prepared transaction holding them (None when it wrote none)."""

    partition_id: int
    records: int
    prepared: PreparedTxnState | None


def write_transaction(
    options: WriteOptions, partition_id: int, columns: Sequence[str], rows: Iterable[Any]
) -> PreparedWrite:
    """Write ``rows`` in one prepared transaction of id ``<prefix>-<partition_id>``; raises
    (after aborting what it can) if any record fails."""
    errors = DeliveryErrors()
    producer = Producer(options.transactional_props(partition_id))
    prepared: PreparedTxnState | None = None
    try:
        producer.init_transactions(FLUSH_TIMEOUT_S)
        producer.begin_transaction()
        try:
            count = send_rows(producer, options, columns, rows, errors)
            if count:
                producer.flush(FLUSH_TIMEOUT_S)
                errors.raise_first()
                prepared = producer.prepare_transaction(FLUSH_TIMEOUT_S)
        except BaseException:
            _abort_quietly(producer)
            raise
    finally:
        producer.close(FLUSH_TIMEOUT_S)
    return PreparedWrite(partition_id, count, prepared)


def _abort_quietly(producer: Producer) -> None:
    """Abort the failed task's transaction; a failure here only leaves it to the next
    ``init_transactions`` of the id or the transaction timeout, so it is logged."""
    try:
        producer.abort_transaction(FLUSH_TIMEOUT_S)
    except Exception as e:  # the task's own error is the one to raise
        logger.warning("could not abort the failed task's transaction: %s", e)
