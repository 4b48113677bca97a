"""A one-line progress bar on stderr for the benchmark suite (no dependency).

The suite knows each section's time cap, not its progress inside the section, so the bar
advances by elapsed time against the section's expected duration (never past its share until
the section ends) and jumps to the section's end when it finishes. On a terminal the line is
redrawn in place; otherwise (CI logs, a pipe) one line per section is printed instead.

Thread-safety: one thread draws; ``tick`` and ``finish_section`` are called by that thread.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

BAR_WIDTH_CHARS = 30


class ProgressBar:
    def __init__(self, sections: list[tuple[str, float]], stream: TextIO | None = None) -> None:
        """``sections``: (name, expected seconds) in run order."""
        self._sections = sections
        self._total_s = sum(s for _, s in sections) or 1.0
        self._done_s = 0.0
        self._index = 0
        self._section_started = time.monotonic()
        self._started = self._section_started
        self._stream = stream or sys.stderr
        self._tty = self._stream.isatty()

    def _line(self, name: str, fraction: float) -> str:
        filled = int(BAR_WIDTH_CHARS * min(1.0, fraction))
        elapsed = time.monotonic() - self._started
        return (
            f"[{'#' * filled}{'.' * (BAR_WIDTH_CHARS - filled)}] {fraction * 100:3.0f}% "
            f"{self._index + 1}/{len(self._sections)} {name:<22} {elapsed:5.0f} s"
        )

    def start_section(self, index: int) -> None:
        self._index = index
        self._section_started = time.monotonic()
        self.tick()

    def tick(self) -> None:
        if not self._tty or self._index >= len(self._sections):
            return
        name, expected = self._sections[self._index]
        in_section = min(expected * 0.99, time.monotonic() - self._section_started)
        self._stream.write("\r" + self._line(name, (self._done_s + in_section) / self._total_s))
        self._stream.flush()

    def finish_section(self, status: str) -> None:
        name, expected = self._sections[self._index]
        self._done_s += expected
        line = self._line(name, self._done_s / self._total_s) + f" {status}"
        self._stream.write(("\r" + line + "\n") if self._tty else line + "\n")
        self._stream.flush()
