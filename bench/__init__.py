"""Benchmarks: each module prints figures and never asserts; bench.suite runs them all
(`make bench`)."""
