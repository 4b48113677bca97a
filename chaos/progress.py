"""The runner's progress bar: one line on stderr, redrawn in place (only on a terminal or when
asked for with ``--progress``)::

    [##########..........]  61/120 s  send ok 5210 info 3 fail 0  read 15600  fault: kill [101]
"""

from __future__ import annotations

from typing import TextIO

BAR_WIDTH_CHARS = 20


class ProgressBar:
    def __init__(self, stream: TextIO, total_s: float, enabled: bool) -> None:
        self._stream = stream
        self._total_s = max(total_s, 1e-9)
        self.enabled = enabled
        self._last_len = 0

    def render(self, elapsed_s: float, counts: dict[str, int], fault: str) -> str:
        done = min(1.0, max(0.0, elapsed_s / self._total_s))
        filled = int(done * BAR_WIDTH_CHARS)
        bar = "#" * filled + "." * (BAR_WIDTH_CHARS - filled)
        return (
            f"[{bar}] {elapsed_s:4.0f}/{self._total_s:.0f} s  "
            f"send ok {counts.get('send-ok', 0)} info {counts.get('send-info', 0)} "
            f"fail {counts.get('send-fail', 0)}  read {counts.get('read', 0)}  "
            f"fault: {fault or '-'}"
        )

    def update(self, elapsed_s: float, counts: dict[str, int], fault: str) -> None:
        if not self.enabled:
            return
        line = self.render(elapsed_s, counts, fault)
        pad = " " * max(0, self._last_len - len(line))
        self._stream.write("\r" + line + pad)
        self._stream.flush()
        self._last_len = len(line)

    def finish(self) -> None:
        if self.enabled and self._last_len:
            self._stream.write("\n")
            self._stream.flush()
            self._last_len = 0
