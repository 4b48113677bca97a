"""Consumer group benchmark: rebalance time and offset commit throughput (prints,
never asserts).

    .venv/bin/python bench/groups.py            # 5 rebalance trials, 10 s of commits
    .venv/bin/python bench/groups.py --quick    # 2 trials, 3 s of commits

Starts its own LocalCluster in a temporary directory (1 controller + 3 brokers, each its own
process; removed at the end); ``__consumer_offsets`` has replication factor 3, so every commit
and every stored assignment waits for three replicas (acks=all). Clients are confluent-kafka
(librdkafka) consumers in this process, one polling thread each.

1. Rebalance 3 -> 4 members and 4 -> 3: time from the moment the fourth member subscribes
   (or closes, sending LeaveGroup) until every member's rebalance callback has delivered the
   new, balanced assignment of 12 partitions. Members learn of a rebalance from their next
   heartbeat, so the figure includes up to one ``heartbeat.interval.ms`` (300 ms here);
   ``group.initial.rebalance.delay.ms`` is 0 so the first join is not delayed.
2. Offset commits through librdkafka: synchronous commits of one partition's offset back to
   back (latency-bound: each waits for the 3 replicas), and asynchronous commits with up to 64
   in flight (commits/s counted by the commit callbacks).
3. Offset commits on the wire (the broker's own cost, without a client library's queues):
   OffsetCommit v7 requests (simple commits, one partition each) on one connection to the
   coordinator, 1 in flight (latency) and 64 pipelined (throughput).
4. A member killed with kill -9 (3 member processes, a record to every partition every 50 ms):
   time until each of its partitions has a record consumed by another member, for the classic
   protocol (cooperative-sticky) and KIP-848 (``group.protocol=consumer``), with the same
   session timeout and heartbeat interval, in the same run.
5. Loading (what a new coordinator does after a failover), in this process: decoding a
   ``__consumer_offsets`` partition's batches and rebuilding groups and offsets with the
   sans-IO GroupCoordinator, records/s (1,000 groups x 100 partitions, each committed twice).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import confluent_kafka

from bench.report import percentile
from common.protocol.api_keys import ApiKey
from common.protocol.codec import decode_response, encode_request
from common.protocol.messages.find_coordinator import FindCoordinatorRequest
from common.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from data_plane.coordinator import GroupCoordinator, GroupCoordinatorConfig
from data_plane.coordinator.group_metadata_records import (
    OffsetAndMetadata,
    offset_commit_key,
    offset_commit_value,
)
from data_plane.storage import Record, build_batch, decode_records
from deploy.local_cluster import LocalCluster
from metadata.messages import NewTopic

TOPIC, PARTITIONS = "bench-groups", 12
HEARTBEAT_INTERVAL_MS = 300
# A dead member is noticed after its session timeout, the same for both protocols here.
MEMBER_SESSION_TIMEOUT_MS = 6_000
OVERRIDES = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "10",
    "group.min.session.timeout.ms": str(MEMBER_SESSION_TIMEOUT_MS),
    "group.consumer.session.timeout.ms": str(MEMBER_SESSION_TIMEOUT_MS),
    "group.consumer.heartbeat.interval.ms": str(HEARTBEAT_INTERVAL_MS),
}
FEED_EVERY_S = 0.05
# A member process for the member-death trials: logs "assign TIME PARTITIONS" and, for every
# record, "proc TIME PARTITION".
DEATH_MEMBER = """
import sys, time
import confluent_kafka
bootstrap, group, topic, protocol, log_path, session_ms, heartbeat_ms = sys.argv[1:8]
log = open(log_path, "a", buffering=1)
conf = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "latest",
        "enable.auto.commit": True, "group.protocol": protocol}
if protocol == "classic":
    conf.update({"session.timeout.ms": int(session_ms), "heartbeat.interval.ms": int(heartbeat_ms),
                 "partition.assignment.strategy": "cooperative-sticky"})
c = confluent_kafka.Consumer(conf)
def event(kind):
    def on(_c, parts):
        log.write(f"{kind} {time.time()} {','.join(str(p.partition) for p in parts)}\\n")
    return on
c.subscribe([topic], on_assign=event("assign"), on_revoke=event("revoke"))
stop = time.monotonic() + 300
while time.monotonic() < stop:
    for m in c.consume(100, 0.05):
        if m.error() is None:
            log.write(f"proc {time.time()} {m.partition()}\\n")
"""
READY_TIMEOUT_S = 90.0
REBALANCE_GIVE_UP_S = 60.0
ASYNC_IN_FLIGHT = 64


class Member:
    """A confluent-kafka consumer polled by its own thread; remembers its latest assignment."""

    def __init__(self, bootstrap: str, group: str, name: str) -> None:
        self.name = name
        self.assignment: list[int] | None = None
        self.assigned_at = 0.0
        self._stop = threading.Event()
        self._consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": name,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 10_000,
                "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
                "partition.assignment.strategy": "range",
            }
        )
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._consumer.subscribe([TOPIC], on_assign=self._on_assign, on_revoke=self._on_revoke)
        self._thread.start()

    def _on_assign(self, _c: Any, parts: list[Any]) -> None:
        self.assignment = sorted(tp.partition for tp in parts)
        self.assigned_at = time.monotonic()

    def _on_revoke(self, _c: Any, _parts: list[Any]) -> None:
        self.assignment = []

    def _run(self) -> None:
        while not self._stop.is_set():
            self._consumer.poll(0.05)
        self._consumer.close()  # LeaveGroup

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def balanced(members: list[Member]) -> bool:
    parts = [m.assignment for m in members]
    if any(p is None for p in parts):
        return False
    flat = sorted(x for p in parts for x in p or ())
    sizes = [len(p or ()) for p in parts]
    return flat == list(range(PARTITIONS)) and max(sizes) - min(sizes) <= 1


def wait_balanced(members: list[Member], since: float) -> float:
    """Seconds from ``since`` until ``members`` hold a balanced assignment delivered after it."""
    deadline = time.monotonic() + REBALANCE_GIVE_UP_S
    while time.monotonic() < deadline:
        if balanced(members) and all(m.assigned_at >= since for m in members):
            return max(m.assigned_at for m in members) - since
        time.sleep(0.005)
    return float("nan")


def bench_rebalance(bootstrap: str, trials: int) -> None:
    print(f"rebalance, {PARTITIONS} partitions, heartbeat.interval.ms={HEARTBEAT_INTERVAL_MS}:")
    group = "bench-rebalance"
    base = [Member(bootstrap, group, f"m{i}") for i in range(3)]
    start = time.monotonic()
    for m in base:
        m.start()
    first = wait_balanced(base, start)
    print(f"  first join of 3 members: {first * 1000:8.0f} ms")
    grow, shrink = [], []
    try:
        for trial in range(trials):
            extra = Member(bootstrap, group, f"extra{trial}")
            t0 = time.monotonic()
            extra.start()
            grow.append(wait_balanced([*base, extra], t0))
            t1 = time.monotonic()
            extra.stop()
            shrink.append(wait_balanced(base, t1))
    finally:
        for m in base:
            m.stop()
    for label, values in (("3 -> 4 members", grow), ("4 -> 3 members (LeaveGroup)", shrink)):
        ms = [v * 1000 for v in values]
        print(
            f"  {label:<30} median {statistics.median(ms):7.0f} ms  "
            f"max {max(ms):7.0f} ms  ({len(ms)} trials)"
        )


def _death_log(path: str) -> list[list[str]]:
    try:
        with open(path) as f:
            return [ln.split() for ln in f if ln.strip()]
    except FileNotFoundError:
        return []


def _owners(paths: list[str]) -> dict[int, int]:
    """Partition -> index of the member holding it now: every member's assign and revoke
    events replayed in time order (the rebalance callbacks of both protocols here are
    incremental)."""
    events = []
    for i, path in enumerate(paths):
        for w in _death_log(path):
            if w[0] in ("assign", "revoke") and len(w) > 2:
                events.append((float(w[1]), i, w[0], [int(p) for p in w[2].split(",")]))
    out: dict[int, int] = {}
    for _, i, kind, parts in sorted(events):
        for p in parts:
            if kind == "assign":
                out[p] = i
            elif out.get(p) == i:
                del out[p]
    return out


def member_death_trial(bootstrap: str, protocol: str, trial: int, workdir: str) -> float:
    """Seconds from a kill -9 of one of 3 members to the last of its partitions having a
    record consumed by another member (a record is produced to every partition every
    FEED_EVERY_S)."""
    group = f"bench-death-{protocol}-{trial}"
    paths = [os.path.join(workdir, f"{group}-{i}.log") for i in range(3)]
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                DEATH_MEMBER,
                bootstrap,
                group,
                TOPIC,
                protocol,
                path,
                str(MEMBER_SESSION_TIMEOUT_MS),
                str(HEARTBEAT_INTERVAL_MS),
            ],
            cwd=repo,
            env={**os.environ, "PYTHONPATH": repo},
        )
        for path in paths
    ]
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    stop = threading.Event()

    def feed() -> None:
        deadline = time.monotonic() + 3 * REBALANCE_GIVE_UP_S
        while not stop.is_set() and time.monotonic() < deadline:
            for p in range(PARTITIONS):
                producer.produce(TOPIC, b"x", partition=p)
            producer.poll(0)
            time.sleep(FEED_EVERY_S)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        deadline = time.monotonic() + REBALANCE_GIVE_UP_S
        while len(_owners(paths)) < PARTITIONS or len(set(_owners(paths).values())) < 3:
            if time.monotonic() > deadline:
                return float("nan")
            time.sleep(0.05)
        time.sleep(1.0)  # steady: everyone consuming
        dead = [p for p, i in _owners(paths).items() if i == 0]
        killed_at = time.time()
        procs[0].kill()
        procs[0].wait(10)
        deadline = time.monotonic() + REBALANCE_GIVE_UP_S
        while time.monotonic() < deadline:
            first: dict[int, float] = {}
            for path in paths[1:]:
                for w in _death_log(path):
                    if w[0] == "proc" and float(w[1]) > killed_at and int(w[2]) in dead:
                        first.setdefault(int(w[2]), float(w[1]))
            if len(first) == len(dead):
                return max(first.values()) - killed_at
            time.sleep(0.05)
        return float("nan")
    finally:
        stop.set()
        feeder.join(10)
        producer.flush(10)
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()


def bench_member_death(bootstrap: str, trials: int, workdir: str) -> None:
    print(
        f"member killed (kill -9), 3 members, {PARTITIONS} partitions, session timeout "
        f"{MEMBER_SESSION_TIMEOUT_MS} ms, heartbeat {HEARTBEAT_INTERVAL_MS} ms: until its "
        "partitions are consumed elsewhere"
    )
    for protocol, label in (("classic", "classic (cooperative-sticky)"), ("consumer", "KIP-848")):
        ms = [member_death_trial(bootstrap, protocol, t, workdir) * 1000 for t in range(trials)]
        print(
            f"  {label:<30} median {statistics.median(ms):7.0f} ms  max {max(ms):7.0f} ms  "
            f"({len(ms)} trials)",
            flush=True,
        )


def bench_commits(bootstrap: str, seconds: float) -> None:
    print("offset commits (acks=all to 3 replicas of __consumer_offsets):")
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-commits",
            "enable.auto.commit": False,
        }
    )
    try:
        tp = confluent_kafka.TopicPartition
        # Sync: one commit in flight.
        latencies: list[float] = []
        deadline = time.monotonic() + seconds
        n = 0
        while time.monotonic() < deadline:
            t = time.monotonic()
            consumer.commit(offsets=[tp(TOPIC, n % PARTITIONS, n)], asynchronous=False)
            latencies.append(time.monotonic() - t)
            n += 1
        elapsed = sum(latencies)
        print(
            f"  synchronous, 1 in flight            {n / elapsed:9,.0f} commits/s  "
            f"p50 {percentile(latencies, 0.5) * 1000:.2f} ms  "
            f"p99 {percentile(latencies, 0.99) * 1000:.2f} ms"
        )
        # Async: up to ASYNC_IN_FLIGHT outstanding, counted by their callbacks.
        done = [0]
        errors = [0]

        def on_commit(err: Any, _parts: Any) -> None:
            done[0] += 1
            if err is not None:
                errors[0] += 1

        consumer2 = confluent_kafka.Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "bench-commits-async",
                "enable.auto.commit": False,
                "on_commit": on_commit,
            }
        )
        try:
            consumer2.commit(offsets=[tp(TOPIC, 0, 0)], asynchronous=False)  # coordinator known
            done[0] = 0
            sent = 0
            start = time.monotonic()
            deadline = start + seconds
            while time.monotonic() < deadline:
                while sent - done[0] < ASYNC_IN_FLIGHT:
                    consumer2.commit(
                        offsets=[tp(TOPIC, sent % PARTITIONS, sent)], asynchronous=True
                    )
                    sent += 1
                consumer2.poll(0.001)
            while done[0] < sent and time.monotonic() < deadline + 30:
                consumer2.poll(0.01)
            elapsed = time.monotonic() - start
            print(
                f"  asynchronous, <= {ASYNC_IN_FLIGHT} in flight         "
                f"{done[0] / elapsed:9,.0f} commits/s  ({errors[0]} errors)"
            )
        finally:
            consumer2.close()
    finally:
        consumer.close()


class Pipeline:
    """OffsetCommit v7 requests on one connection, many in flight (responses come in order)."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=30)
        self.buf = b""
        self.correlation = 0

    def send_commit(self, group: str, offset: int) -> None:
        self.correlation += 1
        partition = OffsetCommitRequestPartition(
            partition_index=offset % PARTITIONS,
            committed_offset=offset,
            committed_leader_epoch=-1,
            committed_metadata="",
        )
        body = OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            topics=[OffsetCommitRequestTopic(name=TOPIC, partitions=[partition])],
        )
        self.sock.sendall(encode_request(ApiKey.OFFSET_COMMIT, 7, self.correlation, "bench", body))

    def recv_commit(self) -> int:
        """The error code of the next response."""
        while len(self.buf) < 4 or len(self.buf) < 4 + struct.unpack_from(">i", self.buf)[0]:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            self.buf += chunk
        (size,) = struct.unpack_from(">i", self.buf)
        frame, self.buf = self.buf[4 : 4 + size], self.buf[4 + size :]
        _, body = decode_response(ApiKey.OFFSET_COMMIT, 7, frame)
        return int(body.topics[0].partitions[0].error_code)

    def close(self) -> None:
        self.sock.close()


def find_coordinator(bootstrap: str, group: str) -> tuple[str, int]:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    deadline = time.monotonic() + READY_TIMEOUT_S
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        while time.monotonic() < deadline:
            request = FindCoordinatorRequest(key=group)
            sock.sendall(encode_request(ApiKey.FIND_COORDINATOR, 2, 1, "bench", request))
            (size,) = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))
            _, body = decode_response(
                ApiKey.FIND_COORDINATOR, 2, sock.recv(size, socket.MSG_WAITALL)
            )
            if body.error_code == 0:
                return body.host, body.port
            time.sleep(0.2)
    raise RuntimeError(f"no coordinator for {group}")


def bench_wire_commits(bootstrap: str, seconds: float) -> None:
    print("offset commits on the wire (OffsetCommit v7, one connection to the coordinator):")
    group = "bench-wire"
    pipe = Pipeline(*find_coordinator(bootstrap, group))
    try:
        for depth in (1, ASYNC_IN_FLIGHT):
            sent = done = errors = 0
            start = time.monotonic()
            deadline = start + seconds
            while time.monotonic() < deadline:
                while sent - done < depth:
                    pipe.send_commit(group, sent)
                    sent += 1
                errors += pipe.recv_commit() != 0
                done += 1
            while done < sent:
                errors += pipe.recv_commit() != 0
                done += 1
            elapsed = time.monotonic() - start
            print(
                f"  {depth:>2} in flight                         {done / elapsed:9,.0f} commits/s"
                f"  mean {elapsed / done * depth * 1000:.2f} ms  ({errors} errors)"
            )
    finally:
        pipe.close()


def bench_load(groups: int = 1000, partitions: int = 100, commits: int = 2) -> None:
    print("loading a __consumer_offsets partition (in-process, sans-IO coordinator):")
    now = int(time.time() * 1000)
    log = bytearray()
    n = 0
    for round_ in range(commits):
        for g in range(groups):
            records = [
                Record(
                    offset_commit_key(f"group-{g}", "topic", p),
                    offset_commit_value(OffsetAndMetadata(round_ * 1000 + p, -1, "", now)),
                    now,
                )
                for p in range(partitions)
            ]
            log += build_batch(records, base_offset=n)
            n += len(records)
    coordinator = GroupCoordinator(GroupCoordinatorConfig(), lambda: now, num_partitions=1)
    start = time.monotonic()
    coordinator.begin_loading(0)
    pos = 0
    while pos < len(log):
        header, batch = decode_records(log, pos)
        pos += header.size_in_bytes
        for r in batch:
            coordinator.load_record(0, r.key, r.value)
    coordinator.complete_loading(0)
    elapsed = time.monotonic() - start
    print(
        f"  {n:,} records ({len(log) / 1e6:.1f} MB), {groups:,} groups: {elapsed:.2f} s, "
        f"{n / elapsed:,.0f} records/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    trials, seconds = (2, 3.0) if args.quick else (5, 10.0)
    workdir = tempfile.mkdtemp(prefix="kraftlog-bench-groups-")
    cluster = LocalCluster.create(workdir, controllers=1, brokers=3, overrides=OVERRIDES)
    try:
        cluster.start()
        cluster.wait_ready(READY_TIMEOUT_S)
        with cluster.client(30.0) as admin:
            (res,) = admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])
            if res.error_code:
                raise RuntimeError(f"create {TOPIC}: {res.error_message}")
        bootstrap = ",".join(cluster.bootstrap_servers())
        print(
            f"kraftlog groups benchmark: 3 brokers, {os.cpu_count()} cores, confluent-kafka "
            f"{confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]})"
        )
        bench_rebalance(bootstrap, trials)
        bench_member_death(bootstrap, trials, workdir)
        bench_commits(bootstrap, seconds)
        bench_wire_commits(bootstrap, seconds)
        bench_load()
    finally:
        cluster.close()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
