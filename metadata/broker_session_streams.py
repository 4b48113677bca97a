"""BrokerSessionStreams: the broker session streams the active controller holds.

A broker opens one BrokerSession stream (a response-streaming gRPC call) to the active
controller once it is registered, and keeps it open while its process lives. The controller
sends one message (the session is held, or why not) and then sends nothing more. When the
stream ends from the broker's side, the broker's process is gone: a killed or crashed process
has its connections closed by its kernel (end of stream or reset), so the controller fences
the broker at once instead of waiting ``broker.session.timeout.ms`` for a heartbeat that will
never come. A broker that is stopped (SIGSTOP) or cut off by the network closes nothing and is
still fenced only by the timeout: nothing proves its process gone, and fencing it early could
move leadership away from a live leader for a pause.

Invariants:

- At most one stream per broker id is current. Opening another for the same broker (a new
  registration, or a reconnect) ends the previous one, whose end is then no loss.
- A stream the controller ends itself (it stops being active, it is stopping, or a newer
  stream replaced it) is never reported lost.
- A loss is reported at most once per stream, with the registration epoch the stream was
  opened for: the controller ignores it unless that is still the broker's registration.
- At most ``max_streams`` streams are held at once: each holds one gRPC worker thread while it
  waits. Past that a broker is refused and relies on its heartbeats alone.

Thread-safety: every method may be called from any thread (gRPC worker threads hold the
streams, gRPC's termination callbacks report their end, the controller's event thread ends them
all); one lock guards the table, and ``on_lost`` is called without it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

# How often a held stream checks that its call is still alive, in case gRPC's termination
# callback is late; a loss is normally reported by that callback within milliseconds.
HOLD_POLL_S = 1.0


class SessionStream:
    """One held stream: the broker and the registration epoch it was opened for."""

    __slots__ = ("_done", "broker_epoch", "broker_id")

    def __init__(self, broker_id: int, broker_epoch: int) -> None:
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self._done = threading.Event()

    @property
    def done(self) -> bool:
        return self._done.is_set()


class BrokerSessionStreams:
    def __init__(self, max_streams: int, on_lost: Callable[[int, int], None]) -> None:
        if max_streams < 1:
            raise ValueError(f"max_streams must be >= 1, got {max_streams}")
        self.max_streams = max_streams
        self._on_lost = on_lost
        self._lock = threading.Lock()
        self._current: dict[int, SessionStream] = {}

    def __len__(self) -> int:
        with self._lock:
            return len(self._current)

    def open(self, broker_id: int, broker_epoch: int) -> SessionStream | None:
        """Hold a new stream for ``broker_id``, ending its previous one; None when
        ``max_streams`` other brokers' streams are held already."""
        stream = SessionStream(broker_id, broker_epoch)
        with self._lock:
            previous = self._current.get(broker_id)
            if previous is None and len(self._current) >= self.max_streams:
                return None
            self._current[broker_id] = stream
        if previous is not None:
            previous._done.set()
        return stream

    def hold(self, stream: SessionStream, call_alive: Callable[[], bool]) -> None:
        """Block until ``stream`` ends: the controller ended it, or the broker's side did (then
        reported lost). ``call_alive`` is the gRPC call's own view, checked every
        :data:`HOLD_POLL_S` in case its termination callback has not run."""
        while not stream._done.wait(HOLD_POLL_S):
            if not call_alive():
                self.broker_side_ended(stream)
                return

    def broker_side_ended(self, stream: SessionStream) -> None:
        """The gRPC call ended (gRPC's termination callback, or :meth:`hold` noticed): a loss,
        unless the stream is no longer current (the controller ended it itself, or a newer one
        replaced it: both take it out of the table first)."""
        with self._lock:
            lost = self._current.get(stream.broker_id) is stream
            if lost:
                del self._current[stream.broker_id]
        stream._done.set()
        if lost:
            self._on_lost(stream.broker_id, stream.broker_epoch)

    def end_all(self) -> None:
        """End every held stream without reporting a loss (the controller stops being active
        or stops): their brokers open new ones, to the new active controller."""
        with self._lock:
            streams, self._current = list(self._current.values()), {}
        for stream in streams:
            stream._done.set()
