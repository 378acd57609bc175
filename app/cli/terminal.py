"""What the commands draw on the terminal: plain text tables and a progress bar."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    """One line per stage on stderr: a bar, counts and rate (redrawn on a terminal, written once when done in a
    log or a pipe)."""

    def __init__(self, out: TextIO = sys.stderr, width: int = 30) -> None:
        self.out, self.width = out, width
        self.stage, self.start = "", time.perf_counter()
        self.last = self.start

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.perf_counter()
        if stage != self.stage:  # stages follow one another: this one began when the one before last reported
            self.stage, self.start = stage, self.last
        self.last = now
        if done < total and not self.out.isatty():  # in a log, one line per finished stage
            return
        filled = self.width * done // max(total, 1)
        rate = done / max(now - self.start, 1e-6)
        bar = "#" * filled + "." * (self.width - filled)
        start = "\r" if self.out.isatty() else ""
        self.out.write(f"{start}{stage:<8} [{bar}] {done:,}/{total:,}  {rate:,.0f}/s")
        if done >= total:
            self.out.write("\n")
        self.out.flush()


def table(headers: list[str], rows: list[list]) -> str:
    """A plain text table, numbers to 4 decimals."""
    cells = [[f"{v:.4f}" if isinstance(v, float) else str(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[n]) for r in cells)) for n, h in enumerate(headers)]

    def line(values):
        return "  ".join(v.rjust(w) if n else v.ljust(w) for n, (v, w) in enumerate(zip(values, widths, strict=True)))

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in cells)])
