"""A small typed codec between dataclasses and msgpack-ready structures.

Messages of the control plane are frozen dataclasses. On the wire a dataclass is a msgpack map
from field name to value; ``uuid.UUID`` travels as 16 bytes; tuples and lists as arrays; dicts
as maps. Decoding checks every value against the field's type hint and raises
:class:`MessageError` (the service answers INVALID_REQUEST) instead of letting a malformed peer
message reach the controller. Missing fields take their defaults; unknown fields are ignored (a
newer peer may send more).

Supported hints: int, float, bool, str, bytes, uuid.UUID, ``X | None``, ``list[X]``,
``tuple[X, ...]``, ``dict[K, V]`` (K int or str), and nested dataclasses.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
import uuid
from typing import Any, TypeVar

T = TypeVar("T")

# Nesting deeper than this is refused (a hostile peer could otherwise recurse deeply).
MAX_DEPTH = 16


class MessageError(ValueError):
    """A control-plane message does not match its schema."""


def to_wire(obj: Any) -> Any:
    """A msgpack-ready structure for ``obj`` (a dataclass or a supported value)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_wire(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, uuid.UUID):
        return obj.bytes
    if isinstance(obj, list | tuple):
        return [to_wire(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_wire(v) for k, v in obj.items()}
    return obj


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_wire(cls: type[T], data: Any) -> T:
    """Build ``cls`` from a structure produced by :func:`to_wire`; MessageError on mismatch."""
    return _decode(cls, data, cls.__name__, 0)


def _decode(hint: Any, value: Any, path: str, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise MessageError(f"{path}: nested too deeply")
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _decode(inner[0], value, path, depth)
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise MessageError(f"{path}: expected a map, got {type(value).__name__}")
        hints = _hints(hint)
        kwargs = {}
        for f in dataclasses.fields(hint):
            if f.name in value:
                kwargs[f.name] = _decode(
                    hints[f.name], value[f.name], f"{path}.{f.name}", depth + 1
                )
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise MessageError(f"{path}.{f.name}: missing")
        return hint(**kwargs)
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif hint is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif hint is bool:
        if isinstance(value, bool):
            return value
    elif hint is str:
        if isinstance(value, str):
            return value
    elif hint is bytes:
        if isinstance(value, bytes):
            return value
    elif hint is uuid.UUID:
        if isinstance(value, bytes) and len(value) == 16:
            return uuid.UUID(bytes=value)
    elif origin in (list, tuple):
        if isinstance(value, list | tuple):
            args = typing.get_args(hint)
            if origin is tuple and (len(args) != 2 or args[1] is not Ellipsis):
                if len(value) != len(args):
                    raise MessageError(f"{path}: expected {len(args)} items, got {len(value)}")
                return tuple(
                    _decode(a, v, f"{path}[{i}]", depth + 1)
                    for i, (a, v) in enumerate(zip(args, value, strict=True))
                )
            items = [_decode(args[0], v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
            return tuple(items) if origin is tuple else items
    elif origin is dict:
        if isinstance(value, dict):
            kh, vh = typing.get_args(hint)
            return {
                _decode(kh, k, f"{path}.key", depth + 1): _decode(
                    vh, v, f"{path}[{k!r}]", depth + 1
                )
                for k, v in value.items()
            }
    elif hint is Any:
        return value
    else:
        raise MessageError(f"{path}: unsupported type {hint!r}")
    raise MessageError(
        f"{path}: expected {getattr(hint, '__name__', hint)}, got {type(value).__name__}"
    )
