"""The ``kraftlog`` Python data source for PySpark 4.x: batch and streaming reads, writes.

    spark_integration.register(spark)                       # or: installed, found by itself
    df = (spark.read.format("kraftlog")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "clicks").load())            # committed records only

Where the work happens (Spark's Python data source protocol):

- ``KraftlogBatchReader.partitions()`` runs in a planner process on the driver: it lists the
  partitions, asks their log start offsets and high watermarks (ListOffsets), resolves the
  starting/ending options and plans offset ranges (:mod:`spark_integration.planning`);
- ``read()`` runs in a Python worker per Spark task: it opens its own connection, fetches
  its range from the partition leader (:mod:`spark_integration.cluster`) and yields pyarrow
  RecordBatches (default) or tuples;
- ``KraftlogStreamReader`` lives in one long-running driver process for the whole query;
  its offsets are ``{"topic": {"partition": next_offset}}`` dicts that Spark checkpoints, so a
  restarted query resumes exactly where the last committed micro-batch ended.
- Writers (``writer()`` for batch, ``streamWriter()`` for streaming) are created in a
  driver-side Python worker before the tasks of the write run (PySpark creates a streaming
  writer there when it plans each micro-batch, and again in the worker that runs each
  batch's commit); ``write()`` runs per task, ``commit()`` / ``abort()`` on the driver. With
  ``exactlyOnce`` the constructor rolls the prefix's last decision forward (it must happen
  before any task's ``init_transactions``), tasks prepare transactions and the driver
  commits them (:mod:`spark_integration.exactly_once`).

Readers, partitions and options are pickled to the workers; connections are opened inside
``partitions()`` / ``read()`` / the stream reader and never pickled.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from common.topic_partition import TopicPartition
from kraftlog_client import PreparedTxnState
from spark_integration.cluster import SourceClient
from spark_integration.columnar import decode_columns
from spark_integration.exactly_once import abort_batch, commit_batch, recover
from spark_integration.offsets import PartitionTimestamps, offsets_from_json, offsets_to_json
from spark_integration.options import (
    OptionError,
    ReadOptions,
    WriteOptions,
    parse_read_options,
    parse_write_options,
)
from spark_integration.planning import (
    DataLossError,
    OffsetRange,
    PartitionBounds,
    plan_ranges,
    rate_limit,
    resolve_offsets,
    split_ranges,
)
from spark_integration.rows import schema_ddl, to_record_batch, to_tuples
from spark_integration.transactional_writer import PreparedWrite, write_transaction
from spark_integration.writer import check_write_schema, write_rows

FORMAT_NAME = "kraftlog"


class RangePartition(InputPartition):
    """One Spark task: the offsets ``[start, end)`` of one topic partition."""

    def __init__(self, value: OffsetRange) -> None:
        super().__init__(value)
        self.value: OffsetRange = value


def _client(options: ReadOptions) -> SourceClient:
    return SourceClient(options.client_props(), timeout_ms=options.poll_timeout_ms)


def read_partition(options: ReadOptions, r: OffsetRange | None) -> Iterator[Any]:
    """The rows of one planned range: pyarrow RecordBatches or tuples (``kraftlog.arrow``).
    ``None`` reads nothing: Spark calls read(None) once when the plan has no ranges."""
    if r is None:
        return
    with _client(options) as client:
        for payload, position, aborted in client.read_range(
            r, fail_on_data_loss=options.fail_on_data_loss
        ):
            low = max(position, r.start)
            if options.arrow:
                columns = decode_columns(
                    payload,
                    low,
                    r.end,
                    with_headers=options.include_headers,
                    aborted_transactions=aborted,
                )
                if len(columns):
                    yield to_record_batch(columns, r.topic, r.partition, options.include_headers)
            else:
                yield from to_tuples(
                    payload, r.topic, r.partition, low, r.end, options.include_headers, aborted
                )


def _timestamps_needed(spec: object, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
    if not isinstance(spec, PartitionTimestamps):
        return {}
    out = {}
    for tp in partitions:
        ts = spec.timestamp_for(tp)
        if ts is not None:
            out[tp] = ts
    return out


def _resolve(
    client: SourceClient,
    options: ReadOptions,
    spec: object,
    partitions: list[TopicPartition],
    bounds: Mapping[TopicPartition, PartitionBounds],
    *,
    ending: bool,
) -> dict[TopicPartition, int]:
    found = client.offsets_for_times(_timestamps_needed(spec, partitions))
    return resolve_offsets(
        spec,  # type: ignore[arg-type]
        partitions,
        bounds,
        found,
        ending=ending,
        no_match_strategy=options.by_timestamp_strategy,
    )


class KraftlogBatchReader(DataSourceReader):
    def __init__(self, options: ReadOptions) -> None:
        self.options = options

    def plan(self) -> list[OffsetRange]:
        """Offset ranges at the current high watermarks (the driver's planning step)."""
        o = self.options
        with _client(o) as client:
            partitions = client.partitions(o.subscription)
            bounds = client.bounds(partitions)
            starts = _resolve(client, o, o.starting, partitions, bounds, ending=False)
            ends = _resolve(client, o, o.ending, partitions, bounds, ending=True)
        ranges = plan_ranges(starts, ends, bounds, fail_on_data_loss=o.fail_on_data_loss)
        return split_ranges(ranges, o.min_partitions)

    def partitions(self) -> list[InputPartition]:
        return [RangePartition(r) for r in self.plan()]

    def read(self, partition: InputPartition | None) -> Iterator[Any]:
        yield from read_partition(self.options, partition.value if partition else None)


class KraftlogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of committed records. Offsets: ``{"topic": {"0": next_offset}}``.

    New partitions (a topic matching subscribePattern, partitions added to a topic) start at
    their log start offset. With Trigger.AvailableNow the high watermarks seen when the query
    starts are the target: later records wait for the next run.
    """

    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self._source: SourceClient | None = None
        self._target: dict[TopicPartition, int] | None = None

    def _conn(self) -> SourceClient:
        if self._source is None:
            self._source = _client(self.options)
        return self._source

    def _bounds(self) -> dict[TopicPartition, PartitionBounds]:
        client = self._conn()
        return client.bounds(client.partitions(self.options.subscription))

    def initialOffset(self) -> dict:
        bounds = self._bounds()
        partitions = sorted(bounds)
        starts = _resolve(
            self._conn(), self.options, self.options.starting, partitions, bounds, ending=False
        )
        return offsets_to_json(starts)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = {tp: b.latest for tp, b in self._bounds().items()}

    def _starts(
        self, start: Mapping[TopicPartition, int], bounds: Mapping[TopicPartition, PartitionBounds]
    ) -> dict[TopicPartition, int]:
        """``start`` for known partitions plus the log start of new ones; checks for
        partitions that disappeared."""
        out: dict[TopicPartition, int] = {}
        for tp, offset in start.items():
            if tp in bounds:
                out[tp] = offset
            elif self.options.fail_on_data_loss:
                raise DataLossError(f"partition {tp.topic}-{tp.partition} no longer exists")
        for tp, b in bounds.items():
            if tp not in out:
                if b.earliest > 0 and self.options.fail_on_data_loss:
                    raise DataLossError(
                        f"new partition {tp.topic}-{tp.partition} starts at {b.earliest}, not 0"
                    )
                out[tp] = b.earliest
        return out

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        bounds = self._bounds()
        if self._target is not None:
            bounds = {tp: b for tp, b in bounds.items() if tp in self._target}
        starts = self._starts(offsets_from_json(start), bounds)
        latest: dict[TopicPartition, int] = {}
        for tp, begin in starts.items():
            high = bounds[tp].latest
            if self._target is not None:
                high = min(high, self._target[tp])
            if high < begin:
                if self.options.fail_on_data_loss and tp in bounds and bounds[tp].latest < begin:
                    raise DataLossError(
                        f"the high watermark {bounds[tp].latest} of {tp.topic}-{tp.partition} "
                        f"went below the committed position {begin}"
                    )
                high = begin
            latest[tp] = high
        if isinstance(limit, ReadMaxRows):
            end = rate_limit(starts, latest, limit.max_rows)
        elif isinstance(limit, ReadMinRows):
            backlog = sum(latest[tp] - starts[tp] for tp in latest)
            end = latest if backlog >= limit.min_rows else dict(starts)
        else:
            end = latest
        return offsets_to_json(end)

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        begin = offsets_from_json(start)
        until = offsets_from_json(end)
        new = [tp for tp in until if tp not in begin]
        if new:
            bounds = self._conn().bounds(new)
            begin = {**begin, **{tp: bounds[tp].earliest for tp in new}}
        ranges = [
            OffsetRange(tp.topic, tp.partition, begin[tp], until[tp])
            for tp in sorted(until)
            if until[tp] > begin[tp]
        ]
        return [RangePartition(r) for r in split_ranges(ranges, self.options.min_partitions)]

    def read(self, partition: InputPartition | None) -> Iterator[Any]:
        yield from read_partition(self.options, partition.value if partition else None)

    def commit(self, end: dict) -> None:
        """Nothing to do: the position lives in Spark's checkpoint, not in the cluster."""

    def stop(self) -> None:
        if self._source is not None:
            self._source.close()
            self._source = None


@dataclass(frozen=True)
class WriteResult(WriterCommitMessage):
    records: int


class _AcknowledgedTasks:
    """Tasks of an at-least-once write: each returns once its records are acknowledged."""

    def __init__(self, options: WriteOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema

    def write(self, iterator: Iterator[Any]) -> WriteResult:
        return WriteResult(write_rows(self.options, self.schema.fieldNames(), iterator))


class KraftlogWriter(_AcknowledgedTasks, DataSourceWriter):
    """At-least-once batch writes (``exactlyOnce=false``, the batch default)."""

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Every record was acknowledged by the full ISR when write() returned."""

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Acknowledged records cannot be withdrawn (at-least-once, as Spark's Kafka sink)."""


class KraftlogStreamWriter(_AcknowledgedTasks, DataSourceStreamWriter):
    """At-least-once streaming writes (``exactlyOnce=false``): a replayed micro-batch is
    written again."""

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Every record was acknowledged by the full ISR when write() returned."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Acknowledged records cannot be withdrawn."""


@dataclass(frozen=True)
class PreparedMessage(WriterCommitMessage):
    """A task's prepared transaction, on its way to the driver's commit."""

    write: PreparedWrite


def _prepared(messages: list[WriterCommitMessage | None]) -> list[PreparedTxnState]:
    """The prepared transactions of the tasks that wrote records (a failed task's message
    is None; its transaction is aborted by itself, its id's next init or its timeout)."""
    return [
        m.write.prepared
        for m in messages
        if isinstance(m, PreparedMessage) and m.write.prepared is not None
    ]


class _PreparedTasks:
    """Tasks of an exactly-once write: each prepares a transaction of its Spark partition's
    id. The writer is created on the driver before the tasks run: it rolls the prefix's last
    decision forward first (see spark_integration.exactly_once)."""

    def __init__(self, options: WriteOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        recover(options)

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        context = TaskContext.get()
        if context is None:
            raise RuntimeError("the exactly-once writer's write() runs in a Spark task only")
        return PreparedMessage(
            write_transaction(
                self.options, context.partitionId(), self.schema.fieldNames(), iterator
            )
        )


class KraftlogTransactionalWriter(_PreparedTasks, DataSourceWriter):
    """Exactly-once batch writes: tasks prepare transactions, commit() decides and commits
    them (a new batch id after the prefix's last one), abort() aborts them."""

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        commit_batch(self.options, _prepared(messages), None)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        abort_batch(self.options, _prepared(messages))


class KraftlogTransactionalStreamWriter(_PreparedTasks, DataSourceStreamWriter):
    """Exactly-once streaming writes: micro-batch ``batchId``'s tasks prepare transactions;
    commit() commits them once per batch id across restarts. PySpark creates it on the
    driver when it plans each micro-batch, before the batch's tasks (and again for every
    commit)."""

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        commit_batch(self.options, _prepared(messages), batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        abort_batch(self.options, _prepared(messages))


class KraftlogDataSource(DataSource):
    """Format ``kraftlog``: the schema and options of Spark's built-in Kafka source."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> str:
        raw = str(self.options.get("includeheaders", self.options.get("includeHeaders", "")))
        if raw.strip().lower() not in ("", "true", "false"):
            raise OptionError(f"includeHeaders: expected true or false, got {raw!r}")
        return schema_ddl(raw.strip().lower() == "true")

    def reader(self, schema: StructType) -> DataSourceReader:
        return KraftlogBatchReader(parse_read_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KraftlogStreamReader(parse_read_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        options = parse_write_options(self.options, streaming=False)
        check_write_schema(schema.fieldNames(), options)
        if options.exactly_once:
            return KraftlogTransactionalWriter(options, schema)
        return KraftlogWriter(options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        options = parse_write_options(self.options, streaming=True)
        check_write_schema(schema.fieldNames(), options)
        if options.exactly_once:
            return KraftlogTransactionalStreamWriter(options, schema)
        return KraftlogStreamWriter(options, schema)
