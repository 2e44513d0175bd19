"""Quitting the TUI while it brings the index up to date: the sync stops at its next progress
report, the live index keeps serving the commit before, and nothing is rebuilt from scratch.
(A QA pass found a quit that took 40-100 s: the closing app's progress callback failed, the
index took the failure for damage and started a full rebuild, and the app waited for it.)"""

from __future__ import annotations

import asyncio

import pytest
from helpers.talk import talk
from kbmem_tui.app import KbmemApp
from kbmem_tui.scenarios import SIZE, wait_until

from kbmem.agent.session import ChatSession
from kbmem.index.tenant import TenantIndex
from kbmem.memorize.memorizer import ingest_session
from kbmem.memorize.sessions import session_from_mapping
from kbmem.store.repository import KnowledgeBase


@pytest.mark.parametrize("syncing", ["app", "warmup"])
def test_quitting_mid_sync_stops_the_sync_and_keeps_the_index(
    example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch, syncing: str
) -> None:
    """Two syncs can be running when the user quits: the app's own (it shows "syncing") and
    the chat's warm-up, which runs while the embedding model loads; whichever holds the sync
    lock, the other waits for it. Each is tested alone here, the other turned off."""
    kb = example_kb
    index = TenantIndex(kb, "default")
    before = index.current()
    assert before is not None and before.commit == kb.head()
    # A session long enough that embedding it takes several steps (1,024 texts each):
    # about 3,000 sentences.
    sentence = "The tide log {n} records the MV Corran Belle leaving Skerrick at dawn."
    turns = [("Ann", " ".join(sentence.format(n=f"{t}-{s}") for s in range(60))) for t in range(50)]
    ingest_session(kb, session_from_mapping(talk("default", "s-tide-log", turns)))
    full_builds: list[str] = []
    real_full = TenantIndex._build_full

    def build_full(self, *args, **kwargs):
        full_builds.append(self.tenant)
        return real_full(self, *args, **kwargs)

    monkeypatch.setattr(TenantIndex, "_build_full", build_full)
    if syncing == "app":
        monkeypatch.setattr(ChatSession, "warm", lambda self, cancel=None: None)
        started = lambda app: app.status.syncing  # noqa: E731
    else:
        monkeypatch.setattr(KbmemApp, "sync_index", lambda self, full=False: None)
        started = lambda app: _building(index)  # noqa: E731
    asyncio.run(_quit_mid_sync(kb, started))
    assert full_builds == []
    after = TenantIndex(kb, "default").current()
    assert after is not None and after.name == before.name  # the sync stopped, unpublished
    assert TenantIndex(kb, "default").sync().mode == "incremental"  # and resumes next time


def _building(index: TenantIndex) -> bool:
    """A generation is being built (a directory without meta.json yet)."""
    return any(not (p / "meta.json").exists() for p in index.dir.glob("gen-*"))


async def _quit_mid_sync(kb: KnowledgeBase, started) -> None:
    app = KbmemApp(kb, "default", cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: started(app), "the index sync to start")
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: not app.is_running, "the app to quit", timeout=60)
    assert all(w.is_finished for w in app.workers)
