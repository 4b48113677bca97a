"""A kraftlog node process: a list of components started in order and stopped in reverse.

``kraftlog start --config F`` builds the components that ``process.roles`` asks for:

    controller  -> ControllerComponent (metadata log voter + gRPC control plane)
    broker      -> BrokerComponent (LogManager + BrokerMetadataManager + local replicas)

On a combined node the controller comes first, so the broker's controlled shutdown (which
needs an active controller) runs while the local voter still serves. The Kafka wire-protocol
server is one more component after the broker.

A component implements :class:`Component`. ``begin_shutdown`` is the polite phase (a broker's
controlled shutdown); ``stop`` releases everything. Neither may raise: a failure is logged and
the next component still stops.

Signals: SIGTERM and SIGINT start an orderly shutdown (exit code 0); a second one during the
shutdown is ignored (the supervisor's SIGKILL after its grace period is the hard stop).

A component that cannot go on (a broker whose every log directory failed) calls the
``on_fatal`` callback the node gives it: the same orderly shutdown, with exit code
:data:`EXIT_LOG_DIRS_FAILED`, so a supervisor restarts the process once the disk is repaired.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Sequence
from types import FrameType
from typing import Protocol

from deploy.node_status import NodeStatusWriter

logger = logging.getLogger(__name__)

# How often the main thread wakes while waiting for a stop signal (keeps signals responsive).
_WAIT_SLICE_S = 0.5
# Exit code after a fatal component failure (sysexits.h EX_IOERR): every log directory failed.
EXIT_LOG_DIRS_FAILED = 74


class Component(Protocol):
    name: str

    def start(self) -> None:
        """Start serving; raise (after cleaning up) if this component cannot start."""
        ...

    def begin_shutdown(self) -> None:
        """Prepare to stop while the rest of the node still runs (e.g. controlled shutdown)."""
        ...

    def stop(self) -> None:
        """Release every resource; never raises."""
        ...

    def status(self) -> dict[str, object]:
        """A JSON-serialisable snapshot of this component's state (for the status file)."""
        ...


class Node:
    """Runs ``components`` in order. Thread-safety: ``request_stop`` may be called from any
    thread or a signal handler; everything else from the main thread."""

    def __init__(
        self,
        node_id: int,
        roles: Sequence[str],
        components: Sequence[Component],
        status_writer: NodeStatusWriter | None = None,
    ) -> None:
        self.node_id = node_id
        self.roles = tuple(roles)
        self.components = list(components)
        self._started: list[Component] = []
        self._stop_requested = threading.Event()
        self._status_writer = status_writer
        self.exit_code = 0
        for component in self.components:
            if hasattr(component, "on_fatal"):
                component.on_fatal = self.request_fatal_stop

    def start(self) -> None:
        """Start every component; on failure stop those already started and re-raise."""
        for component in self.components:
            try:
                component.start()
            except BaseException:
                logger.info("node %d: %s failed to start; stopping", self.node_id, component.name)
                self._stop_started(polite=False)
                raise
            self._started.append(component)
            logger.info("node %d: %s started", self.node_id, component.name)
        if self._status_writer is not None:
            self._status_writer.start(self.snapshot_status)

    def request_stop(self) -> None:
        self._stop_requested.set()

    def request_fatal_stop(self, reason: str) -> None:
        """A component cannot go on: shut down in order and exit with EXIT_LOG_DIRS_FAILED."""
        logger.critical("node %d: %s: shutting down", self.node_id, reason)
        self.exit_code = EXIT_LOG_DIRS_FAILED
        self._stop_requested.set()

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested.is_set()

    def wait_for_stop_request(self) -> None:
        # Event.wait in slices: the main thread must return to the interpreter regularly for
        # Python-level signal handlers to run.
        while not self._stop_requested.wait(_WAIT_SLICE_S):
            pass

    def shutdown(self) -> None:
        if self._status_writer is not None:
            self._status_writer.set_state("stopping")
        self._stop_started(polite=True)
        if self._status_writer is not None:
            self._status_writer.stop(self.snapshot_status)

    def _stop_started(self, *, polite: bool) -> None:
        started, self._started = self._started, []
        if polite:
            for component in reversed(started):
                try:
                    component.begin_shutdown()
                except Exception:
                    logger.exception(
                        "node %d: %s: begin_shutdown failed", self.node_id, component.name
                    )
        for component in reversed(started):
            try:
                component.stop()
                logger.info("node %d: %s stopped", self.node_id, component.name)
            except Exception:
                logger.exception("node %d: %s: stop failed", self.node_id, component.name)

    def snapshot_status(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for component in self.components:
            try:
                out[component.name] = component.status()
            except Exception as e:  # a status probe must never take the node down
                out[component.name] = {"error": f"{type(e).__name__}: {e}"}
        return out


def install_signal_handlers(node: Node) -> None:
    def handler(signum: int, _frame: FrameType | None) -> None:
        if node.stop_requested:
            logger.info(
                "node %d: %s again; already stopping", node.node_id, signal.strsignal(signum)
            )
            return
        logger.info("node %d: %s: shutting down", node.node_id, signal.strsignal(signum))
        node.request_stop()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
