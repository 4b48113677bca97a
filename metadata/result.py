"""What a controller decision produces: records to append, and the reply to send once they
have committed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from metadata.records import MetadataRecord, encode_record

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class ControllerResult(Generic[R]):
    """``records`` must be appended as ONE batch (atomically) before ``response`` is sent; with
    no records the response can be sent at once. ``encoded`` holds the records' log bytes."""

    records: Sequence[MetadataRecord]
    response: R
    encoded: Sequence[bytes] = field(default=())

    @staticmethod
    def of(records: Sequence[MetadataRecord], response: Any) -> ControllerResult[Any]:
        return ControllerResult(records, response, [encode_record(r) for r in records])


class RecordBudget:
    """Accumulates records of one append and refuses units that would exceed the batch limits
    (``max_bytes``: sum of encoded record sizes; ``max_records``)."""

    def __init__(self, max_bytes: int, max_records: int) -> None:
        self.max_bytes = max_bytes
        self.max_records = max_records
        self.records: list[MetadataRecord] = []
        self.encoded: list[bytes] = []
        self.size_bytes = 0

    def try_add(self, unit: Sequence[MetadataRecord]) -> bool:
        """Add every record of ``unit`` or none of them."""
        encoded = [encode_record(r) for r in unit]
        size = sum(len(e) for e in encoded)
        if (
            self.size_bytes + size > self.max_bytes
            or len(self.records) + len(unit) > self.max_records
        ):
            return False
        self.records.extend(unit)
        self.encoded.extend(encoded)
        self.size_bytes += size
        return True

    def result(self, response: Any) -> ControllerResult[Any]:
        return ControllerResult(self.records, response, self.encoded)
