"""Free TCP ports for a local cluster.

Ports are drawn below the kernel's ephemeral range (``ip_local_port_range``): a port picked by
binding to port 0 lies inside that range, and any outgoing connection made between our check and
the node's own bind may take it as its local port. Below the range only listeners compete.

``KRAFTLOG_PORT_SLICE=k/n`` (0 <= k < n) narrows the draw to the k-th of n equal slices of
that span, so n processes that start clusters side by side (the test suite's xdist workers)
never promise one port twice, also not a port a stopped node will bind again on restart.
"""

from __future__ import annotations

import os
import random
import socket
from collections.abc import Collection

_EPHEMERAL_RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range"
_LOWEST_PORT = 20000
_DEFAULT_EPHEMERAL_LOW = 32768
_MAX_TRIES = 2000
PORT_SLICE_ENV = "KRAFTLOG_PORT_SLICE"


def _ephemeral_low() -> int:
    try:
        with open(_EPHEMERAL_RANGE_FILE, encoding="ascii") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return _DEFAULT_EPHEMERAL_LOW


def free_ports(
    count: int,
    *,
    host: str = "127.0.0.1",
    rng: random.Random | None = None,
    exclude: Collection[int] = (),
) -> list[int]:
    """``count`` distinct ports that nothing listens on at ``host`` right now, none of them in
    ``exclude`` (ports already promised to servers that have not bound them yet)."""
    rng = rng or random.Random()
    high = _ephemeral_low() - 1
    low = _LOWEST_PORT if high - _LOWEST_PORT > count * 4 else 1024
    low, high = _slice(low, high, os.environ.get(PORT_SLICE_ENV, ""))
    chosen: list[int] = []
    for _ in range(_MAX_TRIES):
        if len(chosen) == count:
            return chosen
        port = rng.randint(low, high)
        if port not in chosen and port not in exclude and _bindable(host, port):
            chosen.append(port)
    if len(chosen) == count:
        return chosen
    raise OSError(f"found only {len(chosen)} of {count} free ports on {host} in {_MAX_TRIES} tries")


def _slice(low: int, high: int, spec: str) -> tuple[int, int]:
    """The ``k/n`` slice ``spec`` of the inclusive span ``low..high``; the whole span when
    ``spec`` is empty. Raises ValueError on a malformed spec: a worker that silently drew
    from the whole span could collide with its siblings."""
    if not spec:
        return low, high
    k_text, sep, n_text = spec.partition("/")
    if not sep or not k_text.isdigit() or not n_text.isdigit():
        raise ValueError(f"{PORT_SLICE_ENV}={spec!r}: expected k/n with 0 <= k < n")
    k, n = int(k_text), int(n_text)
    if not 0 <= k < n:
        raise ValueError(f"{PORT_SLICE_ENV}={spec!r}: expected k/n with 0 <= k < n")
    width = (high - low + 1) // n
    return low + k * width, low + (k + 1) * width - 1


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # SO_REUSEADDR as the servers set it: a port in TIME_WAIT from an earlier run is usable.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True
