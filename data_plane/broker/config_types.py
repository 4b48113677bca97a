"""Kafka's type and documentation of a config key, for DescribeConfigs v3+ (``config_type``:
Kafka's ConfigDef.Type codes) read from kraftlog's config dataclasses (common.configdef).

Python types map to Kafka's: bool BOOLEAN, float DOUBLE, str STRING (LIST for the
comma-separated keys in :data:`LIST_KEYS`), tuple LIST, and int to LONG for the keys Kafka
declares long (durations in ms and the few byte and message counts in :data:`LONG_KEYS`), else
INT. A key no dataclass knows is UNKNOWN with no documentation.

Pure functions; thread-safe.
"""

from __future__ import annotations

from common.configdef import key_info
from common.log_config import LogConfig
from common.security.config import SecurityConfig
from data_plane.broker.config import BrokerConfig
from metadata.controller_config import ControllerConfig

# Kafka's ConfigDef.Type as DescribeConfigs encodes it.
UNKNOWN, BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST = 0, 1, 2, 3, 4, 5, 6, 7

# Integer keys Kafka declares LONG besides every "*.ms" key (topic and broker names).
LONG_KEYS = frozenset(
    {
        "retention.bytes",
        "log.retention.bytes",
        "flush.messages",
        "log.flush.interval.messages",
        "local.retention.bytes",
    }
)
# String keys Kafka declares LIST (comma-separated values).
LIST_KEYS = frozenset({"cleanup.policy", "log.cleanup.policy"})
_TOPIC_CLASSES = (LogConfig, ControllerConfig)
_BROKER_CLASSES = (BrokerConfig, LogConfig, SecurityConfig, ControllerConfig)


def config_type_and_doc(key: str, *, topic: bool) -> tuple[int, str | None]:
    """Kafka's config type code and the documentation of ``key``."""
    for cls in _TOPIC_CLASSES if topic else _BROKER_CLASSES:
        info = key_info(cls, key, topic=topic)
        if info is None:
            continue
        hint, doc = info
        return _code(key, hint), doc or None
    return UNKNOWN, None


def _code(key: str, hint: object) -> int:
    if hint is bool:
        return BOOLEAN
    if hint is float:
        return DOUBLE
    if hint is str:
        return LIST if key in LIST_KEYS else STRING
    if hint is int:
        return LONG if key.endswith(".ms") or key in LONG_KEYS else INT
    if getattr(hint, "__origin__", None) is tuple or hint is tuple:
        return LIST
    return UNKNOWN
