"""The status bar says when the tenant's index is behind HEAD: another process (a server, the
CLI) memorized a session after the app's index sync, and until the next sync an answer may
miss it. Never silent: the bar shows how many commits behind, and the notice goes once the
index has caught up."""

from __future__ import annotations

import asyncio

from helpers.talk import talk
from kbmem_tui.app import KbmemApp
from kbmem_tui.scenarios import settle, wait_until
from test_tui_sync import WIDE, shown

from kbmem.index.tenant import TenantIndex
from kbmem.memorize.memorizer import ingest_session
from kbmem.memorize.sessions import session_from_mapping
from kbmem.store.repository import KnowledgeBase


def test_the_status_bar_says_how_far_the_index_is_behind_head(kb: KnowledgeBase) -> None:
    TenantIndex(kb, "default").sync()  # current at start: the app's own sync has nothing to do
    asyncio.run(_behind_then_caught_up(kb))


async def _behind_then_caught_up(kb: KnowledgeBase) -> None:
    app = KbmemApp(kb, "default", cursor_blink=False)
    async with app.run_test(size=WIDE) as pilot:
        start = kb.head()
        assert start is not None
        await wait_until(pilot, lambda: f"index @{start[:7]}" in shown(app), "the index", 120)
        await settle(pilot)  # the chat's warm-up too has looked at the index
        # Another process memorizes two sessions of this tenant, one of another's.
        other = KnowledgeBase(kb.root)
        for tenant, sid in [
            ("default", "s-late-1"),
            ("acme", "s-elsewhere"),
            ("default", "s-late-2"),
        ]:
            turns = [("Ada", f"The code word of {sid} is zq{sid[-1]}."), ("Bo", "Noted.")]
            ingest_session(other, session_from_mapping(talk(tenant, sid, turns)))
        await wait_until(pilot, lambda: "index 2 behind" in shown(app), "the notice", 30)
        assert "index @" not in shown(app)
        assert app.status.index_behind == 2
        app.sync_index()
        head = kb.head()
        assert head is not None
        await wait_until(pilot, lambda: f"index @{head[:7]}" in shown(app), "the catch-up", 300)
        await pilot.pause(2.5)  # a look after the sync finds nothing behind either
        assert "behind" not in shown(app) and app.status.index_behind == 0
