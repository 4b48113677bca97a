"""Test helper (not a test module): drives a QuorumController sans-IO, committing every result
into a plain list of LogEntry (the records a real log would hold) and replaying them."""

from __future__ import annotations

import random
from typing import Any

from metadata.controller import QuorumController
from metadata.controller_config import ControllerConfig
from metadata.features import SUPPORTED
from metadata.image import MetadataImage
from metadata.messages import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    CreateTopicsRequest,
    Endpoint,
    NewTopic,
    RegisterBrokerRequest,
    RegisterBrokerResponse,
    TopicResult,
)
from metadata.result import ControllerResult
from raft.api import LogEntry


class Harness:
    def __init__(self, config: ControllerConfig | None = None, seed: int = 1, **kw: Any) -> None:
        self.config = config or ControllerConfig()
        self.c = QuorumController(self.config, rng=random.Random(seed), cluster_id="c1", **kw)
        self.entries: list[LogEntry] = []
        self.now = 0
        self.c.activate(1, self.now)
        # A new cluster's first tick finalizes the bootstrap metadata.version.
        bootstrap = self.c.tick(self.now)
        assert bootstrap is not None
        self.commit(bootstrap)

    @property
    def image(self) -> MetadataImage:
        return self.c.image

    def commit(self, result: ControllerResult[Any]) -> Any:
        base = len(self.entries)
        new = [LogEntry(base + i, 1, e) for i, e in enumerate(result.encoded)]
        self.entries.extend(new)
        self.c.replay(new)
        return result.response

    def register(
        self, broker_id: int, incarnation: str | None = None, rack: str | None = None
    ) -> RegisterBrokerResponse:
        req = RegisterBrokerRequest(
            broker_id,
            incarnation or f"inc-{broker_id}",
            [Endpoint("PLAINTEXT", "127.0.0.1", 9000 + broker_id)],
            rack,
            "c1",
            min_metadata_version=SUPPORTED.min_level,
            max_metadata_version=SUPPORTED.max_level,
        )
        return self.commit(self.c.register_broker(req, self.now))

    def heartbeat(
        self, broker_id: int, offset: int | None = None, **kw: Any
    ) -> BrokerHeartbeatResponse:
        b = self.image.brokers[broker_id]
        epoch = kw.pop("epoch", b.epoch)
        offset = self.image.offset if offset is None else offset
        kw.setdefault("min_metadata_version", SUPPORTED.min_level)
        kw.setdefault("max_metadata_version", SUPPORTED.max_level)
        req = BrokerHeartbeatRequest(broker_id, epoch, offset, **kw)
        return self.commit(self.c.broker_heartbeat(req, self.now))

    def add_brokers(self, ids: list[int], racks: dict[int, str] | None = None) -> None:
        for bid in ids:
            self.register(bid, rack=(racks or {}).get(bid))
        for bid in ids:
            assert self.heartbeat(bid).is_fenced is False

    def create(self, name: str, partitions: int = 1, rf: int = 1, **kw: Any) -> TopicResult:
        req = CreateTopicsRequest([NewTopic(name, partitions, rf, **kw)])
        return self.commit(self.c.create_topics(req)).topics[0]

    def tick(self, now: int) -> None:
        self.now = now
        for _ in range(10):
            result = self.c.tick(now)
            if result is None:
                return
            self.commit(result)
