"""Turn a suite result (bench/results/*.json) into the table in docs/benchmarks.md and plots.

    .venv/bin/python -m bench.publish                       # from bench/results/latest.json
    .venv/bin/python -m bench.publish bench/results/X.json

docs/benchmarks.md keeps its hand-written text; only the part between the two markers
``<!-- bench:results:begin -->`` and ``<!-- bench:results:end -->`` is rewritten (appended at
the end the first time). Plots: docs/img/bench-latency.png (end-to-end p50 / p99 / p99.9
against the offered rate, kraftlog RF 3 and NATS JetStream R3) and docs/img/bench-throughput.png
(records/s per workload, both systems). matplotlib is optional: without it the plots are
skipped and the table still written.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
IMG_DIR = ROOT / "docs" / "img"
BEGIN = "<!-- bench:results:begin -->"
END = "<!-- bench:results:end -->"
TARGET_P99_MS = 10
WORKLOADS = ("produce_100", "consume_100", "produce_1024", "consume_1024")


def _num(value: Any, fmt: str = ",.0f") -> str:
    if not isinstance(value, int | float) or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, fmt)


def _dig(node: Any, *path: str) -> Any:
    """The value at ``path`` under ``node``, or None where a step is not a dict."""
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _get(doc: dict[str, Any], *path: str) -> Any:
    return _dig(doc.get("sections", {}), *path)


def _load(section: dict[str, Any] | None) -> str:
    if not section or "load_before" not in section:
        return "-"
    return f"{section['load_before'][0]:.1f} / {section['load_after'][0]:.1f}"


Row = tuple[str, str, str]
"""One table row: section name, figure label, formatted value."""


def _anchor_rows(s: dict[str, Any]) -> list[Row]:
    a = s.get("anchors", {})
    return [
        ("anchors", "disk sequential write (MB/s)", _num(a.get("disk_seq_write_mb_s"))),
        ("anchors", "fdatasync per second (4 KiB appends)", _num(a.get("fsync_per_s"))),
        ("anchors", "loopback TCP, one connection (MB/s)", _num(a.get("loopback_tcp_mb_s"))),
        (
            "anchors",
            "Python loop (million additions/s; the host's CPU speed now)",
            _num(a.get("python_loop_m_per_s"), ".1f"),
        ),
        (
            "anchors",
            "process wake-up: one-byte ping-pong between two processes (p50 / p99 us)",
            f"{_num(a.get('ping_pong_p50_us'), '.0f')} / {_num(a.get('ping_pong_p99_us'), '.0f')}",
        ),
    ]


def _storage_rows(s: dict[str, Any]) -> list[Row]:
    st = s.get("storage", {})
    return [
        (
            "storage",
            "Log.append, 1 MiB batches (MB/s; raw os.write)",
            f"{_num(st.get('append_1mib_batches_mb_s'))} ({_num(st.get('append_raw_write_mb_s'))})",
        ),
        (
            "storage",
            "sendfile read (MB/s; CPU s/GB)",
            f"{_num(st.get('sendfile_read_mb_s'))} "
            f"({_num(st.get('sendfile_cpu_s_per_gb'), '.2f')})",
        ),
    ]


def _throughput_rows(s: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    for name, title in (
        ("single_broker", "1 broker RF 1"),
        ("replicated", "3 brokers RF 3"),
        ("nats", "NATS JetStream R3"),
    ):
        sec = s.get(name, {})
        for key in WORKLOADS:
            r = sec.get(key)
            if r:
                rows.append(
                    (
                        name,
                        f"{title}: {key.replace('_', ' ')} B (records/s; MB/s)",
                        f"{_num(r['records_per_s'])} ({_num(r['mb_per_s'], '.1f')})",
                    )
                )
    return rows


def _host_speed(r: dict[str, Any]) -> str:
    if "python_loop_m_per_s" not in r:
        return ""
    return (
        f"; host {_num(r['python_loop_m_per_s'], '.1f')} M loop/s, "
        f"ping-pong {_num(r.get('ping_pong_p50_us'), '.0f')} us"
    )


def _latency_rows(s: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    for name, title in (("replicated", "kraftlog RF 3"), ("nats", "NATS R3")):
        for rate, r in (s.get(name, {}).get("e2e_latency") or {}).items():
            rows.append(
                (
                    name,
                    f"{title}: end-to-end at {int(rate):,} rec/s offered "
                    f"(p50 / p99 / p99.9 ms; received/s; host speed just before)",
                    f"{_num(r['p50_ms'], '.2f')} / {_num(r['p99_ms'], '.2f')} / "
                    f"{_num(r['p999_ms'], '.2f')}; {_num(r['received_per_s'])}{_host_speed(r)}",
                )
            )
    return rows


def _leader_failover_rows(s: dict[str, Any]) -> list[Row]:
    lf = _dig(s, "replicated", "leader_failover") or {}
    if not lf:
        return []
    return [
        (
            "replicated",
            "partition-leader failover, kill -9 -> first acks=all ack (median s; trials)",
            f"{_num(lf.get('median_s'), '.2f')}; "
            + ", ".join(_num(t, ".2f") for t in lf.get("trials_s", [])),
        )
    ]


def _controller_failover_rows(s: dict[str, Any]) -> list[Row]:
    cf = s.get("controller_failover", {})
    if "write_median_s" not in cf:
        return []
    return [
        (
            "controller_failover",
            "kill -9 of the active controller -> new Raft leader seen / "
            "next committed write (median s; max write s; failed trials)",
            f"{_num(cf.get('new_leader_median_s'), '.2f')} / "
            f"{_num(cf['write_median_s'], '.2f')}; {_num(cf.get('write_max_s'), '.2f')}; "
            f"{cf.get('failed_trials')}",
        )
    ]


def _restart_row(p: dict[str, Any], prefix: str, label: str) -> Row:
    error = p.get(prefix + "_error")
    return (
        "partitions",
        f"broker restart after a {label}: from its start to its logs "
        "loaded / to the cluster ready again (s)",
        f"{_num(p.get(prefix + '_logs_loaded_s'), '.1f')} / "
        f"{_num(p.get(prefix + '_ready_s'), '.1f')}" + (f" ({error})" if error else ""),
    )


def _partitions_rows(s: dict[str, Any]) -> list[Row]:
    p = s.get("partitions", {})
    if "partitions" not in p:
        return []
    rss = p.get("rss_mib_after", {})
    return [
        (
            "partitions",
            f"{p['partitions']:,} partitions RF 3: acknowledged / visible on "
            "every broker / logs created everywhere (s)",
            f"{_num(p.get('ack_s'), '.1f')} / {_num(p.get('visible_on_all_brokers_s'), '.1f')}"
            f" / {_num(p.get('logs_settled_on_all_brokers_s'), '.1f')}",
        ),
        _restart_row(p, "restart", "clean shutdown"),
        _restart_row(p, "restart_after_kill", "kill -9"),
        ("partitions", "RSS of the restarted broker (MiB)", _num(p.get("rss_mib_after_restart"))),
        (
            "partitions",
            "RSS per process after creation (MiB, by node id)",
            ", ".join(f"{k}: {_num(v)}" for k, v in rss.items()),
        ),
    ]


def _native_peers_rows(s: dict[str, Any]) -> list[Row]:
    native = s.get("native_peers", {})
    if "kraftlog" not in native or "nats" not in native:
        return []
    from bench.native_peers import ratios as native_ratios

    return [
        (
            "native_peers",
            f"{label}: kraftlog (librdkafka) / NATS (nats.go); ratio, > 1 favours kraftlog",
            f"{kraftlog} / {nats}; {ratio:.2f}",
        )
        for label, kraftlog, nats, ratio in native_ratios(native)
    ]


def _status_rows(s: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    for name, sec in s.items():
        if "skipped" in sec:
            rows.append((name, "skipped", sec["skipped"]))
        elif "error" in sec:
            rows.append((name, "FAILED", sec["error"]))
        elif "output_tail" in sec:
            rows.append((name, "ran (output in the JSON result)", f"{_num(sec.get('seconds'))} s"))
    return rows


_ROW_BUILDERS = (
    _anchor_rows,
    _storage_rows,
    _throughput_rows,
    _latency_rows,
    _leader_failover_rows,
    _controller_failover_rows,
    _partitions_rows,
    _native_peers_rows,
    _status_rows,
)
"""The table's row builders, in the order their rows appear."""


def _ratio_lines(ratios: dict[str, float]) -> list[str]:
    if not ratios:
        return []
    return [
        "",
        "kraftlog / NATS JetStream, same run (records/s: higher favours kraftlog; "
        "latency: lower favours kraftlog):",
        "",
        "| ratio | value |",
        "|---|---|",
        *(f"| {k} | {v:.2f} |" for k, v in ratios.items()),
    ]


def markdown(doc: dict[str, Any]) -> str:
    m = doc.get("machine", {})
    s = doc.get("sections", {})
    lines = [
        f"Run {doc.get('started_utc')} to {doc.get('finished_utc')}"
        f"{' (--quick)' if doc.get('quick') else ''}: {m.get('cores')} cores ({m.get('cpu')}), "
        f"{m.get('ram_gib')} GiB RAM, Linux {m.get('kernel')}, Python {m.get('python')}, "
        f"disk {m.get('disk')}. Load is the 1-minute load average before / after the section "
        "(other load moves every figure).",
        "",
        "| section | figure | value | load |",
        "|---|---|---|---|",
    ]
    for build in _ROW_BUILDERS:
        for section, label, value in build(s):
            # A section missing from the result was not run this time (--only / --skip).
            if section in s:
                lines.append(f"| {section} | {label} | {value} | {_load(s.get(section))} |")
    lines += _ratio_lines(doc.get("ratios_kraftlog_over_nats", {}))
    return "\n".join(lines)


def summary(doc: dict[str, Any]) -> str:
    return markdown(doc)


def _run_note(doc: dict[str, Any]) -> str:
    loads = [
        sec[k][0]
        for sec in doc.get("sections", {}).values()
        for k in ("load_before", "load_after")
        if k in sec
    ]
    load = f"load {min(loads):.1f}-{max(loads):.1f}" if loads else "load unknown"
    return f"run {doc.get('started_utc', '?')}, {doc.get('machine', {}).get('cores')} cores, {load}"


def _plots(doc: dict[str, Any]) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    IMG_DIR.mkdir(parents=True, exist_ok=True)
    written = []
    fig, ax = plt.subplots(figsize=(7, 4.5))
    styles = {"p50_ms": ":", "p99_ms": "-", "p999_ms": "--"}
    for name, label, colour in (
        ("replicated", "kraftlog RF 3 acks=all", "tab:blue"),
        ("nats", "NATS JetStream R3", "tab:orange"),
    ):
        lat = _get(doc, name, "e2e_latency") or {}
        rates = sorted(lat, key=int)
        for key, style in styles.items():
            xs = [lat[r]["offered_per_s"] for r in rates if lat[r]["samples"]]
            ys = [lat[r][key] for r in rates if lat[r]["samples"]]
            if xs:
                ax.plot(
                    xs,
                    ys,
                    style,
                    marker="o",
                    color=colour,
                    label=f"{label} {key[:-3].replace('p999', 'p99.9')}",
                )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("records/s offered (100 B records, paced producer)")
    ax.set_ylabel("end-to-end latency, ms")
    ax.axhline(TARGET_P99_MS, color="grey", linewidth=0.8)
    ax.annotate(
        f"kraftlog p99 target {TARGET_P99_MS} ms at 20,000/s",
        (0.01, TARGET_P99_MS),
        xycoords=("axes fraction", "data"),
        fontsize=7,
        color="grey",
        va="bottom",
    )
    ax.set_title(f"End-to-end latency against throughput\n{_run_note(doc)}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = IMG_DIR / "bench-latency.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)

    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.38
    for i, (name, label) in enumerate((("replicated", "kraftlog RF 3"), ("nats", "NATS R3"))):
        values = [(_get(doc, name, k) or {}).get("records_per_s", 0) for k in WORKLOADS]
        ax.bar([x + i * width for x in range(len(WORKLOADS))], values, width, label=label)
    ax.set_xticks(
        [x + width / 2 for x in range(len(WORKLOADS))],
        [k.replace("_", " ") + " B" for k in WORKLOADS],
    )
    ax.set_yscale("log")
    ax.set_ylabel("records/s")
    ax.set_title(f"Throughput, 3 replicas, acknowledged by a quorum\n{_run_note(doc)}", fontsize=10)
    ax.legend()
    fig.tight_layout()
    path = IMG_DIR / "bench-throughput.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
    return written


def publish(doc: dict[str, Any]) -> None:
    block = f"{BEGIN}\n{markdown(doc)}\n{END}"
    text = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    DOC.write_text(text)
    for path in _plots(doc):
        print(f"plot: {path.relative_to(ROOT)}")
    print(f"table: {DOC.relative_to(ROOT)}")


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "bench" / "results" / "latest.json"
    publish(json.loads(path.read_text()))


if __name__ == "__main__":
    main()
