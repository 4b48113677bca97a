"""Reading a topic's values back in the transaction tests (native client, no group)."""

from __future__ import annotations

import time

from kraftlog_client import Consumer, TopicPartition

# Bound on one read of a whole topic (a loaded 2-core machine).
READ_DEADLINE_S = 60.0
# Once ``expected`` values arrived, the read ends after this long without another one.
QUIET_S = 2.0


def read_values(
    bootstrap: str, topic: str, partitions: int, isolation: str, expected: int
) -> list[bytes]:
    """Every value of ``topic`` from offset 0, as a consumer with ``isolation`` sees it:
    polls until ``expected`` values arrived and then ``QUIET_S`` passed without one."""
    c = Consumer({"bootstrap.servers": bootstrap, "isolation.level": isolation})
    try:
        c.assign([TopicPartition(topic, p) for p in range(partitions)])
        for p in range(partitions):
            c.seek(TopicPartition(topic, p), 0)
        got: list[bytes] = []
        deadline = time.monotonic() + READ_DEADLINE_S
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            records = c.poll(200)
            if records:
                got.extend(r.value for r in records)
                quiet_since = time.monotonic()
            elif len(got) >= expected and time.monotonic() - quiet_since > QUIET_S:
                break
        return got
    finally:
        c.close()
