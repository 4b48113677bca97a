"""Our schema tables against Apache Kafka's JSON message schemas (the copies kafka-python ships,
read here as test data only): for every supported version, the same fields in the same order
with the same types, nullability and tags; the same first flexible version; and, for an API
that also has non-flexible versions, every supported version below the first flexible one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from common.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from common.protocol.fields import ArrayOf, F, Primitive, StructOf
from common.protocol.schemas import FLEXIBLE_SINCE, MESSAGES
from tests.unit.protocol import kafka_oracle
from tests.unit.protocol.conftest import NOT_IN_KAFKA_PYTHON

# kafka-python's copy of the Apache Kafka schemas: kafka/protocol/schemas/resources.
RESOURCES = Path(kafka_oracle._admin.__file__).parent.parent / "schemas" / "resources"

# Where we stop below the last non-flexible version (REFERENCE.md section 1).
STOPS_EARLY: dict[ApiKey, int] = {}


def _load(name: str) -> dict:
    text = (RESOURCES / f"{name}.json").read_text()
    return json.loads(re.sub(r"(?m)^\s*//.*$", "", text))


def _versions(spec: str | None) -> tuple[int, float] | None:
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), float("inf")
    low, _, high = spec.partition("-")
    return int(low), int(high or low)


def _in(spec: str | None, version: int) -> bool:
    bounds = _versions(spec)
    return bounds is not None and bounds[0] <= version <= bounds[1]


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _theirs(
    fields: list[dict], version: int, flexible: bool, common: dict[str, list[dict]]
) -> list:
    """Their fields of ``version`` (tagged ones only in flexible versions); a struct array's
    fields are inline or, for a ``commonStructs`` type, looked up in ``common``."""
    out = []
    for f in fields:
        tagged = _in(f.get("taggedVersions"), version)
        if not _in(f["versions"], version) or (tagged and not flexible):
            continue
        kind = f["type"]
        if kind.startswith("[]") and kind[2:3].isupper():
            kind = _theirs(f.get("fields") or common[kind[2:]], version, flexible, common)
        elif kind[:1].isupper():  # one nested struct, not an array
            kind = ("struct", _theirs(f.get("fields") or common[kind], version, flexible, common))
        tag = f["tag"] if tagged else None
        out.append((_snake(f["name"]), kind, _in(f.get("nullableVersions"), version), tag))
    return out


def _type_name(kind) -> object:
    if isinstance(kind, Primitive):
        return kind.value
    if isinstance(kind, ArrayOf):
        return "[]" + kind.element.value
    return None


def _ours(fields: tuple[F, ...], version: int) -> list:
    out = []
    for f in fields:
        if not f.present_in(version):
            continue
        kind = _type_name(f.type)
        if isinstance(f.type, StructOf):
            kind = ("struct", _ours(f.type.fields, version))
        elif kind is None:
            kind = _ours(f.type, version)
        out.append((f.name, kind, f.nullable_in(version), f.tag))
    return out


def _schema_name(api_key: ApiKey) -> str:
    return "".join(part.capitalize() for part in api_key.name.split("_"))


@pytest.mark.parametrize(
    "api_key", [k for k in SUPPORTED_VERSIONS if k not in NOT_IN_KAFKA_PYTHON], ids=lambda k: k.name
)
@pytest.mark.parametrize("kind", ["Request", "Response"])
def test_tables_match_kafka_json_schemas(api_key: ApiKey, kind: str):
    schema = _load(_schema_name(api_key) + kind)
    assert schema["apiKey"] == api_key
    low, high = SUPPORTED_VERSIONS[api_key]
    flexible = _versions(schema["flexibleVersions"])
    assert FLEXIBLE_SINCE[api_key] == (None if flexible is None else flexible[0])
    if flexible is not None and low < flexible[0] and high < flexible[0]:
        # An API not served in flexible form stops right below its first flexible version.
        assert high == STOPS_EARLY.get(api_key, flexible[0]) - 1
    fields = MESSAGES[api_key][0 if kind == "Request" else 1]
    common = {s["name"]: s["fields"] for s in schema.get("commonStructs", ())}
    for version in range(low, high + 1):
        is_flexible = flexible is not None and version >= flexible[0]
        theirs = _theirs(schema["fields"], version, is_flexible, common)
        assert _ours(fields, version) == theirs, version
