"""Sans-IO Kafka protocol codec: request bytes in, typed requests out; responses in, bytes out.

Broker side: :func:`decode_request` turns one frame (without its 4-byte size prefix, see
:mod:`common.protocol.framing`) into a :class:`RequestHeader` and a body dict;
:func:`encode_response` turns a body dict into a :class:`ResponseFrame` ready to be written
(``records`` file slices stay separate parts for ``os.sendfile``). Client side:
:func:`encode_request` and :func:`decode_response`.

Wire layout of a request frame (request header v1; all integers big-endian)::

    size int32 | api_key int16 | api_version int16 | correlation_id int32
    | client_id nullable string (int16 length, -1 = null) | body

and of a response frame (response header v0)::

    size int32 | correlation_id int32 | body

A flexible version (``schemas.is_flexible``) uses request header v2 (v1 + tagged fields) and
response header v1 (correlation id + tagged fields), except ApiVersions, whose response header
is v0 in every version so that a client can read it before it knows what the broker speaks.
A request of an unsupported version is still parsed up to the client id, which is all an
UNSUPPORTED_VERSION answer needs.

Bodies are instances of the classes generated from the schema tables
(:mod:`common.protocol.messages`, one module per API) for the APIs in :data:`TYPED_APIS`, and
dicts keyed by the same snake_case names of Kafka's schema fields for the others. A decoded
typed body has every field of the class; those its version lacks hold their defaults. An
encoder reads only the fields of its version. Bytes after a complete
body are ignored, as Kafka does for forward compatibility. Decoding never raises anything but
:class:`ProtocolError` (or its subclass :class:`UnsupportedVersionError`) whatever the input.

Codecs are generated per (api, version) on first use, or all at once by :func:`precompile`.
Everything here is thread-safe; apart from that cache of compiled codecs it is stateless.
"""

from __future__ import annotations

import os
import struct
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from common.error_codes import ErrorCode
from common.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from common.protocol.compact_types import read_tag_count, skip_tags
from common.protocol.compiler import CompiledMessage, compile_message
from common.protocol.errors import EncodeError, ProtocolError, UnsupportedVersionError
from common.protocol.message_base import Message
from common.protocol.message_names import struct_classes
from common.protocol.messages.api_versions import ApiVersionsResponse, ApiVersionsResponseApiKey
from common.protocol.records_value import FileSliceLike
from common.protocol.schemas import MESSAGES, is_flexible

__all__ = [
    "MAX_REQUEST_ARRAY_ELEMENTS",
    "MAX_REQUEST_BYTES",
    "MAX_RESPONSE_ARRAY_ELEMENTS",
    "TYPED_APIS",
    "Body",
    "EncodeError",
    "FileSliceLike",
    "Message",
    "ProtocolError",
    "RequestHeader",
    "ResponseFrame",
    "UnsupportedVersionError",
    "api_versions_entries",
    "decode_request",
    "decode_request_header",
    "decode_response",
    "encode_request",
    "encode_response",
    "precompile",
    "unsupported_version_response",
]

# socket.request.max.bytes: Kafka's default bound on one request frame (100 MiB). The broker
# checks the size prefix against it before reading the body (FrameReader(max_frame_bytes=...)).
MAX_REQUEST_BYTES = 104857600

# Bound on the array elements (structs, ints and strings together) one message may decode to.
# A decoded element costs 30-400 bytes of Python objects for its 2-16 bytes on the wire, so this
# (not only the frame size) is what keeps a hostile request's memory bounded: 250,000 elements
# are at most about 100 MB of objects. Legitimate requests stay far below it (a follower Fetch
# lists one element per partition). Responses, decoded by our client from a broker it chose to
# trust, get a higher bound so that large clusters' Metadata answers fit.
MAX_REQUEST_ARRAY_ELEMENTS = 250_000
MAX_RESPONSE_ARRAY_ELEMENTS = 10_000_000

# The APIs whose request and response bodies are the generated classes of
# common.protocol.messages (the ``<Api>Request`` / ``<Api>Response`` of the API's module);
# the bodies of the other APIs are still dicts keyed by the same snake_case field names.
TYPED_APIS: frozenset[ApiKey] = frozenset(
    {
        ApiKey.ADD_OFFSETS_TO_TXN,
        ApiKey.ADD_PARTITIONS_TO_TXN,
        ApiKey.ALTER_CLIENT_QUOTAS,
        ApiKey.ALTER_CONFIGS,
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        ApiKey.API_VERSIONS,
        ApiKey.CONSUMER_GROUP_DESCRIBE,
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        ApiKey.CREATE_PARTITIONS,
        ApiKey.CREATE_TOPICS,
        ApiKey.DELETE_GROUPS,
        ApiKey.DELETE_RECORDS,
        ApiKey.DELETE_TOPICS,
        ApiKey.DESCRIBE_CLIENT_QUOTAS,
        ApiKey.DESCRIBE_CLUSTER,
        ApiKey.DESCRIBE_CONFIGS,
        ApiKey.DESCRIBE_GROUPS,
        ApiKey.DESCRIBE_LOG_DIRS,
        ApiKey.DESCRIBE_PRODUCERS,
        ApiKey.DESCRIBE_QUORUM,
        ApiKey.DESCRIBE_TOPIC_PARTITIONS,
        ApiKey.DESCRIBE_TRANSACTIONS,
        ApiKey.ELECT_LEADERS,
        ApiKey.END_TXN,
        ApiKey.FIND_COORDINATOR,
        ApiKey.HEARTBEAT,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        ApiKey.INIT_PRODUCER_ID,
        ApiKey.JOIN_GROUP,
        ApiKey.LEAVE_GROUP,
        ApiKey.LIST_GROUPS,
        ApiKey.LIST_OFFSETS,
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        ApiKey.LIST_TRANSACTIONS,
        ApiKey.OFFSET_COMMIT,
        ApiKey.OFFSET_DELETE,
        ApiKey.OFFSET_FETCH,
        ApiKey.OFFSET_FOR_LEADER_EPOCH,
        ApiKey.SYNC_GROUP,
        ApiKey.TXN_OFFSET_COMMIT,
        ApiKey.UPDATE_FEATURES,
        ApiKey.WRITE_TXN_MARKERS,
    }
)

# A request or response body: a generated Message for the APIs in TYPED_APIS, else a dict.
# (Any, not the union, until every API is typed: callers narrow by the API they handle.)
Body = Any

_HEADER_FIXED = struct.Struct(">hhi")  # api_key, api_version, correlation_id
_HEADER = struct.Struct(">hhih")  # the same + the client_id length
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_SIZE_AND_CORRELATION = struct.Struct(">ii")


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


@dataclass(slots=True)
class ResponseFrame:
    """One response on the wire: write ``parts`` in order (buffers with ``sendall``, file slices
    with ``os.sendfile(sock, fileno, position, length)``). The 4-byte size prefix is the start
    of ``parts[0]``; ``total_length`` counts every byte including the prefix."""

    parts: list[Any]
    total_length: int

    def to_bytes(self) -> bytes:
        """The whole frame as bytes, reading file slices with ``os.pread`` (for tests and
        transports that cannot sendfile)."""
        chunks: list[Any] = []
        for part in self.parts:
            if isinstance(part, (bytes, bytearray, memoryview)):
                chunks.append(part)  # bytes.join takes any buffer: one copy in all
            else:
                data = os.pread(part.fileno, part.length, part.position)
                if len(data) != part.length:
                    raise OSError(
                        f"file slice shrank: wanted {part.length} bytes at {part.position}, "
                        f"read {len(data)}"
                    )
                chunks.append(data)
        return b"".join(chunks)


# Generated codecs per (api key, version), compiled on first use (or all at once by
# precompile()) and kept for the life of the process. Only supported pairs are ever compiled
# or cached, so fuzzed api keys cannot grow these tables. Reads need no lock (dict lookups are
# atomic); compilation takes _COMPILE_LOCK so each pair is compiled once.
_REQUESTS: dict[tuple[int, int], CompiledMessage] = {}
_RESPONSES: dict[tuple[int, int], CompiledMessage] = {}
_COMPILE_LOCK = threading.Lock()


def _compile(api_key: int, version: int, is_request: bool) -> CompiledMessage | None:
    """The codec of a supported (api key, version), compiled now if needed; None if the pair
    is not in SUPPORTED_VERSIONS."""
    versions = SUPPORTED_VERSIONS.get(api_key)  # type: ignore[call-overload]
    if versions is None or not versions[0] <= version <= versions[1]:
        return None
    table = _REQUESTS if is_request else _RESPONSES
    with _COMPILE_LOCK:
        compiled = table.get((api_key, version))
        if compiled is None:
            key = ApiKey(api_key)
            fields = MESSAGES[key][0 if is_request else 1]
            label = f"{key.name} {'request' if is_request else 'response'}"
            classes = struct_classes(key, is_request, fields) if key in TYPED_APIS else None
            compiled = compile_message(fields, version, label, is_flexible(key, version), classes)
            table[(api_key, version)] = compiled
    return compiled


def precompile() -> None:
    """Compile every supported (api, version) now (about 0.1-0.2 s) instead of on first use,
    so that no later call pays for compilation (the codec benchmark uses it to time
    steady-state encoding and decoding)."""
    for api_key, (low, high) in SUPPORTED_VERSIONS.items():
        for version in range(low, high + 1):
            _compile(api_key, version, True)
            _compile(api_key, version, False)


def _as_view(frame: bytes | bytearray | memoryview) -> memoryview:
    view = memoryview(frame)
    if view.format != "B" or view.ndim != 1:
        view = memoryview(view.tobytes())
    return view


# ---------------------------------------------------------------- broker side


def decode_request_header(frame: bytes | bytearray | memoryview) -> tuple[RequestHeader, int]:
    """Parse the request header (v1 fields; also the prefix of a flexible v2 header) of a frame
    WITHOUT its 4-byte size prefix; returns the header and the body offset."""
    try:
        view = _as_view(frame)
    except TypeError as exc:
        raise ProtocolError(f"not a byte buffer: {exc}") from None
    return _decode_header(view)


def _decode_header(view: memoryview) -> tuple[RequestHeader, int]:
    try:
        api_key, api_version, correlation_id, length = _HEADER.unpack_from(view, 0)
    except struct.error:
        raise ProtocolError(f"truncated request header ({len(view)} bytes)") from None
    if length == -1:
        return RequestHeader(api_key, api_version, correlation_id, None), 10
    end = 10 + length
    if length < 0 or end > len(view):
        raise ProtocolError(f"invalid client_id length {length}")
    try:
        client_id = str(view[10:end], "utf-8")
    except UnicodeDecodeError:
        raise ProtocolError("client_id is not valid UTF-8") from None
    return RequestHeader(api_key, api_version, correlation_id, client_id), end


def decode_request(
    frame: bytes | bytearray | memoryview,
    *,
    max_array_elements: int = MAX_REQUEST_ARRAY_ELEMENTS,
) -> tuple[RequestHeader, Body]:
    """Decode a request frame (without the size prefix) into its header and body dict.

    ``records`` fields are memoryview slices of ``frame`` (keep the frame alive as long as
    they are used). Raises :class:`UnsupportedVersionError` for an unknown API key or a
    version outside ``SUPPORTED_VERSIONS`` (the header is parsed so the broker can answer),
    :class:`ProtocolError` for malformed bytes or more than ``max_array_elements`` array
    elements in total; never any other exception.
    """
    try:
        view = _as_view(frame)
    except TypeError as exc:
        raise ProtocolError(f"not a byte buffer: {exc}") from None
    header, pos = _decode_header(view)
    codec = _REQUESTS.get((header.api_key, header.api_version)) or _compile(
        header.api_key, header.api_version, True
    )
    if codec is None:
        raise UnsupportedVersionError(
            header, f"unsupported api key {header.api_key} version {header.api_version}"
        )
    try:
        if codec.flexible:
            if view[pos] == 0:
                pos += 1  # no header tags: the usual case
            else:
                pos = _skip_header_tags(view, pos)
        body, _end = codec.decode(view, pos, max_array_elements)
    except (struct.error, IndexError):
        raise ProtocolError(
            f"truncated {api_label(header.api_key)} v{header.api_version} request"
        ) from None
    except UnicodeDecodeError:
        raise ProtocolError(
            f"{api_label(header.api_key)} v{header.api_version} request: string is not UTF-8"
        ) from None
    return header, body


def encode_response(header: RequestHeader, body: Mapping[str, Any] | Message) -> ResponseFrame:
    """Size prefix + response header (v0: the correlation id; v1 in flexible versions: + an
    empty tagged-field section) + ``body`` in the version of ``header``. Raises
    :class:`EncodeError` if the body does not fit the schema."""
    codec = _RESPONSES.get((header.api_key, header.api_version)) or _compile(
        header.api_key, header.api_version, False
    )
    if codec is None:
        raise EncodeError(
            f"no response codec for api key {header.api_key} version {header.api_version}"
        )
    out = bytearray(8)
    struct.pack_into(">i", out, 4, header.correlation_id)
    if codec.flexible and header.api_key != ApiKey.API_VERSIONS:  # ApiVersions: header v0
        out += b"\x00"
    cuts: list[tuple[int, Any]] = []
    _run_encoder(codec, out, body, cuts, header.api_key, header.api_version)
    return _frame(out, cuts)


def api_versions_entries(
    versions: Mapping[int, tuple[int, int]] | None = None,
) -> list[ApiVersionsResponseApiKey]:
    """The ``api_keys`` list of an ApiVersions response (default: all of SUPPORTED_VERSIONS)."""
    table = SUPPORTED_VERSIONS if versions is None else versions
    return [
        ApiVersionsResponseApiKey(int(key), low, high) for key, (low, high) in sorted(table.items())
    ]


def unsupported_version_response(
    header: RequestHeader, api_versions: Mapping[int, tuple[int, int]] | None = None
) -> ResponseFrame:
    """The answer to a request whose API key or version is not supported.

    ApiVersions: a v0-format body (error_code 35 and the ``api_keys`` of ``api_versions``,
    default all of SUPPORTED_VERSIONS) after a v0 response header; clients probing a newer
    version (librdkafka v3, kafka-python v4) then retry with the highest version listed.
    Any other API: correlation id + int16 35 and nothing else; the broker sends it, then
    closes the connection (it cannot frame that API's real response).
    """
    if header.api_key == ApiKey.API_VERSIONS:
        body = ApiVersionsResponse(
            error_code=int(ErrorCode.UNSUPPORTED_VERSION),
            api_keys=api_versions_entries(api_versions),
        )
        return encode_response(RequestHeader(header.api_key, 0, header.correlation_id, None), body)
    out = bytearray(_SIZE_AND_CORRELATION.pack(6, header.correlation_id))
    out += _I16.pack(int(ErrorCode.UNSUPPORTED_VERSION))
    return ResponseFrame([memoryview(out)], len(out))


# ---------------------------------------------------------------- client side


def encode_request(
    api_key: int,
    api_version: int,
    correlation_id: int,
    client_id: str | None,
    body: Mapping[str, Any] | Message,
) -> bytes:
    """A complete request frame: size prefix + request header (v1, or v2 with an empty
    tagged-field section in flexible versions) + body."""
    codec = _REQUESTS.get((api_key, api_version)) or _compile(api_key, api_version, True)
    if codec is None:
        raise EncodeError(f"unsupported api key {api_key} version {api_version}")
    out = bytearray(4)
    try:
        out += _HEADER_FIXED.pack(api_key, api_version, correlation_id)
    except struct.error as exc:
        raise EncodeError(f"bad request header: {exc}") from None
    if client_id is None:
        out += b"\xff\xff"
    else:
        encoded = client_id.encode("utf-8")
        if len(encoded) > 0x7FFF:
            raise EncodeError("client_id longer than 32767 bytes")
        out += _I16.pack(len(encoded))
        out += encoded
    if codec.flexible:
        out += b"\x00"
    cuts: list[tuple[int, Any]] = []
    _run_encoder(codec, out, body, cuts, api_key, api_version)
    if not cuts:
        struct.pack_into(">i", out, 0, len(out) - 4)
        return bytes(out)
    return _frame(out, cuts).to_bytes()


def decode_response(
    api_key: int,
    api_version: int,
    frame: bytes | bytearray | memoryview,
    *,
    max_array_elements: int = MAX_RESPONSE_ARRAY_ELEMENTS,
) -> tuple[int, Body]:
    """Decode a response frame (without the size prefix) of a request sent as
    ``api_key``/``api_version``; returns ``(correlation_id, body)``.

    An ApiVersions response carrying UNSUPPORTED_VERSION is decoded in the v0 format, which is
    how brokers answer a version they do not know. Raises :class:`ProtocolError`.
    """
    codec = _RESPONSES.get((api_key, api_version)) or _compile(api_key, api_version, False)
    if codec is None:
        raise ProtocolError(
            f"unsupported api key {api_key} version {api_version}", ErrorCode.UNSUPPORTED_VERSION
        )
    view = _as_view(frame)
    try:
        (correlation_id,) = _I32.unpack_from(view, 0)
        if (
            api_key == ApiKey.API_VERSIONS
            and api_version > 0
            and _I16.unpack_from(view, 4)[0] == ErrorCode.UNSUPPORTED_VERSION
        ):
            codec = _RESPONSES.get((api_key, 0)) or _compile(api_key, 0, False)
        pos = 4
        if codec.flexible and api_key != ApiKey.API_VERSIONS:  # ApiVersions: header v0
            # No header tags (one 0 byte) is the usual case.
            pos = 5 if len(view) > 4 and view[4] == 0 else _skip_header_tags(view, pos)
        body, _end = codec.decode(view, pos, max_array_elements)
    except (struct.error, IndexError):
        raise ProtocolError(f"truncated {api_label(api_key)} v{api_version} response") from None
    except UnicodeDecodeError:
        raise ProtocolError(
            f"{api_label(api_key)} v{api_version} response: string is not UTF-8"
        ) from None
    return correlation_id, body


# ---------------------------------------------------------------- helpers


def api_label(api_key: int) -> str:
    """Kafka's name of an API key for messages (``PRODUCE``), or the number if unknown."""
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"api key {api_key}"


def _skip_header_tags(view: memoryview, pos: int) -> int:
    """Skip a header's tagged fields (none are defined that this codec uses)."""
    count, pos = read_tag_count(view, pos)
    return skip_tags(view, pos, count) if count else pos


def _run_encoder(
    codec: CompiledMessage,
    out: bytearray,
    body: Mapping[str, Any] | Message,
    cuts: list[tuple[int, Any]],
    api_key: int,
    api_version: int,
) -> None:
    try:
        codec.encode(out, body, cuts)
    except EncodeError as exc:
        raise EncodeError(f"{api_label(api_key)} v{api_version}: {exc}") from None
    except (struct.error, TypeError, AttributeError, UnicodeEncodeError, OverflowError) as exc:
        raise EncodeError(
            f"{api_label(api_key)} v{api_version}: body does not fit the schema: {exc}"
        ) from exc


def _part_length(part: Any) -> int:
    if isinstance(part, memoryview):
        return part.nbytes
    if isinstance(part, (bytes, bytearray)):
        return len(part)
    return part.length


def _frame(out: bytearray, cuts: list[tuple[int, Any]]) -> ResponseFrame:
    """Fill in the size prefix and split ``out`` at the cut offsets around the pass-through
    parts (records not copied into ``out``)."""
    total = len(out) + sum(_part_length(part) for _offset, part in cuts)
    struct.pack_into(">i", out, 0, total - 4)
    view = memoryview(out)
    if not cuts:
        return ResponseFrame([view], total)
    parts: list[Any] = []
    start = 0
    for offset, part in cuts:
        parts.append(view[start:offset])
        parts.append(part)
        start = offset
    if start < len(out):
        parts.append(view[start:])
    return ResponseFrame(parts, total)
