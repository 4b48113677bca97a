from collections.abc import Callable
from typing import Any

class FAIL_REASON:
    SUCCESS: int
    QUEUE_FULL: int
    MISSING_LEADER: int
    DISCARDED: int
    NOT_LEADER: int
    LEADER_CHANGED: int
    REQUEST_DENIED: int
    UNKNOWN_OUTCOME: int

class SyncObjConf:
    raftMinTimeout: float
    raftMaxTimeout: float
    connectionTimeout: float
    onStateChanged: Callable[[int, int], None] | None
    def __init__(
        self,
        *,
        password: str | bytes | None = ...,
        autoTick: bool = ...,
        appendEntriesUseBatch: bool = ...,
        appendEntriesPeriod: float = ...,
        raftMinTimeout: float = ...,
        raftMaxTimeout: float = ...,
        leaderFallbackTimeout: float = ...,
        connectionTimeout: float = ...,
        connectionRetryTime: float = ...,
        commandsWaitLeader: bool = ...,
        dynamicMembershipChange: bool = ...,
        appendEntriesBatchSizeBytes: int = ...,
        logCompactionMinEntries: int = ...,
        fullDumpFile: str | None = ...,
        serializer: Callable[..., Any] | None = ...,
        deserializer: Callable[..., Any] | None = ...,
        journalFile: str | None = ...,
        bindAddress: str | None = ...,
        bindRetryTime: float = ...,
        maxBindRetries: int = ...,
    ) -> None: ...
