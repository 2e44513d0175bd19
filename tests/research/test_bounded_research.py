"""A briefing says which index it came from and says so when that index is behind HEAD; a
research request has a time budget, and when it runs out the briefing found so far comes
back, marked as cut short. The example knowledge base, the real index and embedding model."""

from __future__ import annotations

import sys
import time

import pytest

from kbmem.config import load_settings
from kbmem.errors import ValidationError
from kbmem.interfaces.service import Memory
from kbmem.research import toolkit as toolkit_module
from kbmem.research.offline import READ_CHARS
from kbmem.research.researcher import Researcher
from kbmem.research.toolkit import Toolkit
from kbmem.research.types import TraceEvent
from kbmem.store.repository import KnowledgeBase

QUESTION = "Who owns the tide-window scheduler?"


def _big_note(kb: KnowledgeBase, paragraphs: int) -> str:
    body = "\n\n".join(
        f"Line {n}: crate {n} of the lantern shipment went to shed {n % 97}."
        for n in range(paragraphs)
    )
    path = "tenants/default/notes/shipments.md"
    return kb.commit_files({path: f"---\ntitle: Shipments\n---\n{body}\n".encode()}, "Shipments")


def test_a_briefing_from_an_index_behind_head_says_so(example_kb: KnowledgeBase) -> None:
    env = {"KBMEM_INDEX__STALE_WAIT_S": "0", "KBMEM_INDEX__FIRST_WAIT_S": "600"}
    kb = KnowledgeBase(example_kb.root, load_settings(example_kb.root, env))
    indexed = kb.head()
    _big_note(kb, 1500)
    researcher = Researcher(kb, "default")
    try:
        briefing = researcher.research(QUESTION)
        data = briefing.to_dict()
        assert data["index"]["commit"] == indexed and data["index"]["pendingCommits"] == 1
        assert briefing.open_questions[0].startswith("Index is 1 commit behind HEAD")
        assert briefing.open_questions[0].endswith("newer memory may be missing.")
        assert not data["cutShort"]
        researcher.toolkit.index._worker_done.wait(600)
        again = researcher.research(QUESTION).to_dict()
        assert again["index"] == {"commit": kb.head(), "pendingCommits": 0, "indexing": None}
        assert not any(q.startswith("Index is") for q in again["openQuestions"])
    finally:
        researcher.close()


def test_search_results_carry_the_index_they_come_from(example_kb: KnowledgeBase) -> None:
    memory = Memory(example_kb, "default")
    try:
        found = memory.search("scheduler", "bm25", 3)
        assert found["hits"]
        assert found["index"] == {
            "commit": example_kb.head(),
            "pendingCommits": 0,
            "indexing": None,
        }
        assert memory.index_status()["summary"] == "index: up to date"
    finally:
        memory.close()


def test_research_stops_at_its_time_budget_with_what_it_has(example_kb: KnowledgeBase) -> None:
    researcher = Researcher(example_kb, "default")
    try:
        whole = researcher.research(QUESTION, time_budget_s=120)
        assert not whole.cut_short and whole.to_dict()["cutShort"] is False
        started = time.perf_counter()
        cut = researcher.research(QUESTION, time_budget_s=0.001)
        assert time.perf_counter() - started < 30
        assert cut.cut_short and cut.partial and cut.to_dict()["cutShort"] is True
        said = [q for q in cut.open_questions if "cut short by its time budget" in q]
        assert said == [
            "Research was cut short by its time budget (0.001 s); this briefing holds what "
            "was found by then."
        ]
        assert cut.reflection_steps == 0
    finally:
        researcher.close()


def test_each_request_keeps_its_own_time_budget(example_kb: KnowledgeBase) -> None:
    """A Researcher serves requests side by side: a request with a tiny budget, made while
    another is under way, cuts short only itself (the budget was state of the Researcher,
    and the second request's deadline became the first one's)."""
    researcher = Researcher(example_kb, "default")
    inner: list[bool] = []

    def meanwhile(event: TraceEvent) -> None:
        if event.kind == "plan" and not inner:
            inner.append(researcher.research(QUESTION, time_budget_s=0.001).cut_short)

    try:
        whole = researcher.research(QUESTION, time_budget_s=120, on_event=meanwhile)
    finally:
        researcher.close()
    assert inner == [True]
    assert not whole.cut_short, whole.open_questions


@pytest.mark.parametrize("budget", [0, -1, 601, True, "10"])
def test_a_time_budget_out_of_bounds_is_refused_naming_it(
    example_kb: KnowledgeBase, budget: object
) -> None:
    memory = Memory(example_kb, "default")
    try:
        with pytest.raises(ValidationError) as caught:
            memory.research(QUESTION, time_budget_s=budget)
        assert caught.value.field == "time_budget_s"
    finally:
        memory.close()


def test_one_huge_turn_does_not_make_every_request_read_it_whole(
    example_kb: KnowledgeBase,
) -> None:
    """A pasted 2 MB paragraph: a request that finds it reads its first READ_CHARS only (the
    offline engine analyses what it reads on every request), and still reports from it."""
    words = "the mast needs paint and new cables before the zeppelin season starts".split()
    body = " ".join(words[n % len(words)] for n in range(2_000_000 // 6))
    text = f"---\ntitle: Huge\n---\nZeppelin plans. {body}\n"
    example_kb.commit_files({"tenants/default/notes/huge.md": text.encode()}, "A huge note")
    researcher = Researcher(example_kb, "default")
    try:
        hits = researcher.toolkit.bm25("zeppelin cables paint", 3)
        huge = next(h for h in hits if h.page_id == "notes/huge.md")
        said = researcher.offline.said(huge)
        assert len(said) <= READ_CHARS + 2 and said.startswith("Zeppelin plans. the mast")
        assert said.endswith(" …")
        briefing = researcher.research("When do the zeppelin cables get paint?")
        assert "(notes/huge.md)" in briefing.executive_summary
        assert any("paint" in fact for fact in briefing.key_facts), briefing.key_facts
    finally:
        researcher.close()


def test_a_servers_toolkit_keeps_pages_within_its_byte_budget(
    empty_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A server's toolkit lives as long as the server: what it keeps of the pages it has read
    # must stay within a size, however large the pages (one turn can be megabytes).
    monkeypatch.setattr(toolkit_module, "TEXT_CACHE_BYTES", 3 * 1024 * 1024)
    toolkit = Toolkit(empty_kb, "default")
    paths = [f"tenants/default/notes/big-{n}.md" for n in range(6)]
    commit = empty_kb.commit_files(
        {
            p: f"---\ntitle: Big {n}\n---\n{'word ' * 200_000}\n".encode()
            for n, p in enumerate(paths)
        },
        "Big notes",
    )
    texts = [toolkit.file_text(p, commit) for p in paths]
    kept = toolkit._texts
    assert sum(sys.getsizeof(t) for t in kept.values()) <= 3 * 1024 * 1024
    assert kept.order() == [(p, commit) for p in paths[-3:]]  # the most recently read
    assert toolkit.file_text(paths[-1], commit) is texts[-1]  # served from what is kept
    assert toolkit.file_text(paths[0], commit) == texts[0]  # read again, not lost
    kept.weight = 1024
    toolkit.file_text(paths[1], commit)  # alone over the budget: read, not kept
    assert (paths[1], commit) not in kept.order()


def test_a_servers_toolkit_keeps_page_tables_within_an_interval_budget(
    example_kb: KnowledgeBase,
) -> None:
    toolkit = Toolkit(example_kb, "default")
    pages = [p for p in toolkit.store.files() if len(toolkit.index.intervals_of(p)) >= 2][:6]
    assert len(pages) == 6
    sizes = [len(toolkit.index.intervals_of(p)) for p in pages]
    budget = sum(sizes[-3:])  # room for the last three pages read, not for a fourth
    toolkit._page_intervals.weight = budget
    for page in pages:
        hit = toolkit.index.intervals_of(page)[0]
        assert toolkit.around(hit, 0, 1)[1]  # the page's table, read through the cache
    kept = toolkit._page_intervals
    assert sum(len(found[0]) for found in kept.values()) <= budget
    assert [page for _, page in kept.order()] == pages[-3:]
