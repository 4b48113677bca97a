"""The node status file: what a running node tells its supervisor (``kraftlog start
--status-file P``; a local cluster puts it at ``D/node-<id>/node-status.json``).

Written atomically (tmp + rename) whenever its content changes, checked every
``STATUS_INTERVAL_S``, and once more on shutdown with ``"state": "stopped"``. Layout::

    {"node_id": 101, "pid": 1234, "roles": ["broker"], "cluster_id": "...",
     "state": "running" | "stopping" | "stopped", "started_at_ms": ..., "updated_at_ms": ...,
     "components": {"controller": {...}, "broker": {...}}}

The broker component reports its epoch, fencing, metadata offset, a digest of its metadata
image (equal digests at equal offsets = identical images) and, for small images, every
partition (see :meth:`deploy.broker_component.BrokerComponent.status`). Tests, ``cluster
status`` and the benchmark read it; the node never reads it back.

Thread-safety: one writer thread; ``set_state`` may be called from any thread.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

STATUS_INTERVAL_S = 0.2

StatusFn = Callable[[], dict[str, object]]


class NodeStatusWriter:
    def __init__(self, path: str, base: dict[str, Any]) -> None:
        self.path = path
        self._base = dict(base)
        self._base.setdefault("pid", os.getpid())
        self._base["started_at_ms"] = int(time.time() * 1000)
        self._state = "running"
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_text = ""

    def set_state(self, state: str) -> None:
        with self._lock:
            self._state = state

    def start(self, status_fn: StatusFn) -> None:
        self.write(status_fn)
        self._thread = threading.Thread(
            target=self._run, args=(status_fn,), name="node-status", daemon=True
        )
        self._thread.start()

    def stop(self, status_fn: StatusFn) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.set_state("stopped")
        self.write(status_fn)

    def _run(self, status_fn: StatusFn) -> None:
        while not self._stop.wait(STATUS_INTERVAL_S):
            self.write(status_fn)

    def write(self, status_fn: StatusFn) -> None:
        """Write the file if its content changed; never raises (logged instead)."""
        try:
            components = status_fn()
            with self._lock:
                doc = dict(self._base, state=self._state, components=components)
            body = json.dumps(doc, sort_keys=True, default=str)
            if body == self._last_text:
                return
            self._last_text = body
            doc["updated_at_ms"] = int(time.time() * 1000)
            tmp = self.path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(doc, f, sort_keys=True, default=str)
            os.replace(tmp, self.path)
        except Exception:
            logger.exception("cannot write the status file %s", self.path)


def read_status(path: str) -> dict[str, Any] | None:
    """The last status a node wrote, or None if there is none (or it is unreadable)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None
