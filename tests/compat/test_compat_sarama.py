"""The Go client Sarama (Debian's golang-github-shopify-sarama-dev, built offline in GOPATH
mode from tests/compat/sarama/main.go) against a real kraftlog cluster.

- ClusterAdmin: CreateTopic (with configs; again: TOPIC_ALREADY_EXISTS), ListTopics,
  DescribeTopics, DescribeConfig, AlterConfig (the non-incremental AlterConfigs, API 33: keys
  left out go back to their defaults), DeleteTopic (again: UNKNOWN_TOPIC_OR_PARTITION).
- An idempotent SyncProducer (acks=all, one request in flight), an idempotent AsyncProducer
  and a plain AsyncProducer, each with every codec Sarama has (none, gzip, snappy, lz4, zstd),
  records with keys, a header and explicit timestamps.
- Reading every record back with a PartitionConsumer per partition, and with a consumer group
  of two members for each balance strategy (range, roundrobin): every record exactly once per
  group, the strategy's assignment, and committed offsets at the log end.
- Client.GetOffset by timestamp (single-record and many-record batches; Sarama 1.22 sends
  MaxTimestamp -1, so the broker must work out the batch's largest timestamp), plus
  OffsetNewest and OffsetOldest.

The Go program prints one JSON object per run; its failures carry the step and Sarama's error,
and a failed assertion shows the broker's log tail.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from deploy.local_cluster import LocalCluster

pytestmark = [pytest.mark.integration]

SOURCE_DIR = Path(__file__).parent / "sarama"
GOCODE = Path("/usr/share/gocode")
SARAMA_SRC = GOCODE / "src/github.com/Shopify/sarama"
BUILD_ROOT = Path("/tmp/kraftlog-sarama-compat")  # binaries keyed by main.go's hash
BUILD_TIMEOUT_S = 300.0
RUN_TIMEOUT_S = 90.0  # one subprocess; the program's own -timeout is shorter

# Sarama 1.22 sends zstd batches in Produce v3 and reads them with Fetch v4 (its version table
# stops there); Apache Kafka asks for Produce v7 / Fetch v10 with zstd, kraftlog accepts both.
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
# (mode, idempotent)
PRODUCERS = (("sync", True), ("async", True), ("async", False))
RECORDS_PER_RUN = 200
TOPIC = "sarama-records"
PARTITIONS = 3
BASE_TS_MS = (int(time.time()) - 3600) * 1000  # an hour ago: inside any retention
TS_RECORDS = 10

Result = dict[str, Any]


def _run_name(mode: str, idempotent: bool, codec: str) -> str:
    return f"{mode}-{'idem' if idempotent else 'plain'}-{codec}"


RUNS = [_run_name(m, i, c) for m, i in PRODUCERS for c in CODECS]


def _key(prefix: str, i: int) -> str:
    return f"{prefix}-k{i:05d}"


def _value(prefix: str, i: int) -> str:
    return f"{prefix}-v{i:05d}-" + "abc" * (i % 50)


# --- building and running the Go program -------------------------------------------------------


def _build(out_dir: Path) -> Path:
    binary = out_dir / "sarama-compat"
    if binary.exists():
        return binary
    out_dir.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "GO111MODULE": "off",
        "GOPATH": f"{GOCODE}:{BUILD_ROOT / 'gopath'}",
        "GOCACHE": str(BUILD_ROOT / "gocache"),
        "GOFLAGS": "",
        # Debian's DataDog/zstd (cgo, Sarama's zstd codec) calls a deprecated libzstd function.
        "CGO_CFLAGS": "-O2 -Wno-deprecated-declarations",
    }
    partial = out_dir / f"sarama-compat.{os.getpid()}.tmp"
    proc = subprocess.run(
        ["go", "build", "-o", str(partial), "."],
        cwd=SOURCE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    assert proc.returncode == 0, f"go build failed:\n{proc.stdout}\n{proc.stderr}"
    partial.replace(binary)
    return binary


@pytest.fixture(scope="module")
def sarama_bin() -> Path:
    if shutil.which("go") is None or not SARAMA_SRC.is_dir():
        pytest.skip("go/sarama not installed: make test installs them as root")
    go_version = subprocess.run(
        ["go", "version"], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    digest = hashlib.sha256((SOURCE_DIR / "main.go").read_bytes() + go_version.encode())
    return _build(BUILD_ROOT / digest.hexdigest()[:16])


class Sarama:
    """Runs subcommands of the Go program against one cluster."""

    def __init__(self, binary: Path, cluster: LocalCluster) -> None:
        self.binary = binary
        self.cluster = cluster
        self.bootstrap = ",".join(cluster.bootstrap_servers())

    def run(self, sub: str, **flags: object) -> Result:
        """The program's JSON result, whether it succeeded or not (``ok`` tells)."""
        args = [str(self.binary), sub, "-brokers", self.bootstrap]
        for name, value in flags.items():
            flag = "-" + name.replace("_", "-")
            args.append(f"{flag}={str(value).lower()}" if isinstance(value, bool) else flag)
            if not isinstance(value, bool):
                args.append(str(value))
        proc = subprocess.run(
            args, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False
        )
        lines = proc.stdout.strip().splitlines()
        assert lines, f"{sub}: no output (exit {proc.returncode})\n{proc.stderr}"
        result: Result = json.loads(lines[-1])
        result["_exit"] = proc.returncode
        result["_stderr"] = proc.stderr[-4000:]
        return result

    def ok(self, sub: str, **flags: object) -> Result:
        result = self.run(sub, **flags)
        assert result.get("ok") is True and result["_exit"] == 0, self.explain(sub, result)
        return result

    def explain(self, sub: str, result: Result) -> str:
        brief = {k: v for k, v in result.items() if k != "records"}
        logs = "\n".join(
            f"--- node {n} log tail ---\n{self.cluster.log_tail(n)}"
            for n in self.cluster.broker_ids
        )
        return f"sarama {sub} failed: {json.dumps(brief, indent=1)[:6000]}\n{logs}"


@pytest.fixture(scope="module")
def sarama(sarama_bin: Path, compat_cluster: LocalCluster) -> Sarama:
    return Sarama(sarama_bin, compat_cluster)


# --- admin -------------------------------------------------------------------------------------


def test_cluster_admin_topic_lifecycle_and_alter_config(sarama: Sarama) -> None:
    r = sarama.ok("admin", topic="sarama-admin", timeout="60s")
    assert r["create_again_code"] == 36  # TOPIC_ALREADY_EXISTS
    assert r["listed_partitions"] == 3
    assert r["listed_replication_factor"] == 1
    assert r["described_partition_ids"] == [0, 1, 2]
    before = r["config_before"]
    assert before["retention.ms"]["value"] == "3600000"
    assert before["retention.ms"]["default"] is False
    assert before["max.message.bytes"]["value"] == "500000"
    assert before["cleanup.policy"] == {"value": "delete", "default": True, "read_only": False}
    after = r["config_after"]
    assert after["retention.ms"]["value"] == "7200000"
    assert after["cleanup.policy"]["value"] == "compact"
    assert after["cleanup.policy"]["default"] is False
    # Left out of the AlterConfigs request: back to the default.
    assert after["max.message.bytes"]["default"] is True
    assert after["max.message.bytes"]["value"] != "500000"
    assert r["config_all_count"] > 3  # no names asked: every topic config
    assert r["deleted"] is True
    assert r["delete_again_code"] == 3  # UNKNOWN_TOPIC_OR_PARTITION


# --- produce -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def produced(sarama: Sarama) -> dict[str, Result]:
    """Every producer run's result by run name (failed runs too: test_produce reports them)."""
    sarama.ok("create-topic", topic=TOPIC, partitions=PARTITIONS)
    results: dict[str, Result] = {}
    for mode, idempotent in PRODUCERS:
        for codec in CODECS:
            name = _run_name(mode, idempotent, codec)
            results[name] = sarama.run(
                "produce",
                topic=TOPIC,
                mode=mode,
                codec=codec,
                idempotent=idempotent,
                count=RECORDS_PER_RUN,
                prefix=name,
                base_ts=BASE_TS_MS,
                timeout="60s",
            )
    return results


@pytest.mark.parametrize("run", RUNS)
def test_produce(sarama: Sarama, produced: dict[str, Result], run: str) -> None:
    r = produced[run]
    assert r.get("ok") is True and r["_exit"] == 0, sarama.explain(f"produce {run}", r)
    records = r["records"]
    assert sorted(k for k, _, _, _ in records) == [_key(run, i) for i in range(RECORDS_PER_RUN)]
    for key, value, partition, offset in records:
        i = int(key.rsplit("-k", 1)[1])
        assert value == _value(run, i)
        assert 0 <= partition < PARTITIONS
        assert offset >= 0
    assert len({(p, o) for _, _, p, o in records}) == RECORDS_PER_RUN


def _expected(produced: dict[str, Result]) -> dict[str, tuple[str, int, int]]:
    """key -> (value, partition, offset) for every acknowledged record."""
    out: dict[str, tuple[str, int, int]] = {}
    for r in produced.values():
        for key, value, partition, offset in r.get("records") or ():
            out[key] = (value, partition, offset)
    return out


def _check_consumed(records: list[list[Any]], expected: dict[str, tuple[str, int, int]]) -> None:
    """Consumed ``[member, partition, offset, key, value, ts, header i]`` against the acks."""
    positions = Counter((p, o) for _, p, o, _, _, _, _ in records)
    duplicates = {pos: n for pos, n in positions.items() if n > 1}
    assert duplicates == {}, f"records delivered more than once: {list(duplicates)[:10]}"
    got = {k: (v, p, o) for _, p, o, k, v, _, _ in records}
    missing = sorted(set(expected) - set(got))
    assert missing == [], f"{len(missing)} acknowledged records never consumed: {missing[:10]}"
    assert got == expected
    for _, _, _, key, _, ts, header in records:
        i = int(key.rsplit("-k", 1)[1])
        assert header == str(i)
        assert ts == BASE_TS_MS + i


def test_partition_consumer_reads_every_record(sarama: Sarama, produced: dict[str, Result]) -> None:
    expected = _expected(produced)
    r = sarama.ok("consume-partitions", topic=TOPIC, expect=len(expected), timeout="60s")
    _check_consumed(r["records"], expected)
    assert r["oldest"] == {str(p): 0 for p in range(PARTITIONS)}
    per_partition = Counter(p for _, p, _ in expected.values())
    assert r["newest"] == {str(p): per_partition[p] for p in range(PARTITIONS)}
    for p in range(PARTITIONS):  # dense offsets from 0
        offsets = sorted(o for _, q, o, _, _, _, _ in r["records"] if q == p)
        assert offsets == list(range(per_partition[p]))


# Partitions each member gets with 2 members and 3 partitions (members sorted by Sarama).
STRATEGY_SHAPES = {"range": [[0, 1], [2]], "roundrobin": [[0, 2], [1]]}


@pytest.mark.parametrize("strategy", sorted(STRATEGY_SHAPES))
def test_consumer_group_reads_every_record_once(
    sarama: Sarama, produced: dict[str, Result], strategy: str
) -> None:
    expected = _expected(produced)
    r = sarama.ok(
        "consume-group",
        topic=TOPIC,
        group=f"sarama-{strategy}",
        strategy=strategy,
        members=2,
        expect=len(expected),
        timeout="60s",
    )
    _check_consumed(r["records"], expected)
    assignments = sorted(r["assignments"].values())
    assert assignments == STRATEGY_SHAPES[strategy]
    for member, partitions in r["assignments"].items():
        read = {p for m, p, _, _, _, _, _ in r["records"] if str(m) == member}
        assert read <= set(partitions)
    assert len(set(r["generations"].values())) == 1
    assert r["committed"] == r["newest"]
    per_partition = Counter(p for _, p, _ in expected.values())
    assert r["newest"] == {str(p): per_partition[p] for p in range(PARTITIONS)}


# --- offsets by timestamp ----------------------------------------------------------------------


def _offset_for(target_ms: int) -> int:
    """The first offset whose timestamp is >= target (record i: BASE_TS_MS + i*1000), or -1."""
    for i in range(TS_RECORDS):
        if BASE_TS_MS + i * 1000 >= target_ms:
            return i
    return -1


@pytest.mark.parametrize("codec", CODECS)
def test_get_offset_by_timestamp(sarama: Sarama, codec: str) -> None:
    topic = f"sarama-ts-{codec}"
    sarama.ok("create-topic", topic=topic, partitions=1)
    r = sarama.ok(
        "offsets-by-time",
        topic=topic,
        codec=codec,
        idempotent=True,
        count=TS_RECORDS,
        prefix=f"ts-{codec}",
        base_ts=BASE_TS_MS,
        timeout="60s",
    )
    assert r["produced_offsets"] == list(range(TS_RECORDS))
    wrong = [(t - BASE_TS_MS, o, _offset_for(t)) for t, o in r["queries"] if o != _offset_for(t)]
    assert wrong == [], "(target - base ms, answered, expected): " + repr(wrong)
    assert len(r["queries"]) == 3 * TS_RECORDS + 3
    assert r["newest"] == TS_RECORDS
    assert r["oldest"] == 0
