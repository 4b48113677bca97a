"""RequestPipeline: the order, back-pressure, muting and close-after of one client
connection's requests, as a state machine with no sockets (the connection drives it).

- Order: every dispatched request gets a :class:`ResponseSlot`, in arrival order. A slot is
  resolved when its handler finishes (at once, or later for delayed and async requests), with
  a response frame or none (acks=0); :meth:`pop_responses` hands out resolved slots from the
  head only, so responses leave in request order whatever order they complete in.
- Back-pressure: a request is in flight from its dispatch until its response's last byte is
  written (:meth:`response_sent`); at most ``max_in_flight`` (``queued.max.requests``). Frames
  read beyond that wait (:meth:`frames_read`, :meth:`next_frame`) and reading stops
  (:attr:`reading_allowed`) until responses drain.
- Muting (KIP-219 quota throttling): :meth:`mute` until a time; nothing is dispatched or read
  meanwhile; a longer mute extends a running one, and only the latest mute's :meth:`unmute`
  ends it.
- Close-after: a slot resolved with ``close=True`` (a malformed or unsupported request, an
  authentication failure, a handler failure) ends the pipeline: the responses before it (and
  its own, if any) are still handed out, every later request and waiting frame is dropped, and
  :attr:`closing` tells the connection to close once those bytes are written.

Invariants: ``in_flight == len(slots) + unsent_responses <= max_in_flight`` after every
dispatch decision; a slot is resolved once; after ``closing`` no slot is opened. Illegal calls
raise :class:`PipelineStateError` and change nothing.

Frames are opaque here: the pipeline is generic in the request frames it queues (``Req``)
and the response frames its slots carry (``Resp``).

Thread-safety: none; one connection's event loop owns it.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from typing import Generic, TypeVar

Req = TypeVar("Req")
Resp = TypeVar("Resp")


class PipelineStateError(Exception):
    """A call the pipeline's state does not allow (a bug in the connection driving it)."""


class ResponseSlot(Generic[Resp]):
    """A request's place in the response order. ``frame`` None = no bytes to send."""

    __slots__ = ("close_after", "done", "frame")

    def __init__(self) -> None:
        self.done = False
        self.frame: Resp | None = None
        self.close_after = False


class RequestPipeline(Generic[Req, Resp]):
    __slots__ = (
        "_frames",
        "_mute_seq",
        "_muted_until_s",
        "_slots",
        "closing",
        "max_in_flight",
        "muted",
        "peak_in_flight",
        "unsent_responses",
    )

    def __init__(self, max_in_flight: int) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, got {max_in_flight}")
        self.max_in_flight = max_in_flight
        self._slots: collections.deque[ResponseSlot[Resp]] = collections.deque()
        self._frames: collections.deque[Req] = collections.deque()
        self.unsent_responses = 0
        self.muted = False
        self._muted_until_s = 0.0
        self._mute_seq = 0
        self.closing = False
        # Most requests in flight at once so far (bounded by max_in_flight).
        self.peak_in_flight = 0

    @property
    def in_flight(self) -> int:
        return len(self._slots) + self.unsent_responses

    @property
    def waiting_frames(self) -> int:
        return len(self._frames)

    @property
    def reading_allowed(self) -> bool:
        """Whether the connection may read more from its socket now."""
        return not self.closing and not self.muted

    @property
    def can_dispatch(self) -> bool:
        """Whether a waiting frame may be dispatched now."""
        return (
            bool(self._frames)
            and self.in_flight < self.max_in_flight
            and not self.muted
            and not self.closing
        )

    @property
    def needs_pause(self) -> bool:
        """Whether reading must stop: frames wait, the limit is reached, or it is muted."""
        return bool(self._frames) or self.in_flight >= self.max_in_flight or self.muted

    # --- requests -----------------------------------------------------------------------------

    def frames_read(self, frames: Iterable[Req]) -> None:
        """Whole frames read from the socket, waiting for their turn (dropped when closing)."""
        if not self.closing:
            self._frames.extend(frames)

    def next_frame(self) -> Req | None:
        """The next frame to dispatch, or None when none may be (see :attr:`can_dispatch`).
        The caller opens its slot with :meth:`open_slot` right away."""
        if self.closing:
            self._frames.clear()
            return None
        if not self.can_dispatch:
            return None
        return self._frames.popleft()

    def open_slot(self) -> ResponseSlot[Resp]:
        if self.closing:
            raise PipelineStateError("no request is dispatched once the connection is closing")
        slot: ResponseSlot[Resp] = ResponseSlot()
        self._slots.append(slot)
        in_flight = len(self._slots) + self.unsent_responses
        if in_flight > self.peak_in_flight:
            self.peak_in_flight = in_flight
        return slot

    def resolve(self, slot: ResponseSlot[Resp], frame: Resp | None, close: bool = False) -> None:
        """The request of ``slot`` is answered by ``frame`` (None: nothing to send); with
        ``close`` the connection closes after it."""
        if slot.done:
            raise PipelineStateError("a response slot is resolved once")
        slot.frame = frame
        slot.close_after = close
        slot.done = True

    # --- responses ----------------------------------------------------------------------------

    def pop_responses(self) -> tuple[list[Resp], bool]:
        """The frames of the resolved slots at the head, in request order, each now counted
        as unsent until :meth:`response_sent`; and whether one of them closes the connection
        (then every later request is dropped: the caller cancels their handlers)."""
        frames: list[Resp] = []
        slots = self._slots
        while slots and slots[0].done:
            slot = slots.popleft()
            if slot.frame is not None:
                frames.append(slot.frame)
                self.unsent_responses += 1
            if slot.close_after:
                self.closing = True
                slots.clear()
                self._frames.clear()
                return frames, True
        return frames, False

    def response_sent(self) -> None:
        """The last byte of the oldest unsent response was written."""
        if self.unsent_responses <= 0:
            raise PipelineStateError("no response is waiting to be sent")
        self.unsent_responses -= 1

    # --- muting -------------------------------------------------------------------------------

    def mute(self, until_s: float) -> int | None:
        """Mute until ``until_s`` (the connection's clock); returns the sequence number its
        :meth:`unmute` must name, or None when a running mute already lasts as long."""
        if until_s <= self._muted_until_s:
            return None
        self._muted_until_s = until_s
        self.muted = True
        self._mute_seq += 1
        return self._mute_seq

    def unmute(self, seq: int) -> bool:
        """End the mute numbered ``seq`` if no later mute replaced it; returns whether it
        ended."""
        if seq != self._mute_seq or not self.muted:
            return False
        self.muted = False
        return True

    def close(self) -> None:
        """Forget every request and frame (the connection is gone)."""
        self.closing = True
        self._slots.clear()
        self._frames.clear()
