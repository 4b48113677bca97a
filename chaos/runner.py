"""The chaos runner: cluster, workload, seeded fault schedule, heal, final read, check, report.

``kraftlog chaos run --nemesis kill,pause,partition --time-limit 120 --seed 7 --artifacts DIR``
(see :mod:`chaos.cli`) calls :func:`run`. One run:

1. Starts its own cluster in network namespaces (:class:`chaos.cluster.ChaosCluster`; 3
   controllers, 3 brokers by default) and moves this process into the cluster's client
   namespace, or, with ``bootstrap``, uses an existing cluster (then no nemesis: faults need
   control of the nodes).
2. Creates the workload's topics (RF 3, ``min.insync.replicas`` 2 by default).
3. Runs the workload threads for ``time_limit_s``: the ``queue`` workload (producers of each
   kind, assign consumers, group consumers when the cluster has groups), the
   ``transactional`` workload (:mod:`chaos.workload.transactional`), or both (``all``),
   and the leader observer, while the nemesis loop
   (this thread) plays the seeded schedule (:mod:`chaos.schedule`), one fault at a time, each
   recorded as nemesis start / heal events.
4. Heals everything (network, paused, stopped and skewed nodes, full disk), records the
   heal-all, and keeps the workload running for the recovery window.
5. Stops the producers (they flush), then the consumers; fresh consumers read every partition
   from 0 to its high watermark (:mod:`chaos.workload.final_read`), transactional topics
   also with read_committed, and the transform group's offsets are recorded.
6. Stops the cluster and collects, for each partition, the in-sync replicas' log
   directories and the high watermark for the checker's byte comparison.
7. Runs the checker (``chaos.checker``) and writes the report. Artifacts in DIR::

       history.jsonl  seed  run.json (the configuration and the schedule)  runner.log
       run-summary.json (counts, faults, worker errors, the checker's summary)
       logs/node-<id>.log  logs/toxiproxy.log
       summary.json  anomalies.json  timeline.json  report.html   (the checker's report)

   The cluster's data directories are deleted after a valid run and kept (DIR/cluster) after
   an invalid one.

Exit codes (:data:`EXIT_OK`, ...): 0 the history is valid; 1 the checker found an anomaly
(safety or liveness); 2 the run could not be carried out (setup failed, a workload thread
died); 130 interrupted. Cleanup runs in every case: a ``finally`` block, SIGTERM/SIGHUP turned
into an exception, and an atexit hook; ``kraftlog chaos cleanup`` removes what a SIGKILLed
runner left.

Thread-safety: :func:`run` runs on the main thread (it enters a network namespace, which
applies to threads created afterwards) and starts its own threads.
"""

from __future__ import annotations

import atexit
import json
import os
import random
import shutil
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from chaos.cluster import (
    NAMESPACE_PREFIX,
    ChaosCluster,
    ChaosSetupError,
    current_network_namespace_fd,
    set_network_namespace_fd,
)
from chaos.history import HEAL_ALL, HistoryWriter
from chaos.nemesis import NEMESES, ActiveFault, NemesisContext, NoTargetError
from chaos.progress import ProgressBar
from chaos.schedule import ScheduledFault, ScheduleTimings, plan_schedule
from chaos.workload.consumer import AssignConsumerWorker, GroupConsumerWorker, groups_supported
from chaos.workload.final_read import final_read
from chaos.workload.observer import LeaderObserver
from chaos.workload.producer import PRODUCER_KINDS, ProducerSpec, ProducerWorker
from chaos.workload.stats import OpStats
from chaos.workload.transactional import (
    TxnWorkload,
    TxnWorkloadConfig,
    build_txn_workload,
    txn_final_reads,
)
from kraftlog_client import Admin, NewTopic

EXIT_OK = 0
EXIT_ANOMALY = 1
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130

DEFAULT_TOPIC = "chaos"
QUEUE = "queue"
TRANSACTIONAL = "transactional"
WORKLOADS = (QUEUE, TRANSACTIONAL, "all")
# Cluster settings of a chaos run: failures are detected within seconds (so faults of a few
# seconds matter), but not so fast that a loaded 2-core machine fences healthy brokers.
CHAOS_OVERRIDES: dict[str, str] = {
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
    "controller.quorum.election.timeout.ms": "1000",
    "controlled.shutdown.timeout.ms": "5000",
    "replica.lag.time.max.ms": "5000",
    "replica.fetch.backoff.ms": "200",
}
# Size of the tmpfs log directory of the full-disk broker.
FULL_DISK_TMPFS_BYTES = 256 * 1024 * 1024
CLUSTER_READY_TIMEOUT_S = 120.0
TOPIC_READY_TIMEOUT_MS = 60_000
PRODUCER_JOIN_TIMEOUT_S = 45.0
CONSUMER_JOIN_TIMEOUT_S = 15.0
FINAL_READ_TIMEOUT_S = 120.0
PROGRESS_INTERVAL_S = 1.0
# Heal of one fault: the runner waits at most this long for a killed node to be running.
_HEAL_POLL_S = 0.2


@dataclass(frozen=True)
class RunConfig:
    nemeses: list[str]
    time_limit_s: float
    seed: int
    artifacts: Path
    bootstrap: str | None = None
    controllers: int = 3
    brokers: int = 3
    partitions: int = 3
    replication_factor: int = 3
    min_insync_replicas: int = 2
    topic: str = DEFAULT_TOPIC
    # producer kind -> how many threads of it
    producers: dict[str, int] = field(
        default_factory=lambda: {"idempotent": 2, "all": 1, "acks1": 1}
    )
    rate_per_producer: float = 50.0
    assign_consumers: int = 2
    group_consumers: int = 1
    progress: bool = False
    timings: ScheduleTimings = field(default_factory=ScheduleTimings)
    overrides: dict[str, str] = field(default_factory=dict)
    workload: str = QUEUE
    txn: TxnWorkloadConfig = field(default_factory=TxnWorkloadConfig)

    def __post_init__(self) -> None:
        if self.workload not in WORKLOADS:
            raise ValueError(f"unknown workload {self.workload!r}; expected one of {WORKLOADS}")
        unknown = [n for n in self.nemeses if n not in NEMESES]
        if unknown:
            raise ValueError(f"unknown nemesis {unknown}")
        if self.bootstrap is not None and self.nemeses:
            raise ValueError(
                "nemeses need a cluster the runner controls; with --bootstrap use --nemesis none"
            )
        bad = [k for k in self.producers if k not in PRODUCER_KINDS]
        if bad:
            raise ValueError(f"unknown producer kinds {bad}; known {list(PRODUCER_KINDS)}")
        if self.time_limit_s <= 0:
            raise ValueError("time limit must be > 0")
        if self.partitions < 1 or self.replication_factor < 1:
            raise ValueError("partitions and replication factor must be >= 1")

    @property
    def runs_queue(self) -> bool:
        return self.workload in (QUEUE, "all")

    @property
    def runs_transactions(self) -> bool:
        return self.workload in (TRANSACTIONAL, "all")

    @property
    def topics(self) -> list[str]:
        """Every topic the workload writes."""
        return [self.topic] * self.runs_queue + list(self.txn.topics) * self.runs_transactions

    @property
    def session_timeout_ms(self) -> int:
        merged = {**CHAOS_OVERRIDES, **self.overrides}
        return int(merged["broker.session.timeout.ms"])


@dataclass
class RunOutcome:
    exit_code: int
    summary: dict[str, Any]


class RunInterrupted(Exception):
    """SIGTERM or SIGHUP arrived; unwinds the run so its cleanup executes."""


class _Log:
    """runner.log in the artifacts, and stderr lines (kept apart from the progress bar)."""

    def __init__(self, path: Path, stream: TextIO) -> None:
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self.stream = stream
        self._lock = threading.Lock()
        self._t0 = time.monotonic()

    def __call__(self, message: str) -> None:
        line = f"[{time.monotonic() - self._t0:7.1f} s] {message}"
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()

    def say(self, message: str) -> None:
        self(message)
        with self._lock:
            self.stream.write(message + "\n")
            self.stream.flush()

    def close(self) -> None:
        self._file.close()


@contextmanager
def _signals_raise() -> Iterator[None]:
    """SIGTERM and SIGHUP raise RunInterrupted in the main thread (SIGINT already raises
    KeyboardInterrupt), so ``finally`` blocks clean up."""

    def handler(signum: int, _frame: object) -> None:
        raise RunInterrupted(signal.Signals(signum).name)

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP until the block ends (then their handlers run)."""
    held = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


@contextmanager
def _network_namespace_restored() -> Iterator[None]:
    """Return this thread to its original network namespace on the way out (the runner
    enters the cluster's client namespace, which is deleted at the end)."""
    fd = current_network_namespace_fd()
    try:
        yield
    finally:
        try:
            set_network_namespace_fd(fd)
        finally:
            os.close(fd)


def run(config: RunConfig, stream: TextIO = sys.stderr) -> RunOutcome:
    """One chaos run (module docstring); never leaves namespaces, rules or processes."""
    if config.bootstrap is not None and config.topic == DEFAULT_TOPIC:
        # A cluster we did not create may hold the topic of an earlier run: values read from
        # it would be "unknown reads". Every run against it gets a fresh topic.
        config = replace(config, topic=f"{DEFAULT_TOPIC}-{config.seed}-{int(time.time())}")
    artifacts = config.artifacts
    artifacts.mkdir(parents=True, exist_ok=True)
    if (artifacts / "history.jsonl").exists():
        raise ValueError(f"{artifacts} already holds a run (history.jsonl); use a new directory")
    (artifacts / "seed").write_text(f"{config.seed}\n", encoding="utf-8")
    log = _Log(artifacts / "runner.log", stream)
    schedule = plan_schedule(
        config.seed,
        config.nemeses,
        config.time_limit_s,
        config.timings,
        min_hold_s={"pause": config.session_timeout_ms / 1000 + 2.0},
    )
    _write_json(
        artifacts / "run.json",
        {
            "config": {**asdict(config), "artifacts": str(artifacts)},
            "schedule": [asdict(s) for s in schedule],
            "overrides": {**CHAOS_OVERRIDES, **config.overrides},
        },
    )
    try:
        with _signals_raise():
            if config.bootstrap is not None:
                return _run_against(config, config.bootstrap, None, None, schedule, log)
            return _run_own_cluster(config, schedule, log)
    except (KeyboardInterrupt, RunInterrupted) as e:
        log.say(f"interrupted ({type(e).__name__} {e}); cleaned up")
        return RunOutcome(EXIT_INTERRUPTED, {"interrupted": True})
    except ChaosSetupError as e:
        log.say(f"chaos setup failed: {e}")
        return RunOutcome(EXIT_ERROR, {"error": str(e)})
    except Exception as e:  # the cluster did not start, the topic could not be created...
        log(traceback.format_exc())
        log.say(f"chaos run failed: {type(e).__name__}: {e} (see {artifacts}/runner.log)")
        return RunOutcome(EXIT_ERROR, {"error": f"{type(e).__name__}: {e}"})
    finally:
        log.close()


def _run_own_cluster(config: RunConfig, schedule: list[ScheduledFault], log: _Log) -> RunOutcome:
    name = f"{NAMESPACE_PREFIX}{os.getpid() % 100_000}"
    overrides = {
        **CHAOS_OVERRIDES,
        "min.insync.replicas": str(config.min_insync_replicas),
        "default.replication.factor": str(config.replication_factor),
        **config.overrides,
    }
    cluster_dir = config.artifacts / "cluster"
    log.say(
        f"creating a cluster of {config.controllers} controllers and {config.brokers} "
        f"brokers in {cluster_dir} (namespaces {name}*)"
    )
    cluster = ChaosCluster.create(
        cluster_dir,
        name=name,
        controllers=config.controllers,
        brokers=config.brokers,
        overrides=overrides,
        full_disk_broker_bytes=FULL_DISK_TMPFS_BYTES if "full-disk" in config.nemeses else 0,
    )
    atexit.register(cluster.close)
    valid = False
    try:
        with _network_namespace_restored():
            cluster.enter_client_namespace()
            cluster.start(CLUSTER_READY_TIMEOUT_S, toxiproxy_seed=config.seed)
            log.say("cluster ready")
            bootstrap = ",".join(cluster.local.bootstrap_servers())
            controllers = ",".join(cluster.local.bootstrap_controllers())
            outcome = _run_against(config, bootstrap, controllers, cluster, schedule, log)
            valid = outcome.exit_code == EXIT_OK
            return outcome
    finally:
        # A second Ctrl-C must not cut the cleanup short: signals wait until it is done.
        with _signals_deferred():
            cluster.close()
            atexit.unregister(cluster.close)
            _copy_logs(cluster, config.artifacts / "logs")
            if valid:
                shutil.rmtree(cluster_dir, ignore_errors=True)


def _copy_logs(cluster: ChaosCluster, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    local = cluster.local
    for node_id in local.node_ids:
        src = local.node(node_id).log_path
        if src.exists():
            shutil.copyfile(src, dest / f"node-{node_id}.log")
    tox = local.directory / "toxiproxy.log"
    if tox.exists():
        shutil.copyfile(tox, dest / "toxiproxy.log")


def _create_topics(config: RunConfig, bootstrap: str) -> None:
    admin = Admin({"bootstrap.servers": bootstrap, "default.api.timeout.ms": 30_000})
    try:
        admin.create_topics(
            [
                NewTopic(
                    topic,
                    config.partitions,
                    config.replication_factor,
                    {"min.insync.replicas": str(config.min_insync_replicas)},
                )
                for topic in config.topics
            ]
        )
        admin.wait_for_leaders(config.topics, timeout_ms=TOPIC_READY_TIMEOUT_MS)
    finally:
        admin.close()


@dataclass
class _Workload:
    """The threads of one run and the events that stop them. Producers stop first (they
    flush what they hold), then the consumers and the leader observer."""

    history: HistoryWriter
    stats: OpStats
    stop_producers: threading.Event
    stop_consumers: threading.Event
    producers: list[threading.Thread]
    consumers: list[threading.Thread]
    observer: LeaderObserver
    txn: TxnWorkload | None

    @property
    def threads(self) -> list[threading.Thread]:
        return [*self.producers, *self.consumers, self.observer]

    @property
    def transactional_ids(self) -> tuple[str, ...]:
        return tuple(self.txn.transactional_ids if self.txn else ())

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def stop(self, join_scale: float) -> None:
        """Set both stop events and wait for the threads; ``join_scale`` 0 does not wait."""
        self.stop_producers.set()
        for p in self.producers:
            if p.is_alive():
                p.join(PRODUCER_JOIN_TIMEOUT_S * join_scale)
        self.stop_consumers.set()
        for c in [*self.consumers, self.observer]:
            if c.is_alive():
                c.join(CONSUMER_JOIN_TIMEOUT_S * join_scale)

    def worker_errors(self) -> list[str]:
        """One line for each thread that died of an exception."""
        return [
            f"{t.name}: {type(t.error).__name__}: {t.error}"
            for t in self.threads
            if getattr(t, "error", None) is not None
        ]


def _queue_producers(
    config: RunConfig,
    run_id: str,
    bootstrap: str,
    history: HistoryWriter,
    stats: OpStats,
    stop: threading.Event,
) -> list[threading.Thread]:
    return [
        ProducerWorker(
            ProducerSpec(f"producer-{kind}-{i}", kind, config.rate_per_producer),
            run_id=run_id,
            bootstrap=bootstrap,
            topic=config.topic,
            partitions=config.partitions,
            history=history,
            stats=stats,
            stop=stop,
        )
        for kind, count in config.producers.items()
        for i in range(count)
    ]


def _queue_consumers(
    config: RunConfig,
    run_id: str,
    bootstrap: str,
    history: HistoryWriter,
    stats: OpStats,
    stop: threading.Event,
    log: _Log,
) -> list[threading.Thread]:
    """The assign consumers, then the group consumers when this client build has groups."""
    consumers: list[threading.Thread] = [
        AssignConsumerWorker(
            f"consumer-{i}",
            bootstrap=bootstrap,
            topic=config.topic,
            partitions=config.partitions,
            history=history,
            stats=stats,
            stop=stop,
        )
        for i in range(config.assign_consumers)
    ]
    if not config.group_consumers:
        return consumers
    groups_ok, why_not = groups_supported(bootstrap)
    if not groups_ok:
        log.say(f"group consumers skipped: {why_not}")
        return consumers
    consumers += [
        GroupConsumerWorker(
            f"group-consumer-{i}",
            group=f"chaos-{run_id}",
            bootstrap=bootstrap,
            topic=config.topic,
            history=history,
            stats=stats,
            stop=stop,
        )
        for i in range(config.group_consumers)
    ]
    return consumers


def _build_workload(
    config: RunConfig, bootstrap: str, controllers: str | None, log: _Log
) -> _Workload:
    """The run's threads, not started: the queue workload, the transactional one, or both,
    and the leader observer."""
    run_id = f"r{config.seed}"
    stats = OpStats()
    history = HistoryWriter(config.artifacts / "history.jsonl")
    stop_producers = threading.Event()
    stop_consumers = threading.Event()
    producers: list[threading.Thread] = []
    consumers: list[threading.Thread] = []
    if config.runs_queue:
        producers += _queue_producers(config, run_id, bootstrap, history, stats, stop_producers)
        consumers += _queue_consumers(
            config, run_id, bootstrap, history, stats, stop_consumers, log
        )
    txn_workload: TxnWorkload | None = None
    if config.runs_transactions:
        txn_workload = build_txn_workload(
            config.txn,
            run_id=run_id,
            seed=config.seed,
            bootstrap=bootstrap,
            partitions=config.partitions,
            history=history,
            stats=stats,
            stop_producers=stop_producers,
            stop_consumers=stop_consumers,
        )
        producers += txn_workload.producers
        consumers += txn_workload.consumers
        for why in txn_workload.skipped:
            log.say(f"skipped {why}")
    observer = LeaderObserver(
        bootstrap=bootstrap,
        controllers=controllers,
        topic=config.topics[0],
        history=history,
        stop=stop_consumers,
    )
    return _Workload(
        history,
        stats,
        stop_producers,
        stop_consumers,
        producers,
        consumers,
        observer,
        txn_workload,
    )


def _run_against(
    config: RunConfig,
    bootstrap: str,
    controllers: str | None,
    cluster: ChaosCluster | None,
    schedule: list[ScheduledFault],
    log: _Log,
) -> RunOutcome:
    _create_topics(config, bootstrap)
    log(f"topics {config.topics}: {config.partitions} partitions, RF {config.replication_factor}")
    workload = _build_workload(config, bootstrap, controllers, log)
    faults_done = _drive(config, cluster, schedule, workload, log)
    log.say("workload stopped; final read")
    hws = _final_reads(config, bootstrap, workload)
    replicas = _collect_replicas(config, bootstrap, cluster) if cluster else None
    workload.history.close()
    if cluster is not None:
        cluster.stop_nodes()  # files stable for the byte comparison (tmpfs still mounted)
    dead = workload.worker_errors()
    summary: dict[str, Any] = {
        "seed": config.seed,
        "counts": workload.stats.snapshot(),
        "faults": faults_done,
        "final_read_high_watermarks": hws,
        "worker_errors": dead,
    }
    code, check_summary = _check(config, replicas, log)
    summary["check"] = check_summary
    if dead:
        log.say("workload threads died: " + "; ".join(dead))
        code = max(code, EXIT_ERROR) if code == EXIT_OK else code
    _write_json(config.artifacts / "run-summary.json", summary)
    return RunOutcome(code, summary)


def _drive(
    config: RunConfig,
    cluster: ChaosCluster | None,
    schedule: list[ScheduledFault],
    workload: _Workload,
    log: _Log,
) -> list[dict[str, Any]]:
    """Run the workload for the time limit, faults first (with a cluster to inject them
    into), then the recovery window; stop it; return the faults carried out."""
    progress = ProgressBar(log.stream, config.time_limit_s, config.progress or log.stream.isatty())
    t0 = time.monotonic()
    faults_done: list[dict[str, Any]] = []
    # On an interrupt the workload threads (daemons) are not waited for: cleanup comes first.
    join_scale = 0.0
    try:
        workload.start()
        if cluster is not None:
            faults_done = _play_faults(config, cluster, schedule, workload, progress, t0, log)
        # The recovery window follows the last heal even when faults overran the schedule.
        recovery_end = max(t0 + config.time_limit_s, time.monotonic() + config.timings.recovery_s)
        _wait_until(recovery_end, workload.stats, progress, t0, "recovery")
        join_scale = 1.0
    finally:
        progress.finish()
        workload.stop(join_scale)
    return faults_done


def _play_faults(
    config: RunConfig,
    cluster: ChaosCluster,
    schedule: list[ScheduledFault],
    workload: _Workload,
    progress: ProgressBar,
    t0: float,
    log: _Log,
) -> list[dict[str, Any]]:
    """Play the schedule inside the fault window, then heal everything."""
    ctx = NemesisContext(
        cluster=cluster,
        topic=config.topics[0],
        rng=random.Random(config.seed ^ 0x5EED),
        session_timeout_ms=config.session_timeout_ms,
        log=log,
        topics=tuple(config.topics),
        transactional_ids=workload.transactional_ids,
    )
    faults_end = t0 + config.time_limit_s - config.timings.recovery_s
    done = _play_schedule(
        ctx, schedule, workload.history, workload.stats, progress, t0, faults_end, log
    )
    _heal_all(cluster, log)
    workload.history.nemesis_heal(HEAL_ALL, [])
    return done


def _final_reads(
    config: RunConfig, bootstrap: str, workload: _Workload
) -> dict[str, dict[int, int]]:
    """Read every partition of every topic to its high watermark; the high watermarks."""
    hws: dict[str, dict[int, int]] = {}
    if config.runs_queue:
        hws[config.topic] = final_read(
            bootstrap=bootstrap,
            topic=config.topic,
            partitions=config.partitions,
            history=workload.history,
            timeout_s=FINAL_READ_TIMEOUT_S,
        )
    if workload.txn is not None:
        hws.update(
            txn_final_reads(
                workload.txn,
                bootstrap=bootstrap,
                partitions=config.partitions,
                history=workload.history,
                timeout_s=FINAL_READ_TIMEOUT_S,
            )
        )
    return hws


def _play_schedule(
    ctx: NemesisContext,
    schedule: list[ScheduledFault],
    history: HistoryWriter,
    stats: OpStats,
    progress: ProgressBar,
    t0: float,
    faults_end: float,
    log: _Log,
) -> list[dict[str, Any]]:
    done: list[dict[str, Any]] = []
    last_end_s = 0.0  # planned end of the previous fault, to recover its planned gap
    last_heal = t0
    for i, planned in enumerate(schedule):
        # The planned gap after the previous fault is kept even when that fault overran (a
        # rolling restart, a slow heal): faults never pile up without a chance to recover.
        gap_s = planned.at_s - last_end_s
        last_end_s = planned.at_s + planned.hold_s
        _wait_until(max(t0 + planned.at_s, last_heal + gap_s), stats, progress, t0, "")
        nemesis = NEMESES[planned.nemesis]()
        duration_s = max(planned.hold_s, nemesis.expected_duration_s(ctx))
        # Never eat into the recovery window.
        if time.monotonic() + duration_s > faults_end:
            log(
                f"schedule: {planned.nemesis} and {len(schedule) - i - 1} later fault(s) "
                "dropped: past the fault window"
            )
            break
        fault_id = f"f{i}"

        def begin(fault: str, targets: list[Any], detail: dict[str, Any], fid: str = fault_id):
            history.nemesis_start(fault, targets, fault_id=fid, **detail)
            log(f"{fid} {fault} {targets} {detail}")

        ctx.on_begin, ctx.began = begin, False
        try:
            active = nemesis.start(ctx)
        except NoTargetError as e:
            if not ctx.began:
                log(f"{planned.nemesis}: skipped ({e})")
                continue
            log.say(f"{planned.nemesis}: failed after it began: {e}")
            _heal_all(ctx.cluster, log)
            history.nemesis_heal(planned.nemesis, [], fault_id=fault_id, error=str(e))
            continue
        except Exception as e:  # a nemesis that fails half-way: heal what we can, go on
            log.say(f"{planned.nemesis}: could not start: {type(e).__name__}: {e}")
            _heal_all(ctx.cluster, log)
            if ctx.began:
                history.nemesis_heal(
                    planned.nemesis, [], fault_id=fault_id, error=f"{type(e).__name__}: {e}"
                )
            continue
        if not ctx.began:  # every nemesis calls begin(); a missing call is a bug in it
            raise RuntimeError(f"nemesis {planned.nemesis} did not call ctx.begin()")
        label = f"{active.fault} {active.targets}"
        if not active.instantaneous:
            _wait_until(time.monotonic() + planned.hold_s, stats, progress, t0, label)
        _heal_one(active, log)
        last_heal = time.monotonic()
        history.nemesis_heal(active.fault, active.targets, fault_id=fault_id, **active.detail)
        done.append(
            {"id": fault_id, "fault": active.fault, "targets": active.targets, **active.detail}
        )
    return done


def _heal_one(active: ActiveFault, log: _Log) -> None:
    try:
        active.heal()
    except Exception as e:  # the heal-all at the end retries everything
        log.say(f"heal of {active.fault} failed: {type(e).__name__}: {e}")


def _heal_all(cluster: ChaosCluster, log: _Log) -> None:
    """Undo every fault: network, full disks, clock skew, paused and stopped nodes."""
    local = cluster.local
    steps: list[tuple[str, Callable[[], None]]] = [("network", cluster.heal_network)]
    for node_id in local.node_ids:
        steps.append((f"disk {node_id}", lambda n=node_id: cluster.free_disk(n)))
    skewed = [n for n in local.node_ids if n in cluster.topology.node_env]
    for node_id in skewed:
        steps.append((f"clock {node_id}", lambda n=node_id: cluster.set_clock_skew(n, None)))
        steps.append((f"restart {node_id}", lambda n=node_id: local.restart(n)))
    for node_id in local.node_ids:
        steps.append((f"resume {node_id}", lambda n=node_id: _resume_or_start(cluster, n)))
    for what, step in steps:
        try:
            step()
        except Exception as e:
            log.say(f"heal-all: {what} failed: {type(e).__name__}: {e}")


def _resume_or_start(cluster: ChaosCluster, node_id: int) -> None:
    local = cluster.local
    if local.is_paused(node_id):
        local.resume(node_id)
    if not local.is_running(node_id):
        local.start_node(node_id)


def _wait_until(
    deadline: float, stats: OpStats, progress: ProgressBar, t0: float, fault: str
) -> None:
    while True:
        now = time.monotonic()
        progress.update(now - t0, stats.snapshot(), fault)
        if now >= deadline:
            return
        time.sleep(min(PROGRESS_INTERVAL_S, deadline - now))


@dataclass(frozen=True)
class ReplicaDirs:
    """What the checker's byte comparison needs: each broker's ``log.dirs`` and each
    partition's in-sync replicas at the end of the run."""

    log_dirs: dict[int, str]
    isr: dict[tuple[str, int], list[int]]


def _collect_replicas(config: RunConfig, bootstrap: str, cluster: ChaosCluster) -> ReplicaDirs:
    admin = Admin({"bootstrap.servers": bootstrap, "default.api.timeout.ms": 10_000})
    try:
        described = admin.describe_topics(config.topics)
    finally:
        admin.close()
    local = cluster.local
    return ReplicaDirs(
        {b: str(local.node(b).data_dir) for b in local.broker_ids},
        {
            (topic, p.partition): list(p.isr)
            for topic, info in described.items()
            for p in info.partitions
        },
    )


def _check(
    config: RunConfig, replicas: ReplicaDirs | None, log: _Log
) -> tuple[int, dict[str, Any]]:
    from chaos import checker

    result = checker.check(
        config.artifacts / "history.jsonl",
        replicas=replicas.log_dirs if replicas else None,
        isr=replicas.isr if replicas else None,
        seed=config.seed,
    )
    report = checker.write_report(result, config.artifacts)
    summary = result.summary()
    log(json.dumps(summary, default=str))
    counts = summary.get("anomalies", {})
    log.say(
        f"check: {'valid' if result.valid else 'INVALID'}; sends {summary.get('sends')}; "
        f"anomalies {counts or 'none'}; report {report}"
    )
    return (EXIT_OK if result.valid else EXIT_ANOMALY), summary


def _write_json(path: Path, doc: Any) -> None:
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")
