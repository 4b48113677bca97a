"""Write the typed message classes of every API from the schema tables.

    python -m common.protocol.generate           # rewrite common/protocol/messages/*.py
    python -m common.protocol.generate --check   # exit 1 if a committed module differs

One module per API (:mod:`common.protocol.message_names` names modules and classes) holds a
slotted dataclass for the request, one for the response and one per nested struct, all
subclasses of :class:`common.protocol.message_base.Message`. A class has
the fields of every supported version, in wire order, each with its type (``int``, ``str``,
``bytes``, ``list[...]``, a struct class, ``Records``; ``| None`` when the field is nullable
in some version, or is a tagged struct) and its default: the table's default, else the
type's zero, or None for a field nullable from the version it appears in. That default is
what a decoder of a version without the field leaves in it. A comment above a field gives its
versions when it does not exist in all of them, its nullable versions and its tag. The output
is deterministic and formatted as ``ruff format`` would, so a unit test can compare it with
the committed modules.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from common.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from common.protocol.fields import ArrayOf, F, Primitive, StructOf
from common.protocol.message_names import (
    message_class_name,
    module_name,
    struct_class_names,
    struct_fields,
)
from common.protocol.schemas import MESSAGES

MESSAGES_DIR = Path(__file__).resolve().parent / "messages"

_PYTHON_TYPES: dict[Primitive, str] = {
    Primitive.INT8: "int",
    Primitive.INT16: "int",
    Primitive.INT32: "int",
    Primitive.INT64: "int",
    Primitive.UINT16: "int",
    Primitive.FLOAT64: "float",
    Primitive.BOOL: "bool",
    Primitive.UUID: "bytes",
    Primitive.STRING: "str",
    Primitive.BYTES: "bytes",
    Primitive.RECORDS: "Records",
}
_ZEROS: dict[Primitive, str] = {
    Primitive.INT8: "0",
    Primitive.INT16: "0",
    Primitive.INT32: "0",
    Primitive.INT64: "0",
    Primitive.UINT16: "0",
    Primitive.FLOAT64: "0.0",
    Primitive.BOOL: "False",
    Primitive.UUID: "bytes(16)",
    Primitive.STRING: '""',
    Primitive.BYTES: 'b""',
    Primitive.RECORDS: "None",
}
_LINE_LENGTH = 100


def _null_from_start(f: F) -> bool:
    return f.nullable is not None and f.nullable <= f.since


def annotation(f: F, names: dict[int, str]) -> str:
    """The type hint of field ``f`` (``names``: id of a struct's fields -> class name)."""
    inner = struct_fields(f)
    if isinstance(f.type, StructOf):
        assert inner is not None
        optional = f.tag is not None or f.nullable is not None
        return names[id(inner)] + (" | None" if optional else "")
    if inner is not None:
        text = f"list[{names[id(inner)]}]"
    elif isinstance(f.type, ArrayOf):
        text = f"list[{_PYTHON_TYPES[f.type.element]}]"
    else:
        text = _PYTHON_TYPES[f.type]
    return text + (" | None" if f.nullable is not None or f.type is Primitive.RECORDS else "")


def default_source(f: F, names: dict[int, str]) -> str:
    """The source of field ``f``'s default (``= ...`` right-hand side)."""
    if f.default is not None:
        if not isinstance(f.type, Primitive):
            raise ValueError(f"field {f.name}: only primitive fields have table defaults")
        return repr(f.default)
    if isinstance(f.type, StructOf):
        if f.tag is not None or f.nullable is not None:
            return "None"
        return f"field(default_factory={names[id(f.type.fields)]})"
    if isinstance(f.type, Primitive):
        return "None" if _null_from_start(f) else _ZEROS[f.type]
    return "None" if _null_from_start(f) else "field(default_factory=list)"


def _versions_note(f: F, low: int, high: int) -> str | None:
    notes = []
    until = high if f.until is None else f.until
    if f.since > low or until < high:
        notes.append(f"v{f.since}+" if until >= high else f"v{f.since}-{until}")
    if f.nullable is not None:
        notes.append(f"nullable v{f.nullable}+")
    if f.tag is not None:
        notes.append(f"tag {f.tag}")
    return ", ".join(notes) or None


def _field_lines(f: F, names: dict[int, str], low: int, high: int) -> list[str]:
    lines = []
    note = _versions_note(f, low, high)
    if note:
        lines.append(f"    # {note}")
    line = f"    {f.name}: {annotation(f, names)} = {default_source(f, names)}"
    if len(line) > _LINE_LENGTH:
        # ruff format's split of a too-long annotated assignment: the call's arguments.
        head, _, rest = line.partition("(")
        lines += [head + "(", "        " + rest[:-1], "    )"]
    else:
        lines.append(line)
    return lines


def _holders(structs: list[tuple[str, tuple[F, ...]]], names: dict[int, str]) -> dict[str, str]:
    """Class name -> the first field holding that struct, as ``Holder.field``."""
    holders: dict[str, str] = {}
    for holder, struct in reversed(structs):
        for f in struct:
            inner = struct_fields(f)
            if inner is not None:
                holders.setdefault(names[id(inner)], f"``{holder}.{f.name}``")
    return holders


def module_source(api_key: ApiKey) -> str:
    """The source of the messages module of ``api_key``."""
    low, high = SUPPORTED_VERSIONS[api_key]
    classes: list[str] = []
    uses_field = uses_records = False
    for is_request in (True, False):
        top = message_class_name(api_key, is_request)
        fields = MESSAGES[api_key][0 if is_request else 1]
        structs = struct_class_names(top, fields)
        names = {id(struct): name for name, struct in structs}
        holders = _holders(structs, names)
        for name, struct in structs:
            if name == top:
                doc = f"{api_key.name} {'request' if is_request else 'response'} body."
            else:
                doc = f"The struct of {holders[name]}."
            body = ["@dataclass(slots=True)", f"class {name}(Message):", f'    """{doc}"""', ""]
            for f in struct:
                body += _field_lines(f, names, low, high)
                source = body[-1]
                uses_field = uses_field or "field(" in source or source == "    )"
                uses_records = uses_records or f.type is Primitive.RECORDS
            classes.append("\n".join(body) + "\n")
    api = message_class_name(api_key, True)[: -len("Request")]
    header = [
        f'"""{api} request and response bodies (versions {low}-{high}), typed.',
        "",
        "Generated by ``python -m common.protocol.generate`` from common/protocol/schemas.py;",
        "edit the tables and run it again instead of editing this file.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from dataclasses import dataclass" + (", field" if uses_field else ""),
        "",
        "from common.protocol.message_base import Message",
    ]
    if uses_records:
        header.append("from common.protocol.records_value import Records")
    return "\n".join(header) + "\n\n\n" + "\n\n".join(classes)


def _package_source() -> str:
    return (
        '"""Typed request and response bodies, one module per API, generated by\n'
        "``python -m common.protocol.generate`` from the schema tables (see\n"
        ":mod:`common.protocol.generate`). Nothing is imported here: the codec imports an\n"
        'API\'s module when it first compiles that API."""\n'
    )


def expected_files() -> dict[Path, str]:
    """Every generated file and its contents."""
    files = {MESSAGES_DIR / "__init__.py": _package_source()}
    for api_key in sorted(MESSAGES):
        files[MESSAGES_DIR / f"{module_name(api_key)}.py"] = module_source(api_key)
    return files


def stale_files() -> list[Path]:
    """Generated files whose committed contents differ from what the tables give, and
    modules in the messages package that the tables no longer produce."""
    expected = expected_files()
    stale = [path for path, text in expected.items() if _read(path) != text]
    if MESSAGES_DIR.is_dir():
        stale += sorted(p for p in MESSAGES_DIR.glob("*.py") if p not in expected)
    return stale


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale files")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files()
        for path in stale:
            print(f"stale: {path}", file=sys.stderr)
        return 1 if stale else 0
    MESSAGES_DIR.mkdir(exist_ok=True)
    expected = expected_files()
    for path in MESSAGES_DIR.glob("*.py"):
        if path not in expected:
            path.unlink()
    for path, text in expected.items():
        if _read(path) != text:
            path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
