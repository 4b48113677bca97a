"""Lookups and conversions around the generated message classes, for tests, benchmarks and
tools that hold a body as a dict (a decoded fixture, a table of sample values).

:func:`message_class` finds an API's request or response class; :func:`from_dict` builds an
instance from a dict keyed by field names, nested dicts and lists of dicts becoming the
nested classes. Conversions read the classes' type hints, so they cost microseconds per
field: not for a request path.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from common.protocol.api_keys import ApiKey
from common.protocol.message_names import load_module, message_class_name


def message_class(api_key: int, is_request: bool) -> type:
    """The generated class of an API's request or response body."""
    key = ApiKey(api_key)
    cls: type = getattr(load_module(key), message_class_name(key, is_request))
    return cls


def _struct_class(hint: Any) -> type | None:
    """The generated class inside a field's type hint (``list[X] | None`` -> X), if any."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return hint
    for arg in typing.get_args(hint):
        found = _struct_class(arg)
        if found is not None:
            return found
    return None


def from_dict(cls: type, body: dict[str, Any]) -> Any:
    """An instance of the generated class ``cls`` with the values of ``body``; fields missing
    from ``body`` keep the class defaults. Raises TypeError for a key that is not a field."""
    hints = typing.get_type_hints(cls)
    values = {}
    for name, value in body.items():
        inner = _struct_class(hints.get(name))
        if inner is not None and isinstance(value, list):
            value = [from_dict(inner, v) for v in value]
        elif inner is not None and isinstance(value, dict):
            value = from_dict(inner, value)
        values[name] = value
    return cls(**values)
