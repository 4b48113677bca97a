"""Versioned metadata records: the entries of the metadata log.

Wire layout (one record per metadata-log entry, msgpack)::

    [type_id: int, version: int, field_1, field_2, ...]

Fields are positional, in the order the record's dataclass declares them; a topic id travels as
16 raw bytes (``uuid.UUID.bytes``); lists come back as tuples. Type ids follow Kafka's
``MetadataRecordType`` numbering where Kafka has the record (TopicRecord = 2, PartitionRecord = 3,
...), so readers who know KRaft recognise them.

Compatibility rule: a (type_id, version) pair, once released, never changes its field list. A
new field means a new version, and new fields are only ever appended, with a default: version
``v`` of a record is the first ``FIELD_COUNTS[v]`` fields of its dataclass. The decoder reads
every released version (the missing fields take their defaults); the encoder writes the LOWEST
version that still carries every non-default field, so a record without the newer fields stays
readable by an older reader (as Kafka's tagged fields are invisible to one). A reader that meets
a type or version it does not know raises :class:`UnknownRecordError`; replay code refuses such
records with a logged error instead of crashing (the finalized metadata.version keeps them away
from nodes that support it: metadata.features).

Security records (docs/security.md): UserScramCredentialRecord (11), ClientQuotaRecord (14),
RemoveUserScramCredentialRecord (22), AccessControlEntryRecord (23) and
RemoveAccessControlEntryRecord (24), Kafka's type ids.

FeatureLevelRecord (12) finalizes a feature level (metadata.features): which record versions
the controller may write is decided by the finalized ``metadata.version``.

Versions so far: ``PartitionRecord`` and ``PartitionChangeRecord`` v1 add KRaft's
``removing_replicas`` and ``adding_replicas`` (partition reassignment, docs/reassignment.md);
v2 adds ``elr`` (eligible leader replicas, KIP-966). ``RegisterBrokerRecord`` v1 adds
``clean_shutdown``.

Thread-safety: records are immutable; the functions here hold no state.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Final, NamedTuple

import msgpack

# PartitionChangeRecord.leader: the leader does not change (and the leader epoch is not bumped).
NO_LEADER_CHANGE = -2
# A partition without a leader.
NO_LEADER = -1

# Largest encoded record a decoder accepts; a PartitionRecord is ~40 bytes, so this only stops
# garbage (msgpack would otherwise allocate whatever a corrupt length prefix claims).
MAX_RECORD_BYTES = 1 << 20


class RecordDecodeError(ValueError):
    """The bytes are not a well-formed metadata record."""


class UnknownRecordError(RecordDecodeError):
    """A well-formed record of a type or version this reader does not know."""

    def __init__(self, type_id: int, version: int) -> None:
        super().__init__(f"unknown metadata record type {type_id} version {version}")
        self.type_id = type_id
        self.version = version


class Listener(NamedTuple):
    """An advertised endpoint of a broker: listener name (e.g. PLAINTEXT), host, port."""

    name: str
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class MetadataRecord:
    TYPE_ID: ClassVar[int]
    # The newest version this code writes; FIELD_COUNTS (when set) maps every released version
    # to its number of leading fields. Without FIELD_COUNTS only VERSION exists, with all fields.
    VERSION: ClassVar[int]
    FIELD_COUNTS: ClassVar[dict[int, int] | None] = None


@dataclass(frozen=True, slots=True)
class RegisterBrokerRecord(MetadataRecord):
    """A broker (re)registered; a new registration replaces the previous one of the same id."""

    TYPE_ID: ClassVar[int] = 0
    VERSION: ClassVar[int] = 1
    FIELD_COUNTS: ClassVar[dict[int, int] | None] = {0: 7, 1: 8}
    broker_id: int
    incarnation_id: str
    broker_epoch: int
    listeners: tuple[Listener, ...]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    # v1: the previous process of this broker closed its logs cleanly (everything flushed), so
    # its logs hold every record they acknowledged (KIP-966's "clean shutdown" signal).
    clean_shutdown: bool = False


@dataclass(frozen=True, slots=True)
class UnregisterBrokerRecord(MetadataRecord):
    TYPE_ID: ClassVar[int] = 1
    VERSION: ClassVar[int] = 0
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class TopicRecord(MetadataRecord):
    TYPE_ID: ClassVar[int] = 2
    VERSION: ClassVar[int] = 0
    name: str
    topic_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class PartitionRecord(MetadataRecord):
    """The full state of a new partition (or of a partition in a snapshot). v1 adds the
    reassignment sets: ``removing_replicas`` and ``adding_replicas`` are subsets of
    ``replicas`` (empty when no reassignment is in progress). v2 adds ``elr``, the eligible
    leader replicas (KIP-966; see metadata.election)."""

    TYPE_ID: ClassVar[int] = 3
    VERSION: ClassVar[int] = 2
    FIELD_COUNTS: ClassVar[dict[int, int] | None] = {0: 7, 1: 9, 2: 10}
    partition_id: int
    topic_id: uuid.UUID
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    elr: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ConfigRecord(MetadataRecord):
    """Sets (or, with ``value`` None, removes) one config key of a resource."""

    TYPE_ID: ClassVar[int] = 4
    VERSION: ClassVar[int] = 0
    resource_type: int
    resource_name: str
    name: str
    value: str | None


@dataclass(frozen=True, slots=True)
class PartitionChangeRecord(MetadataRecord):
    """A change of one partition. ``isr``/``replicas`` None = unchanged. ``leader`` is
    NO_LEADER_CHANGE (-2) to keep the leader and its epoch; any other value (including the current
    leader) sets the leader and bumps ``leader_epoch``. Every change bumps ``partition_epoch``.
    v1 adds ``removing_replicas`` / ``adding_replicas`` (None = unchanged, () = cleared); v2
    adds ``elr``, the eligible leader replicas (None = unchanged, () = cleared)."""

    TYPE_ID: ClassVar[int] = 5
    VERSION: ClassVar[int] = 2
    FIELD_COUNTS: ClassVar[dict[int, int] | None] = {0: 5, 1: 7, 2: 8}
    partition_id: int
    topic_id: uuid.UUID
    isr: tuple[int, ...] | None
    leader: int
    replicas: tuple[int, ...] | None
    removing_replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None
    elr: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class RemoveTopicRecord(MetadataRecord):
    """Deletes a topic, its partitions and its configs."""

    TYPE_ID: ClassVar[int] = 9
    VERSION: ClassVar[int] = 0
    topic_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class ProducerIdsRecord(MetadataRecord):
    """A block of producer ids was handed to a broker; ``next_producer_id`` is the first id
    not yet handed out (the cluster-wide high watermark)."""

    TYPE_ID: ClassVar[int] = 15
    VERSION: ClassVar[int] = 0
    broker_id: int
    broker_epoch: int
    next_producer_id: int


@dataclass(frozen=True, slots=True)
class BrokerRegistrationChangeRecord(MetadataRecord):
    """Fence / unfence / controlled shutdown of a registered broker (None = unchanged)."""

    TYPE_ID: ClassVar[int] = 17
    VERSION: ClassVar[int] = 0
    broker_id: int
    broker_epoch: int
    fenced: bool | None
    in_controlled_shutdown: bool | None


@dataclass(frozen=True, slots=True)
class NoOpRecord(MetadataRecord):
    """Changes nothing; a new or unsure controller appends one as a barrier (when it commits,
    every earlier append of the same leader has committed or been dropped)."""

    TYPE_ID: ClassVar[int] = 20
    VERSION: ClassVar[int] = 0


@dataclass(frozen=True, slots=True)
class FeatureLevelRecord(MetadataRecord):
    """Finalizes ``feature_level`` of the cluster-wide feature ``name`` (``metadata.version``,
    metadata.features); the latest record of a name wins."""

    TYPE_ID: ClassVar[int] = 12
    VERSION: ClassVar[int] = 0
    name: str
    feature_level: int


@dataclass(frozen=True, slots=True)
class UserScramCredentialRecord(MetadataRecord):
    """Sets the SCRAM credential of ``name`` for ``mechanism`` (1 = SCRAM-SHA-256,
    2 = SCRAM-SHA-512), replacing any previous one. Holds the salt and the derived keys only;
    neither the password nor the salted password is ever stored (docs/security.md)."""

    TYPE_ID: ClassVar[int] = 11
    VERSION: ClassVar[int] = 0
    name: str
    mechanism: int
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@dataclass(frozen=True, slots=True)
class RemoveUserScramCredentialRecord(MetadataRecord):
    TYPE_ID: ClassVar[int] = 22
    VERSION: ClassVar[int] = 0
    name: str
    mechanism: int


@dataclass(frozen=True, slots=True)
class AccessControlEntryRecord(MetadataRecord):
    """One ACL binding, identified by ``id``; enum fields hold Kafka's wire values
    (common.security.acl: ResourceType, PatternType, AclOperation, AclPermissionType)."""

    TYPE_ID: ClassVar[int] = 23
    VERSION: ClassVar[int] = 0
    id: uuid.UUID
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True, slots=True)
class RemoveAccessControlEntryRecord(MetadataRecord):
    TYPE_ID: ClassVar[int] = 24
    VERSION: ClassVar[int] = 0
    id: uuid.UUID


@dataclass(frozen=True, slots=True)
class ClientQuotaRecord(MetadataRecord):
    """Sets (or with ``remove``, removes) quota ``key`` (producer_byte_rate,
    consumer_byte_rate, request_percentage) of the entity (``user``, ``client_id``): each a
    name, ``<default>`` or None (not part of the entity), as data_plane.security.quota_manager."""

    TYPE_ID: ClassVar[int] = 14
    VERSION: ClassVar[int] = 0
    user: str | None
    client_id: str | None
    key: str
    value: float
    remove: bool


# Records of the security state (metadata.security_image applies them).
SECURITY_RECORD_CLASSES: tuple[type[MetadataRecord], ...] = (
    UserScramCredentialRecord,
    RemoveUserScramCredentialRecord,
    AccessControlEntryRecord,
    RemoveAccessControlEntryRecord,
    ClientQuotaRecord,
)


_RECORD_CLASSES: tuple[type[MetadataRecord], ...] = (
    RegisterBrokerRecord,
    UnregisterBrokerRecord,
    TopicRecord,
    PartitionRecord,
    ConfigRecord,
    PartitionChangeRecord,
    RemoveTopicRecord,
    ProducerIdsRecord,
    BrokerRegistrationChangeRecord,
    NoOpRecord,
    FeatureLevelRecord,
    *SECURITY_RECORD_CLASSES,
)


def _versions(cls: type[MetadataRecord]) -> dict[int, int]:
    """version -> number of leading fields, for every version ``cls`` reads."""
    if cls.FIELD_COUNTS is None:
        return {cls.VERSION: len(dataclasses.fields(cls))}
    return dict(cls.FIELD_COUNTS)


# (type_id, version) -> (class, number of fields of that version).
RECORD_VERSIONS: dict[tuple[int, int], tuple[type[MetadataRecord], int]] = {
    (cls.TYPE_ID, version): (cls, count)
    for cls in _RECORD_CLASSES
    for version, count in _versions(cls).items()
}
RECORD_TYPES: dict[tuple[int, int], type[MetadataRecord]] = {
    key: cls for key, (cls, _) in RECORD_VERSIONS.items()
}


# --- field codecs ------------------------------------------------------------------------------


def _field_kinds(cls: type) -> list[tuple[str, str, bool]]:
    """(name, kind, optional) per field; kind is one of int, str, bool, bytes, float, uuid, ints,
    listeners."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        optional = False
        if typing.get_origin(hint) in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(hint) if a is not type(None)]
            optional = True
            hint = args[0]
        if hint is uuid.UUID:
            kind = "uuid"
        elif hint is bool:
            kind = "bool"
        elif hint is int:
            kind = "int"
        elif hint is str:
            kind = "str"
        elif hint is bytes:
            kind = "bytes"
        elif hint is float:
            kind = "float"
        elif hint == tuple[int, ...]:
            kind = "ints"
        elif hint == tuple[Listener, ...]:
            kind = "listeners"
        else:
            raise TypeError(f"{cls.__name__}.{f.name}: unsupported record field type {hint!r}")
        out.append((f.name, kind, optional))
    return out


_KINDS: dict[type, list[tuple[str, str, bool]]] = {
    cls: _field_kinds(cls) for cls in _RECORD_CLASSES
}
# Per class: (version, field count) from oldest to newest, and each field's default (or a
# sentinel for required fields), for choosing the version to write.
_MISSING = object()
_ENCODE_VERSIONS: dict[type, list[tuple[int, int]]] = {
    cls: sorted(_versions(cls).items()) for cls in _RECORD_CLASSES
}
_DEFAULTS: dict[type, list[Any]] = {
    cls: [
        f.default if f.default is not dataclasses.MISSING else _MISSING
        for f in dataclasses.fields(cls)
    ]
    for cls in _RECORD_CLASSES
}


def encoded_version(record: MetadataRecord) -> int:
    """The version :func:`encode_record` writes for ``record``."""
    return _encode_version(record)[0]


def _encode_version(record: MetadataRecord) -> tuple[int, int]:
    """(version, field count): the oldest version whose omitted fields all hold defaults."""
    versions = _ENCODE_VERSIONS[type(record)]
    if len(versions) == 1:
        return versions[0]
    defaults = _DEFAULTS[type(record)]
    kinds = _KINDS[type(record)]
    for version, count in versions:
        if all(getattr(record, kinds[i][0]) == defaults[i] for i in range(count, len(kinds))):
            return version, count
    return versions[-1]


def _encode_value(kind: str, value: Any) -> Any:
    if value is None:
        return None
    if kind == "uuid":
        return value.bytes
    if kind == "ints":
        return list(value)
    if kind == "listeners":
        return [[lis.name, lis.host, lis.port] for lis in value]
    return value


def _is_int(v: Any) -> bool:
    return type(v) is int  # bool is a subclass of int; msgpack gives exact ints


@functools.lru_cache(maxsize=4096)
def _uuid(raw: bytes) -> uuid.UUID:
    # Topic ids repeat across a topic's partition records; share one UUID object per id.
    return uuid.UUID(bytes=raw)


def _listeners(raw: Any) -> tuple[Listener, ...] | None:
    if type(raw) is not list:
        return None
    out = []
    for item in raw:
        if not (
            type(item) is list
            and len(item) == 3
            and type(item[0]) is str
            and type(item[1]) is str
            and type(item[2]) is int
        ):
            return None
        out.append(Listener(item[0], item[1], item[2]))
    return tuple(out)


# What a value decoder returns when the raw value does not fit its kind.
_MISMATCH: Final = object()


def _decode_ints(raw: Any) -> Any:
    return tuple(raw) if type(raw) is list and all(type(v) is int for v in raw) else _MISMATCH


def _decode_uuid(raw: Any) -> Any:
    return _uuid(raw) if type(raw) is bytes and len(raw) == 16 else _MISMATCH


def _decode_float(raw: Any) -> Any:
    return float(raw) if type(raw) is float or type(raw) is int else _MISMATCH


def _decode_listeners(raw: Any) -> Any:
    listeners = _listeners(raw)
    return _MISMATCH if listeners is None else listeners


def _exactly(kind: type) -> Callable[[Any], Any]:
    # Exact types: msgpack gives exact ints, and a bool must not pass as an int.
    return lambda raw: raw if type(raw) is kind else _MISMATCH


# The decoder of each field kind.
_VALUE_DECODERS: Final[dict[str, Callable[[Any], Any]]] = {
    "int": _exactly(int),
    "ints": _decode_ints,
    "uuid": _decode_uuid,
    "str": _exactly(str),
    "bool": _exactly(bool),
    "bytes": _exactly(bytes),
    "float": _decode_float,
    "listeners": _decode_listeners,
}


def _decode_value(cls: type, name: str, kind: str, optional: bool, raw: Any) -> Any:
    decoder = _VALUE_DECODERS.get(kind)
    value = _MISMATCH if decoder is None else decoder(raw)
    if value is not _MISMATCH:
        return value
    if raw is None:
        if optional:
            return None
        raise RecordDecodeError(f"{cls.__name__}.{name}: missing value")
    raise RecordDecodeError(f"{cls.__name__}.{name}: expected {kind}, got {type(raw).__name__}")


def encode_record(record: MetadataRecord) -> bytes:
    """The log-entry bytes of ``record`` (deterministic)."""
    version, count = _encode_version(record)
    out: list[Any] = [record.TYPE_ID, version]
    for name, kind, _ in _KINDS[type(record)][:count]:
        value = getattr(record, name)
        if value is None or kind in ("int", "str", "bool"):
            out.append(value)
        else:
            out.append(_encode_value(kind, value))
    return msgpack.packb(out, use_bin_type=True)


def decode_record(data: bytes) -> MetadataRecord:
    """Parse one log entry. Raises :class:`UnknownRecordError` for a type/version this reader
    does not know and :class:`RecordDecodeError` for malformed bytes."""
    if len(data) > MAX_RECORD_BYTES:
        raise RecordDecodeError(f"record of {len(data)} bytes exceeds {MAX_RECORD_BYTES}")
    try:
        obj = msgpack.unpackb(data, raw=False, use_list=True, strict_map_key=True)
    except Exception as exc:  # msgpack raises several unrelated exception types on garbage
        raise RecordDecodeError(f"not a msgpack record: {exc}") from None
    if not (isinstance(obj, list) and len(obj) >= 2 and _is_int(obj[0]) and _is_int(obj[1])):
        raise RecordDecodeError("a metadata record is [type_id, version, fields...]")
    known = RECORD_VERSIONS.get((obj[0], obj[1]))
    if known is None:
        raise UnknownRecordError(obj[0], obj[1])
    cls, count = known
    kinds = _KINDS[cls][:count]
    values = obj[2:]
    if len(values) != len(kinds):
        raise RecordDecodeError(
            f"{cls.__name__} v{obj[1]}: expected {len(kinds)} fields, got {len(values)}"
        )
    args = [
        _decode_value(cls, name, kind, optional, raw)
        for (name, kind, optional), raw in zip(kinds, values, strict=True)
    ]
    return cls(*args)
