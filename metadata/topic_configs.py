"""Topic configs: validation for CreateTopics / AlterConfigs and the DescribeConfigs view.

A topic accepts the topic-level keys of ``common.log_config.LogConfig`` (segment.bytes,
retention.ms, cleanup.policy, ...) plus the replication keys the controller owns
(min.insync.replicas, unclean.leader.election.enable). Values are checked by building the
config objects with ``common.configdef.with_overrides``; unknown keys are refused.
"""

from __future__ import annotations

from collections.abc import Mapping

from common.config_resources import OP_APPEND, OP_DELETE, OP_SET, OP_SUBTRACT, RESOURCE_TOPIC
from common.configdef import ConfigError, known_keys, to_props, with_overrides
from common.error_codes import ErrorCode
from common.log_config import LogConfig
from metadata.controller_config import ControllerConfig
from metadata.election import TopicRules
from metadata.image import MetadataImage
from metadata.messages import (
    AlterableConfig,
    AlterConfigsRequest,
    AlterConfigsResponse,
    ConfigEntry,
    ConfigResourceResult,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeConfigsResult,
    IncrementalAlterConfigsRequest,
)
from metadata.records import ConfigRecord, MetadataRecord
from metadata.result import ControllerResult

# Longest config value accepted (a bound on what one ConfigRecord can carry).
MAX_CONFIG_VALUE_CHARS = 4096


def topic_config_keys() -> set[str]:
    return known_keys(LogConfig, topic=True) | known_keys(ControllerConfig, topic=True)


def validate_topic_configs(configs: Mapping[str, str]) -> str | None:
    """None when ``configs`` are valid topic overrides, else a message for INVALID_CONFIG."""
    allowed = topic_config_keys()
    for key, value in configs.items():
        if key not in allowed:
            return f"Unknown topic config name: {key}"
        if not isinstance(value, str) or len(value) > MAX_CONFIG_VALUE_CHARS:
            return f"Invalid value for topic config {key}"
    try:
        with_overrides(LogConfig(), configs, topic=True)
        with_overrides(ControllerConfig(), configs, topic=True)
    except ConfigError as exc:
        return f"Invalid value for topic config: {exc}"
    return None


def unclean_election_enabled(overrides: Mapping[str, str], config: ControllerConfig) -> bool:
    """The topic's ``unclean.leader.election.enable`` (override, else the controller default)."""
    value = overrides.get("unclean.leader.election.enable")
    if value is None:
        return config.unclean_leader_election_enable
    return value.strip().lower() == "true"


def election_rules(
    overrides: Mapping[str, str], config: ControllerConfig, *, elr: bool = True
) -> TopicRules:
    """The topic's election rules: ``unclean.leader.election.enable`` and
    ``min.insync.replicas`` (overrides, else the controller defaults); ``elr``: the finalized
    metadata.version allows eligible leader replicas. Overrides were validated when set; a
    value that does not parse counts as the default."""
    min_isr = config.min_insync_replicas
    value = overrides.get("min.insync.replicas")
    if value is not None:
        try:
            min_isr = max(1, int(value.strip()))
        except ValueError:
            pass
    return TopicRules(unclean=unclean_election_enabled(overrides, config), min_isr=min_isr, elr=elr)


def describe_topic_configs(
    overrides: Mapping[str, str], config: ControllerConfig
) -> list[ConfigEntry]:
    """Every topic key with its effective value: the override, else the default (LogConfig's
    built-in defaults; the brokers' own ``log.*`` settings are not known to the controller)."""
    defaults = to_props(LogConfig(), topic=True)
    defaults.update(to_props(config, topic=True))
    entries = []
    for key in sorted(topic_config_keys()):
        if key in overrides:
            entries.append(ConfigEntry(key, overrides[key], is_default=False))
        else:
            entries.append(ConfigEntry(key, defaults.get(key), is_default=True))
    return entries


# --- AlterConfigs / IncrementalAlterConfigs / DescribeConfigs ----------------------------------


def _check_resource(image: MetadataImage, rtype: int, name: str) -> tuple[int, str] | None:
    if rtype != RESOURCE_TOPIC:
        return ErrorCode.INVALID_REQUEST, f"Unsupported resource type {rtype}: only topics (2)"
    if name not in image.topics_by_name:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
    return None


def _diff_records(
    name: str, old: Mapping[str, str], new: Mapping[str, str]
) -> list[MetadataRecord]:
    out: list[MetadataRecord] = []
    for key in sorted(set(old) | set(new)):
        if key not in new:
            out.append(ConfigRecord(RESOURCE_TOPIC, name, key, None))
        elif old.get(key) != new[key]:
            out.append(ConfigRecord(RESOURCE_TOPIC, name, key, new[key]))
    return out


def alter_configs(
    image: MetadataImage, request: AlterConfigsRequest
) -> ControllerResult[AlterConfigsResponse]:
    """Legacy AlterConfigs: each resource's overrides are replaced by the given set."""
    records: list[MetadataRecord] = []
    results = []
    seen: set[tuple[int, str]] = set()
    for r in request.resources:
        key = (r.resource_type, r.resource_name)
        err = _check_resource(image, *key)
        if err is None and key in seen:
            err = (ErrorCode.INVALID_REQUEST, "Duplicate resource in request")
        seen.add(key)
        if err is None:
            message = validate_topic_configs(r.configs)
            if message:
                err = (ErrorCode.INVALID_CONFIG, message)
        if err is not None:
            results.append(ConfigResourceResult(*key, err[0], err[1]))
            continue
        if not request.validate_only:
            records.extend(
                _diff_records(r.resource_name, image.topic_config(r.resource_name), r.configs)
            )
        results.append(ConfigResourceResult(*key))
    return ControllerResult.of(records, AlterConfigsResponse(results))


def _list_value(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def incremental_alter_configs(
    image: MetadataImage, request: IncrementalAlterConfigsRequest
) -> ControllerResult[AlterConfigsResponse]:
    """SET / DELETE a key, APPEND to / SUBTRACT from a list-valued key (cleanup.policy)."""
    records: list[MetadataRecord] = []
    results = []
    seen: set[tuple[int, str]] = set()
    for r in request.resources:
        key = (r.resource_type, r.resource_name)
        err = _check_resource(image, *key)
        if err is None and key in seen:
            err = (ErrorCode.INVALID_REQUEST, "Duplicate resource in request")
        seen.add(key)
        if err is None:
            new, err = _apply_ops(image.topic_config(r.resource_name), r.configs)
        if err is None:
            message = validate_topic_configs(new)
            if message:
                err = (ErrorCode.INVALID_CONFIG, message)
        if err is not None:
            results.append(ConfigResourceResult(*key, err[0], err[1]))
            continue
        if not request.validate_only:
            records.extend(_diff_records(r.resource_name, image.topic_config(r.resource_name), new))
        results.append(ConfigResourceResult(*key))
    return ControllerResult.of(records, AlterConfigsResponse(results))


def _apply_ops(
    current: Mapping[str, str], ops: list[AlterableConfig]
) -> tuple[dict[str, str], tuple[int, str] | None]:
    new = dict(current)
    names = [op.name for op in ops]
    if len(set(names)) != len(names):
        return new, (ErrorCode.INVALID_REQUEST, "Duplicate config name in one resource")
    defaults = to_props(LogConfig(), topic=True)
    for op in ops:
        if op.op == OP_SET:
            if op.value is None:
                return new, (ErrorCode.INVALID_REQUEST, f"SET of {op.name} needs a value")
            new[op.name] = op.value
        elif op.op == OP_DELETE:
            new.pop(op.name, None)
        elif op.op in (OP_APPEND, OP_SUBTRACT):
            if op.name not in _LIST_KEYS:
                return new, (ErrorCode.INVALID_CONFIG, f"{op.name} is not a list-valued config")
            items = _list_value(new.get(op.name, defaults.get(op.name)))
            change = _list_value(op.value)
            if op.op == OP_APPEND:
                items.extend(v for v in change if v not in items)
            else:
                items = [v for v in items if v not in change]
            new[op.name] = ",".join(items)
        else:
            return new, (ErrorCode.INVALID_REQUEST, f"Unknown config operation {op.op}")
    return new, None


# Topic keys whose values are comma-separated lists (APPEND / SUBTRACT apply).
_LIST_KEYS = frozenset({"cleanup.policy"})


def describe_configs(
    image: MetadataImage, request: DescribeConfigsRequest, config: ControllerConfig
) -> DescribeConfigsResponse:
    out = []
    for r in request.resources:
        err = _check_resource(image, r.resource_type, r.resource_name)
        if err is not None:
            out.append(DescribeConfigsResult(r.resource_type, r.resource_name, err[0], err[1]))
            continue
        entries = describe_topic_configs(image.topic_config(r.resource_name), config)
        out.append(DescribeConfigsResult(r.resource_type, r.resource_name, 0, None, entries))
    return DescribeConfigsResponse(out)
