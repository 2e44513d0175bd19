"""Progress of long commands: tqdm's bar with counts and an estimate on a terminal, plain
periodic lines anywhere else, nothing at all for short work off a terminal."""

from __future__ import annotations

import io
import sys
from pathlib import Path

from helpers.kbgit import run_on_terminal

from kbmem.cli.progress import Progress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_off_a_terminal_a_plain_line_every_period_with_counts_and_time_left() -> None:
    out, clock = io.StringIO(), Clock()
    with Progress(
        "index default", "interval", stream=out, period=10, clock=clock, ticking=False
    ) as bar:
        bar.update(0, 1000)
        clock.now += 4
        bar.update(200, 1000)
        assert out.getvalue() == ""  # short so far: nothing said
        clock.now += 6
        bar.update(250)
        clock.now += 5  # no report between periods...
        bar.tick()
        clock.now += 5  # ...then the clock alone writes the next line
        bar.tick()
        clock.now += 10
        bar.update(1000)
    assert out.getvalue().splitlines() == [
        "index default: 250/1000 intervals (25%), 10 s, about 30 s left",
        "index default: 250/1000 intervals (25%), 20 s, about 60 s left",
        "index default: 1000/1000 intervals (100%), 30 s",
        "index default: 1000/1000 intervals (100%), done in 30 s",
    ]


def test_short_work_off_a_terminal_says_nothing() -> None:
    out = io.StringIO()
    with Progress("ingest", "session", 3, stream=out) as bar:
        for _ in range(3):
            bar.advance()
    assert out.getvalue() == ""


def test_init_shows_counts_and_an_estimate_on_a_terminal(tmp_path: Path) -> None:
    target = tmp_path / "kb"
    code, out, shown = run_on_terminal(
        [sys.executable, "-m", "kbmem.cli", "init", str(target)], timeout=300
    )
    assert code == 0, shown
    assert out.startswith("created knowledge base")
    assert b"\rinit:   0%|" in shown
    # tqdm's "[elapsed<left, rate]" once a session is done: the count and the estimate.
    # (tqdm writes the rate as "2.50session/s" or, below one a second, "1.20s/session".)
    assert b"1/" in shown and b"<00:" in shown
    assert b"session/s]" in shown or b"s/session]" in shown
