"""The count of records skipped while loading one ``__consumer_offsets`` partition.

A record is skipped when it does not decode (a newer broker's record types, or damage; Kafka
skips unknown ones the same way): the load goes on without it and the count is logged when the
partition is loaded.

Thread-safety: none; one load uses it, on the coordinator owner's thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from data_plane.coordinator.group_metadata_records import InvalidOffsetsRecordError

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(slots=True)
class SkippedRecords:
    partition: int
    count: int = 0

    def skip(self, reason: Exception | None = None, what: str = "a record") -> None:
        """Count one skipped record (logged when ``reason`` is given)."""
        self.count += 1
        if reason is not None:
            logger.warning("__consumer_offsets-%d: skipping %s: %s", self.partition, what, reason)

    def decode(self, decode: Callable[[bytes], T], raw: bytes | None) -> T | None:
        """``decode(raw)``; None for a missing value or one that does not decode (skipped)."""
        if raw is None:
            return None
        try:
            return decode(raw)
        except InvalidOffsetsRecordError as e:
            self.skip(e)
            return None
