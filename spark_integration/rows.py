"""The source's schema (Spark's Kafka source schema) and the rows of decoded records.

Columns, in order::

    key binary, value binary, topic string, partition int, offset long,
    timestamp timestamp, timestampType int [, headers array<struct<key:string,value:binary>>]

Arrow mode builds one ``pyarrow.RecordBatch`` per fetch response from
:class:`spark_integration.columnar.Columns` without per-row Python objects (the buffers are
handed to Arrow as they are); its schema must equal what Spark derives from the DDL schema
exactly (``timestamp("us", tz="UTC")``, int32, int64). Tuple mode yields one tuple per record,
decoded by the native consumer's decoder. Pure functions.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from kraftlog_client.record_decoder import FetchedRecords
from spark_integration.columnar import BinaryColumn, Columns

# Spark's Kafka source schema, with the columns every record has declared NOT NULL (key and
# value stay nullable: null keys, tombstones). Spark then skips the per-row null checks of
# those five columns when it turns the Arrow batches into rows.
SCHEMA_DDL = (
    "key binary, value binary, topic string NOT NULL, partition int NOT NULL, "
    "offset long NOT NULL, timestamp timestamp NOT NULL, timestampType int NOT NULL"
)
HEADERS_DDL = "headers array<struct<key:string,value:binary>>"
HEADER_TYPE = pa.list_(
    pa.field("element", pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
)
_TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def schema_ddl(include_headers: bool) -> str:
    return f"{SCHEMA_DDL}, {HEADERS_DDL}" if include_headers else SCHEMA_DDL


def arrow_schema(include_headers: bool) -> pa.Schema:
    fields = [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("timestamp", _TIMESTAMP_TYPE, nullable=False),
        pa.field("timestampType", pa.int32(), nullable=False),
    ]
    if include_headers:
        fields.append(pa.field("headers", HEADER_TYPE))
    return pa.schema(fields)


def _binary_array(column: BinaryColumn) -> pa.Array:
    lengths = column.lengths
    n = len(lengths)
    valid = lengths >= 0
    sizes = np.where(valid, lengths, 0).astype(np.int32)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(sizes, out=offsets[1:])
    null_count = int(n - np.count_nonzero(valid))
    bitmap = None if null_count == 0 else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(
        pa.binary(),
        n,
        [bitmap, pa.py_buffer(offsets), pa.py_buffer(column.data)],
        null_count=null_count,
    )


def _constant_string(value: str, n: int) -> pa.Array:
    encoded = value.encode("utf-8")
    offsets = np.arange(n + 1, dtype=np.int32) * len(encoded)
    return pa.Array.from_buffers(
        pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(encoded * n)], null_count=0
    )


def to_record_batch(
    columns: Columns, topic: str, partition: int, include_headers: bool
) -> pa.RecordBatch:
    n = len(columns)
    arrays = [
        _binary_array(columns.keys),
        _binary_array(columns.values),
        _constant_string(topic, n),
        pa.array(np.full(n, partition, dtype=np.int32)),
        pa.array(columns.offsets),
        pa.array(columns.timestamps_ms * 1000, type=_TIMESTAMP_TYPE),
        pa.array(columns.timestamp_types),
    ]
    if include_headers:
        headers = columns.headers or [() for _ in range(n)]
        arrays.append(
            pa.array([[{"key": k, "value": v} for k, v in hs] for hs in headers], type=HEADER_TYPE)
        )
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(include_headers))


def _timestamp(ms: int) -> dt.datetime:
    return _EPOCH + dt.timedelta(milliseconds=ms)


def to_tuples(
    payload: bytes | memoryview,
    topic: str,
    partition: int,
    min_offset: int,
    end_offset: int,
    include_headers: bool,
    aborted_transactions: list[tuple[int, int]] | None = None,
) -> Iterator[tuple]:
    """Rows of the records in ``[min_offset, end_offset)`` of one fetched payload, without
    the aborted transactions a read_committed answer lists."""
    fetched = FetchedRecords(
        topic, partition, payload, min_offset, aborted_transactions=aborted_transactions
    )
    out: list = []
    while not fetched.exhausted:
        out.clear()
        fetched.take(4096, out)
        for r in out:
            if r.offset >= end_offset:
                return
            row = (
                r.key,
                r.value,
                topic,
                partition,
                r.offset,
                _timestamp(r.timestamp),
                r.timestamp_type,
            )
            if include_headers:
                yield (*row, [(k, v) for k, v in r.headers])
            else:
                yield row
