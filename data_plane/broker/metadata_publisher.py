"""MetadataPublisher: hands metadata images to the parts of a broker that act on them, as
events (Kafka's MetadataPublisher), so nothing polls for a new image.

The broker's partition logs publish each image once every log it asks for exists
(:class:`~data_plane.broker.partition_logs.PartitionLogs`); the Kafka server subscribes and
applies the image to its replica manager on its event loop. A subscriber gets the newest image
at once when it subscribes, then every image published after; it must accept an image older
than one it already has (a subscription racing a publication) and ignore it.

Thread-safety: ``publish`` and ``subscribe`` from any thread; a subscriber is called on the
publishing thread (or the subscribing thread, for the image current when it subscribes), so it
must hand the work to its own thread if it has one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from metadata.image import MetadataImage

ImageSubscriber = Callable[[MetadataImage], None]


class MetadataPublisher:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._image: MetadataImage | None = None
        self._subscribers: list[ImageSubscriber] = []

    @property
    def image(self) -> MetadataImage | None:
        """The newest image published (None before the first)."""
        return self._image

    def publish(self, image: MetadataImage) -> None:
        with self._lock:
            self._image = image
            subscribers = list(self._subscribers)
        for fn in subscribers:
            fn(image)

    def subscribe(self, fn: ImageSubscriber) -> Callable[[], None]:
        """Call ``fn`` with the current image (if any) and every later one; returns the
        function that ends the subscription."""
        with self._lock:
            self._subscribers.append(fn)
            current = self._image
        if current is not None:
            fn(current)

        def unsubscribe() -> None:
            with self._lock:
                if fn in self._subscribers:
                    self._subscribers.remove(fn)

        return unsubscribe
