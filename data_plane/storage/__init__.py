"""Partition storage: RecordBatch v2, segments with sparse indexes, logs, recovery, retention.

The public API the broker and replication use, re-exported here (see docs/storage.md)::

    LogManager(config, topic_config=..., clock_ms=...)   all logs of a broker (log_manager.py),
                                                          with its LogCleaner (compaction/)
    Log                                                   one partition (log.py: offsets, HW,
                                                          producer state, epochs; its segments
                                                          are a LocalLog, local_log.py)
    LogConfig                                             Kafka-named settings
                                                          (common/log_config.py)
    FileSlice                                             what a read returns (file_records.py)
    validate_produce_payload, PayloadInfo                 header-only produce checks
                                                          (common/record_batch.py)
    build_batch, decode_records, Record                   record codec, cold path (record_codec.py)
    StorageError and subclasses                           each with a Kafka error_code (errors.py)
"""

from common.errors import (
    CorruptRecordError,
    InvalidRecordError,
    RecordTooLargeError,
    UnsupportedCompressionTypeError,
)
from common.log_config import LogConfig
from common.record_batch import (
    PayloadInfo,
    RecordBatchHeader,
    validate_produce_payload,
    validate_stored_payload,
)
from data_plane.storage.compaction.log_cleaner import CleaningReport, LogCleaner
from data_plane.storage.errors import (
    InvalidAppendOffsetError,
    KafkaStorageError,
    LogDirLayoutError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
    StorageError,
)
from data_plane.storage.file_records import FileSlice
from data_plane.storage.log import FetchIsolation, Log, LogAppendInfo, LogOffsetMetadata
from data_plane.storage.log_manager import LogManager, MaintenanceReport
from data_plane.storage.producer_state import AppendOrigin, VerificationGuard
from data_plane.storage.record_codec import DecodedRecord, Record, build_batch, decode_records
from data_plane.storage.transaction_index import AbortedTxn

__all__ = [
    "AbortedTxn",
    "AppendOrigin",
    "CleaningReport",
    "CorruptRecordError",
    "DecodedRecord",
    "FetchIsolation",
    "FileSlice",
    "InvalidAppendOffsetError",
    "InvalidRecordError",
    "KafkaStorageError",
    "Log",
    "LogAppendInfo",
    "LogCleaner",
    "LogConfig",
    "LogDirLayoutError",
    "LogManager",
    "LogOffsetMetadata",
    "MaintenanceReport",
    "OffsetOutOfRangeError",
    "PayloadInfo",
    "Record",
    "RecordBatchHeader",
    "RecordListTooLargeError",
    "RecordTooLargeError",
    "StorageError",
    "UnsupportedCompressionTypeError",
    "VerificationGuard",
    "build_batch",
    "decode_records",
    "validate_produce_payload",
    "validate_stored_payload",
]
