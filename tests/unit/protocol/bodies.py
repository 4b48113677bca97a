"""Test helpers: hypothesis strategies for body dicts, built from the codec's own schema tables,
their typed form for the APIs the codec has typed bodies for, and a normaliser that makes
decoded bodies comparable (memoryview records -> bytes, typed bodies -> dicts of all fields).
``from_dict`` and ``message_class`` are re-exported from common.protocol.typed_bodies."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import strategies as st

from common.protocol import codec
from common.protocol.fields import ArrayOf, F, Primitive, StructOf
from common.protocol.typed_bodies import from_dict, message_class

__all__ = [
    "body_strategy",
    "from_dict",
    "message_class",
    "normalise",
    "sample_body",
    "typed",
]


def typed(api_key: int, is_request: bool, body: dict) -> Any:
    """``body`` in the form the codec takes for this API: the generated class for an API in
    ``codec.TYPED_APIS``, else the dict itself."""
    if api_key in codec.TYPED_APIS:
        return from_dict(message_class(api_key, is_request), body)
    return body


_INT_RANGES = {
    Primitive.INT8: (-(2**7), 2**7 - 1),
    Primitive.INT16: (-(2**15), 2**15 - 1),
    Primitive.INT32: (-(2**31), 2**31 - 1),
    Primitive.INT64: (-(2**63), 2**63 - 1),
    Primitive.UINT16: (0, 2**16 - 1),
}
_TEXT = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=12)


def _primitive(kind: Primitive) -> st.SearchStrategy[Any]:
    if kind in _INT_RANGES:
        low, high = _INT_RANGES[kind]
        return st.integers(low, high)
    if kind is Primitive.BOOL:
        return st.booleans()
    if kind is Primitive.FLOAT64:
        return st.floats(allow_nan=False)
    if kind is Primitive.STRING:
        return _TEXT
    if kind is Primitive.UUID:
        return st.binary(min_size=16, max_size=16)
    return st.binary(max_size=24)


def body_strategy(fields: tuple[F, ...], version: int, max_list: int = 3) -> st.SearchStrategy:
    """Bodies with every field of ``version`` set (null sometimes, where nullable)."""
    entries: dict[str, st.SearchStrategy] = {}
    for f in fields:
        if not f.present_in(version):
            continue
        if isinstance(f.type, Primitive):
            value = _primitive(f.type)
        elif isinstance(f.type, ArrayOf):
            value = st.lists(_primitive(f.type.element), max_size=max_list)
        elif isinstance(f.type, StructOf):
            value = body_strategy(f.type.fields, version, max_list)
        else:
            value = st.lists(body_strategy(f.type, version, max_list), max_size=max_list)
        if f.nullable_in(version):
            value = st.none() | value
        entries[f.name] = value
    return st.fixed_dictionaries(entries)


def normalise(value: Any) -> Any:
    """Recursively turn memoryviews/bytearrays into bytes so bodies compare with ==."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: normalise(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if isinstance(value, (memoryview, bytearray)):
        return bytes(value)
    return value


def sample_body(fields: tuple[F, ...], version: int, seed: int = 1) -> dict:
    """A deterministic body with every field of ``version`` set to a non-default value and one
    element per array (fuzz seeds and benches)."""
    body: dict[str, Any] = {}
    for i, f in enumerate(fields):
        if not f.present_in(version):
            continue
        n = seed + i
        if isinstance(f.type, Primitive):
            body[f.name] = _sample_primitive(f.type, n)
        elif isinstance(f.type, ArrayOf):
            element = f.type.element
            body[f.name] = [_sample_primitive(element, n), _sample_primitive(element, n + 1)]
        elif isinstance(f.type, StructOf):
            body[f.name] = sample_body(f.type.fields, version, n)
        else:
            body[f.name] = [sample_body(f.type, version, n)]
    return body


def _sample_primitive(kind: Primitive, n: int) -> Any:
    if kind in _INT_RANGES:
        low, high = _INT_RANGES[kind]
        return min(high, max(low, n * 3 + 1))
    if kind is Primitive.BOOL:
        return n % 2 == 1
    if kind is Primitive.FLOAT64:
        return n / 4
    if kind is Primitive.STRING:
        return f"s{n}-é"
    if kind is Primitive.UUID:
        return bytes(range(n % 7, n % 7 + 16))
    return bytes(range(n % 7, n % 7 + 9))
