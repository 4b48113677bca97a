"""A small Prometheus registry: Counter, Gauge, Histogram (fixed buckets), with labels, and the
text exposition format 0.0.4::

    # HELP kraftlog_requests_total Requests handled, by API.
    # TYPE kraftlog_requests_total counter
    kraftlog_requests_total{api="Produce"} 42

Label values are escaped (backslash, double quote, newline); numbers use Go's formatting
conventions (``+Inf``, ``-Inf``, ``NaN``); a histogram exposes cumulative ``_bucket{le=...}``
series, ``_sum`` and ``_count``. A gauge may be backed by a function evaluated at scrape time
(:meth:`Gauge.set_function`), so a scrape reads the live value (for example the number of
under-replicated partitions) without any bookkeeping on the hot path.

Bounds: a metric holds at most ``max_series`` label combinations (default
:data:`DEFAULT_MAX_SERIES`); further combinations are counted in
``kraftlog_metrics_dropped_series_total`` and not stored, so a client sending random topic
names cannot grow the broker's memory without bound.

Thread-safety: every metric has its own lock; any thread may update or scrape.
"""

from __future__ import annotations

import bisect
import math
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
DEFAULT_MAX_SERIES = 10_000
# Prometheus' default latency buckets, in seconds.
DEFAULT_LATENCY_BUCKETS_S = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
_NAME_RE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")

LabelValues = tuple[str, ...]


class MetricError(ValueError):
    """A metric was declared or used inconsistently (bad name, wrong number of labels)."""


def format_value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def escape_label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _labels_text(names: Sequence[str], values: Sequence[str], extra: str = "") -> str:
    parts = [f'{n}="{escape_label_value(v)}"' for n, v in zip(names, values, strict=True)]
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


class _Metric:
    TYPE = ""

    def __init__(
        self,
        name: str,
        help_text: str,
        label_names: Sequence[str] = (),
        *,
        max_series: int = DEFAULT_MAX_SERIES,
        on_drop: Callable[[], None] | None = None,
    ) -> None:
        if not _NAME_RE.match(name):
            raise MetricError(f"invalid metric name {name!r}")
        for label in label_names:
            if not _LABEL_RE.match(label) or label.startswith("__") or label == "le":
                raise MetricError(f"invalid label name {label!r} on {name}")
        self.name = name
        self.help = help_text
        self.label_names = tuple(label_names)
        self.max_series = max_series
        self._lock = threading.Lock()
        self._on_drop = on_drop

    def _key(self, labels: tuple[str, ...]) -> LabelValues:
        if len(labels) != len(self.label_names):
            raise MetricError(
                f"{self.name} takes labels {self.label_names}, got {len(labels)} values"
            )
        # Called per request: labels of str (the usual) are the key as they are.
        if all(type(v) is str for v in labels):
            return labels
        return tuple(str(v) for v in labels)

    def _room_for(self, series: Mapping[LabelValues, object], key: LabelValues) -> bool:
        if key in series or len(series) < self.max_series:
            return True
        if self._on_drop is not None:
            self._on_drop()
        return False

    def header(self) -> list[str]:
        return [f"# HELP {self.name} {escape_help(self.help)}", f"# TYPE {self.name} {self.TYPE}"]

    def expose(self) -> list[str]:
        raise NotImplementedError


class Counter(_Metric):
    """A monotonically increasing value; ``inc`` with a negative amount raises."""

    TYPE = "counter"

    def __init__(
        self,
        name: str,
        help_text: str,
        label_names: Sequence[str] = (),
        *,
        max_series: int = DEFAULT_MAX_SERIES,
        on_drop: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(name, help_text, label_names, max_series=max_series, on_drop=on_drop)
        self._values: dict[LabelValues, float] = {}

    def inc(self, amount: float = 1.0, *labels: str) -> None:
        if amount < 0:
            raise MetricError(f"{self.name}: a counter cannot decrease")
        key = self._key(labels)
        with self._lock:
            if self._room_for(self._values, key):
                self._values[key] = self._values.get(key, 0.0) + amount

    def value(self, *labels: str) -> float:
        with self._lock:
            return self._values.get(self._key(labels), 0.0)

    def expose(self) -> list[str]:
        with self._lock:
            items = sorted(self._values.items())
        lines = self.header()
        if not items and not self.label_names:
            items = [((), 0.0)]
        for key, value in items:
            lines.append(f"{self.name}{_labels_text(self.label_names, key)} {format_value(value)}")
        return lines


class Gauge(_Metric):
    """A value that goes up and down, or a function evaluated at scrape time."""

    TYPE = "gauge"

    def __init__(
        self,
        name: str,
        help_text: str,
        label_names: Sequence[str] = (),
        *,
        max_series: int = DEFAULT_MAX_SERIES,
        on_drop: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(name, help_text, label_names, max_series=max_series, on_drop=on_drop)
        self._values: dict[LabelValues, float] = {}
        self._function: Callable[[], Iterable[tuple[LabelValues, float]] | float] | None = None

    def set(self, value: float, *labels: str) -> None:
        key = self._key(labels)
        with self._lock:
            if self._room_for(self._values, key):
                self._values[key] = float(value)

    def inc(self, amount: float = 1.0, *labels: str) -> None:
        key = self._key(labels)
        with self._lock:
            if self._room_for(self._values, key):
                self._values[key] = self._values.get(key, 0.0) + amount

    def remove(self, *labels: str) -> None:
        with self._lock:
            self._values.pop(self._key(labels), None)

    def set_function(
        self, function: Callable[[], Iterable[tuple[LabelValues, float]] | float]
    ) -> None:
        """Evaluate ``function`` at every scrape: a number (no labels) or (labels, value)
        pairs. It runs on the scraping thread and must be quick and thread-safe."""
        self._function = function

    def value(self, *labels: str) -> float:
        return dict(self._samples()).get(self._key(labels), 0.0)

    def _samples(self) -> list[tuple[LabelValues, float]]:
        function = self._function
        if function is not None:
            result = function()
            if isinstance(result, int | float):
                return [((), float(result))]
            return [(tuple(k), float(v)) for k, v in list(result)[: self.max_series]]
        with self._lock:
            return sorted(self._values.items())

    def expose(self) -> list[str]:
        lines = self.header()
        samples = self._samples()
        if not samples and not self.label_names:
            samples = [((), 0.0)]
        for key, value in sorted(samples):
            lines.append(f"{self.name}{_labels_text(self.label_names, key)} {format_value(value)}")
        return lines


class Histogram(_Metric):
    """Observations counted in fixed buckets (upper bounds, ascending; +Inf added)."""

    TYPE = "histogram"

    def __init__(
        self,
        name: str,
        help_text: str,
        label_names: Sequence[str] = (),
        *,
        buckets: Sequence[float] = DEFAULT_LATENCY_BUCKETS_S,
        max_series: int = DEFAULT_MAX_SERIES,
        on_drop: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(name, help_text, label_names, max_series=max_series, on_drop=on_drop)
        bounds = [float(b) for b in buckets]
        if not bounds or bounds != sorted(set(bounds)):
            raise MetricError(f"{name}: buckets must be a non-empty ascending list")
        if not math.isinf(bounds[-1]):
            bounds.append(math.inf)
        self.buckets = tuple(bounds)
        # labels -> [per-bucket counts (not cumulative), sum, count]
        self._series: dict[LabelValues, tuple[list[int], list[float]]] = {}

    def observe(self, value: float, *labels: str) -> None:
        key = self._key(labels)
        # The first bucket whose bound >= value; the last bound is +Inf, and NaN (which
        # compares false with every bound) lands there too.
        last = len(self.buckets) - 1
        index = min(bisect.bisect_left(self.buckets, value), last) if value == value else last
        with self._lock:
            if not self._room_for(self._series, key):
                return
            series = self._series.get(key)
            if series is None:
                series = ([0] * len(self.buckets), [0.0, 0.0])
                self._series[key] = series
            series[0][index] += 1
            series[1][0] += value
            series[1][1] += 1

    def count(self, *labels: str) -> int:
        with self._lock:
            series = self._series.get(self._key(labels))
            return int(series[1][1]) if series else 0

    def expose(self) -> list[str]:
        with self._lock:
            items = sorted((k, (list(c), list(s))) for k, (c, s) in self._series.items())
        lines = self.header()
        for key, (counts, (total, count)) in items:
            cumulative = 0
            for bound, n in zip(self.buckets, counts, strict=True):
                cumulative += n
                le = f'le="{format_value(bound)}"'
                labels = _labels_text(self.label_names, key, le)
                lines.append(f"{self.name}_bucket{labels} {cumulative}")
            labels = _labels_text(self.label_names, key)
            lines.append(f"{self.name}_sum{labels} {format_value(total)}")
            lines.append(f"{self.name}_count{labels} {format_value(count)}")
        return lines


class Registry:
    """Holds metrics by name; :meth:`expose` renders them all."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._metrics: dict[str, _Metric] = {}
        self.dropped_series = Counter(
            "kraftlog_metrics_dropped_series_total",
            "Label combinations not stored because a metric reached its series limit.",
        )
        self._metrics[self.dropped_series.name] = self.dropped_series

    def _add(self, metric: _Metric) -> _Metric:
        with self._lock:
            existing = self._metrics.get(metric.name)
            if existing is not None:
                if type(existing) is not type(metric) or (
                    existing.label_names != metric.label_names
                ):
                    raise MetricError(f"{metric.name} is already registered differently")
                return existing
            self._metrics[metric.name] = metric
            return metric

    def _drop(self) -> None:
        self.dropped_series.inc()

    def counter(self, name: str, help_text: str, labels: Sequence[str] = ()) -> Counter:
        metric = self._add(Counter(name, help_text, labels, on_drop=self._drop))
        if not isinstance(metric, Counter):
            raise MetricError(f"{name} is not a counter")
        return metric

    def gauge(self, name: str, help_text: str, labels: Sequence[str] = ()) -> Gauge:
        metric = self._add(Gauge(name, help_text, labels, on_drop=self._drop))
        if not isinstance(metric, Gauge):
            raise MetricError(f"{name} is not a gauge")
        return metric

    def histogram(
        self,
        name: str,
        help_text: str,
        labels: Sequence[str] = (),
        *,
        buckets: Sequence[float] = DEFAULT_LATENCY_BUCKETS_S,
    ) -> Histogram:
        metric = self._add(Histogram(name, help_text, labels, buckets=buckets, on_drop=self._drop))
        if not isinstance(metric, Histogram):
            raise MetricError(f"{name} is not a histogram")
        return metric

    def get(self, name: str) -> _Metric | None:
        with self._lock:
            return self._metrics.get(name)

    def expose(self) -> str:
        """The whole registry in the text exposition format 0.0.4."""
        with self._lock:
            metrics = sorted(self._metrics.values(), key=lambda m: m.name)
        lines: list[str] = []
        for metric in metrics:
            try:
                lines.extend(metric.expose())
            except Exception as exc:  # a failing gauge function must not break the scrape
                lines.append(f"# {metric.name} unavailable: {exc.__class__.__name__}")
        return "\n".join(lines) + "\n"
