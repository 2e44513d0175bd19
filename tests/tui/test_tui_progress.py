"""The first question on a knowledge base whose index is not built yet: the build shows its
progress under the conversation (a bar, the intervals indexed of all, the time left) and the
progress goes away when the answer comes."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from kbmem_tui.app import KbmemApp
from kbmem_tui.render import duration_text, progress_text
from kbmem_tui.scenarios import QUESTION, SIZE, wait_until
from kbmem_tui.screens.chat import ChatScreen
from kbmem_tui.widgets.index_progress import IndexProgress
from kbmem_tui.widgets.status_bar import StatusBar
from textual.widgets import ProgressBar, Static

from kbmem.index.tenant import TenantIndex
from kbmem.memorize.template import init_kb
from kbmem.store.repository import KnowledgeBase

COUNTS = re.compile(r"^(\d+)/(\d+) intervals")
ANSWER = "Skerrick Island Ferries"


def test_the_first_question_shows_the_index_build_and_its_end(tmp_path: Path) -> None:
    kb = init_kb(tmp_path / "kb")
    assert TenantIndex(kb, "default").current() is None  # nothing built yet
    head = kb.head()
    asyncio.run(_first_question(kb))
    # Built at the commit the question found (quitting then committed the chat's turn).
    built = TenantIndex(kb, "default").current()
    assert built is not None and built.commit == head != kb.head()


async def _first_question(kb: KnowledgeBase) -> None:
    # No background work at start: the question is what builds the index.
    app = KbmemApp(kb, "default", cursor_blink=False, show_times=False, background=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, ChatScreen)
        progress = screen.query_one(IndexProgress)
        assert not progress.display
        await pilot.press(*QUESTION, "enter")
        await wait_until(pilot, lambda: progress.display, "the progress display", timeout=120)
        seen: list[str] = []
        bars: list[tuple[float | None, float]] = []
        statuses: list[str] = []

        def counted() -> bool:
            if progress.display and progress.counts not in seen:
                seen.append(progress.counts)
                bar = progress.query_one(ProgressBar)
                bars.append((bar.total, bar.progress))
                statuses.append(str(screen.query_one(StatusBar).content))
            return any(COUNTS.match(text) for text in seen)

        await wait_until(pilot, counted, "the build's counts", timeout=600)
        first = next(m for m in map(COUNTS.match, seen) if m)
        done, total = int(first[1]), int(first[2])
        assert 0 <= done <= total  # the first report names the total before any work
        # The bar stands where the counts say; the status bar says the same.
        assert (done, total) in [(int(p), int(t or 0)) for t, p in bars]
        assert any(f"syncing {done}/{total}" in status for status in statuses)
        assert screen.reply is not None and not screen.reply.finished
        await wait_until(
            pilot, lambda: screen.reply is not None and screen.reply.finished, "the answer"
        )
        assert not progress.display  # gone once the answer came
        assert app.index_progress is None and not app.status.syncing
        assert ANSWER in screen.reply.markdown.source


def test_the_progress_says_how_far_and_how_long_yet() -> None:
    assert progress_text(0, 0, 3.0) == "reading the pages, loading the embedding model…"
    # 100 of 400 in 20 s: 300 more at that rate take 60 s.
    assert progress_text(100, 400, 20.0) == "100/400 intervals · about 1 min left"
    assert progress_text(1_234, 5_000, 10.0) == "1,234/5,000 intervals · about 31 s left"
    assert progress_text(400, 400, 20.0) == "400/400 intervals · saving"
    assert [duration_text(s) for s in (0.2, 58.5, 59.2, 61, 3600, 7501)] == [
        "1 s",
        "59 s",
        "1 min",
        "2 min",
        "1 h",
        "2 h 6 min",
    ]


def test_stopping_the_first_question_while_the_index_builds(tmp_path: Path) -> None:
    """Escape during the build stops it: the reply says so, the progress goes, nothing half
    built is published, and the next sync builds it whole."""
    kb = init_kb(tmp_path / "kb")
    asyncio.run(_stop_during_build(kb))
    index = TenantIndex(kb, "default")
    assert index.current() is None
    assert index.sync().mode == "full"


async def _stop_during_build(kb: KnowledgeBase) -> None:
    app = KbmemApp(kb, "default", cursor_blink=False, show_times=False, background=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, ChatScreen)
        progress = screen.query_one(IndexProgress)
        await pilot.press(*QUESTION, "enter")
        await wait_until(pilot, lambda: progress.display, "the progress display", timeout=120)
        await pilot.press("escape")
        await wait_until(
            pilot, lambda: screen.reply is not None and screen.reply.finished, "the reply"
        )
        assert not progress.display and not screen.running
        assert app.status.busy == "" and not app.status.syncing
        who = screen.reply.query_one(".who", Static)
        assert "interrupted" in str(who.content)
        assert app.turn_records() == []  # no turn ran
