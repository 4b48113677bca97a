"""An in-process broker for tests: a real KafkaServer on 127.0.0.1 (ephemeral port) over a real
LogManager in a temporary directory, fed a hand-built MetadataImage instead of a controller.

``BrokerHarness.set_topics({"t": 3})`` publishes an image in which this broker (id 1) leads
every partition with an ISR of itself; the server thread picks it up on its next tick.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

from data_plane.broker.apis import KafkaApis
from data_plane.broker.config import BrokerConfig
from data_plane.broker.metadata_publisher import MetadataPublisher
from data_plane.broker.replica_manager import ReplicaManager
from data_plane.broker.server import KafkaServer, ListenerSpec, ServerThread
from data_plane.storage import LogConfig, LogManager
from metadata.image import BrokerRegistration, MetadataImage, PartitionRegistration, TopicImage
from metadata.records import Listener

BROKER_ID = 1
READY_TIMEOUT_S = 10.0


def _clock_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class BrokerHarness:
    def __init__(
        self,
        directory: Path,
        config: BrokerConfig | None = None,
        event_loop: str = "asyncio",
        log_config: LogConfig | None = None,
    ) -> None:
        self.config = config or BrokerConfig()
        self.log_config = log_config or LogConfig(log_dirs=(str(directory / "logs"),))
        self.log_manager = LogManager(self.log_config)
        self._image = MetadataImage()
        self.publisher = MetadataPublisher()
        self._offset = 0
        self._lock = threading.Lock()
        self.port = 0
        self.apis: KafkaApis | None = None

        def make_server() -> KafkaServer:
            self.apis = KafkaApis(
                BROKER_ID,
                "test-cluster",
                self.config,
                ReplicaManager(BROKER_ID, self.log_manager),
                None,
                _clock_ms,
            )
            return KafkaServer(
                self.config,
                self.apis,
                [ListenerSpec("PLAINTEXT", "127.0.0.1", 0)],
                metadata_events=self.publisher,
                log_manager=self.log_manager,
            )

        self.thread = ServerThread(make_server, event_loop, "test-kafka")
        self.thread.start()
        assert self.thread.server is not None
        self.port = self.thread.server.bound_addresses["PLAINTEXT"][1]

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def set_topics(
        self,
        topics: Mapping[str, int],
        leader: int = BROKER_ID,
        topic_ids: Mapping[str, uuid.UUID] | None = None,
    ) -> None:
        """Publish an image with these topics (name -> partitions), each led by ``leader``, and
        wait until the server has applied it. A topic keeps its id, or gets the one in
        ``topic_ids``, or a new one."""
        self._offset += 1
        by_name: dict[str, TopicImage] = {}
        for name, count in topics.items():
            old = self._image.topic(name)
            tid = old.topic_id if old is not None else (topic_ids or {}).get(name, uuid.uuid4())
            epoch = 0
            if old is not None and old.partitions and old.partitions[0].leader != leader:
                epoch = old.partitions[0].leader_epoch + 1
            elif old is not None and old.partitions:
                epoch = old.partitions[0].leader_epoch
            parts = {
                p: PartitionRegistration((BROKER_ID,), (BROKER_ID,), leader, epoch, epoch)
                for p in range(count)
            }
            by_name[name] = TopicImage(name, tid, parts)
            for p in range(count):
                self.log_manager.get_or_create_log(name, p, self.log_config)
        broker = BrokerRegistration(
            BROKER_ID,
            "inc",
            1,
            (Listener("PLAINTEXT", "127.0.0.1", self.port),),
            None,
            False,
            False,
        )
        image = MetadataImage(
            offset=self._offset,
            brokers={BROKER_ID: broker},
            topics_by_name=by_name,
            topics_by_id={t.topic_id: t for t in by_name.values()},
        )
        self._image = image
        self.publisher.publish(image)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while self.apis is None or self.apis.replica_manager.image is not image:
            if time.monotonic() > deadline:
                raise TimeoutError("the server did not apply the image")
            time.sleep(0.005)

    def close(self) -> None:
        self.thread.stop()
        self.log_manager.close()
