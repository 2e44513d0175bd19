"""Never a silent stale answer: an index says which commit it reflects and how far behind HEAD
it is; a sync that takes long runs in the background while requests are answered from the
older index; a build killed half-way resumes from its checkpoints and ends as a clean build
would. Real git, the real embedding model, a real process killed with SIGKILL."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers.kbgit import ROOT

from kbmem.config import load_settings
from kbmem.index.checkpoint import CHECKPOINT_DIR, CHECKPOINT_INTERVALS
from kbmem.index.freshness import PROGRESS_FILE
from kbmem.index.tenant import CATCH_UP_NICE, StillIndexing, TenantIndex, no_waiting
from kbmem.interfaces.service import Memory
from kbmem.memorize.template import init_kb
from kbmem.store.repository import KnowledgeBase

TENANT = "acme"
WORDS = (
    "harbour lantern copper meadow falcon quartz ribbon saddle timber velvet walnut zephyr "
    "anchor beacon cactus dagger ember fossil glacier hammock island jasmine kettle lagoon"
).split()


def _kb(root: Path, stale: float, first: float) -> KnowledgeBase:
    """The knowledge base at ``root`` with these waits (the session's defaults are long)."""
    env = {"KBMEM_INDEX__STALE_WAIT_S": str(stale), "KBMEM_INDEX__FIRST_WAIT_S": str(first)}
    return KnowledgeBase(root, load_settings(root, env))


def _paragraph(n: int) -> str:
    a, b, c = WORDS[n % 24], WORDS[(n // 24) % 24], WORDS[(n // 576) % 24]
    return f"Item {n}: the {a} crew moved the {b} crates beside the {c} shed on day {n}."


def _notes(
    kb: KnowledgeBase, first: int, count: int, per_note: int = 100, tenant: str = TENANT
) -> str:
    files = {}
    for start in range(first, first + count, per_note):
        body = "\n\n".join(
            _paragraph(n) for n in range(start, min(start + per_note, first + count))
        )
        files[f"tenants/{tenant}/notes/n{start:06d}.md"] = (
            f"---\ntitle: Notes from {start}\n---\n{body}\n".encode()
        )
    return kb.commit_files(files, f"Notes {first}..{first + count}")


@pytest.fixture
def fresh_root(tmp_path: Path) -> Path:
    kb = init_kb(tmp_path / "kb", with_history=False)
    _notes(kb, 0, 20)
    return kb.root


def test_status_counts_the_tenants_commits_not_yet_indexed(fresh_root: Path) -> None:
    kb = _kb(fresh_root, stale=0, first=600)
    index = TenantIndex(kb, TENANT)
    index.sync()
    built = kb.head()
    assert index.status().as_dict() == {"commit": built, "pendingCommits": 0, "indexing": None}
    assert index.status().notice() is None and index.status().short() == "index: up to date"
    for n in range(3):
        _notes(kb, 1000 + n * 10, 10)
    _notes(kb, 5000, 10, tenant="other")  # another tenant's commit is not the acme's business
    status = index.status()
    assert (status.commit, status.pending_commits) == (built, 3)
    assert status.notice() == "Index is 3 commits behind HEAD; newer memory may be missing."
    assert status.short() == "index: 3 behind"


def test_a_request_answers_at_once_from_the_older_index_while_the_sync_runs(
    fresh_root: Path,
) -> None:
    """With no wait allowed, a search right after a large write answers from the index it
    has, and the status says how far behind it is and how far the background build has got;
    the background build then brings it to HEAD without another request."""
    kb = _kb(fresh_root, stale=0, first=600)
    index = TenantIndex(kb, TENANT)
    index.sync()
    built = kb.head()
    _notes(kb, 100, 1500)
    started = time.monotonic()
    hits = index.bm25("item 1234", k=5)
    assert time.monotonic() - started < 5
    assert all("1234" not in h.excerpt for h in hits)  # not in the older index
    seen, shorts = [], []
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        status = index.status()
        seen.append(status.as_dict())
        shorts.append(status.short())
        if status.fresh:
            break
        time.sleep(0.5)
    assert seen[0]["commit"] == built and seen[0]["pendingCommits"] == 1
    building = [s for s in seen if s["indexing"]]
    assert building and building[-1]["indexing"]["total"] == 1500, seen[-3:]
    assert any("/1,500" in short for short in shorts), shorts
    assert seen[-1] == {"commit": kb.head(), "pendingCommits": 0, "indexing": None}
    assert any("Item 1234:" in h.excerpt for h in index.bm25("item 1234", k=5))
    assert not (index.dir / PROGRESS_FILE).exists()


def test_a_long_catch_up_delays_the_requests_behind_it_once_not_each(
    fresh_root: Path,
) -> None:
    """The wait for a catch-up is counted from its start: the first search after a large
    write waits up to ``stale_wait``, and one that comes after that answers at once from the
    older index instead of waiting the whole time again (under load, every request would
    otherwise take ``stale_wait`` for as long as the catch-up runs)."""
    kb = _kb(fresh_root, stale=2, first=600)
    index = TenantIndex(kb, TENANT)
    index.sync()
    _notes(kb, 100, 1500)
    started = time.monotonic()
    index.bm25("item 1234", k=5)
    first = time.monotonic() - started
    assert not index.status().fresh, "the catch-up must outlast the wait for this test to say much"
    started = time.monotonic()
    index.bm25("item 1235", k=5)
    second = time.monotonic() - started
    assert first >= 1.9 and second < 1.0, (first, second)
    deadline = time.monotonic() + 600
    while not index.status().fresh and time.monotonic() < deadline:
        time.sleep(0.5)  # let the build end before the folder goes
    assert index.status().fresh


def test_a_read_that_must_not_wait_is_answered_from_the_older_index(fresh_root: Path) -> None:
    """Under ``no_waiting`` (a search on the HTTP server's event loop) a read that finds the
    index behind HEAD starts the catch-up and answers from the older generation at once, even
    with a long ``stale_wait``; ``fresh`` says beforehand whether a read would have to wait."""
    kb = _kb(fresh_root, stale=600, first=600)
    index = TenantIndex(kb, TENANT)
    index.sync()
    assert index.fresh()
    _notes(kb, 100, 600)
    assert not index.fresh()
    started = time.monotonic()
    with no_waiting():
        hits = index.bm25("item 105", k=3)
    assert time.monotonic() - started < 5
    assert not any("Item 105:" in h.excerpt for h in hits)  # the older index has items 0-19
    index._worker_done.wait(600)  # the catch-up it started ends, and the index is fresh
    assert index.fresh() and index.status().fresh
    assert any("Item 105:" in h.excerpt for h in index.bm25("item 105", k=3))


def test_a_service_and_its_chats_share_one_index_and_one_catch_up(fresh_root: Path) -> None:
    """Every reader of one knowledge base in a process reads the tenant's one index: the
    service's searches and each chat's research. Each chat with an index of its own started
    a catch-up of its own after every write (each waiting on the others' sync lock) and
    pushed the others out of the open indexes (kbmem.index.resident)."""
    kb = _kb(fresh_root, stale=600, first=600)
    memory = Memory(kb, TENANT)
    try:
        chat_ids = [memory.open_chat()[0] for _ in range(3)]
        index = memory.toolkit.index
        for chat_id in chat_ids:
            assert memory._chats[chat_id].session.researcher.toolkit.index is index
        index.sync()
        _notes(kb, 100, 600)
        assert not index.fresh()
        researchers = [memory._chats[c].session.researcher for c in chat_ids]
        with no_waiting():
            researchers[0].toolkit.bm25("item 105", k=3)  # starts the catch-up
            started = index._worker_started
            for researcher in researchers[1:]:
                researcher.toolkit.bm25("item 106", k=3)  # join it
        assert index._worker_started == started
        assert memory.search("item 105", "bm25", 3)["hits"]  # waits for it: fresh
        assert index.fresh() and index._worker_started == started
    finally:
        memory.close()
    # A TenantIndex made directly, another tenant's and another KnowledgeBase object's are
    # their own.
    assert TenantIndex.shared(kb, TENANT) is index
    assert TenantIndex(kb, TENANT) is not index
    assert TenantIndex.shared(kb, "other") is not index
    assert TenantIndex.shared(KnowledgeBase(kb.root, kb.settings), TENANT) is not index


def test_a_catch_up_yields_the_cores_to_requests(fresh_root: Path) -> None:
    """A background catch-up runs niced (CATCH_UP_NICE), and so do the embedding threads it
    starts: a large one, such as a huge session just ingested, must not take every core
    from the requests answered meanwhile."""
    kb = _kb(fresh_root, stale=600, first=600)
    index = TenantIndex(kb, TENANT)
    index.sync()
    _notes(kb, 100, 1500)
    expected = min(19, os.getpriority(os.PRIO_PROCESS, 0) + CATCH_UP_NICE)
    index.start_catch_up()
    worker = index._worker
    assert worker is not None and worker.native_id is not None
    seen: set[int] = set()
    deadline = time.monotonic() + 120
    while expected not in seen and worker.is_alive() and time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            seen.add(os.getpriority(os.PRIO_PROCESS, worker.native_id))
        time.sleep(0.005)
    assert expected in seen, seen
    assert os.getpriority(os.PRIO_PROCESS, 0) == expected - CATCH_UP_NICE or expected == 19
    index._worker_done.wait(600)
    assert index.status().fresh


def test_with_no_index_a_request_waits_a_bounded_time_then_says_how_far(
    fresh_root: Path,
) -> None:
    kb = _kb(fresh_root, stale=0, first=0.5)
    _notes(kb, 100, 1500)
    index = TenantIndex(kb, TENANT)
    started = time.monotonic()
    with pytest.raises(StillIndexing) as caught:
        index.bm25("item 5", k=3)
    assert time.monotonic() - started < 10
    assert f"the index of tenant {TENANT} is being built" in str(caught.value)
    assert not caught.value.status.built and caught.value.status.notice()
    # The build goes on in the background; a later request is answered.
    index._worker_done.wait(600)
    assert index.status().fresh
    assert index.bm25("item 5", k=3)


def _searchable(index: TenantIndex) -> tuple[list[tuple[str, str]], np.ndarray, list[np.ndarray]]:
    """What a build stored, in label order: every interval's key and text, every vector of
    the graph, and every interval's word pieces."""
    gen = index.ensure_synced()
    hits = index.all_intervals()
    docs = sorted((h.interval.key, h.excerpt) for h in hits)
    base = gen.base()
    assert base is not None
    ids = np.sort(np.asarray(base.get_ids_list(), dtype=np.int64))
    vectors = np.asarray(base.get_items(ids), dtype=np.float32)
    pieces = [gen.pieces_of(label) for label in range(gen.count)]
    return docs, vectors, [p for p in pieces if p is not None]


def test_a_build_killed_half_way_resumes_and_ends_as_a_clean_build(tmp_path: Path) -> None:
    kb = init_kb(tmp_path / "kb", with_history=False)
    _notes(kb, 0, 3 * CHECKPOINT_INTERVALS)
    clean_root = tmp_path / "clean"
    shutil.copytree(kb.root, clean_root, symlinks=True)
    index_dir = kb.state_dir / "index" / TENANT / CHECKPOINT_DIR
    build = subprocess.Popen(
        [sys.executable, "-m", "kbmem.cli", "--kb", str(kb.root), "--tenant", TENANT, "reindex"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and build.poll() is None:
        if index_dir.is_dir() and len(list(index_dir.glob("*.npz"))) >= 1:
            break
        time.sleep(0.05)
    assert build.poll() is None, build.stderr.read() if build.stderr else ""
    os.kill(build.pid, signal.SIGKILL)
    build.wait()
    kept = len(list(index_dir.glob("*.npz")))
    assert 1 <= kept < 3
    resumed = TenantIndex(kb, TENANT)
    assert resumed.current() is None  # nothing was published
    reports: list[tuple[int, int]] = []
    resumed.sync(progress=lambda done, total: reports.append((done, total)))
    assert resumed.builder.checkpoints.resumed == kept * CHECKPOINT_INTERVALS
    assert reports[0] == (kept * CHECKPOINT_INTERVALS, 3 * CHECKPOINT_INTERVALS), reports[:3]
    assert not index_dir.exists()  # published: the checkpoints are gone

    clean = TenantIndex(KnowledgeBase(clean_root), TENANT)
    clean.sync()
    assert clean.builder.checkpoints.resumed == 0
    got, want = _searchable(resumed), _searchable(clean)
    assert got[0] == want[0] and len(got[0]) == 3 * CHECKPOINT_INTERVALS
    assert np.array_equal(got[1], want[1])
    assert len(got[2]) == len(want[2]) and all(
        np.array_equal(a, b) for a, b in zip(got[2], want[2], strict=True)
    )
