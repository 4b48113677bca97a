"""Spark reading kraftlog: count and groupBy over millions of 100 B records (prints, never asserts).

    .venv/bin/python -m bench.spark_read                 # 5,000,000 records (several minutes)
    .venv/bin/python -m bench.spark_read --records 500000

Starts its own LocalCluster (1 controller + 3 brokers) in a temporary directory, creates a
topic of 6 partitions (replication factor 1, two leaders per broker), produces the records
with the native producer (100 B values, 3-byte keys from 100 distinct ones, batch.size
256 KiB), then times on a local[2] SparkSession the Arrow queries three times (the first pays
for the Python workers' start, the JVM's JIT warms up; all are printed) and the tuple-mode
ones once:

- ``count()`` and ``groupBy("key").count()`` with the default Arrow mode (read() yields
  pyarrow RecordBatches decoded column-wise) and with tuple mode (``kraftlog.arrow=false``:
  one Python tuple per record, as a plain Python data source would);
- the same ranges decoded in this process without Spark (the source's read path alone:
  Fetch + columnar decode + Arrow), which bounds what Spark can get from it per core.

Every Spark run also prints the CPU seconds it cost, per party: the JVM (Arrow to rows, the
query), the Python workers (Fetch, decode, Arrow IPC to the JVM) and the brokers, from
/proc/<pid>/stat (user + system, plus reaped children's: the short-lived planner workers), and
the total in microseconds per row. On a 2-core machine with other load the wall-clock
rate swings with the load; the CPU cost per row does much less, and 2 cores / (µs per row)
is the rate this machine could reach with nothing else running.

``--jvm-arrow-unchecked`` starts the JVM with Arrow Java's switches that drop its per-access
bounds and null checks (``-Darrow.enable_unsafe_memory_access=true
-Darrow.enable_null_check_for_get=false``): a deployment choice, off by default.

Target (2-core machine, shared with the cluster): >= 1,000,000 rows/s for the Arrow count.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from collections.abc import Callable, Iterable

from bench.report import row
from bench.spark_setup import bench_cluster, local_session
from kraftlog_client import Producer
from spark_integration.options import parse_read_options
from spark_integration.source import KraftlogBatchReader, read_partition

VALUE_BYTES = 100
KEYS = 100
PARTITIONS = 6
TOPIC = "spark-bench"


def produce(bootstrap: str, records: int) -> float:
    value = b"x" * VALUE_BYTES
    keys = [b"k%02d" % i for i in range(KEYS)]
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 20, "batch.size": 262144}
    )
    started = time.monotonic()
    try:
        for i in range(records):
            producer.send(TOPIC, value, key=keys[i % KEYS])
        producer.flush(600)
    finally:
        producer.close(600)
    return time.monotonic() - started


JVM_ARROW_UNCHECKED = (
    "-Darrow.enable_unsafe_memory_access=true -Darrow.enable_null_check_for_get=false"
)
_CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and of its reaped children (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(v) for v in fields[11:15]) / _CLOCK_TICKS_PER_S


def _descendants(root: int, skip: set[int]) -> list[int]:
    """Live processes below ``root``, leaving out the subtrees of ``skip``."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        children.setdefault(parent, []).append(int(name))
    out: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in skip:
                out.append(child)
                stack.append(child)
    return out


class CpuMeter:
    """CPU seconds spent by the JVM, the Python workers (everything else this process
    started, but the cluster) and the brokers; ``delta()`` since the previous call."""

    def __init__(self, broker_pids: Iterable[int], cluster_pids: Iterable[int]) -> None:
        self.broker_pids = list(broker_pids)
        self.cluster_pids = set(cluster_pids)
        self._last = self._sample()

    def _sample(self) -> dict[str, float]:
        out = {"jvm": 0.0, "python": 0.0, "brokers": sum(_cpu_s(p) for p in self.broker_pids)}
        for pid in _descendants(os.getpid(), self.cluster_pids):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    java = f.read().split(b"\0", 1)[0].endswith(b"java")
            except OSError:
                continue
            out["jvm" if java else "python"] += _cpu_s(pid)
        return out

    def delta(self) -> dict[str, float]:
        now = self._sample()
        out = {k: now[k] - self._last[k] for k in now}
        self._last = now
        return out


def timed(
    label: str,
    action: Callable[[], object],
    records: int,
    runs: int = 2,
    meter: CpuMeter | None = None,
) -> None:
    for run in range(1, runs + 1):
        if meter is not None:
            meter.delta()
        started = time.monotonic()
        result = action()
        seconds = time.monotonic() - started
        print(row(f"{label} (run {run}) -> {result}", records, VALUE_BYTES, seconds), flush=True)
        if meter is not None:
            cpu = meter.delta()
            total = sum(cpu.values())
            print(
                f"      cpu s: jvm {cpu['jvm']:.1f}, python workers {cpu['python']:.1f}, "
                f"brokers {cpu['brokers']:.1f}; {total / records * 1e6:.2f} us/row "
                f"(2 cores: {2 * records / total:,.0f} rows/s)",
                flush=True,
            )


def in_process(bootstrap: str) -> int:
    options = parse_read_options(
        {"kafka.bootstrap.servers": bootstrap, "subscribe": TOPIC}, streaming=False
    )
    total = 0
    for r in KraftlogBatchReader(options).plan():
        for batch in read_partition(options, r):
            total += batch.num_rows
    return total


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=5_000_000)
    parser.add_argument(
        "--jvm-arrow-unchecked",
        action="store_true",
        help="start the JVM with Arrow Java's bounds and null checks off",
    )
    args = parser.parse_args()
    with bench_cluster("kraftlog-spark-bench-", TOPIC, PARTITIONS) as (cluster, bootstrap):
        print(
            f"== Spark reads, {args.records:,} records of {VALUE_BYTES} B, "
            f"{PARTITIONS} partitions on 3 brokers, local[2]",
            flush=True,
        )
        seconds = produce(bootstrap, args.records)
        print(row("produce (native, acks=1)", args.records, VALUE_BYTES, seconds), flush=True)

        timed(
            "source read path in-process (no Spark)",
            lambda: in_process(bootstrap),
            args.records,
            runs=1,
        )
        extra: dict[str, str] = {}
        if args.jvm_arrow_unchecked:
            print(f"   JVM options: {JVM_ARROW_UNCHECKED}", flush=True)
            extra["spark.driver.extraJavaOptions"] = JVM_ARROW_UNCHECKED
        spark = local_session("kraftlog-bench", extra)
        brokers = [cluster.pid(i) for i in cluster.broker_ids]
        meter = CpuMeter(
            [p for p in brokers if p is not None],
            [p for p in (cluster.pid(i) for i in cluster.node_ids) if p is not None],
        )
        try:
            for mode in ("true", "false"):
                df = (
                    spark.read.format("kraftlog")
                    .option("kafka.bootstrap.servers", bootstrap)
                    .option("subscribe", TOPIC)
                    .option("kraftlog.arrow", mode)
                    .load()
                )
                name = "Arrow" if mode == "true" else "tuple"
                # Tuple mode is several times slower: one run each keeps the benchmark short.
                runs = 3 if mode == "true" else 1
                timed(f"{name} count()", df.count, args.records, runs, meter)
                timed(
                    f"{name} groupBy(key).count()",
                    lambda df=df: len(df.groupBy("key").count().collect()),
                    args.records,
                    runs,
                    meter,
                )
        finally:
            spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
