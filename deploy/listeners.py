"""Kafka listener strings: ``NAME://host:port`` (``listeners``, ``advertised.listeners``).

An empty host binds every interface (as in Kafka); IPv6 hosts are written in brackets
(``PLAINTEXT://[::1]:9092``). Listener names are upper case in Kafka; they are compared
case-insensitively and kept upper case here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from common.configdef import ConfigError

_MAX_PORT = 65535


@dataclass(frozen=True, slots=True)
class Listener:
    name: str
    host: str
    port: int

    @property
    def address(self) -> str:
        """``host:port`` with IPv6 hosts bracketed (what a client dials)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def __str__(self) -> str:
        return f"{self.name}://{self.address}"


def parse_listener(text: str, *, key: str = "listeners") -> Listener:
    name, sep, rest = text.strip().partition("://")
    if not sep or not name:
        raise ConfigError(f"{key}: {text!r} is not of the form NAME://host:port")
    host, port = parse_host_port(rest, key=key, allow_empty_host=True)
    return Listener(name.upper(), host, port)


def parse_listeners(values: Iterable[str], *, key: str = "listeners") -> tuple[Listener, ...]:
    out: list[Listener] = []
    names: set[str] = set()
    for value in values:
        listener = parse_listener(value, key=key)
        if listener.name in names:
            raise ConfigError(f"{key}: listener name {listener.name} appears twice")
        names.add(listener.name)
        out.append(listener)
    return tuple(out)


def parse_host_port(text: str, *, key: str, allow_empty_host: bool = False) -> tuple[str, int]:
    """Split ``host:port`` / ``[v6]:port``; the port must be 0..65535."""
    text = text.strip()
    if text.startswith("["):
        close = text.find("]")
        if close < 0 or text[close + 1 : close + 2] != ":":
            raise ConfigError(f"{key}: {text!r} is not of the form [host]:port")
        host, port_text = text[1:close], text[close + 2 :]
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            raise ConfigError(f"{key}: {text!r} is not of the form host:port")
    if not host and not allow_empty_host:
        raise ConfigError(f"{key}: {text!r} has no host")
    try:
        port = int(port_text)
    except ValueError:
        raise ConfigError(f"{key}: {text!r} has no valid port") from None
    if not 0 <= port <= _MAX_PORT:
        raise ConfigError(f"{key}: port {port} in {text!r} is out of range")
    return host, port


def parse_server_list(values: Iterable[str], *, key: str) -> tuple[str, ...]:
    """Validate a ``host:port`` list (``controller.quorum.bootstrap.servers``)."""
    out = []
    for value in values:
        host, port = parse_host_port(value, key=key)
        if port == 0:
            raise ConfigError(f"{key}: {value!r} needs a real port, not 0")
        out.append(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    return tuple(out)
