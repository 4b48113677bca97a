from collections.abc import Callable

class POLL_EVENT_TYPE:
    READ: int
    WRITE: int
    ERROR: int

class Poller:
    def subscribe(
        self, descr: int, callback: Callable[[int, int], None], eventMask: int
    ) -> None: ...
    def unsubscribe(self, descr: int) -> None: ...
