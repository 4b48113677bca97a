"""The base of every workload thread: a daemon named after its history process, whose
``_run`` is the work and whose ``error`` keeps what ended it, for the runner to report (a
workload thread must not die silently: its silence would read as a quiet client).

Thread-safety: ``error`` is written once, by the thread itself, and read after it ended.
"""

from __future__ import annotations

import threading
from abc import ABCMeta, abstractmethod


class WorkloadThread(threading.Thread, metaclass=ABCMeta):
    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._run()
        except BaseException as e:  # reported by the runner
            self.error = e

    @abstractmethod
    def _run(self) -> None:
        """The thread's work, until its stop event is set."""
