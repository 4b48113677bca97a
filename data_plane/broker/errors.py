"""Broker-side request errors, each carrying the Kafka error code a client receives.

Handlers turn a :class:`BrokerRequestError` into the ``error_code`` of the partition or topic
it concerns; storage errors (:class:`data_plane.storage.StorageError`) already carry theirs.
"""

from __future__ import annotations

from common.error_codes import ErrorCode


class BrokerRequestError(Exception):
    """A request for one partition/topic failed with ``error_code``."""

    error_code: int = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, message: str, error_code: int | None = None) -> None:
        super().__init__(message)
        if error_code is not None:
            self.error_code = error_code


class NotLeaderOrFollowerError(BrokerRequestError):
    error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER


class UnknownTopicOrPartitionError(BrokerRequestError):
    error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class FencedLeaderEpochError(BrokerRequestError):
    """The client's current_leader_epoch is older than this leader's epoch."""

    error_code = ErrorCode.FENCED_LEADER_EPOCH


class UnknownLeaderEpochError(BrokerRequestError):
    """The client's current_leader_epoch is newer than this broker knows (metadata lag)."""

    error_code = ErrorCode.UNKNOWN_LEADER_EPOCH


class OffsetNotAvailableError(BrokerRequestError):
    """A new leader's high watermark is still below the start of its epoch (KIP-207): the
    latest offset it could name would be lower than one a client already saw. Retriable."""

    error_code = ErrorCode.OFFSET_NOT_AVAILABLE


class NotEnoughReplicasError(BrokerRequestError):
    """acks=all with fewer in-sync replicas than ``min.insync.replicas``."""

    error_code = ErrorCode.NOT_ENOUGH_REPLICAS
