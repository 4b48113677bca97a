"""Turn a schema table (:mod:`common.protocol.fields`) into per-version encode/decode code.

For every (message, version) the compiler writes the source of two straight-line Python
functions (no per-message interpretation of the schema) and compiles them once:

``decode(buf, pos, budget) -> (body, pos)``
    ``buf`` is a byte-format memoryview that ends exactly where the frame ends, so any fixed
    width read past the end raises ``struct.error`` and any single byte read past it
    ``IndexError`` (the caller turns both into :class:`ProtocolError`). Every length (string,
    bytes, records, array count) is checked against the bytes left before anything is sliced
    or allocated: an array's count must fit ``remaining // minimum element size``, so a forged
    count of 2**31-1 cannot allocate a huge list (a one-byte compact count, under 127, is
    exempt: so few elements allocate little and the first read past the end stops the loop).
    A decoder reads a struct's fields into locals and builds its body in one expression: a
    dict display, or an instance of its generated class (typed bodies, see :class:`_Gen`).
    ``budget`` bounds the total number of array elements in the message: each element
    costs far more memory as a Python object than its few bytes on the wire (a 2-byte string
    becomes a dict or str of 50-400 bytes), so the frame size bound alone would still let one
    100 MiB request allocate gigabytes. ``records`` values are memoryview slices of ``buf``
    (zero copy).

``encode(out, body, cuts) -> None``
    Appends the body to the bytearray ``out``; a typed body's attributes are read directly, a
    dict's missing keys take the field's default. A
    ``records`` value that is a file slice (integer attributes ``fileno``, ``position`` and
    ``length``) or a large buffer is not copied: its int32 length goes into ``out`` and
    ``(len(out), value)`` into ``cuts``; the caller splits ``out`` at those offsets and
    interleaves the values (see ``ResponseFrame.parts``).

Consecutive fixed-width fields are read and written with one precompiled ``struct.Struct``.
The generated code is pure (no I/O, no globals mutated) and thread-safe.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from common.protocol import compact_types
from common.protocol.compact_types import uvarint
from common.protocol.errors import EncodeError, ProtocolError
from common.protocol.fields import ArrayOf, F, Primitive, StructOf

# Buffers at least this large are passed through as their own part instead of being copied
# into the frame's bytearray (a Fetch response of 1 MiB of records is not copied).
ZERO_COPY_MIN_BYTES = 64 * 1024

_FIXED: dict[Primitive, tuple[str, int]] = {
    Primitive.INT8: ("b", 1),
    Primitive.INT16: ("h", 2),
    Primitive.INT32: ("i", 4),
    Primitive.INT64: ("q", 8),
    Primitive.UINT16: ("H", 2),
    Primitive.FLOAT64: ("d", 8),
    Primitive.BOOL: ("?", 1),
    Primitive.UUID: ("16s", 16),
}
# Smallest wire size of a variable-width value (its length prefix).
_MIN_VARIABLE: dict[Primitive, int] = {
    Primitive.STRING: 2,
    Primitive.BYTES: 4,
    Primitive.RECORDS: 4,
}
_ZERO: dict[Primitive, Any] = {
    Primitive.INT8: 0,
    Primitive.INT16: 0,
    Primitive.INT32: 0,
    Primitive.INT64: 0,
    Primitive.UINT16: 0,
    Primitive.FLOAT64: 0.0,
    Primitive.BOOL: False,
    Primitive.UUID: bytes(16),
    Primitive.STRING: "",
    Primitive.BYTES: b"",
    Primitive.RECORDS: None,
}

_i8_unpack = struct.Struct(">b").unpack_from
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_i16_unpack = _I16.unpack_from
_i32_unpack = _I32.unpack_from
_i16_pack = _I16.pack
_i32_pack = _I32.pack


# A compact records length as the two bytes after the fixed fields, big-endian, read as one
# uint16: the records' size when they are a canonical two-byte varint (length + 1 in 128..16383,
# so 127..16382 bytes of records), else a number so negative that the fast path's bounds check
# fails and the general code reads the length.
_NOT_TWO_BYTES = -(1 << 62)
_RECORDS_2: list[int] = [_NOT_TWO_BYTES] * 0x10000
for _b0 in range(0x80, 0x100):
    for _b1 in range(1, 0x80):
        _RECORDS_2[(_b0 << 8) | _b1] = ((_b0 & 0x7F) | (_b1 << 7)) - 1
del _b0, _b1


# ---------------------------------------------------------------- runtime helpers (decode)


def _read_string(buf: memoryview, pos: int, nullable: bool) -> tuple[str | None, int]:
    (length,) = _i16_unpack(buf, pos)
    pos += 2
    if length < 0:
        if length == -1 and nullable:
            return None, pos
        raise ProtocolError(f"invalid string length {length} at offset {pos - 2}")
    end = pos + length
    if end > len(buf):
        raise ProtocolError(f"string of {length} bytes at offset {pos - 2} overruns the frame")
    try:
        return str(buf[pos:end], "utf-8"), end
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"string at offset {pos - 2} is not valid UTF-8") from exc


def _read_bytes_view(buf: memoryview, pos: int, nullable: bool) -> tuple[memoryview | None, int]:
    (length,) = _i32_unpack(buf, pos)
    pos += 4
    if length < 0:
        if length == -1 and nullable:
            return None, pos
        raise ProtocolError(f"invalid bytes length {length} at offset {pos - 4}")
    end = pos + length
    if end > len(buf):
        raise ProtocolError(f"{length} bytes at offset {pos - 4} overrun the frame")
    return buf[pos:end], end


def _read_bytes(buf: memoryview, pos: int, nullable: bool) -> tuple[bytes | None, int]:
    view, pos = _read_bytes_view(buf, pos, nullable)
    return (None if view is None else bytes(view)), pos


def _read_count(buf: memoryview, pos: int, nullable: bool, min_size: int) -> tuple[int, int]:
    """An array count, -1 for null (only if ``nullable``); the count must fit the bytes left
    at ``min_size`` bytes per element, so a forged count never allocates."""
    (count,) = _i32_unpack(buf, pos)
    pos += 4
    if count < 0:
        if count == -1 and nullable:
            return -1, pos
        raise ProtocolError(f"invalid array length {count} at offset {pos - 4}")
    if count * min_size > len(buf) - pos:
        raise ProtocolError(f"array of {count} elements at offset {pos - 4} overruns the frame")
    return count, pos


def _odd_length(length: int, pos: int, nullable: bool) -> None:
    """Slow path of an inlined string/bytes read whose length is negative or overruns the
    frame: None for a legal null, else ProtocolError. ``pos`` is the offset of the length."""
    if length == -1 and nullable:
        return None
    if length < 0:
        raise ProtocolError(f"invalid length {length} at offset {pos}")
    raise ProtocolError(f"{length} bytes at offset {pos} overrun the frame")


def _too_many_elements(pos: int) -> None:
    raise ProtocolError(f"too many array elements in one message (array at offset {pos})")


def _odd_count(count: int, pos: int, nullable: bool) -> int:
    """Slow path of an inlined array count that is negative or cannot fit the bytes left:
    -1 for a legal null array, else ProtocolError."""
    if count == -1 and nullable:
        return -1
    if count < 0:
        raise ProtocolError(f"invalid array length {count} at offset {pos}")
    raise ProtocolError(f"array of {count} elements at offset {pos} overruns the frame")


# ---------------------------------------------------------------- runtime helpers (encode)


def _write_string(out: bytearray, value: str | None, nullable: bool) -> None:
    if value is None:
        if not nullable:
            raise EncodeError("null in a non-nullable string field")
        out += b"\xff\xff"
        return
    data = value.encode("utf-8")
    if len(data) > 0x7FFF:
        raise EncodeError(f"string of {len(data)} bytes exceeds 32767")
    out += _i16_pack(len(data))
    out += data


def _write_bytes(out: bytearray, value: Any, nullable: bool) -> None:
    if value is None:
        if not nullable:
            raise EncodeError("null in a non-nullable bytes field")
        out += b"\xff\xff\xff\xff"
        return
    size = value.nbytes if isinstance(value, memoryview) else len(value)
    out += _i32_pack(size)
    out += value


def _put_records(out: bytearray, value: Any, nullable: bool, cuts: list, compact: bool) -> None:
    """A records value after its length (int32, or in flexible versions ``compact``:
    uvarint(length + 1)): small buffers are copied into ``out``; large buffers and file slices
    become a cut (zero copy)."""
    if value is None:
        if not nullable:
            raise EncodeError("null in a non-nullable records field")
        out += b"\x00" if compact else b"\xff\xff\xff\xff"
        return
    cls = value.__class__
    if cls is bytes or cls is memoryview or isinstance(value, (bytes, bytearray, memoryview)):
        size = value.nbytes if cls is memoryview else len(value)
        copy = size < ZERO_COPY_MIN_BYTES
    else:
        size = getattr(value, "length", None)
        if not isinstance(size, int) or not isinstance(getattr(value, "position", None), int):
            raise EncodeError(
                f"records must be bytes-like, None or a file slice, not {type(value).__name__}"
            )
        copy = False
    if not compact:
        out += _i32_pack(size)
    elif size < 0x7F:  # the one- and two-byte varints (records under 16 KiB) inline
        out.append(size + 1)
    elif size < 0x3FFF:
        out.append(((size + 1) & 0x7F) | 0x80)
        out.append((size + 1) >> 7)
    else:
        out += uvarint(size + 1)
    if copy:
        out += value
    else:
        cuts.append((len(out), value))


def _write_count(out: bytearray, value: Any, nullable: bool) -> bool:
    """Writes an array count; False for a null array (nothing more to write)."""
    if value is None:
        if not nullable:
            raise EncodeError("null in a non-nullable array field")
        out += b"\xff\xff\xff\xff"
        return False
    out += _i32_pack(len(value))
    return True


_RUNTIME: dict[str, Any] = {
    "_read_string": _read_string,
    "_read_bytes": _read_bytes,
    "_read_bytes_view": _read_bytes_view,
    "_read_count": _read_count,
    "_odd_length": _odd_length,
    "_odd_count": _odd_count,
    "_too_many_elements": _too_many_elements,
    "_i8_unpack": _i8_unpack,
    "_i16_unpack": _i16_unpack,
    "_i16_pack": _i16_pack,
    "_ZERO_COPY_MIN_BYTES": ZERO_COPY_MIN_BYTES,
    "_write_string": _write_string,
    "_write_bytes": _write_bytes,
    "_put_records": _put_records,
    "_write_count": _write_count,
    "_i32_unpack": _i32_unpack,
    "_i32_pack": _i32_pack,
    "ProtocolError": ProtocolError,
    "EncodeError": EncodeError,
    "_new": object.__new__,
    # flexible versions
    "_uvarint": uvarint,
    "_RECORDS_2": _RECORDS_2,
    "_read_compact_string": compact_types.read_compact_string,
    "_read_compact_bytes": compact_types.read_compact_bytes,
    "_read_compact_bytes_view": compact_types.read_compact_bytes_view,
    "_read_compact_count": compact_types.read_compact_count,
    "_read_tag_count": compact_types.read_tag_count,
    "_read_tag_header": compact_types.read_tag_header,
    "_skip_tags": compact_types.skip_tags,
    "_write_compact_string": compact_types.write_compact_string,
    "_write_compact_bytes": compact_types.write_compact_bytes,
    "_write_compact_count": compact_types.write_compact_count,
    "_write_tags": compact_types.write_tags,
}


# ---------------------------------------------------------------- code generation


def _fields_in(fields: tuple[F, ...], version: int) -> list[F]:
    """The untagged fields of ``version``, in wire order."""
    return [f for f in fields if f.present_in(version) and f.tag is None]


def _tagged_in(fields: tuple[F, ...], version: int) -> list[F]:
    """The tagged fields of a flexible ``version``, in ascending tag order (the wire order)."""
    return sorted(
        (f for f in fields if f.present_in(version) and f.tag is not None), key=lambda f: f.tag
    )


def _min_size(fields: tuple[F, ...], version: int, flexible: bool = False) -> int:
    """Smallest wire size of a struct in ``version`` (fixed fields + length prefixes, and in
    flexible versions the one-byte count of its tagged fields)."""
    total = 1 if flexible else 0
    for f in _fields_in(fields, version):
        if isinstance(f.type, Primitive) and f.type in _FIXED:
            total += _FIXED[f.type][1]
        elif flexible:
            total += 1
        elif isinstance(f.type, Primitive):
            total += _MIN_VARIABLE[f.type]
        else:
            total += 4
    return total


def _default_literal(f: F, version: int) -> str:
    if f.default is not None:
        return repr(f.default)
    if isinstance(f.type, StructOf):
        return "None" if f.nullable_in(version) else "{}"
    if isinstance(f.type, Primitive):
        if f.nullable_in(version) and f.type is not Primitive.RECORDS:
            return "None"
        return repr(_ZERO[f.type])
    return "None" if f.nullable_in(version) else "()"


def _runs(fields: list[F]) -> list[list[F] | F]:
    """Group consecutive fixed-width fields so that each group is one struct call."""
    runs: list[list[F] | F] = []
    for f in fields:
        if isinstance(f.type, Primitive) and f.type in _FIXED:
            if runs and isinstance(runs[-1], list):
                runs[-1].append(f)
            else:
                runs.append([f])
        else:
            runs.append(f)
    return runs


class _Gen:
    """Accumulates generated source lines and the constants they reference. ``classes``
    (``id(fields) -> class``, :func:`common.protocol.message_names.struct_classes`) selects
    the typed bodies: decoders build those classes and encoders read their attributes;
    without it bodies are dicts."""

    def __init__(self, classes: dict[int, type] | None = None) -> None:
        self.lines: list[str] = []
        self.consts: dict[str, Any] = {}
        self._counter = 0
        self.classes = classes

    def get(self, d: str, f: F, version: int, default: str | None = None) -> str:
        """The expression of field ``f`` of the body ``d`` being encoded: an attribute of a
        typed body; a dict's value, or ``default`` (the field's default in ``version`` if
        None) when the key is missing."""
        if self.classes is not None:
            return f"{d}.{f.name}"
        if default is None:
            default = _default_literal(f, version)
        return f"{d}.get({f.name!r}, {default})"

    def is_set(self, d: str, f: F) -> str:
        """Whether the tagged struct ``f`` of ``d`` may be set (then encoded if non-empty)."""
        if self.classes is not None:
            return f"{d}.{f.name} is not None"
        return f"{f.name!r} in {d}"

    def build(self, ind: int, d: str, fields: tuple[F, ...], decoded: list[F]) -> None:
        """Emit the code building a decoded struct ``d`` from the locals of its ``decoded``
        fields: a dict display, or for a typed body an instance made without ``__init__``
        whose every slot is stored (fields not in this version get the class's default).
        ``object.__new__`` and slot stores cost about half of a positional ``__init__``
        call of a slotted dataclass, and less than the dict display."""
        if self.classes is None:
            display = ", ".join(f"{f.name!r}: {_slot(d, f)}" for f in decoded)
            self.emit(ind, f"{d} = {{{display}}}")
            return
        cls = self.classes[id(fields)]
        defaults = {f.name: f for f in dataclasses.fields(cls)}
        present = {f.name for f in decoded}
        self.emit(ind, f"{d} = _new({self.const(cls, 'cls')})")
        for f in fields:
            value = _slot(d, f) if f.name in present else self._default(defaults[f.name])
            self.emit(ind, f"{d}.{f.name} = {value}")

    def _default(self, f: dataclasses.Field) -> str:
        """The expression of a dataclass field's default (a new list or struct each time)."""
        if f.default_factory is list:
            return "[]"
        if f.default_factory is not dataclasses.MISSING:
            return f"{self.const(f.default_factory, 'new')}()"
        value = f.default
        if value is None or isinstance(value, (bool, int, float, str, bytes)):
            return repr(value)
        return self.const(value, "default")

    def const(self, value: Any, prefix: str) -> str:
        self._counter += 1
        name = f"_{prefix}{self._counter}"
        self.consts[name] = value
        return name

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)


def _length_prefix(f: F) -> str | None:
    """Struct code of the length/count prefix a variable-width field starts with (inlined
    kinds only), so that a preceding fixed run can read it in the same struct call."""
    if f.type is Primitive.STRING:
        return "h"
    if f.type is Primitive.RECORDS or (not isinstance(f.type, (Primitive, ArrayOf))):
        return "i"
    return None


def _gen_decode_struct(g: _Gen, fields: tuple[F, ...], version: int, d: str, ind: int) -> None:
    """Decode a struct into ``d``: its fields are read into locals (:func:`_slot`), then the
    body is built in one expression (:meth:`_Gen.build`)."""
    _gen_decode_struct_fields(g, fields, version, d, ind)
    g.build(ind, d, fields, _fields_in(fields, version))


def _gen_decode_struct_fields(
    g: _Gen, fields: tuple[F, ...], version: int, d: str, ind: int
) -> None:
    depth = ind
    runs = _runs(_fields_in(fields, version))
    prefetched = False  # whether the previous fixed run already read this field's prefix
    for index, run in enumerate(runs):
        if isinstance(run, list):
            fmt = "".join(_FIXED[f.type][0] for f in run)
            targets = [_slot(d, f) for f in run]
            size = struct.calcsize(">" + fmt)
            following = runs[index + 1] if index + 1 < len(runs) else None
            prefix = _length_prefix(following) if isinstance(following, F) else None
            if prefix is not None:
                # Read the next field's length prefix with this run; pos stays at the prefix.
                fmt += prefix
                is_array = not isinstance(following.type, Primitive)
                targets.append(f"n{depth}" if is_array else "n")
            name = g.const(struct.Struct(">" + fmt).unpack_from, "unpack")
            g.emit(ind, f"({', '.join(targets)},) = {name}(buf, pos)")
            g.emit(ind, f"pos += {size}")
            prefetched = prefix is not None
            continue
        f = run
        nullable = f.nullable_in(version)
        key = _slot(d, f)
        if f.type is Primitive.STRING:
            # Inlined: int16 length, then UTF-8 (UnicodeDecodeError is turned into
            # ProtocolError by the caller).
            if not prefetched:
                g.emit(ind, "(n, ) = _i16_unpack(buf, pos)")
            g.emit(ind, "end = pos + 2 + n")
            g.emit(ind, "if n < 0 or end > blen:")
            g.emit(ind + 1, f"{key} = _odd_length(n, pos, {nullable})")
            g.emit(ind + 1, "pos += 2")
            g.emit(ind, "else:")
            g.emit(ind + 1, f"{key} = str(buf[pos + 2:end], 'utf-8')")
            g.emit(ind + 1, "pos = end")
        elif f.type is Primitive.BYTES:
            g.emit(ind, f"{key}, pos = _read_bytes(buf, pos, {nullable})")
        elif f.type is Primitive.RECORDS:
            # Inlined: int32 length, then a view of the frame (zero copy).
            if not prefetched:
                g.emit(ind, "(n, ) = _i32_unpack(buf, pos)")
            g.emit(ind, "end = pos + 4 + n")
            g.emit(ind, "if n < 0 or end > blen:")
            g.emit(ind + 1, f"{key} = _odd_length(n, pos, {nullable})")
            g.emit(ind + 1, "pos += 4")
            g.emit(ind, "else:")
            g.emit(ind + 1, f"{key} = buf[pos + 4:end]")
            g.emit(ind + 1, "pos = end")
        elif isinstance(f.type, ArrayOf):
            _gen_decode_primitive_array(g, f, nullable, key, ind, depth)
        else:
            n, lst, item = f"n{depth}", f"l{depth}", f"d{depth + 1}"
            size = max(1, _min_size(f.type, version))
            if not prefetched:
                g.emit(ind, f"({n}, ) = _i32_unpack(buf, pos)")
            g.emit(ind, f"if {n} < 0 or {n} * {size} > blen - pos - 4:")
            g.emit(ind + 1, f"{n} = _odd_count({n}, pos, {nullable})")
            g.emit(ind, "pos += 4")
            if nullable:
                g.emit(ind, f"if {n} < 0:")
                g.emit(ind + 1, f"{key} = None")
                g.emit(ind, "else:")
                ind_body = ind + 1
            else:
                ind_body = ind
            _gen_budget(g, n, ind_body)
            g.emit(ind_body, f"{key} = {lst} = []")
            g.emit(ind_body, f"for _ in range({n}):")
            _gen_decode_struct(g, f.type, version, item, ind_body + 1)
            g.emit(ind_body + 1, f"{lst}.append({item})")
        prefetched = False


def _gen_budget(g: _Gen, n: str, ind: int) -> None:
    """Charge an array's element count to the message's element budget."""
    g.emit(ind, f"budget -= {n}")
    g.emit(ind, "if budget < 0:")
    g.emit(ind + 1, "_too_many_elements(pos)")


def _gen_decode_primitive_array(
    g: _Gen, f: F, nullable: bool, key: str, ind: int, depth: int
) -> None:
    element = f.type.element
    n = f"n{depth}"
    if element in _FIXED:
        code, size = _FIXED[element]
        g.emit(ind, f"{n}, pos = _read_count(buf, pos, {nullable}, {size})")
        g.emit(ind, f"if {n} < 0:")
        g.emit(ind + 1, f"{key} = None")
        g.emit(ind, "else:")
        _gen_budget(g, n, ind + 1)
        g.emit(ind + 1, f"{key} = list(_unpack_from('>%d{code}' % {n}, buf, pos))")
        g.emit(ind + 1, f"pos += {n} * {size}")
        g.consts["_unpack_from"] = struct.unpack_from
        return
    reader = {Primitive.STRING: "_read_string", Primitive.BYTES: "_read_bytes"}[element]
    g.emit(ind, f"{n}, pos = _read_count(buf, pos, {nullable}, {_MIN_VARIABLE[element]})")
    g.emit(ind, f"if {n} < 0:")
    g.emit(ind + 1, f"{key} = None")
    g.emit(ind, "else:")
    _gen_budget(g, n, ind + 1)
    g.emit(ind + 1, f"{key} = l{depth} = []")
    g.emit(ind + 1, f"for _ in range({n}):")
    g.emit(ind + 2, f"v{depth}, pos = {reader}(buf, pos, False)")
    g.emit(ind + 2, f"l{depth}.append(v{depth})")


def _gen_encode_struct(g: _Gen, fields: tuple[F, ...], version: int, d: str, ind: int) -> None:
    depth = ind
    for run in _runs(_fields_in(fields, version)):
        if isinstance(run, list):
            st = struct.Struct(">" + "".join(_FIXED[f.type][0] for f in run))
            name = g.const(st.pack, "pack")
            args = ", ".join(g.get(d, f, version) for f in run)
            g.emit(ind, f"out += {name}({args})")
            continue
        f = run
        nullable = f.nullable_in(version)
        value = g.get(d, f, version)
        if f.type is Primitive.STRING:
            # Inlined fast path for a str of at most 32767 bytes; the helper handles the rest.
            g.emit(ind, f"s = {value}")
            g.emit(ind, "b = s.encode('utf-8') if s.__class__ is str else None")
            g.emit(ind, "if b is not None and len(b) <= 0x7FFF:")
            g.emit(ind + 1, "out += _i16_pack(len(b))")
            g.emit(ind + 1, "out += b")
            g.emit(ind, "else:")
            g.emit(ind + 1, f"_write_string(out, s, {nullable})")
        elif f.type is Primitive.BYTES:
            g.emit(ind, f"_write_bytes(out, {value}, {nullable})")
        elif f.type is Primitive.RECORDS:
            # Inlined fast path for small bytes; file slices and large buffers go to the helper.
            g.emit(ind, f"r = {value}")
            g.emit(ind, "if r.__class__ is bytes and len(r) < _ZERO_COPY_MIN_BYTES:")
            g.emit(ind + 1, "out += _i32_pack(len(r))")
            g.emit(ind + 1, "out += r")
            g.emit(ind, "else:")
            g.emit(ind + 1, f"_put_records(out, r, {nullable}, cuts, False)")
        elif isinstance(f.type, ArrayOf):
            element = f.type.element
            v = f"v{depth}"
            g.emit(ind, f"{v} = {value}")
            g.emit(ind, f"if _write_count(out, {v}, {nullable}):")
            if element in _FIXED:
                code = _FIXED[element][0]
                g.consts["_pack"] = struct.pack
                g.emit(ind + 1, f"out += _pack('>%d{code}' % len({v}), *{v})")
            else:
                writer = {Primitive.STRING: "_write_string", Primitive.BYTES: "_write_bytes"}
                g.emit(ind + 1, f"for e{depth} in {v}:")
                g.emit(ind + 2, f"{writer[element]}(out, e{depth}, False)")
        else:
            v, item = f"v{depth}", f"d{depth + 1}"
            g.emit(ind, f"{v} = {value}")
            g.emit(ind, f"if {v} is None:")
            g.emit(ind + 1, f"_write_count(out, None, {nullable})")
            g.emit(ind, "else:")
            g.emit(ind + 1, f"out += _i32_pack(len({v}))")
            g.emit(ind + 1, f"for {item} in {v}:")
            _gen_encode_struct(g, f.type, version, item, ind + 2)


# ---------------------------------------------------------------- flexible versions
#
# Flexible versions use the compact encodings and end every struct with its tagged fields
# (see common.protocol.compact_types). Their code is generated without the inlined fast
# paths of the non-flexible generator: variable-width values go through the helpers.


def _slot(d: str, f: F) -> str:
    """The local variable a flexible decoder reads field ``f`` of struct ``d`` into."""
    return f"{d}_{f.name}"


def _gen_decode_struct_flex(
    g: _Gen, fields: tuple[F, ...], version: int, d: str, ind: int, depth: int = -1
) -> None:
    """Decode a struct into the new dict ``d``. Its fields are read into locals
    (:func:`_slot`) and the dict is built in one display at the end: a dict grown key by key
    resizes twice past ten keys (a Fetch response partition has eleven), a display is sized
    once."""
    _gen_decode_struct_flex_fields(g, fields, version, d, ind, depth)
    entries = _fields_in(fields, version) + _tagged_in(fields, version)
    g.build(ind, d, fields, entries)


def _gen_decode_struct_flex_fields(
    g: _Gen, fields: tuple[F, ...], version: int, d: str, ind: int, depth: int = -1
) -> None:
    # Generated variable names are numbered by depth; a struct nested in place (same
    # indentation as its parent) is one level deeper, or its names would shadow the parent's.
    depth = ind if depth < 0 else depth
    runs = _runs(_fields_in(fields, version))
    tagged = _tagged_in(fields, version)
    skip_next = False
    peeked = False
    for i, run in enumerate(runs):
        if skip_next:
            skip_next = False
            continue
        if isinstance(run, list):
            after = runs[i + 1] if i + 1 < len(runs) else None
            if isinstance(after, F) and after.type is Primitive.RECORDS:
                if i + 2 == len(runs):
                    # The struct ends with these records: one fused fast path reads the
                    # fields, the length and the empty tag section, else the general code.
                    _gen_decode_run_records_end(g, run, after, d, ind)
                    _gen_tag_defaults(g, tagged, version, d, ind + 1)
                    g.emit(ind, "else:")
                    _gen_decode_run_then_records(g, run, after, version, d, ind + 1)
                    _gen_decode_tag_section(g, tagged, version, d, ind + 1, depth)
                    return
                _gen_decode_run_then_records(g, run, after, version, d, ind)
                skip_next = True
                continue
            fmt = "".join(_FIXED[f.type][0] for f in run)
            size = struct.calcsize(">" + fmt)
            targets = ", ".join(_slot(d, f) for f in run)
            if i + 1 == len(runs):
                # The struct ends with these fields: the same struct call reads the first
                # byte of the tag section (it must be there: a shorter buffer is truncated).
                name = g.const(struct.Struct(">" + fmt + "B").unpack_from, "unpack")
                g.emit(ind, f"({targets}, tb,) = {name}(buf, pos)")
                g.emit(ind, "if tb == 0:")
                g.emit(ind + 1, f"pos += {size + 1}")
                _gen_tag_defaults(g, tagged, version, d, ind + 1)
                g.emit(ind, "else:")
                g.emit(ind + 1, f"pos += {size}")
                _gen_decode_tag_section(g, tagged, version, d, ind + 1, depth)
                return
            if isinstance(after, F) and _is_array(after):
                # The same struct call reads the first byte of the array's count (a valid
                # struct always has it).
                name = g.const(struct.Struct(">" + fmt + "B").unpack_from, "unpack")
                g.emit(ind, f"({targets}, n{depth},) = {name}(buf, pos)")
                g.emit(ind, f"pos += {size + 1}")
                peeked = True
                continue
            name = g.const(struct.Struct(">" + fmt).unpack_from, "unpack")
            g.emit(ind, f"({targets},) = {name}(buf, pos)")
            g.emit(ind, f"pos += {size}")
        else:
            _gen_decode_field_flex(g, run, version, _slot(d, run), ind, depth, peeked)
            peeked = False
    _gen_decode_tag_section(g, tagged, version, d, ind, depth)


def _is_array(f: F) -> bool:
    """An array field (of primitives or of structs), whose compact count starts it."""
    return not isinstance(f.type, Primitive | StructOf)


def _gen_decode_tag_section(
    g: _Gen, tagged: list[F] | tuple[F, ...], version: int, d: str, ind: int, depth: int
) -> None:
    """The tagged-field section ending a struct: known tags decoded, unknown ones skipped."""
    t, e = f"t{depth}", f"e{depth}"
    if not tagged:
        # Fast path: almost every struct ends with an empty tagged-field section (one 0 byte).
        g.emit(ind, "if buf[pos] == 0:")
        g.emit(ind + 1, "pos += 1")
        g.emit(ind, "else:")
        g.emit(ind + 1, f"{t}, pos = _read_tag_count(buf, pos)")
        _gen_budget(g, t, ind + 1)
        g.emit(ind + 1, f"if {t}:")
        g.emit(ind + 2, f"pos = _skip_tags(buf, pos, {t})")
        return
    _gen_tag_defaults(g, tagged, version, d, ind)
    g.emit(ind, "if buf[pos] == 0:")  # no tagged field present: the usual case
    g.emit(ind + 1, "pos += 1")
    g.emit(ind, "else:")
    ind += 1
    g.emit(ind, f"{t}, pos = _read_tag_count(buf, pos)")
    _gen_budget(g, t, ind)
    g.emit(ind, f"for _ in range({t}):")
    g.emit(ind + 1, f"{t}, {e}, pos = _read_tag_header(buf, pos)")
    for i, f in enumerate(tagged):
        g.emit(ind + 1, f"{'if' if i == 0 else 'elif'} {t} == {f.tag}:")
        _gen_decode_field_flex(g, f, version, _slot(d, f), ind + 2, depth)
        g.emit(ind + 2, f"if pos > {e}:")
        g.emit(ind + 3, f"raise ProtocolError(f'tagged field {f.tag} overruns its size')")
    # Unknown tags are skipped; a known one is read from its start, its size rules.
    g.emit(ind + 1, f"pos = {e}")


def _gen_tag_defaults(
    g: _Gen, tagged: list[F] | tuple[F, ...], version: int, d: str, ind: int
) -> None:
    """Every tagged field at its default (what an absent tag decodes as)."""
    for f in tagged:
        default = _default_literal(f, version)
        if isinstance(f.type, StructOf):
            default = "None"  # an absent tagged struct: None (no map built per message)
        # An absent array decodes as a new empty list, as a present empty one does.
        g.emit(ind, f"{_slot(d, f)} = {'[]' if default == '()' else default}")


def _gen_decode_run_records_end(g: _Gen, run: list[F], records: F, d: str, ind: int) -> None:
    """Fixed fields, then compact records of 127 B..16 KiB (a two-byte varint length), then an
    empty tag section: the usual Produce request and Fetch response partition. One struct call
    reads the fields and the two length bytes; ``_RECORDS_2`` turns those into the length (or
    a large negative number when they are not a canonical two-byte varint), and one chained
    comparison checks both that the records fit and that the byte after them is the empty tag
    section. Emits the ``if`` of that fast path and leaves ``pos`` unchanged when it fails; the
    caller emits the success branch's tag defaults and the ``else`` with the general code.
    A valid struct always has the bytes read here (a varint byte and the tag byte follow the
    fields), so a short buffer is truncated and struct.error is the right answer."""
    fmt = "".join(_FIXED[f.type][0] for f in run)
    size = struct.calcsize(">" + fmt)
    peek = g.const(struct.Struct(">" + fmt + "H").unpack_from, "unpack")
    targets = ", ".join(_slot(d, f) for f in run)
    key = _slot(d, records)
    g.emit(ind, f"({targets}, h,) = {peek}(buf, pos)")
    g.emit(ind, f"end = pos + {size + 2} + _RECORDS_2[h]")
    g.emit(ind, "if pos < end < blen and buf[end] == 0:")
    g.emit(ind + 1, f"{key} = buf[pos + {size + 2}:end]")
    g.emit(ind + 1, "pos = end + 1")


def _gen_decode_run_then_records(
    g: _Gen, run: list[F], records: F, version: int, d: str, ind: int
) -> None:
    """Fixed fields followed by compact records (a Produce request's or a Fetch response's
    partition): one struct call reads the fields and the first two bytes of the records'
    varint length, which covers batches under 16 KiB; anything else takes the checking
    helper. The two bytes are always there in a valid struct (a varint byte, then the tag
    section or another field)."""
    fmt = "".join(_FIXED[f.type][0] for f in run)
    size = struct.calcsize(">" + fmt)
    peek = g.const(struct.Struct(">" + fmt + "BB").unpack_from, "unpack")
    targets = ", ".join(_slot(d, f) for f in run)
    key = _slot(d, records)
    g.emit(ind, f"({targets}, b0, b1,) = {peek}(buf, pos)")
    g.emit(ind, f"pos += {size}")
    _gen_decode_records_at(g, "b0", "b1", key, records.nullable_in(version), ind)


def _gen_decode_records_at(g: _Gen, b0: str, b1: str, key: str, nullable: bool, ind: int) -> None:
    """Compact records at ``pos``, given expressions for the first two bytes of their varint
    length: one or two length bytes (batches under 16 KiB) are read inline and the data taken
    as a view of the frame (zero copy); anything else (null, longer, overrunning) goes
    through the checking helper."""
    g.emit(ind, f"if 0 < {b0} < 0x80:")
    g.emit(ind + 1, f"n = {b0} - 1")
    g.emit(ind + 1, "p = pos + 1")
    g.emit(ind, f"elif {b0} >= 0x80 and {b1} < 0x80:")
    g.emit(ind + 1, f"n = (({b0} & 0x7F) | ({b1} << 7)) - 1")
    g.emit(ind + 1, "p = pos + 2")
    g.emit(ind, "else:")
    g.emit(ind + 1, "p = -1")
    g.emit(ind, "if p > 0 and n <= blen - p:")
    g.emit(ind + 1, f"{key} = buf[p:p + n]")
    g.emit(ind + 1, "pos = p + n")
    g.emit(ind, "else:")
    g.emit(ind + 1, f"{key}, pos = _read_compact_bytes_view(buf, pos, {nullable})")


def _gen_decode_field_flex(
    g: _Gen, f: F, version: int, key: str, ind: int, depth: int, peeked: bool = False
) -> None:
    """Decode one field into ``key``. ``peeked`` (arrays only): the first byte of the count
    is already in ``n{depth}`` and ``pos`` is past it."""
    nullable = f.nullable_in(version)
    if isinstance(f.type, Primitive) and f.type in _FIXED:
        code, size = _FIXED[f.type]
        name = g.const(struct.Struct(">" + code).unpack_from, "unpack")
        g.emit(ind, f"({key},) = {name}(buf, pos)")
        g.emit(ind, f"pos += {size}")
    elif f.type is Primitive.STRING:
        # Fast path: a one-byte length (strings under 127 bytes) read inline; anything else
        # (null, long, truncated) goes through the checking helper.
        g.emit(ind, "n = buf[pos]")
        g.emit(ind, "if 0 < n < 0x80 and pos + n <= blen:")
        g.emit(ind + 1, f"{key} = str(buf[pos + 1:pos + n], 'utf-8')")
        g.emit(ind + 1, "pos += n")
        if nullable:
            g.emit(ind, "elif n == 0:")
            g.emit(ind + 1, f"{key} = None")
            g.emit(ind + 1, "pos += 1")
        g.emit(ind, "else:")
        g.emit(ind + 1, f"{key}, pos = _read_compact_string(buf, pos, {nullable})")
    elif f.type is Primitive.BYTES:
        g.emit(ind, f"{key}, pos = _read_compact_bytes(buf, pos, {nullable})")
    elif f.type is Primitive.RECORDS:
        g.emit(ind, "n = buf[pos]")
        _gen_decode_records_at(g, "n", "buf[pos + 1]", key, nullable, ind)
    elif isinstance(f.type, StructOf):
        item = f"d{depth + 1}"
        inner = ind
        if nullable:
            g.emit(ind, "(m, ) = _i8_unpack(buf, pos)")
            g.emit(ind, "pos += 1")
            g.emit(ind, "if m < 0:")
            g.emit(ind + 1, f"{key} = None")
            g.emit(ind, "else:")
            inner = ind + 1
        _gen_decode_struct_flex(g, f.type.fields, version, item, inner, max(inner, depth + 1))
        g.emit(inner, f"{key} = {item}")
    else:
        n, lst = f"n{depth}", f"l{depth}"
        if isinstance(f.type, ArrayOf):
            element = f.type.element
            size = _FIXED[element][1] if element in _FIXED else 1
        else:
            size = max(1, _min_size(f.type, version, True))
        # Fast path: a one-byte count (under 127 elements). It is not checked against the
        # bytes left: so few elements cannot allocate much, the budget still counts them and
        # the first read past the end stops the loop.
        if peeked:
            g.emit(ind, f"if 0 < {n} < 0x80:")
            g.emit(ind + 1, f"{n} -= 1")
            if nullable:
                g.emit(ind, f"elif {n} == 0:")
                g.emit(ind + 1, f"{n} = -1")
            g.emit(ind, "else:")
            g.emit(ind + 1, f"{n}, pos = _read_compact_count(buf, pos - 1, {nullable}, {size})")
        else:
            g.emit(ind, f"{n} = buf[pos]")
            g.emit(ind, f"if 0 < {n} < 0x80:")
            g.emit(ind + 1, f"{n} -= 1")
            g.emit(ind + 1, "pos += 1")
            if nullable:
                # A null array (a single zero byte) is common: Fetch's aborted_transactions.
                g.emit(ind, f"elif {n} == 0:")
                g.emit(ind + 1, f"{n} = -1")
                g.emit(ind + 1, "pos += 1")
            g.emit(ind, "else:")
            g.emit(ind + 1, f"{n}, pos = _read_compact_count(buf, pos, {nullable}, {size})")
        # An element struct's names are numbered deeper than any of this struct's.
        element_depth = max(ind + 2, depth + 1)
        if nullable:
            g.emit(ind, f"if {n} < 0:")
            g.emit(ind + 1, f"{key} = None")
            g.emit(ind, "else:")
            ind += 1
        # (A non-nullable count is never -1: the helper refuses a null there.)
        _gen_budget(g, n, ind)
        g.emit(ind, f"{key} = {lst} = []")
        g.emit(ind, f"for _ in range({n}):")
        if isinstance(f.type, ArrayOf) and f.type.element in _FIXED:
            code, width = _FIXED[f.type.element]
            name = g.const(struct.Struct(">" + code).unpack_from, "unpack")
            g.emit(ind + 1, f"{lst}.append({name}(buf, pos)[0])")
            g.emit(ind + 1, f"pos += {width}")
        elif isinstance(f.type, ArrayOf):
            reader = {
                Primitive.STRING: "_read_compact_string",
                Primitive.BYTES: "_read_compact_bytes",
            }[f.type.element]
            g.emit(ind + 1, f"v{depth}, pos = {reader}(buf, pos, False)")
            g.emit(ind + 1, f"{lst}.append(v{depth})")
        else:
            item = f"d{depth + 1}"
            _gen_decode_struct_flex(g, f.type, version, item, ind + 1, element_depth)
            g.emit(ind + 1, f"{lst}.append({item})")


def _gen_encode_struct_flex(
    g: _Gen, fields: tuple[F, ...], version: int, d: str, ind: int, depth: int = -1
) -> None:
    # Generated variable names are numbered by depth; a struct nested in place (same
    # indentation as its parent) is one level deeper, or its names would shadow the parent's.
    depth = ind if depth < 0 else depth
    runs = _runs(_fields_in(fields, version))
    skip_next = False
    for i, run in enumerate(runs):
        if skip_next:
            skip_next = False
            continue
        if isinstance(run, list):
            fmt = "".join(_FIXED[f.type][0] for f in run)
            name = g.const(struct.Struct(">" + fmt).pack, "pack")
            args = ", ".join(g.get(d, f, version) for f in run)
            after = runs[i + 1] if i + 1 < len(runs) else None
            if isinstance(after, F) and after.type is Primitive.RECORDS:
                # Fixed fields, then records held as bytes of 127 B..16 KiB (a two-byte varint
                # length, the usual Fetch response partition): one pack call for both.
                fused = g.const(struct.Struct(">" + fmt + "H").pack, "pack")
                g.emit(ind, f"r = {g.get(d, after, version, 'None')}")
                g.emit(ind, "if r.__class__ is bytes and 0x7F <= len(r) < 0x3FFF:")
                g.emit(ind + 1, "n = len(r) + 1")
                g.emit(ind + 1, f"out += {fused}({args}, (((n & 0x7F) | 0x80) << 8) | (n >> 7))")
                g.emit(ind + 1, "out += r")
                g.emit(ind, "else:")
                g.emit(ind + 1, f"out += {name}({args})")
                _gen_encode_field_flex(g, after, version, "r", ind + 1, depth)
                skip_next = True
                continue
            g.emit(ind, f"out += {name}({args})")
        else:
            value = g.get(d, run, version)
            _gen_encode_field_flex(g, run, version, value, ind, depth)
    tagged = _tagged_in(fields, version)
    if not tagged:
        g.emit(ind, "out += b'\\x00'")
        return
    tg, saved, v = f"tg{depth}", f"o{depth}", f"w{depth}"
    if all(isinstance(f.type, StructOf) for f in tagged):
        # Tagged structs are sent only when set, and usually none is even a key (a Fetch
        # partition's diverging epoch, current leader, snapshot id): one test of key presence
        # (cheaper than a get per field), one empty section byte. A key holding None or an
        # empty map takes the general code below, which leaves it out.
        absent = " or ".join(g.is_set(d, f) for f in tagged)
        g.emit(ind, f"if not ({absent}):")
        g.emit(ind + 1, "out.append(0)")
        g.emit(ind, "else:")
        ind += 1
    g.emit(ind, f"{tg} = []")
    for f in tagged:
        default = _default_literal(f, version)
        if isinstance(f.type, StructOf):
            # Sent only when set (a non-empty map): no default map is built per call.
            g.emit(ind, f"{v} = {g.get(d, f, version, 'None')}")
            present = v
        else:
            g.emit(ind, f"{v} = {g.get(d, f, version, default)}")
            if isinstance(f.type, Primitive):
                present = f"{v} != {default}"
            elif default == "None":
                present = f"{v} is not None"
            else:
                present = v
        g.emit(ind, f"if {present}:")
        # The value is encoded into its own buffer: the section needs its size first.
        g.emit(ind + 1, f"{saved}, out = out, bytearray()")
        _gen_encode_field_flex(g, f, version, v, ind + 1, depth + 1)
        g.emit(ind + 1, f"{tg}.append(({f.tag}, out))")
        g.emit(ind + 1, f"out = {saved}")
    g.emit(ind, f"if {tg}:")
    g.emit(ind + 1, f"_write_tags(out, {tg})")
    g.emit(ind, "else:")
    g.emit(ind + 1, "out.append(0)")


def _gen_encode_field_flex(g: _Gen, f: F, version: int, value: str, ind: int, depth: int) -> None:
    nullable = f.nullable_in(version)
    if isinstance(f.type, Primitive) and f.type in _FIXED:
        name = g.const(struct.Struct(">" + _FIXED[f.type][0]).pack, "pack")
        g.emit(ind, f"out += {name}({value})")
    elif f.type is Primitive.STRING:
        s_, b_ = f"s{depth}", f"b{depth}"
        g.emit(ind, f"{s_} = {value}")
        g.emit(ind, f"{b_} = {s_}.encode() if {s_}.__class__ is str else None")
        g.emit(ind, f"if {b_} is not None and len({b_}) < 0x7F:")
        g.emit(ind + 1, f"out.append(len({b_}) + 1)")
        g.emit(ind + 1, f"out += {b_}")
        if nullable:
            g.emit(ind, f"elif {s_} is None:")
            g.emit(ind + 1, "out.append(0)")
        g.emit(ind, "else:")
        g.emit(ind + 1, f"_write_compact_string(out, {s_}, {nullable})")
    elif f.type is Primitive.BYTES:
        g.emit(ind, f"_write_compact_bytes(out, {value}, {nullable})")
    elif f.type is Primitive.RECORDS:
        # Fast path: records held as bytes under 16 KiB (a one- or two-byte varint length)
        # are copied in place; file slices, large or odd values take the general helper.
        u16 = g.const(struct.Struct(">H").pack, "pack")
        if value != "r":
            g.emit(ind, f"r = {value}")
        g.emit(ind, "if r.__class__ is bytes and len(r) < 0x3FFF:")
        g.emit(ind + 1, "n = len(r) + 1")
        g.emit(ind + 1, "if n < 0x80:")
        g.emit(ind + 2, "out.append(n)")
        g.emit(ind + 1, "else:")
        g.emit(ind + 2, f"out += {u16}((((n & 0x7F) | 0x80) << 8) | (n >> 7))")
        g.emit(ind + 1, "out += r")
        g.emit(ind, "else:")
        g.emit(ind + 1, f"_put_records(out, r, {nullable}, cuts, True)")
    elif isinstance(f.type, StructOf):
        item = f"d{depth + 1}"
        g.emit(ind, f"{item} = {value}")
        inner = ind
        if nullable:
            g.emit(ind, f"if {item} is None:")
            g.emit(ind + 1, "out += b'\\xff'")
            g.emit(ind, "else:")
            g.emit(ind + 1, "out += b'\\x01'")
            inner = ind + 1
        _gen_encode_struct_flex(g, f.type.fields, version, item, inner, max(inner, depth + 1))
    else:
        v = f"v{depth}"
        g.emit(ind, f"{v} = {value}")
        ok = f"k{depth}"
        if nullable:
            # A null array (Fetch's aborted_transactions, usually) is one zero byte, inline.
            g.emit(ind, f"if {v} is None:")
            g.emit(ind + 1, "out.append(0)")
            g.emit(ind, "else:")
            ind += 1
            g.emit(ind, f"if len({v}) < 0x7F:")
        else:
            g.emit(ind, f"if {v} is not None and len({v}) < 0x7F:")
        g.emit(ind + 1, f"out.append(len({v}) + 1)")
        g.emit(ind + 1, f"{ok} = True")
        g.emit(ind, "else:")
        g.emit(ind + 1, f"{ok} = _write_compact_count(out, {v}, {nullable})")
        g.emit(ind, f"if {ok}:")
        if isinstance(f.type, ArrayOf) and f.type.element in _FIXED:
            g.consts["_pack"] = struct.pack
            g.emit(ind + 1, f"out += _pack('>%d{_FIXED[f.type.element][0]}' % len({v}), *{v})")
        elif isinstance(f.type, ArrayOf):
            writer = {
                Primitive.STRING: "_write_compact_string",
                Primitive.BYTES: "_write_compact_bytes",
            }[f.type.element]
            g.emit(ind + 1, f"for e{depth} in {v}:")
            g.emit(ind + 2, f"{writer}(out, e{depth}, False)")
        else:
            item = f"d{depth + 1}"
            g.emit(ind + 1, f"for {item} in {v}:")
            _gen_encode_struct_flex(g, f.type, version, item, ind + 2)


@dataclass(frozen=True, slots=True)
class CompiledMessage:
    """The generated codec of one message in one version (``source`` kept for debugging).
    ``flexible``: the version uses the compact encodings and tagged fields, and so its
    header (request v2, response v1) ends with a tagged-field section."""

    decode: Callable[[memoryview, int, int], tuple[Any, int]]
    encode: Callable[[bytearray, Any, list], None]
    source: str
    flexible: bool = False


def compile_message(
    fields: tuple[F, ...],
    version: int,
    label: str,
    flexible: bool = False,
    classes: dict[int, type] | None = None,
) -> CompiledMessage:
    """Generate and compile the decoder and encoder of ``fields`` in ``version`` (in the
    compact encodings with tagged fields if ``flexible``); with ``classes`` (see
    :class:`_Gen`) bodies are instances of the generated message classes, else dicts."""
    for f in fields:
        if f.tag is not None and f.type is Primitive.RECORDS:
            raise ValueError(f"{label}: records field {f.name} cannot be tagged")
        if isinstance(f.type, StructOf) and not flexible and f.present_in(version):
            raise ValueError(f"{label}: struct field {f.name} needs a flexible version")
    g = _Gen(classes)
    g.emit(0, "def decode(buf, pos, budget):")
    g.emit(1, "blen = len(buf)")
    if flexible:
        _gen_decode_struct_flex(g, fields, version, "d0", 1)
    else:
        _gen_decode_struct(g, fields, version, "d0", 1)
    g.emit(1, "return d0, pos")
    g.emit(0, "")
    g.emit(0, "def encode(out, d0, cuts):")
    g.emit(1, "pass")
    (_gen_encode_struct_flex if flexible else _gen_encode_struct)(g, fields, version, "d0", 1)
    source = "\n".join(g.lines) + "\n"
    namespace: dict[str, Any] = {**_RUNTIME, **g.consts}
    # Source generated from our own schema tables only, never from peer input.
    exec(compile(source, f"<kafka codec {label} v{version}>", "exec"), namespace)
    return CompiledMessage(namespace["decode"], namespace["encode"], source, flexible)
