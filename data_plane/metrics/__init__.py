"""Prometheus metrics: a small registry (counters, gauges, histograms with fixed buckets) in
the text exposition format 0.0.4, an HTTP endpoint on a thread, and the kraftlog metric
names (docs/metrics.md)."""
