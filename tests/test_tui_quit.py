"""Quitting the TUI while it brings the index up to date: the sync stops at its next progress
report, the live index keeps serving the commit before, and nothing is rebuilt from scratch.
(A QA pass found a quit that took 40-100 s: the closing app's progress callback failed, the
index took the failure for damage and started a full rebuild, and the app waited for it.)"""

from __future__ import annotations

import asyncio

import pytest
from talk import talk

from kbmem.agent.session import ChatSession
from kbmem.index import TenantIndex
from kbmem.memorizer import ingest_session
from kbmem.sessions import session_from_mapping
from kbmem.store import KnowledgeBase
from tui.app import KbmemApp
from tui.scenarios import SIZE, wait_until


def test_quitting_mid_sync_stops_the_sync_and_keeps_the_index(
    example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = example_kb
    index = TenantIndex(kb, "default")
    before = index.current()
    assert before is not None and before.commit == kb.head()
    # A session long enough that embedding it takes several progress reports (1,024 texts
    # each): about 3,000 sentences.
    sentence = "The tide log {n} records the MV Corran Belle leaving Skerrick at dawn."
    turns = [("Ann", " ".join(sentence.format(n=f"{t}-{s}") for s in range(60))) for t in range(50)]
    ingest_session(kb, session_from_mapping(talk("default", "s-tide-log", turns)))
    full_builds: list[str] = []
    real_full = TenantIndex._build_full

    def build_full(self, *args, **kwargs):
        full_builds.append(self.tenant)
        return real_full(self, *args, **kwargs)

    monkeypatch.setattr(TenantIndex, "_build_full", build_full)
    # The chat's warm-up syncs too, and whichever starts first holds the sync lock; without
    # it, the sync under test is always the app's own (the one a quit can stop).
    monkeypatch.setattr(ChatSession, "warm", lambda self: None)
    asyncio.run(_quit_mid_sync(kb))
    assert full_builds == []
    after = TenantIndex(kb, "default").current()
    assert after is not None and after.name == before.name  # the sync stopped, unpublished
    assert TenantIndex(kb, "default").sync().mode == "incremental"  # and resumes next time


async def _quit_mid_sync(kb: KnowledgeBase) -> None:
    app = KbmemApp(kb, "default", cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.status.syncing, "the index sync to start")
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: not app.is_running, "the app to quit", timeout=60)
    index_workers = [w for w in app.workers if w.group == "index"]
    assert all(w.is_finished for w in index_workers)
