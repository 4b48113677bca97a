"""What a coordinator tells a client when its write to its internal topic failed (Kafka's
GroupMetadataManager and TransactionStateManager map append errors the same way): the
client then looks the coordinator up again, retries, or gives up.

Pure data; thread-safe.
"""

from __future__ import annotations

from collections.abc import Mapping

from common.error_codes import ErrorCode

# Append errors of a coordinator's own state write (a group's metadata, a transaction's
# state) and what the client is told (Kafka's storeGroup, appendTransactionToLog).
METADATA_WRITE_ERRORS: Mapping[int, ErrorCode] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_SIZE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.UNKNOWN_SERVER_ERROR,
}
# ... and of an offset commit write (Kafka's storeOffsets; REQUEST_TIMED_OUT passes through).
COMMIT_WRITE_ERRORS: Mapping[int, ErrorCode] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_SIZE_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
}


def map_write_error(table: Mapping[int, ErrorCode], code: int) -> int:
    return int(table.get(code, code))
