"""The session id and epoch values of incremental fetch sessions (KIP-227), shared by the
broker's session cache and the clients that fetch in a session (replica fetchers, consumers).

A Fetch request names ``session_id`` and ``session_epoch``: epoch INITIAL_EPOCH with
INVALID_SESSION_ID opens a session, FINAL_EPOCH closes one (or fetches without a session),
and each incremental fetch carries the next epoch, wrapping from MAX_EPOCH back to 1.
"""

from __future__ import annotations

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 2**31 - 1


def next_epoch(epoch: int) -> int:
    """The epoch of the request after one sent with ``epoch``."""
    return 1 if epoch >= MAX_EPOCH else epoch + 1
