"""kafka-python's KafkaAdminClient for tests against a real cluster.

Importing kafka-python warns once (DeprecationWarning from importlib.resources), which the
suite turns into an error; :func:`kafka_python_admin` imports it with that warning silenced, so
a test may import other kafka-python names (errors, MemberToRemove...) after it."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any


@contextmanager
def kafka_python_admin(bootstrap_servers: str | Sequence[str]) -> Iterator[Any]:
    """A KafkaAdminClient on ``bootstrap_servers``, closed on exit."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.admin import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers)
    try:
        yield admin
    finally:
        admin.close()
