"""Names of the generated message classes, shared by the generator and the codec compiler.

Each API has one module ``common.protocol.messages.<api>`` (the ApiKey name in lower case)
holding ``<Api>Request`` and ``<Api>Response`` (``ApiVersionsRequest``) and one class per
struct of their schemas: ``<Message><Field>`` with the field name in CamelCase and singular
(``FetchResponsePartition`` for the elements of ``partitions``), prefixed by the enclosing
struct's class instead when that name is already taken by another struct. A fields tuple that
occurs twice in one message (the same table reused) gets one class. The naming is a pure
function of the tables, so the generator and the compiler agree on it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from common.protocol.api_keys import ApiKey
from common.protocol.fields import F, StructOf

MESSAGES_PACKAGE = "common.protocol.messages"


def camel(snake: str) -> str:
    """``api_versions`` -> ``ApiVersions``."""
    return "".join(part[:1].upper() + part[1:] for part in snake.split("_"))


def singular(snake: str) -> str:
    """The element name of an array field: ``partitions`` -> ``partition``."""
    if snake.endswith("ies"):
        return snake[:-3] + "y"
    if snake.endswith("s") and not snake.endswith(("ss", "us")):
        return snake[:-1]
    return snake


def module_name(api_key: ApiKey) -> str:
    return api_key.name.lower()


def message_class_name(api_key: ApiKey, is_request: bool) -> str:
    return camel(api_key.name.lower()) + ("Request" if is_request else "Response")


def struct_fields(f: F) -> tuple[F, ...] | None:
    """The fields of the struct that field ``f`` holds (one struct or an array of them)."""
    if isinstance(f.type, StructOf):
        return f.type.fields
    if isinstance(f.type, tuple):
        return f.type
    return None


def struct_class_names(top: str, fields: tuple[F, ...]) -> list[tuple[str, tuple[F, ...]]]:
    """Every struct class of the message ``top`` with ``fields``: (class name, its fields),
    inner structs before the structs holding them, the message class last."""
    named: dict[int, str] = {}
    taken: set[str] = {top}
    order: list[tuple[str, tuple[F, ...]]] = []

    def visit(name: str, struct: tuple[F, ...]) -> None:
        for f in struct:
            inner = struct_fields(f)
            if inner is None or id(inner) in named:
                continue
            suffix = camel(singular(f.name))
            candidate = top + suffix
            if candidate in taken:
                candidate = name + suffix
            base, n = candidate, 2
            while candidate in taken:
                candidate, n = f"{base}{n}", n + 1
            taken.add(candidate)
            named[id(inner)] = candidate
            visit(candidate, inner)
            order.append((candidate, inner))

    visit(top, fields)
    order.append((top, fields))
    return order


def load_module(api_key: ApiKey) -> ModuleType:
    """The generated module of ``api_key`` (imported on first use)."""
    return importlib.import_module(f"{MESSAGES_PACKAGE}.{module_name(api_key)}")


def struct_classes(api_key: ApiKey, is_request: bool, fields: tuple[F, ...]) -> dict[int, type]:
    """``id(fields tuple) -> generated class`` for the message and every struct in it."""
    module = load_module(api_key)
    top = message_class_name(api_key, is_request)
    return {id(struct): getattr(module, name) for name, struct in struct_class_names(top, fields)}
