"""Transactions on the report's timeline: one span per transaction (begin, commit start,
end, outcome, and when a read_committed reader first saw one of its writes: the moment its
commit markers were in the log and readable), and their SVG rendering as one lane per
producing process, with the fault windows shaded.

Outcomes: ``committed`` (the commit returned), ``aborted`` (meant to abort, or the abort
was acknowledged), ``unknown``. A lane draws each span as a bar from begin to end in the
outcome's colour, a tick where the commit began and a dot where the writes became visible.

Thread-safety: pure functions.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

from chaos.checker.model import FaultWindow
from chaos.checker.txn_views import TxnViews

# Spans drawn at most (the first ones by begin time); the rest are only counted.
MAX_SPANS_DRAWN = 5000
OUTCOME_COLORS = {"committed": "#2b8a3e", "aborted": "#c92a2a", "unknown": "#868e96"}
_LANE_H = 18
_LEFT = 150
_RIGHT = 16
_TOP = 28
_BOTTOM = 30


@dataclass(frozen=True, slots=True)
class TxnSpan:
    id: str
    process: str
    start: float
    end: float | None
    commit_at: float | None
    outcome: str  # committed | aborted | unknown
    visible_at: float | None  # first read_committed read of one of its writes


def build_txn_spans(txv: TxnViews) -> list[TxnSpan]:
    first_seen: dict[str, float] = {}
    for r in txv.reads:
        if r.committed and r.value is not None and not r.final:
            first_seen[r.value] = min(first_seen.get(r.value, r.time), r.time)
    spans = []
    for txn in txv.txns.values():
        seen = [first_seen[v] for _tp, v in txn.writes if v in first_seen]
        outcome = "committed" if txn.committed else "aborted" if txn.aborted else "unknown"
        spans.append(
            TxnSpan(
                txn.id,
                txn.process,
                txn.invoke_time,
                txn.complete_time,
                txn.commit_at,
                outcome,
                min(seen) if seen else None,
            )
        )
    spans.sort(key=lambda s: s.start)
    return spans


def render_txn_lanes(
    spans: Sequence[TxnSpan], windows: Sequence[FaultWindow], end_time: float, width: int
) -> str:
    """An SVG of the spans, one lane per process ('' when there are none)."""
    if not spans:
        return ""
    e = html.escape
    drawn = spans[:MAX_SPANS_DRAWN]
    lanes = sorted({s.process for s in drawn})
    height = _TOP + _BOTTOM + _LANE_H * len(lanes)
    plot_w = width - _LEFT - _RIGHT
    x_max = max(end_time, 1e-9)

    def sx(t: float) -> float:
        return _LEFT + plot_w * min(max(t / x_max, 0.0), 1.0)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-size="11" font-family="sans-serif">',
        f'<text x="{_LEFT}" y="16" font-size="13" font-weight="bold">Transactions '
        "(bar: begin to end; tick: commit begins; dot: first read_committed read)</text>",
    ]
    for w in windows:
        x0, x1 = sx(w.start), sx(w.end if w.end is not None else x_max)
        parts.append(
            f'<rect x="{x0:.1f}" y="{_TOP}" width="{max(x1 - x0, 1.0):.1f}" '
            f'height="{_LANE_H * len(lanes)}" fill="#f3a712" fill-opacity="0.15">'
            f"<title>{e(w.fault)} {e(', '.join(map(str, w.targets)))}</title></rect>"
        )
    for i, lane in enumerate(lanes):
        y = _TOP + _LANE_H * i
        parts.append(
            f'<text x="{_LEFT - 6}" y="{y + 13}" text-anchor="end">{e(lane)}</text>'
            f'<line x1="{_LEFT}" y1="{y + _LANE_H}" x2="{_LEFT + plot_w}" y2="{y + _LANE_H}" '
            'stroke="#e9ecef"/>'
        )
    row = {lane: i for i, lane in enumerate(lanes)}
    for s in drawn:
        y = _TOP + _LANE_H * row[s.process] + 4
        x0 = sx(s.start)
        x1 = sx(s.end if s.end is not None else x_max)
        color = OUTCOME_COLORS[s.outcome]
        parts.append(
            f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1.0):.1f}" height="10" '
            f'fill="{color}" fill-opacity="0.6"><title>{e(s.id)}: {s.outcome}</title></rect>'
        )
        if s.commit_at is not None:
            xc = sx(s.commit_at)
            parts.append(
                f'<line x1="{xc:.1f}" y1="{y - 2}" x2="{xc:.1f}" y2="{y + 12}" stroke="#212529"/>'
            )
        if s.visible_at is not None:
            parts.append(f'<circle cx="{sx(s.visible_at):.1f}" cy="{y + 5}" r="2" fill="#1c7ed6"/>')
    more = len(spans) - len(drawn)
    note = f" ({more} more not drawn)" if more > 0 else ""
    parts.append(
        f'<text x="{_LEFT}" y="{height - 8}">time (s), 0 to {x_max:.1f}{e(note)}</text></svg>'
    )
    return "".join(parts)
