"""Partition storage: RecordBatch v2, segments with sparse indexes, logs, recovery, retention.

The public API the broker and replication use, re-exported here (see docs/storage.md)::

    LogManager(config, topic_config=..., clock_ms=...)   all logs of a broker (log_manager.py),
                                                          with its LogCleaner (log_cleaner.py)
    Log                                                   one partition (log.py)
    LogConfig                                             Kafka-named settings (config.py)
    FileSlice                                             what a read returns (file_records.py)
    validate_produce_payload, PayloadInfo                 header-only produce checks (records.py)
    build_batch, decode_records, Record                   record codec, cold path (record_codec.py)
    StorageError and subclasses                           each with a Kafka error_code (errors.py)
"""

from data_plane.storage.config import LogConfig
from data_plane.storage.errors import (
    CorruptRecordError,
    InvalidAppendOffsetError,
    InvalidRecordError,
    KafkaStorageError,
    LogDirLayoutError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
    RecordTooLargeError,
    StorageError,
    UnsupportedCompressionTypeError,
)
from data_plane.storage.file_records import FileSlice
from data_plane.storage.log import FetchIsolation, Log, LogAppendInfo, LogOffsetMetadata
from data_plane.storage.log_cleaner import CleaningReport, LogCleaner
from data_plane.storage.log_manager import LogManager, MaintenanceReport
from data_plane.storage.record_codec import DecodedRecord, Record, build_batch, decode_records
from data_plane.storage.records import (
    PayloadInfo,
    RecordBatchHeader,
    validate_produce_payload,
    validate_stored_payload,
)

__all__ = [
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
    "build_batch",
    "decode_records",
    "validate_produce_payload",
    "validate_stored_payload",
]
