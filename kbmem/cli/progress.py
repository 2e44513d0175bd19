"""Progress of long commands (building an index, creating or filling a knowledge base) on
stderr, with counts and an estimate of the time left.

On a terminal it is tqdm's bar, redrawn in place. Anything else (a log file, CI, a pipe) gets
a plain line when the work has run for ``PERIOD`` seconds, then one every ``PERIOD`` seconds
and one when it ends: carriage returns would make such a log unreadable, and short work says
nothing at all, so a script's stderr stays clean.

Either way a clock thread keeps the elapsed time and the estimate moving between reports: an
index build reports after each batch of a thousand texts, twenty seconds apart on two cores."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, TextIO

PERIOD = 10.0  # seconds between plain progress lines


class Progress:
    """How far a piece of work has come: ``update(done, total)`` or ``advance()``."""

    def __init__(
        self,
        desc: str,
        unit: str,
        total: int | None = None,
        stream: TextIO | None = None,
        period: float = PERIOD,
        clock: Callable[[], float] = time.monotonic,
        ticking: bool = True,
    ) -> None:
        self.desc = desc
        self.unit = unit
        self.total = total
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.period = period
        self.clock = clock
        self.started = clock()
        self.last_line: float | None = None  # when the last plain line was written
        self.bar: Any = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        if _is_terminal(self.stream):
            from tqdm import tqdm

            self.bar = tqdm(
                total=total, desc=desc, unit=unit, file=self.stream, leave=False, dynamic_ncols=True
            )
        self._ticker: threading.Thread | None = None
        if ticking:
            self._ticker = threading.Thread(
                target=self._tick_loop, name="kbmem-progress", daemon=True
            )
            self._ticker.start()

    def update(self, done: int, total: int | None = None) -> None:
        """``done`` of ``total`` (or of the total known so far) are finished."""
        with self._lock:
            if total is not None:
                self.total = total
            self.done = done
            if self.bar is not None:
                self.bar.total = self.total
                self.bar.n = done
                self.bar.refresh()
        self.tick()

    def tick(self) -> None:
        """Redraw the bar (its clock moves), or write a plain line if one is due."""
        with self._lock:
            if self.bar is not None:
                self.bar.refresh()
                return
            now = self.clock()
            since = self.started if self.last_line is None else self.last_line
            if now - since >= self.period:
                self._line(now)

    def advance(self, step: int = 1) -> None:
        self.update(self.done + step)

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self.bar is not None:
            self.bar.close()
        elif self.last_line is not None:  # a long piece of work says that it ended
            self._line(self.clock(), final=True)

    def _tick_loop(self) -> None:
        while not self._stop.wait(1.0 if self.bar is not None else min(self.period, 1.0)):
            self.tick()

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def text(self, now: float, final: bool = False) -> str:
        """The plain line: ``index default: 512/1099 intervals (47%), 21 s, about 24 s left``."""
        elapsed = now - self.started
        count = f"{self.done}/{self.total}" if self.total else f"{self.done}"
        line = f"{self.desc}: {count} {self.unit}s"
        if self.total:
            line += f" ({100 * self.done // max(self.total, 1)}%)"
        if final:
            return f"{line}, done in {elapsed:.0f} s"
        line += f", {elapsed:.0f} s"
        if self.total and 0 < self.done < self.total:
            left = elapsed / self.done * (self.total - self.done)
            line += f", about {left:.0f} s left"
        return line

    def _line(self, now: float, final: bool = False) -> None:
        self.last_line = now
        print(self.text(now, final), file=self.stream, flush=True)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False
