"""The artifact folder of a checked chaos run, and its self-contained HTML report.

``write_report(result, directory)`` writes::

    <directory>/
        history.jsonl   the history (copied unless it is already there)
        seed            the run's seed, when the result carries one
        summary.json    CheckResult.summary(): ops ok/failed/unknown, anomaly counts, recoveries
        anomalies.json  {"counts": {kind: n}, "anomalies": [...]} (the kept ones, in time order)
        timeline.json   per bucket: sends invoked/ok/fail/info, availability, latency
        report.html     one file, no external resources: summary tables, throughput and
                        latency plotted against time (inline SVG) with the fault windows
                        shaded, availability over time, the transactions on their own
                        timeline (chaos.checker.txn_timeline), and the anomalies

Node logs are the runner's to copy into the same folder. Thread-safety: none needed (pure
function of the result, writing files).
"""

from __future__ import annotations

import html
import json
import math
import os
import shutil
import zlib
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from chaos.checker.model import INFORMATIONAL_KINDS, Bucket, CheckResult, FaultWindow
from chaos.checker.txn_timeline import render_txn_lanes

# Anomalies listed in the HTML (all kept ones are in anomalies.json).
MAX_ANOMALIES_IN_HTML = 200
_WIDTH = 960
_HEIGHT = 240
_MARGIN_LEFT = 64
_MARGIN_RIGHT = 16
_MARGIN_TOP = 28
_MARGIN_BOTTOM = 36
_FAULT_COLORS = ("#e4572e", "#f3a712", "#a23b72", "#2e86ab", "#3bb273", "#7768ae", "#c4a35a")


def write_report(result: CheckResult, directory: str | os.PathLike[str]) -> str:
    """Write the artifact folder (module docstring); returns the path of report.html."""
    out = os.fspath(directory)
    os.makedirs(out, exist_ok=True)
    history_copy = os.path.join(out, "history.jsonl")
    source = result.history_path
    if source and os.path.exists(source):
        already_there = os.path.exists(history_copy) and os.path.samefile(source, history_copy)
        if not already_there:
            shutil.copyfile(source, history_copy)
    if result.seed is not None:
        _write(os.path.join(out, "seed"), f"{result.seed}\n")
    _write(os.path.join(out, "summary.json"), json.dumps(result.summary(), indent=2) + "\n")
    anomalies = {
        "counts": result.anomaly_counts,
        "anomalies": [a.to_json() for a in result.anomalies],
    }
    _write(os.path.join(out, "anomalies.json"), json.dumps(anomalies, indent=2) + "\n")
    timeline = [
        {**asdict(b), "availability": b.availability, "throughput_per_s": b.throughput_per_s}
        for b in result.timeline
    ]
    _write(os.path.join(out, "timeline.json"), json.dumps(timeline) + "\n")
    report = os.path.join(out, "report.html")
    _write(report, render_html(result))
    return report


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


# -- HTML ---------------------------------------------------------------------------------


def render_html(result: CheckResult) -> str:
    e = html.escape
    verdict = "VALID" if result.valid else "INVALID"
    color = "#2b8a3e" if result.valid else "#c92a2a"
    sends = result.ops.get("send", {})
    rows = "".join(
        f"<tr><td>{e(f)}</td><td>{c.get('ok', 0)}</td><td>{c.get('fail', 0)}</td>"
        f"<td>{c.get('info', 0)}</td></tr>"
        for f, c in sorted(result.ops.items())
    )
    kinds = (
        "".join(
            f"<tr><td>{e(k)}</td><td>{n}</td><td>"
            f"{'informational' if k in INFORMATIONAL_KINDS else 'violation'}</td></tr>"
            for k, n in result.anomaly_counts.items()
        )
        or "<tr><td colspan=3>none</td></tr>"
    )
    faults = (
        "".join(
            f"<tr><td>{e(w.fault)}</td><td>{e(', '.join(map(str, w.targets)))}</td>"
            f"<td>{w.start:.1f}</td><td>{'' if w.end is None else f'{w.end:.1f}'}</td></tr>"
            for w in result.fault_windows
        )
        or "<tr><td colspan=4>none</td></tr>"
    )
    recoveries = (
        "".join(
            f"<tr><td>{r.heal_time:.1f}</td><td>"
            f"{'-' if r.recovered_after_s is None else f'{r.recovered_after_s:.2f}'}</td>"
            f"<td>{e(', '.join(f'{t}/{p}' for t, p in r.unrecovered))}</td></tr>"
            for r in result.recoveries
        )
        or "<tr><td colspan=3>no full heal</td></tr>"
    )
    listed = result.anomalies[:MAX_ANOMALIES_IN_HTML]
    anomaly_items = "".join(
        f"<li><b>{e(a.kind)}</b>"
        f"{'' if a.time is None else f' at t={a.time:.3f}s'}: {e(a.message)}</li>"
        for a in listed
    )
    more = len(result.anomalies) - len(listed)
    notes = "".join(f"<li>{e(n)}</li>" for n in result.notes)
    charts = "\n".join(
        [
            _chart(
                "Acknowledged sends per second",
                "sends/s",
                [
                    (
                        "ok/s",
                        "#1c7ed6",
                        [(b.start + b.width / 2, b.throughput_per_s) for b in result.timeline],
                    )
                ],
                result,
            ),
            _chart(
                "Send latency (invoke to ack)",
                "ms",
                [
                    ("p50", "#2b8a3e", _points(result.timeline, "latency_p50_ms")),
                    ("p99", "#e67700", _points(result.timeline, "latency_p99_ms")),
                    ("max", "#868e96", _points(result.timeline, "latency_max_ms")),
                ],
                result,
            ),
            _chart(
                "Availability (share of completed sends that were acknowledged)",
                "%",
                [
                    (
                        "available",
                        "#5f3dc4",
                        [
                            (b.start + b.width / 2, 100.0 * b.availability)
                            for b in result.timeline
                            if b.availability is not None
                        ],
                    )
                ],
                result,
                y_max=100.0,
            ),
        ]
    )
    txn_counts = result.summary()["transactions"]
    txn_section = (
        "<h2>Transactions</h2>"
        f"<p>committed {txn_counts['committed']}, aborted {txn_counts['aborted']}, "
        f"unknown {txn_counts['unknown']}.</p>"
        + render_txn_lanes(result.transactions, result.fault_windows, result.end_time, _WIDTH)
        if result.transactions
        else ""
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>kraftlog chaos report: {verdict}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 24px; color: #212529; max-width: 1000px; }}
h1 span {{ color: {color}; }}
table {{ border-collapse: collapse; margin: 8px 0 20px; }}
td, th {{ border: 1px solid #dee2e6; padding: 3px 10px; text-align: left; }}
th {{ background: #f1f3f5; }}
li {{ margin: 2px 0; font-size: 14px; }}
svg {{ background: #fff; border: 1px solid #dee2e6; margin-bottom: 16px; }}
</style></head><body>
<h1>Chaos run: <span>{verdict}</span></h1>
<p>History {e(result.history_path)}; seed {e(str(result.seed))}; {result.end_time:.1f} s;
sends ok {sends.get("ok", 0)}, failed {sends.get("fail", 0)}, unknown {sends.get("info", 0)};
{result.violation_count} violation(s).</p>
<h2>Operations</h2>
<table><tr><th>f</th><th>ok</th><th>fail</th><th>info (unknown)</th></tr>{rows}</table>
<h2>Anomalies by kind</h2>
<table><tr><th>kind</th><th>count</th><th>class</th></tr>{kinds}</table>
<h2>Throughput, latency and availability</h2>
<p>Shaded: fault windows (hover for the fault and its targets).</p>
{charts}
{txn_section}
<h2>Faults</h2>
<table><tr><th>fault</th><th>targets</th><th>start s</th><th>heal s</th></tr>{faults}</table>
<h2>Recovery after full heals</h2>
<table><tr><th>heal at s</th><th>all partitions writable after s</th><th>not recovered</th>
</tr>{recoveries}</table>
<h2>Anomalies</h2>
<ul>{anomaly_items or "<li>none</li>"}</ul>
{f"<p>{more} more in anomalies.json.</p>" if more > 0 else ""}
<h2>Notes</h2>
<ul>{notes or "<li>none</li>"}</ul>
</body></html>
"""


def _points(buckets: Sequence[Bucket], attr: str) -> list[tuple[float, float]]:
    pts: list[tuple[float, float]] = []
    for b in buckets:
        v = getattr(b, attr)
        if v is not None:
            pts.append((b.start + b.width / 2, float(v)))
    return pts


def _nice_step(span: float, ticks: int) -> float:
    if span <= 0:
        return 1.0
    raw = span / ticks
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def _fault_color(fault: str) -> str:
    return _FAULT_COLORS[zlib.crc32(fault.encode()) % len(_FAULT_COLORS)]


def _chart(
    title: str,
    unit: str,
    series: list[tuple[str, str, list[tuple[float, float]]]],
    result: CheckResult,
    *,
    y_max: float | None = None,
) -> str:
    e = html.escape
    x_max = max(result.end_time, 1e-9)
    top = (
        y_max if y_max is not None else max((y for _, _, pts in series for _, y in pts), default=0)
    )
    y_step = _nice_step(top or 1.0, 5)
    top = y_step * math.ceil((top or 1.0) / y_step)
    plot_w = _WIDTH - _MARGIN_LEFT - _MARGIN_RIGHT
    plot_h = _HEIGHT - _MARGIN_TOP - _MARGIN_BOTTOM

    def sx(t: float) -> float:
        return _MARGIN_LEFT + plot_w * min(max(t / x_max, 0.0), 1.0)

    def sy(v: float) -> float:
        return _MARGIN_TOP + plot_h * (1.0 - min(max(v / top, 0.0), 1.0))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}" '
        f'font-size="11" font-family="sans-serif">',
        f'<text x="{_MARGIN_LEFT}" y="16" font-size="13" font-weight="bold">{e(title)}</text>',
    ]
    parts.extend(_fault_rects(result.fault_windows, x_max, sx, plot_h))
    x_step = _nice_step(x_max, 10)
    tick = 0.0
    while tick <= x_max + 1e-9:
        x = sx(tick)
        parts.append(
            f'<line x1="{x:.1f}" y1="{_MARGIN_TOP + plot_h}" x2="{x:.1f}" '
            f'y2="{_MARGIN_TOP + plot_h + 4}" stroke="#495057"/>'
            f'<text x="{x:.1f}" y="{_MARGIN_TOP + plot_h + 16}" text-anchor="middle">'
            f"{tick:g}</text>"
        )
        tick += x_step
    value = 0.0
    while value <= top + 1e-9:
        y = sy(value)
        parts.append(
            f'<line x1="{_MARGIN_LEFT}" y1="{y:.1f}" x2="{_MARGIN_LEFT + plot_w}" y2="{y:.1f}" '
            f'stroke="#e9ecef"/><text x="{_MARGIN_LEFT - 6}" y="{y + 4:.1f}" '
            f'text-anchor="end">{value:g}</text>'
        )
        value += y_step
    parts.append(
        f'<rect x="{_MARGIN_LEFT}" y="{_MARGIN_TOP}" width="{plot_w}" height="{plot_h}" '
        f'fill="none" stroke="#495057"/>'
        f'<text x="{_MARGIN_LEFT + plot_w / 2}" y="{_HEIGHT - 4}" text-anchor="middle">'
        f"time (s)</text>"
        f'<text x="12" y="{_MARGIN_TOP + plot_h / 2}" text-anchor="middle" '
        f'transform="rotate(-90 12 {_MARGIN_TOP + plot_h / 2})">{e(unit)}</text>'
    )
    legend_x = _MARGIN_LEFT + plot_w - 8
    for i, (label, color, pts) in enumerate(series):
        if pts:
            path = " ".join(f"{sx(t):.1f},{sy(v):.1f}" for t, v in pts)
            parts.append(
                f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="1.5"/>'
            )
        ly = _MARGIN_TOP + 14 + 14 * i
        parts.append(
            f'<text x="{legend_x}" y="{ly}" text-anchor="end" fill="{color}">{e(label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _fault_rects(windows: Sequence[FaultWindow], x_max: float, sx: Any, plot_h: float) -> list[str]:
    parts: list[str] = []
    for w in windows:
        x0 = sx(w.start)
        x1 = sx(w.end if w.end is not None else x_max)
        color = _fault_color(w.fault)
        label = f"{w.fault} {', '.join(map(str, w.targets))}".strip()
        end = "end" if w.end is None else f"{w.end:.1f}s"
        parts.append(
            f'<rect x="{x0:.1f}" y="{_MARGIN_TOP}" width="{max(x1 - x0, 1.0):.1f}" '
            f'height="{plot_h}" fill="{color}" fill-opacity="0.15">'
            f"<title>{html.escape(label)}: {w.start:.1f}s to {end}</title></rect>"
            f'<text x="{x0 + 2:.1f}" y="{_MARGIN_TOP + 10}" font-size="9" fill="{color}">'
            f"{html.escape(w.fault)}</text>"
        )
    return parts
