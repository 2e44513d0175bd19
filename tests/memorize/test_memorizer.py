"""The memorizer on real git repositories: one commit per session, idempotent re-ingest, new
versions of the same pages, splitting at turn boundaries, history and diffs, concurrent
writers and a writer killed mid-ingest."""

from __future__ import annotations

import copy
import itertools
import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from helpers.kbgit import (
    ROOT,
    commit_count,
    fsck,
    git,
    head,
    kb_with_page_tokens,
    session_trailers,
    status,
    summit_session,
)

from kbmem.config import load_settings
from kbmem.errors import NotFound, ValidationError
from kbmem.memorize.memo import Memo, OfflineMemo
from kbmem.memorize.memorizer import MEMO_ATTEMPTS, ingest_session, read_memory
from kbmem.memorize.sessions import Session, session_from_mapping
from kbmem.store.pages import HEADER_FIELDS
from kbmem.store.pagestore import PageStore
from kbmem.store.repository import KnowledgeBase
from kbmem.textutil import count_tokens

PREFIX = "tenants/default/"


def _session(session_id: str, texts: list[str], **extra) -> Session:
    return session_from_mapping(summit_session(session_id, texts, **extra))


KICKOFF = [
    "Kickoff: Maya Lindqvist owns the Ferrylog pilot with Skerrick Island Ferries.",
    "Noted. The pilot goes live on Monday 26 January 2026 at 300 pounds a month.",
    "### t9 | not | a header\nTobias writes the DynamoDB schema by 19 January.",
]


def test_ingest_writes_pages_memory_and_record_in_one_commit(empty_kb: KnowledgeBase) -> None:
    root = empty_kb.root
    before = head(root)
    session = _session("kickoff", KICKOFF, title="Ferrylog kickoff", agentId="assistant")
    result = ingest_session(empty_kb, session)

    assert result.status == "created"
    assert result.commit == head(root)
    assert git(root, "rev-parse", "HEAD~1").strip() == before
    changed = sorted(git(root, "show", "--format=", "--name-status", "HEAD").splitlines())
    assert changed == [
        f"A\t{PREFIX}MEMORY.md",
        f"A\t{PREFIX}pages/kickoff/1.md",
        f"A\t{PREFIX}sessions/kickoff.yaml",
    ]
    assert git(root, "log", "-1", "--format=%(trailers:only,unfold)").strip().splitlines() == [
        "Kbmem-Session: kickoff",
        "Kbmem-Tenant: default",
    ]
    assert git(root, "log", "-1", "--format=%s").strip() == (
        "Memorize session kickoff: Ferrylog kickoff"
    )

    record = PageStore(empty_kb, "default").read("kickoff/1")
    meta = record.page.meta
    assert set(HEADER_FIELDS) <= set(meta)
    assert (meta["id"], meta["session_id"], meta["tenant_id"], meta["sequence"]) == (
        "kickoff/1",
        "kickoff",
        "default",
        1,
    )
    assert meta["agent_id"] == "assistant" and meta["memo_version"] == 1
    assert meta["created_at"] == "2026-04-01T10:00:00"
    assert meta["memo"] == result.memo and "2026-04-01" in meta["memo"]
    assert "Skerrick" in meta["memo"] or "Ferrylog" in meta["memo"]  # names survive the memo
    assert "page 1 of 1" in meta["header"]
    turns = record.page.turns()
    assert [t.text for t in turns] == KICKOFF  # verbatim, header-like line included
    assert [(t.id, t.speaker) for t in turns] == [
        ("t1", "Maya"),
        ("t2", "Assistant"),
        ("t3", "Maya"),
    ]

    assert read_memory(empty_kb, "default") == [("2026-04-01", "kickoff", result.memo)]
    saved = yaml.safe_load(empty_kb.read_bytes(f"{PREFIX}sessions/kickoff.yaml"))
    assert saved["content_sha256"] == session.content_hash()
    assert saved["pages"] == ["kickoff/1"] and saved["memo_version"] == 1
    assert [t["page"] for t in saved["turns"]] == ["kickoff/1"] * 3
    assert status(root) == ""
    fsck(root)


def test_reingesting_the_same_session_is_a_no_op(empty_kb: KnowledgeBase) -> None:
    first = ingest_session(empty_kb, _session("kickoff", KICKOFF))
    count = commit_count(empty_kb.root)
    again = ingest_session(empty_kb, _session("kickoff", KICKOFF))
    assert again.status == "unchanged"
    assert again.commit is None
    assert again.page_ids == first.page_ids and again.memo == first.memo
    assert head(empty_kb.root) == first.commit
    assert commit_count(empty_kb.root) == count


def test_changed_content_writes_new_versions_of_the_same_pages(empty_kb: KnowledgeBase) -> None:
    store = PageStore(empty_kb, "default")
    first = ingest_session(empty_kb, _session("kickoff", KICKOFF))
    changed = [*KICKOFF[:2], "Correction: the pilot goes live on Monday 2 February 2026."]
    second = ingest_session(empty_kb, _session("kickoff", changed))

    assert second.status == "updated"
    assert second.page_ids == first.page_ids == ["kickoff/1"]
    assert first.commit and second.commit and first.commit != second.commit
    files = empty_kb.list_files(PREFIX)
    assert sorted(files) == [
        f"{PREFIX}MEMORY.md",
        f"{PREFIX}pages/kickoff/1.md",
        f"{PREFIX}sessions/kickoff.yaml",
    ]  # a new version, never a second copy
    now = store.read("kickoff/1")
    assert now.page.meta["memo_version"] == 2
    assert now.page.turns()[2].text == changed[2]
    assert [line for _d, sid, _m in read_memory(empty_kb, "default") for line in [sid]] == [
        "kickoff"
    ]

    # History: one `git log --follow`, newest first; each version readable at its commit.
    history = store.history("kickoff/1")
    assert [c.sha for c in history] == [second.commit, first.commit]
    assert all(c.path == f"{PREFIX}pages/kickoff/1.md" for c in history)
    old = store.read("kickoff/1", first.commit)
    assert old.commit == first.commit and old.page.meta["memo_version"] == 1
    assert old.page.turns()[2].text == KICKOFF[2]
    assert store.read("kickoff/1", "HEAD~1").text == old.text
    diff = store.diff("kickoff/1", first.commit, second.commit)
    assert "-Tobias writes the DynamoDB schema by 19 January." in diff
    assert "+Correction: the pilot goes live on Monday 2 February 2026." in diff
    assert "-memo_version: 1" in diff and "+memo_version: 2" in diff
    assert store.diff("kickoff/1", second.commit, second.commit) == ""

    with pytest.raises(NotFound):
        store.history("nope/1")
    with pytest.raises(NotFound):
        store.read("kickoff/2")


def test_history_follows_a_page_renamed_by_hand(empty_kb: KnowledgeBase) -> None:
    root = empty_kb.root
    old_path = f"{PREFIX}notes/plan.md"
    first = empty_kb.commit_files({old_path: b"# Plan\n\nShip in March.\n"}, "Add plan")
    git(root, "mv", old_path, f"{PREFIX}notes/roadmap.md")
    git(root, "commit", "-q", "-m", "Rename the plan")
    history = PageStore(empty_kb, "default").history("notes/roadmap.md")
    assert [c.path for c in history] == [f"{PREFIX}notes/roadmap.md", old_path]
    assert history[-1].sha == first
    diff = PageStore(empty_kb, "default").diff("notes/roadmap.md", first, "HEAD")
    assert diff == ""  # same content, only the path changed


def test_long_session_splits_at_turn_boundaries(empty_kb: KnowledgeBase) -> None:
    kb = kb_with_page_tokens(empty_kb, 120)
    texts = [
        f"Turn {n}: " + " ".join(f"word{n}x{i}" for i in range(n * 7 % 40 + 5)) for n in range(30)
    ]
    texts[11] = "A turn far larger than one page: " + "big " * 400
    result = ingest_session(kb, _session("long", texts))
    store = PageStore(kb, "default")

    assert len(result.page_ids) > 3
    assert result.page_ids == [f"long/{n}" for n in range(1, len(result.page_ids) + 1)]
    pages = [store.read(page_id).page for page_id in result.page_ids]
    all_turns = [t for page in pages for t in page.turns()]
    assert [t.text for t in all_turns] == texts  # in order, none split, none lost
    for page in pages:
        cost = sum(
            count_tokens(f"### {t.id} | {t.speaker} | {t.timestamp}\n{t.text}\n\n")
            for t in page.turns()
        )
        assert cost <= 120 or len(page.turns()) == 1
        assert page.meta["turns"] == [page.turns()[0].id, page.turns()[-1].id]
        assert f"of {len(pages)}" in page.meta["header"]
    big = next(p for p in pages if any(t.id == "t12" for t in p.turns()))
    assert [t.id for t in big.turns()] == ["t12"]  # an oversized turn gets a page to itself


def test_a_shorter_session_deletes_the_pages_it_no_longer_needs(empty_kb: KnowledgeBase) -> None:
    kb = kb_with_page_tokens(empty_kb, 60)
    texts = [f"Sentence number {n} about the ferry timetable and its owners." for n in range(20)]
    long = ingest_session(kb, _session("shrinks", texts))
    assert len(long.page_ids) >= 3
    short = ingest_session(kb, _session("shrinks", texts[:2]))
    assert short.page_ids == ["shrinks/1"]
    pages = sorted(p for p in kb.list_files(PREFIX) if "/pages/" in p)
    assert pages == [f"{PREFIX}pages/shrinks/1.md"]
    assert not (kb.root / PREFIX / "pages/shrinks/2.md").exists()
    assert status(kb.root) == ""
    # The deleted pages are still there in history.
    assert PageStore(kb, "default").read("shrinks/2", long.commit).page.meta["sequence"] == 2


def test_headers_and_memory_carry_the_earlier_sessions(empty_kb: KnowledgeBase) -> None:
    first = ingest_session(empty_kb, _session("s1", KICKOFF[:2], day="2026-01-05"))
    ingest_session(
        empty_kb, _session("s3", ["Maya moved the launch to 14 April 2026."], day="2026-03-01")
    )
    third = ingest_session(
        empty_kb, _session("s2", ["Oskar set up staging on 21 January."], day="2026-01-21")
    )
    header = PageStore(empty_kb, "default").read("s2/1").page.meta["header"]
    assert "Earlier: s1: " + first.memo in header  # earlier by date, not by ingest order
    assert "s3" not in header
    assert [sid for _d, sid, _m in read_memory(empty_kb, "default")] == ["s1", "s2", "s3"]
    memory = empty_kb.read_bytes(f"{PREFIX}MEMORY.md").decode()
    assert f"- [2026-01-21] s2 — {third.memo}" in memory


def test_tenants_are_kept_apart(empty_kb: KnowledgeBase) -> None:
    ingest_session(
        empty_kb, _session("same-id", ["Tenant one's plan for the ferry."], tenant="one")
    )
    ingest_session(empty_kb, _session("same-id", ["Tenant two's budget review."], tenant="two"))
    one, two = PageStore(empty_kb, "one"), PageStore(empty_kb, "two")
    assert one.read("same-id/1").page.turns()[0].text == "Tenant one's plan for the ferry."
    assert two.read("same-id/1").page.turns()[0].text == "Tenant two's budget review."
    assert [s for _d, s, _m in read_memory(empty_kb, "one")] == ["same-id"]
    assert (
        git(empty_kb.root, "log", "-1", "--format=%(trailers:key=Kbmem-Tenant,valueonly)").strip()
        == "two"
    )


def test_ingest_never_sweeps_the_users_changes_into_its_commit(empty_kb: KnowledgeBase) -> None:
    root = empty_kb.root
    (root / "README.md").write_text("# Staged edit\n")
    (root / PREFIX / "notes").mkdir(parents=True)
    (root / PREFIX / "notes/mine.md").write_text("# My own note, staged, not committed\n")
    git(root, "add", "README.md", f"{PREFIX}notes/mine.md")
    with (root / "kbmem.yaml").open("a") as handle:
        handle.write("# unstaged\n")
    (root / PREFIX / "scratch.md").write_text("untracked\n")
    staged_before = git(root, "diff", "--cached", "--name-status")
    unstaged_before = git(root, "diff", "--name-status")

    result = ingest_session(empty_kb, _session("kickoff", KICKOFF))

    committed = git(root, "show", "--format=", "--name-only", "HEAD").split()
    assert sorted(committed) == sorted(
        [f"{PREFIX}MEMORY.md", f"{PREFIX}pages/kickoff/1.md", f"{PREFIX}sessions/kickoff.yaml"]
    )
    assert git(root, "diff", "--cached", "--name-status") == staged_before
    assert git(root, "diff", "--name-status") == unstaged_before
    assert (root / PREFIX / "notes/mine.md").read_text().startswith("# My own note")
    assert (root / "README.md").read_text() == "# Staged edit\n"
    assert "?? tenants/default/scratch.md" in status(root)
    assert result.commit == head(root)


def test_a_session_over_the_documented_limit_is_refused_whole(empty_kb: KnowledgeBase) -> None:
    settings = load_settings(empty_kb.root)
    settings.data["memorizer"]["max_session_bytes"] = 1000
    kb = KnowledgeBase(empty_kb.root, settings)
    before = head(kb.root)
    with pytest.raises(ValidationError, match=r"memorizer\.max_session_bytes") as info:
        ingest_session(kb, _session("big", ["x" * 600, "y" * 600]))
    assert info.value.field == "turns"
    assert head(kb.root) == before
    assert status(kb.root) == ""


CONCURRENT_INGEST = """
    import json, sys, time
    from pathlib import Path
    from kbmem.cli import main

    go = Path(sys.argv[1])
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.005)
    started = time.time()
    code = main(["--kb", sys.argv[2], "ingest", sys.argv[3]])
    print(json.dumps({"code": code, "started": started, "ended": time.time()}))
"""


def _sessions_file(path: Path, prefix: str, count: int) -> Path:
    sessions = [
        summit_session(
            f"{prefix}-{n:03d}",
            [f"{prefix} session {n}: Maya decided item {n} with owner Oskar by {n + 1} May."],
            day=f"2026-{(n % 12) + 1:02d}-{(n % 27) + 1:02d}",
        )
        for n in range(count)
    ]
    path.write_text(json.dumps(sessions))
    return path


SESSIONS = 40  # each of the two writers'


def test_two_processes_ingesting_at_once_both_land(empty_kb: KnowledgeBase, tmp_path: Path) -> None:
    root = empty_kb.root
    go = tmp_path / "go"
    # Enough sessions that each writer wants the lock for longer than a scheduling hiccup of
    # the other: with 15 each (0.2 s of writing), one ran all its commits before the other's
    # first, once in three full runs on a busy machine.
    files = [_sessions_file(tmp_path / f"{p}.json", p, SESSIONS) for p in ("alpha", "beta")]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(CONCURRENT_INGEST), str(go), str(root), str(f)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for f in files
    ]
    for proc in procs:  # both interpreters up, kbmem imported, waiting for the word
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
    go.touch()
    runs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        runs.append(json.loads(out.strip().splitlines()[-1]))
    assert [r["code"] for r in runs] == [0, 0]
    # They really ran at the same time.
    assert max(r["started"] for r in runs) < min(r["ended"] for r in runs)

    expected = {f"{p}-{n:03d}" for p in ("alpha", "beta") for n in range(SESSIONS)}
    trailers = [t for t in session_trailers(root) if t]
    assert sorted(trailers) == sorted(expected)  # each session exactly one commit
    # The writers took turns at the lock rather than one waiting for the other to finish.
    writers = [t.split("-")[0] for t in reversed(trailers)]
    turns = sum(1 for a, b in itertools.pairwise(writers) if a != b)
    assert turns >= 10, writers
    assert {sid for _d, sid, _m in read_memory(empty_kb, "default")} == expected
    store = PageStore(empty_kb, "default")
    assert set(store.files()) == {f"{sid}/1" for sid in expected}
    assert status(root) == ""
    fsck(root)


class BusyMemo(OfflineMemo):
    """The offline memo, taking as long as another writer (its own view of the knowledge base,
    as another process has) needs to memorize a session, as a slow model gives it time to:
    memory moves on under every memo."""

    slow = True

    def __init__(self, other: KnowledgeBase) -> None:
        super().__init__()
        self.other = other
        self.seen: list[list[str]] = []

    def write(self, session: Session, memory: list[str]) -> Memo:
        self.seen.append(list(memory))
        n = len(self.seen)
        note = f"Interim note {n}: Tobias checked ferry manifest {n} at Skerrick."
        ingest_session(self.other, _session(f"interim-{n}", [note], day="2026-01-02"))
        return super().write(session, memory)


def test_sessions_memorized_while_a_memo_is_written_are_kept(empty_kb: KnowledgeBase) -> None:
    """A slow engine's memo is written without the write lock, so other writers commit
    meanwhile: it is written again in view of the new memory, a few times at most, and
    whatever landed meanwhile keeps its line in MEMORY.md."""
    engine = BusyMemo(KnowledgeBase(empty_kb.root))
    session = _session("kickoff", KICKOFF, day="2026-01-05")
    result = ingest_session(empty_kb, session, engine)
    assert result.status == "created"
    assert [len(memory) for memory in engine.seen] == list(range(MEMO_ATTEMPTS))
    # The last memo is kept though one more session landed while it was written.
    assert result.memo == OfflineMemo().write(session, engine.seen[-1]).text
    memory = read_memory(empty_kb, "default")
    assert [sid for _d, sid, _m in memory] == [
        *(f"interim-{n}" for n in range(1, MEMO_ATTEMPTS + 1)),
        "kickoff",
    ]
    assert memory[-1][2] == result.memo
    assert status(empty_kb.root) == ""
    fsck(empty_kb.root)


def test_a_process_killed_during_ingest_leaves_a_consistent_repository(
    empty_kb: KnowledgeBase, tmp_path: Path
) -> None:
    root = empty_kb.root
    total = 60
    batch = _sessions_file(tmp_path / "many.json", "many", total)
    base = commit_count(root)
    cmd = [sys.executable, "-m", "kbmem.cli", "--kb", str(root), "ingest", str(batch)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while commit_count(root) < base + 3 and time.monotonic() < deadline:
            time.sleep(0.002)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    for _ in range(100):  # a git update-ref started by the dead process may still be running
        if not (root / ".git" / "refs" / "heads" / "main.lock").exists():
            break
        time.sleep(0.05)

    fsck(root)
    landed = [t for t in session_trailers(root) if t]
    assert 3 <= len(landed) < total  # killed mid-run
    assert len(landed) == len(set(landed))
    store = PageStore(empty_kb, "default")
    # HEAD is consistent: every committed session has its record, its pages and its memo.
    assert {sid for _d, sid, _m in read_memory(empty_kb, "default")} == set(landed)
    for sid in landed:
        record = yaml.safe_load(empty_kb.read_bytes(f"{PREFIX}sessions/{sid}.yaml"))
        for page_id in record["pages"]:
            assert store.read(page_id).page.meta["session_id"] == sid
    assert set(store.files()) == {f"{sid}/1" for sid in landed}

    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"{len(landed)} unchanged" in done.stdout
    final = [t for t in session_trailers(root) if t]
    assert sorted(final) == sorted(f"many-{n:03d}" for n in range(total))  # each exactly once
    assert len(read_memory(empty_kb, "default")) == total
    assert status(root) == ""  # the dead writer's half-written files are gone
    fsck(root)


def test_example_history_is_dated_and_carries_trailers(example_kb: KnowledgeBase) -> None:
    root = example_kb.root
    sessions = [t for t in session_trailers(root) if t]
    assert len(sessions) >= 8 and len(sessions) == len(set(sessions))
    dates = git(root, "log", "--format=%aI").split()
    assert dates[0][:7] != dates[-1][:7]  # spread over more than one month
    assert status(root) == ""
    fsck(root)


def test_a_session_is_not_mutated_by_ingest(empty_kb: KnowledgeBase) -> None:
    session = _session("kickoff", KICKOFF)
    snapshot = copy.deepcopy(session)
    ingest_session(empty_kb, session)
    assert session == snapshot


def test_the_offline_memo_reads_words_in_any_alphabet() -> None:
    """Words were ASCII letters only: a session in Russian had no sentence of four words, and
    its memo fell back to the opening greeting."""
    session = session_from_mapping(
        summit_session(
            "s-ru",
            [
                "Ольга: Привет всем, начнём.",
                "Иван: Паром «Коррен Белл» отходит из Тромсё в пятницу, 28 марта, в семь утра.",
                "Ольга: Хорошо, спасибо, тогда до пятницы и всем хорошего дня.",
            ],
            title="Паром",
        )
    )
    memo = OfflineMemo().write(session, [])
    assert "Тромсё в пятницу, 28 марта" in memo.text, memo.text
