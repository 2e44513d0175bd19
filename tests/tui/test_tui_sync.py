"""The status bar's remote sync summary, driven with Pilot over a real git daemon on loopback:
ahead/behind, the last sync's age, the conflict count and "offline" while the remote is down;
nothing at all when the memory has no remote."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

from helpers.gitserver import GitServer
from kbmem_tui.app import KbmemApp
from kbmem_tui.scenarios import wait_until
from kbmem_tui.widgets.status_bar import StatusBar
from rich.console import Console
from rich.text import Text

from kbmem.store.repository import KnowledgeBase
from kbmem.sync.engine import add_remote, sync

WIDE = (200, 30)  # room for every part of the status line


def shown(app: KbmemApp) -> str:
    bar = app.screen.query_one(StatusBar)
    content = bar.content
    console = Console(width=250, record=True, color_system=None, file=io.StringIO())
    console.print(Text(content) if isinstance(content, str) else content)
    return console.export_text()


def test_the_status_bar_shows_the_remote_sync(kb: KnowledgeBase, tmp_path: Path) -> None:
    base = tmp_path / "srv"
    base.mkdir()
    server = GitServer(base)
    server.start()
    try:
        add_remote(kb, server.url)
        sync(kb)
        kb.settings.data["sync"]["interval_s"] = 0.3
        asyncio.run(_remote_sync_shown(kb, server))
    finally:
        server.stop()


async def _remote_sync_shown(kb: KnowledgeBase, server: GitServer) -> None:
    app = KbmemApp(kb, "default", cursor_blink=False, background=False)
    async with app.run_test(size=WIDE) as pilot:
        await wait_until(pilot, lambda: "sync ↑0 ↓0 · " in shown(app), "the sync summary", 30)
        assert " s ago" in shown(app)
        server.stop()
        # A note kept in two versions (what a sync leaves when both sides edited it), and a
        # commit the remote cannot take now. A name with "[" is shown as text, never markup.
        copy = "tenants/default/notes/[plan].sync-conflict-0123abcd.md"
        kb.commit_files({copy: b"# Plan\n\nThe other side's version.\n"}, "Keep both")

        def offline() -> bool:
            return "sync ↑1 ↓0 · 1 conflict(s) · offline" in shown(app)

        await wait_until(pilot, offline, "the summary saying offline", 60)
        server.start()

        def back() -> bool:
            text = shown(app)
            return "sync ↑0 ↓0 · 1 conflict(s) · " in text and "· offline" not in text

        await wait_until(pilot, back, "the summary once the remote is back", 60)
    assert server.head() == kb.head()


def test_no_remote_shows_nothing_about_sync(kb: KnowledgeBase) -> None:
    async def run() -> None:
        app = KbmemApp(kb, "default", cursor_blink=False, background=False)
        async with app.run_test(size=WIDE) as pilot:
            await wait_until(pilot, lambda: "pending" in shown(app), "the status bar", 30)
            await pilot.pause(0.5)
            assert app.remote_sync is None and "sync" not in shown(app)

    asyncio.run(run())
