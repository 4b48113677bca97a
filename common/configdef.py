"""Kafka-style configuration definitions shared by every subsystem.

Each subsystem declares its configuration as a frozen dataclass whose fields carry Kafka's
property name in their metadata (``field(default=..., metadata=prop("log.segment.bytes"))``).
This module turns ``key=value`` properties (a ``server.properties`` file, per-topic configs
from the metadata log, command-line overrides) into such dataclasses, with typed coercion and
range checks, and raises :class:`ConfigError` with a message naming the offending key.

Supported field types: ``int``, ``float``, ``bool``, ``str``, ``tuple[str, ...]`` (a
comma-separated list) and ``X | None`` of those. ``deploy`` uses :func:`known_keys` to reject
typos in a node's config file instead of silently ignoring them.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")

# Property-name metadata keys used on dataclass fields.
_KEY = "kafka_key"
_TOPIC_KEY = "kafka_topic_key"
_MIN = "min"
_MAX = "max"
_CHOICES = "choices"
_DOC = "doc"


class ConfigError(ValueError):
    """A configuration value is missing, malformed or out of range; the message names the key."""


def prop(
    key: str,
    *,
    topic: str | None = None,
    min: float | None = None,
    max: float | None = None,
    choices: Iterable[str] | None = None,
    doc: str = "",
) -> dict[str, Any]:
    """Field metadata: the broker-level property ``key`` and optionally the per-topic ``topic``
    name (``log.segment.bytes`` at broker level is ``segment.bytes`` on a topic)."""
    return {
        _KEY: key,
        _TOPIC_KEY: topic,
        _MIN: min,
        _MAX: max,
        _CHOICES: tuple(choices) if choices is not None else None,
        _DOC: doc,
    }


def load_properties(path: str) -> dict[str, str]:
    """Read a Java ``.properties`` file: ``key=value`` or ``key: value`` lines, ``#`` and ``!``
    comments, blank lines, and a trailing backslash continuing a line."""
    with open(path, encoding="utf-8") as f:
        return parse_properties(f.read(), source=path)


def parse_properties(text: str, *, source: str = "<string>") -> dict[str, str]:
    props: dict[str, str] = {}
    pending = ""
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = pending + raw.strip() if pending else raw.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        sep = _first_separator(line)
        if sep < 0:
            raise ConfigError(f"{source}:{lineno}: expected key=value, got {raw.strip()!r}")
        key, value = line[:sep].strip(), line[sep + 1 :].strip()
        if not key:
            raise ConfigError(f"{source}:{lineno}: empty key")
        props[key] = value
    if pending:
        raise ConfigError(f"{source}: file ends inside a continued line")
    return props


def _first_separator(line: str) -> int:
    positions = [p for p in (line.find("="), line.find(":")) if p >= 0]
    return min(positions) if positions else -1


def _fields(cls: type) -> list[tuple[dataclasses.Field[Any], Any]]:
    hints = typing.get_type_hints(cls)
    return [(f, hints[f.name]) for f in dataclasses.fields(cls) if _KEY in f.metadata]


def known_keys(cls: type, *, topic: bool = False) -> set[str]:
    """The property names ``cls`` understands (topic-level names when ``topic``)."""
    meta_key = _TOPIC_KEY if topic else _KEY
    return {f.metadata[meta_key] for f, _ in _fields(cls) if f.metadata.get(meta_key)}


def from_props(cls: type[T], props: Mapping[str, str], *, topic: bool = False) -> T:
    """Build ``cls`` from ``props``; keys ``cls`` does not know are ignored (several
    subsystems share one file; see :func:`known_keys` for typo checks)."""
    return with_overrides(cls(), props, topic=topic)


def with_overrides(base: T, props: Mapping[str, str], *, topic: bool = False) -> T:
    """A copy of ``base`` with the properties in ``props`` applied (per-topic overrides of
    broker defaults when ``topic``)."""
    meta_key = _TOPIC_KEY if topic else _KEY
    changes: dict[str, Any] = {}
    for f, hint in _fields(type(base)):
        key = f.metadata.get(meta_key)
        if key and key in props:
            changes[f.name] = coerce(key, props[key], hint, f.metadata)
    return dataclasses.replace(base, **changes) if changes else base


def to_props(obj: Any, *, topic: bool = False) -> dict[str, str]:
    """The inverse of :func:`from_props`, for DescribeConfigs and generated config files."""
    meta_key = _TOPIC_KEY if topic else _KEY
    out: dict[str, str] = {}
    for f, _ in _fields(type(obj)):
        key = f.metadata.get(meta_key)
        if not key:
            continue
        value = getattr(obj, f.name)
        if value is None:
            continue
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, tuple):
            out[key] = ",".join(value)
        else:
            out[key] = str(value)
    return out


def describe(cls: type, *, topic: bool = False) -> list[tuple[str, str, str]]:
    """(key, default, doc) rows for the configuration reference in docs/."""
    meta_key = _TOPIC_KEY if topic else _KEY
    defaults = to_props(cls(), topic=topic)
    rows = []
    for f, _ in _fields(cls):
        key = f.metadata.get(meta_key)
        if key:
            rows.append((key, defaults.get(key, ""), f.metadata.get(_DOC, "")))
    return rows


def key_info(cls: type, key: str, *, topic: bool = False) -> tuple[Any, str] | None:
    """(Python type, doc) of property ``key`` of ``cls`` (topic-level names when ``topic``),
    or None when ``cls`` does not know it; an optional type is given without its None."""
    meta_key = _TOPIC_KEY if topic else _KEY
    for f, hint in _fields(cls):
        if f.metadata.get(meta_key) == key:
            if typing.get_origin(hint) in (typing.Union, types.UnionType):
                args = [a for a in typing.get_args(hint) if a is not type(None)]
                hint = args[0] if args else hint
            return hint, f.metadata.get(_DOC, "")
    return None


def coerce(key: str, raw: str, hint: Any, meta: Mapping[str, Any]) -> Any:
    """Convert the string ``raw`` for property ``key`` to the field type ``hint``."""
    optional = False
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        optional = len(args) < len(typing.get_args(hint))
        hint = args[0]
        origin = typing.get_origin(hint)
    text = raw.strip()
    if optional and text in ("", "null", "none"):
        return None
    value = _parse(key, raw, text, hint, origin)
    _check_limits(key, value, meta)
    return value


def _parse(key: str, raw: str, text: str, hint: Any, origin: Any) -> Any:
    """``text`` (``raw`` stripped) as a ``hint``; ``origin`` is the hint's generic origin."""
    value: Any
    if hint is bool:
        low = text.lower()
        if low not in ("true", "false"):
            raise ConfigError(f"{key}: expected true or false, got {raw!r}")
        value = low == "true"
    elif hint is int:
        try:
            value = int(text)
        except ValueError:
            raise ConfigError(f"{key}: expected an integer, got {raw!r}") from None
    elif hint is float:
        try:
            value = float(text)
        except ValueError:
            raise ConfigError(f"{key}: expected a number, got {raw!r}") from None
    elif hint is str:
        value = text
    elif origin is tuple:
        value = tuple(p.strip() for p in text.split(",") if p.strip())
    else:
        raise ConfigError(f"{key}: unsupported config type {hint!r}")
    return value


def _check_limits(key: str, value: Any, meta: Mapping[str, Any]) -> None:
    """The field's minimum, maximum and choices (each item of a list) hold for ``value``."""
    lo, hi, choices = meta.get(_MIN), meta.get(_MAX), meta.get(_CHOICES)
    if lo is not None and value < lo:
        raise ConfigError(f"{key}: {value} is below the minimum {lo}")
    if hi is not None and value > hi:
        raise ConfigError(f"{key}: {value} is above the maximum {hi}")
    if choices is not None:
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            if item not in choices:
                raise ConfigError(f"{key}: {item!r} is not one of {', '.join(choices)}")
