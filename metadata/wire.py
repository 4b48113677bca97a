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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

D = TypeVar("D", bound="DataclassInstance")

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


def from_wire(cls: type[D], data: Any) -> D:
    """Build ``cls`` from a structure produced by :func:`to_wire`; MessageError on mismatch."""
    return _decode_dataclass(cls, data, cls.__name__, 0)


# What a scalar decoder returns when the value does not fit the hint.
_MISMATCH: Final = object()


def _decode_int(value: object) -> object:
    # bool is an int subclass; a peer's True must not pass as 1.
    return value if isinstance(value, int) and not isinstance(value, bool) else _MISMATCH


def _decode_float(value: object) -> object:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return _MISMATCH


def _decode_uuid(value: object) -> object:
    if isinstance(value, bytes) and len(value) == 16:
        return uuid.UUID(bytes=value)
    return _MISMATCH


def _exact(kind: type) -> Callable[[object], object]:
    return lambda value: value if isinstance(value, kind) else _MISMATCH


# Hints whose values decode without looking inside them.
_SCALARS: Final[dict[object, Callable[[object], object]]] = {
    int: _decode_int,
    float: _decode_float,
    bool: _exact(bool),
    str: _exact(str),
    bytes: _exact(bytes),
    uuid.UUID: _decode_uuid,
    Any: lambda value: value,
}


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
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _decode_dataclass(hint, value, path, depth)
    scalar = _SCALARS.get(hint)
    if scalar is not None:
        decoded = scalar(value)
    elif origin in (list, tuple):
        decoded = _decode_sequence(hint, origin, value, path, depth)
    elif origin is dict:
        decoded = _decode_map(hint, value, path, depth)
    else:
        raise MessageError(f"{path}: unsupported type {hint!r}")
    if decoded is _MISMATCH:
        raise MessageError(
            f"{path}: expected {getattr(hint, '__name__', hint)}, got {type(value).__name__}"
        )
    return decoded


def _decode_dataclass(cls: type[D], value: Any, path: str, depth: int) -> D:
    if not isinstance(value, dict):
        raise MessageError(f"{path}: expected a map, got {type(value).__name__}")
    hints = _hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in value:
            kwargs[f.name] = _decode(hints[f.name], value[f.name], f"{path}.{f.name}", depth + 1)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise MessageError(f"{path}.{f.name}: missing")
    return cls(**kwargs)


def _decode_sequence(hint: Any, origin: object, value: Any, path: str, depth: int) -> object:
    """``list[X]``, ``tuple[X, ...]`` or a fixed-length ``tuple[X, Y]``."""
    if not isinstance(value, list | tuple):
        return _MISMATCH
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


def _decode_map(hint: Any, value: Any, path: str, depth: int) -> object:
    if not isinstance(value, dict):
        return _MISMATCH
    kh, vh = typing.get_args(hint)
    return {
        _decode(kh, k, f"{path}.key", depth + 1): _decode(vh, v, f"{path}[{k!r}]", depth + 1)
        for k, v in value.items()
    }
