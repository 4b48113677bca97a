"""Toxics as sans-IO state machines, and the toxic chain of one direction of one connection.

A *toxic* (Toxiproxy's term) degrades the bytes flowing in one direction of a proxied TCP
connection: ``upstream`` = client -> server, ``downstream`` = server -> client. Every
connection has two :class:`ToxicChain` s, one per direction; a chunk read from the source
socket passes through the chain's stages in the order the toxics were added, and what comes
out is a list of timed :data:`Action` s for the I/O layer to carry out:

- :class:`Emit` ``(at_s, data)``: write ``data`` to the destination at time ``at_s``;
- :class:`Eof` ``(at_s)``: half-close the destination (the source closed) at ``at_s``;
- :class:`Close` ``(at_s, reset)``: close the whole connection at ``at_s``, with a TCP RST
  (SO_LINGER 0) when ``reset``.

Times are seconds on the caller's monotonic clock; the chain never reads a clock itself. The
I/O layer keeps the actions of one direction in FIFO order (an action is never carried out
before the one queued ahead of it), so a toxic only ever delays data, never reorders it.

Semantics follow Toxiproxy's toxics (attributes are integers):

=============  ==============================  ===============================================
type           attributes                      effect
=============  ==============================  ===============================================
latency        latency ms, jitter ms           each chunk delayed latency +/- jitter
bandwidth      rate KB/s (1 KB = 1000 bytes)   at most ``rate`` KB per second; 0 = unlimited
slow_close     delay ms                        the close (EOF) is delayed by ``delay``
timeout        timeout ms                      all data dropped; the connection is closed
                                               ``timeout`` after the toxic took effect
                                               (0 = never closed, a black hole)
reset_peer     timeout ms                      the connection is reset (RST) ``timeout``
                                               after the toxic took effect (0 = at once)
slicer         average_size, size_variation    chunks cut into pieces of average_size +/-
               bytes, delay us                 size_variation bytes, ``delay`` apart
limit_data     bytes                           the connection is closed once ``bytes`` bytes
                                               passed in this direction
=============  ==============================  ===============================================

``toxicity`` (0..1) is the probability that a toxic applies to a given connection; it is
drawn once per connection when the toxic takes effect there (the connection opens, or the
toxic is added or updated while it is open). Where it does not apply, the stage passes
everything through.

Thread-safety: none; a chain belongs to the event loop that owns its connection.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

UPSTREAM = "upstream"
DOWNSTREAM = "downstream"
STREAMS = (UPSTREAM, DOWNSTREAM)

# The attributes each toxic type takes, with their defaults (Toxiproxy's zero values).
TOXIC_ATTRIBUTES: dict[str, dict[str, int]] = {
    "latency": {"latency": 0, "jitter": 0},
    "bandwidth": {"rate": 0},
    "slow_close": {"delay": 0},
    "timeout": {"timeout": 0},
    "reset_peer": {"timeout": 0},
    "slicer": {"average_size": 0, "size_variation": 0, "delay": 0},
    "limit_data": {"bytes": 0},
}
TOXIC_TYPES = frozenset(TOXIC_ATTRIBUTES)

# Bandwidth releases data in pieces worth this much time, as Toxiproxy does (100 ms), so a
# slow link trickles instead of delivering a big chunk in one burst after a long pause.
_BANDWIDTH_SLICE_S = 0.1


class ToxicError(ValueError):
    """A toxic definition is invalid (the HTTP API answers 400 with this message)."""


@dataclass(frozen=True, slots=True)
class ToxicSpec:
    """A toxic as the API defines it (the JSON object of ``/proxies/{proxy}/toxics``)."""

    name: str
    type: str
    stream: str = DOWNSTREAM
    toxicity: float = 1.0
    attributes: Mapping[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "attributes": dict(self.attributes),
            "name": self.name,
            "type": self.type,
            "stream": self.stream,
            "toxicity": self.toxicity,
        }


def parse_toxic(body: Any) -> ToxicSpec:
    """Validate a create-toxic body; defaults as Toxiproxy (stream ``downstream``, toxicity
    1.0, name ``<type>_<stream>``, attributes zero). Raises :class:`ToxicError`."""
    if not isinstance(body, dict):
        raise ToxicError("bad request body: expected a JSON object")
    stream = body.get("stream") or DOWNSTREAM
    if stream not in STREAMS:
        raise ToxicError("stream was invalid, can be either upstream or downstream")
    toxic_type = body.get("type")
    if not isinstance(toxic_type, str) or toxic_type not in TOXIC_TYPES:
        raise ToxicError("invalid toxic type")
    name = body.get("name") or f"{toxic_type}_{stream}"
    if not isinstance(name, str):
        raise ToxicError("bad request body: name must be a string")
    toxicity = _toxicity(body.get("toxicity", 1.0))
    attributes = _attributes(toxic_type, {}, body.get("attributes"))
    return ToxicSpec(name, toxic_type, stream, toxicity, attributes)


def update_toxic(spec: ToxicSpec, body: Any) -> ToxicSpec:
    """Apply an update body: ``attributes`` merged into the current ones, ``toxicity``
    replaced if given; name, type and stream stay. Raises :class:`ToxicError`."""
    if not isinstance(body, dict):
        raise ToxicError("bad request body: expected a JSON object")
    toxicity = _toxicity(body["toxicity"]) if "toxicity" in body else spec.toxicity
    attributes = _attributes(spec.type, spec.attributes, body.get("attributes"))
    return ToxicSpec(spec.name, spec.type, spec.stream, toxicity, attributes)


def _toxicity(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ToxicError(f"bad request body: toxicity must be a number, got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise ToxicError(f"bad request body: toxicity must be within [0, 1], got {value}")
    return float(value)


def _attributes(toxic_type: str, current: Mapping[str, int], given: Any) -> dict[str, int]:
    attrs = dict(TOXIC_ATTRIBUTES[toxic_type])
    attrs.update(current)
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise ToxicError("bad request body: attributes must be a JSON object")
    for key, value in given.items():
        if key not in attrs:
            continue  # Toxiproxy ignores attributes the toxic type does not have.
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            raise ToxicError(f"bad request body: attribute {key} must be an integer")
        if value < 0:
            raise ToxicError(f"bad request body: attribute {key} must be >= 0, got {value}")
        attrs[key] = int(value)
    if toxic_type == "slicer":
        if attrs["average_size"] < 1:
            raise ToxicError("bad request body: slicer average_size must be >= 1")
        if attrs["size_variation"] >= attrs["average_size"]:
            raise ToxicError("bad request body: slicer size_variation must be < average_size")
    return attrs


# -- actions ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Emit:
    at_s: float
    data: bytes


@dataclass(frozen=True, slots=True)
class Eof:
    at_s: float


@dataclass(frozen=True, slots=True)
class Close:
    at_s: float
    reset: bool = False


Action = Emit | Eof | Close


# -- stages -------------------------------------------------------------------------------


class Stage:
    """One toxic in one direction of one connection. The base class passes everything
    through (a toxic that missed its toxicity draw)."""

    def __init__(self, spec: ToxicSpec, started_at_s: float) -> None:
        self.spec = spec
        self.started_at_s = started_at_s

    def on_data(self, data: bytes, now_s: float) -> list[Action]:
        return [Emit(now_s, data)]

    def on_eof(self, now_s: float) -> list[Action]:
        return [Eof(now_s)]

    def deadline(self) -> Close | None:
        """A close this toxic schedules on its own, independent of the data."""
        return None

    def holds_eof(self) -> bool:
        """True if an EOF given to this stage was swallowed (replayed when it goes away)."""
        return False


class _Latency(Stage):
    def __init__(self, spec: ToxicSpec, started_at_s: float, rng: random.Random) -> None:
        super().__init__(spec, started_at_s)
        self._rng = rng
        self._last_s = started_at_s

    def _delay_s(self) -> float:
        latency_ms = self.spec.attributes["latency"]
        jitter_ms = self.spec.attributes["jitter"]
        delay_ms = latency_ms + (self._rng.uniform(-jitter_ms, jitter_ms) if jitter_ms else 0)
        return max(0.0, delay_ms) / 1000.0

    def on_data(self, data: bytes, now_s: float) -> list[Action]:
        # Order is kept: a chunk never overtakes the one before, even with jitter.
        self._last_s = max(now_s + self._delay_s(), self._last_s)
        return [Emit(self._last_s, data)]

    def on_eof(self, now_s: float) -> list[Action]:
        return [Eof(max(now_s, self._last_s))]


class _Bandwidth(Stage):
    def __init__(self, spec: ToxicSpec, started_at_s: float) -> None:
        super().__init__(spec, started_at_s)
        self._busy_until_s = started_at_s

    def on_data(self, data: bytes, now_s: float) -> list[Action]:
        rate_bytes_per_s = self.spec.attributes["rate"] * 1000
        if rate_bytes_per_s <= 0:
            return [Emit(now_s, data)]
        piece_bytes = max(1, int(rate_bytes_per_s * _BANDWIDTH_SLICE_S))
        t = max(now_s, self._busy_until_s)
        out: list[Action] = []
        for start in range(0, len(data), piece_bytes):
            piece = data[start : start + piece_bytes]
            t += len(piece) / rate_bytes_per_s
            out.append(Emit(t, piece))
        self._busy_until_s = t
        return out

    def on_eof(self, now_s: float) -> list[Action]:
        return [Eof(max(now_s, self._busy_until_s))]


class _SlowClose(Stage):
    def on_eof(self, now_s: float) -> list[Action]:
        return [Eof(now_s + self.spec.attributes["delay"] / 1000.0)]


class _Timeout(Stage):
    def __init__(self, spec: ToxicSpec, started_at_s: float) -> None:
        super().__init__(spec, started_at_s)
        self._eof_held = False

    def on_data(self, data: bytes, now_s: float) -> list[Action]:
        return []  # A black hole: the bytes are gone, also after the toxic is removed.

    def on_eof(self, now_s: float) -> list[Action]:
        # Nothing passes, not even the FIN; it is replayed if the toxic is removed.
        self._eof_held = True
        return []

    def holds_eof(self) -> bool:
        return self._eof_held

    def deadline(self) -> Close | None:
        timeout_ms = self.spec.attributes["timeout"]
        if timeout_ms == 0:
            return None
        return Close(self.started_at_s + timeout_ms / 1000.0, reset=False)


class _ResetPeer(Stage):
    def deadline(self) -> Close | None:
        return Close(self.started_at_s + self.spec.attributes["timeout"] / 1000.0, reset=True)


class _Slicer(Stage):
    def __init__(self, spec: ToxicSpec, started_at_s: float, rng: random.Random) -> None:
        super().__init__(spec, started_at_s)
        self._rng = rng
        self._last_s = started_at_s

    def on_data(self, data: bytes, now_s: float) -> list[Action]:
        average = self.spec.attributes["average_size"]
        variation = self.spec.attributes["size_variation"]
        delay_s = self.spec.attributes["delay"] / 1_000_000.0
        t = max(now_s, self._last_s)
        out: list[Action] = []
        pos = 0
        while pos < len(data):
            size = average + (self._rng.randint(-variation, variation) if variation else 0)
            piece = data[pos : pos + max(1, size)]
            pos += len(piece)
            out.append(Emit(t, piece))
            t += delay_s
        self._last_s = t
        return out

    def on_eof(self, now_s: float) -> list[Action]:
        return [Eof(max(now_s, self._last_s))]


class _LimitData(Stage):
    def __init__(self, spec: ToxicSpec, started_at_s: float) -> None:
        super().__init__(spec, started_at_s)
        self._passed_bytes = 0

    def on_data(self, data: bytes, now_s: float) -> list[Action]:
        limit = self.spec.attributes["bytes"]
        remaining = limit - self._passed_bytes
        if len(data) < remaining:
            self._passed_bytes += len(data)
            return [Emit(now_s, data)]
        self._passed_bytes = limit
        out: list[Action] = [Emit(now_s, data[:remaining])] if remaining > 0 else []
        out.append(Close(now_s, reset=False))
        return out


def new_stage(spec: ToxicSpec, now_s: float, rng: random.Random) -> Stage:
    """The stage of ``spec`` on one connection, toxicity drawn now."""
    if spec.toxicity < 1.0 and rng.random() >= spec.toxicity:
        return Stage(spec, now_s)
    match spec.type:
        case "latency":
            return _Latency(spec, now_s, rng)
        case "bandwidth":
            return _Bandwidth(spec, now_s)
        case "slow_close":
            return _SlowClose(spec, now_s)
        case "timeout":
            return _Timeout(spec, now_s)
        case "reset_peer":
            return _ResetPeer(spec, now_s)
        case "slicer":
            return _Slicer(spec, now_s, rng)
        case "limit_data":
            return _LimitData(spec, now_s)
    raise ToxicError(f"invalid toxic type {spec.type!r}")


class ToxicChain:
    """The toxics of one direction of one connection, in the order they were added."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._stages: list[Stage] = []
        self._eof_seen = False

    @property
    def empty(self) -> bool:
        return not self._stages

    @property
    def names(self) -> list[str]:
        return [stage.spec.name for stage in self._stages]

    def add(self, spec: ToxicSpec, now_s: float) -> None:
        if spec.name in self.names:
            raise ToxicError(f"toxic {spec.name!r} is already in this chain")
        self._stages.append(new_stage(spec, now_s, self._rng))

    def update(self, spec: ToxicSpec, now_s: float) -> None:
        """Replace the toxic of the same name by a fresh stage (toxicity redrawn, timers
        restarted), keeping its place in the chain."""
        for i, stage in enumerate(self._stages):
            if stage.spec.name == spec.name:
                self._stages[i] = new_stage(spec, now_s, self._rng)
                return
        raise ToxicError(f"no toxic {spec.name!r} in this chain")

    def remove(self, name: str, now_s: float) -> list[Action]:
        """Drop a toxic; returns actions it released (an EOF it had swallowed, passed on
        through the stages after it)."""
        for i, stage in enumerate(self._stages):
            if stage.spec.name == name:
                del self._stages[i]
                if stage.holds_eof():
                    return self._run([Eof(now_s)], self._stages[i:])
                return []
        raise ToxicError(f"no toxic {name!r} in this chain")

    def on_data(self, data: bytes, now_s: float) -> list[Action]:
        if self._eof_seen:
            raise ToxicError("data after EOF in one direction of a connection")
        return self._run([Emit(now_s, data)], self._stages)

    def on_eof(self, now_s: float) -> list[Action]:
        self._eof_seen = True
        return self._run([Eof(now_s)], self._stages)

    def deadline(self) -> Close | None:
        """The earliest close a toxic schedules on its own, if any."""
        closes = [c for c in (stage.deadline() for stage in self._stages) if c is not None]
        return min(closes, key=lambda c: c.at_s) if closes else None

    @staticmethod
    def _run(actions: list[Action], stages: list[Stage]) -> list[Action]:
        for stage in stages:
            nxt: list[Action] = []
            for action in actions:
                if isinstance(action, Emit):
                    nxt.extend(stage.on_data(action.data, action.at_s))
                elif isinstance(action, Eof):
                    nxt.extend(stage.on_eof(action.at_s))
                else:
                    nxt.append(action)
            actions = nxt
        return actions
