"""The driver side of the exactly-once writer: decide, commit, abort and recover the
prepared transactions of a write (the tasks' side: :mod:`spark_integration.transactional_writer`;
the decision log: :mod:`spark_integration.commit_log`). docs/spark.md, "Exactly-once
writes", states the protocol and why each step is safe.

- :func:`recover` (query start, before any task): if the last decision of the prefix is not
  marked applied, commit each of its transactions (EndTxn, idempotent), then mark it
  applied. A decided transaction that can no longer be committed raises
  :class:`TransactionLostError`.
- :func:`commit_batch` (Spark's commit of batch ``batch_id``): recover; if the log already
  holds a decision for ``batch_id``, this batch's output was committed by an earlier run:
  abort this run's transactions (a later batch's decision means another query shares the
  prefix: :class:`StaleBatchError`). Otherwise append the decision (acks=all),
  THEN commit each transaction, then mark the decision applied.
- :func:`abort_batch` (Spark's abort): abort each transaction the log has not decided.
  Spark also calls abort after a commit that raised, possibly after the decision was
  written: those transactions are left to the roll-forward, never aborted.

Every function opens its own clients and closes them; blocking, bounded by ``timeout_s``
per call. Not for concurrent use with one prefix: one driver per prefix.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from common.error_codes import ErrorCode
from kraftlog_client import Admin, KafkaError, PreparedTxnState
from spark_integration.commit_log import CommitLog, Decision
from spark_integration.options import WriteOptions

logger = logging.getLogger(__name__)

# Bound on each driver-side call (decision log read or write, one EndTxn), seconds.
DRIVER_TIMEOUT_S = 120.0
# EndTxn answers that mean the transaction was ended otherwise or its epoch moved on.
_ENDED_OTHERWISE = frozenset(
    {
        ErrorCode.PRODUCER_FENCED,
        ErrorCode.INVALID_PRODUCER_EPOCH,
        ErrorCode.INVALID_PRODUCER_ID_MAPPING,
        ErrorCode.INVALID_TXN_STATE,
    }
)


class TransactionLostError(RuntimeError):
    """A decided transaction cannot be committed any more (the coordinator aborted it after
    transaction.timeout.ms, or another writer used the same transactionalIdPrefix): its
    records are lost and exactly-once does not hold for that batch."""


class StaleBatchError(RuntimeError):
    """A streaming batch id is older than the prefix's decisions allow: two queries (or a
    new checkpoint) share a transactionalIdPrefix."""


def _log(options: WriteOptions, timeout_s: float) -> CommitLog:
    return CommitLog(options.bootstrap_servers, options.commit_log, timeout_s)


def _admin_props(options: WriteOptions) -> dict[str, str]:
    return {"bootstrap.servers": options.bootstrap_servers}


def _prefix(options: WriteOptions) -> str:
    if options.transactional_id_prefix is None:
        raise ValueError("the exactly-once writer needs a transactionalIdPrefix")
    return options.transactional_id_prefix


def _commit_all(admin: Admin, decision: Decision, timeout_s: float) -> None:
    for prepared in decision.transactions:
        try:
            admin.complete_transaction(prepared, commit=True, timeout_ms=timeout_s * 1000)
        except KafkaError as e:
            if e.code in _ENDED_OTHERWISE:
                raise TransactionLostError(
                    f"batch {decision.batch_id} of {decision.prefix} was decided but "
                    f"{prepared.transactional_id} (producer {prepared.producer_id}, epoch "
                    f"{prepared.producer_epoch}) can no longer be committed: {e}"
                ) from e
            raise


def _roll_forward(log: CommitLog, admin: Admin, prefix: str, timeout_s: float) -> Decision | None:
    latest = log.latest(prefix)
    if latest is None or latest.applied:
        return latest
    logger.info("rolling batch %d of %s forward", latest.batch_id, prefix)
    _commit_all(admin, latest, timeout_s)
    applied = Decision(latest.prefix, latest.batch_id, latest.transactions, True)
    log.append(applied)
    return applied


def recover(options: WriteOptions, timeout_s: float = DRIVER_TIMEOUT_S) -> Decision | None:
    """Commit the last decision of the writer's prefix if it may not be applied yet;
    returns that decision (None: the prefix never committed anything)."""
    with Admin(_admin_props(options)) as admin:
        return _roll_forward(_log(options, timeout_s), admin, _prefix(options), timeout_s)


def _abort_each(admin: Admin, transactions: Iterable[PreparedTxnState], timeout_s: float) -> None:
    """Abort every transaction; one already ended or fenced needs nothing, and one that
    cannot be reached is logged (the next init_transactions of its id, or its timeout,
    aborts it)."""
    for prepared in transactions:
        try:
            admin.complete_transaction(prepared, commit=False, timeout_ms=timeout_s * 1000)
        except KafkaError as e:
            logger.warning("abort of %s: %s", prepared.transactional_id, e)


def commit_batch(
    options: WriteOptions,
    transactions: list[PreparedTxnState],
    batch_id: int | None,
    timeout_s: float = DRIVER_TIMEOUT_S,
) -> bool:
    """Commit the prepared ``transactions`` of batch ``batch_id`` exactly once; None (batch
    writes): the batch after the prefix's last decision. Returns False when the log already
    decided this batch (an earlier run committed it; this run's transactions are aborted)."""
    prefix = _prefix(options)
    log = _log(options, timeout_s)
    with Admin(_admin_props(options)) as admin:
        latest = _roll_forward(log, admin, prefix, timeout_s)
        if batch_id is None:
            batch_id = 0 if latest is None else latest.batch_id + 1
        elif latest is not None and latest.batch_id > batch_id:
            # Spark replays only the last batch of its offset log, which is at least the
            # last one decided: an older batch id is another query's (a new checkpoint with
            # the prefix of an old one), whose output would otherwise be dropped.
            raise StaleBatchError(
                f"{prefix} already decided batch {latest.batch_id}; batch {batch_id} is "
                "older: each query (each checkpoint) needs its own transactionalIdPrefix"
            )
        elif latest is not None and latest.batch_id == batch_id:
            logger.info(
                "batch %d of %s was committed before (log at %d): aborting this run's",
                batch_id,
                prefix,
                latest.batch_id,
            )
            _abort_each(admin, transactions, timeout_s)
            return False
        decision = Decision(prefix, batch_id, tuple(transactions), False)
        log.append(decision)
        _commit_all(admin, decision, timeout_s)
        log.append(Decision(prefix, batch_id, decision.transactions, True))
    return True


def abort_batch(
    options: WriteOptions,
    transactions: list[PreparedTxnState],
    timeout_s: float = DRIVER_TIMEOUT_S,
) -> None:
    """Abort the prepared ``transactions`` the decision log does not hold; those it holds
    (a commit that raised after writing its decision) are committed instead."""
    prefix = _prefix(options)
    log = _log(options, timeout_s)
    with Admin(_admin_props(options)) as admin:
        latest = log.latest(prefix)
        decided = set(latest.transactions) if latest is not None else set()
        if decided.intersection(transactions):
            _roll_forward(log, admin, prefix, timeout_s)
        _abort_each(admin, [t for t in transactions if t not in decided], timeout_s)
