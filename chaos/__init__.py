"""Fault injection, workloads that record histories, the history checker and the runner."""
