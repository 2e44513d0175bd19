"""The researcher on the example knowledge base: the loop, its budgets, and both engines
(the LLM engine against a real llama.cpp server running SmolLM2)."""

from __future__ import annotations

import json
import re

import pytest
from helpers.silent import silent_server
from helpers.talk import memorize

from kbmem.cli import main
from kbmem.errors import ValidationError
from kbmem.llm.client import LLMConfig
from kbmem.llm.local import free_port
from kbmem.memorize.sessions import CHAT_AGENT
from kbmem.research.briefing import render_excerpt
from kbmem.research.llm_engine import (
    LLMEngine,
    Supersession,
)
from kbmem.research.offline import (
    asked_with,
    entities,
    request_parts,
    speaking,
    standing_sentences,
    stated_values,
    statement,
    states_correction,
    superseded_on,
)
from kbmem.research.researcher import Researcher, run_action
from kbmem.research.state import Candidate, ResearchState, holds_as_asked
from kbmem.research.types import BriefingContext
from kbmem.textutil import count_tokens

OFFSITE = "In which city will the team's April offsite take place?"
TROMSO_PAGE = "2026-01-21-sprint1-review/1"


def researched(briefing: BriefingContext) -> list[str]:
    """The researched key facts (the direct answer is a field of its own, shown first)."""
    return briefing.key_facts


@pytest.fixture
def researcher(example_kb):
    r = Researcher(example_kb, "default")
    yield r
    r.close()


def _first_step_with(briefing: BriefingContext, page_id: str, word: str) -> int | None:
    for event in briefing.trace:
        if event.kind != "tool_result":
            continue
        for hit in event.data.get("hits", []):
            if hit["pageId"] == page_id and word in hit["excerpt"]:
                return event.step
    return None


def correction_of(sentences: list[str], when: str = ""):
    return statement(sentences, when).correction


def research_sessions(kb, sessions, request: str, **budgets) -> BriefingContext:
    """The briefing for ``request`` once ``sessions`` are memorized (see talk.memorize)."""
    memorize(kb, "default", sessions)
    researcher = Researcher(kb, "default")
    try:
        return researcher.research(request, **budgets)
    finally:
        researcher.close()


def test_multi_hop_is_covered_only_after_reflection(researcher):
    # The offsite is "in the city where my sister lives" (2 March); that Dara's sister lives in
    # Tromsø was said on 21 January. The second hop needs a follow-up search.
    briefing = researcher.research(OFFSITE)
    first = _first_step_with(briefing, TROMSO_PAGE, "Tromsø")
    assert first is not None and first >= 1, "the Tromsø turn must come from a follow-up"
    follow_ups = [e for e in briefing.trace if e.kind == "plan" and e.step >= 1]
    assert any("sister" in (a.get("query") or "") for e in follow_ups for a in e.data["actions"])
    assert briefing.reflection_steps >= 1
    text = " ".join(e.excerpt for e in briefing.evidence)
    assert "Tromsø" in text and "city where my sister lives" in text
    assert {"2026-03-02-welcome-and-offsite/1", TROMSO_PAGE} <= set(briefing.pages_used)


def test_a_name_outside_ascii_is_followed_whole(researcher):
    # The follow-up searched "Troms" (no hits) when names were read as ASCII letters.
    briefing = researcher.research("In which city does Dara's sister live?")
    queries = [
        a.get("query") or ""
        for e in briefing.trace
        if e.kind == "plan" and e.step >= 1
        for a in e.data["actions"]
    ]
    assert any("Tromsø" in q for q in queries), queries
    assert not any(re.search(r"Troms(?!ø)", q) for q in queries), queries


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("I flew to Tromsø to see Niamh.", ["Tromsø", "Niamh"]),
        ("Åsa met Zoë in São Paulo.", ["Åsa", "Zoë", "São Paulo"]),
        ("Встреча с Ольгой в Москве.", ["Встреча", "Ольгой", "Москве"]),
        ("Ōsaka or Ærø? Łukasz knows.", ["Ōsaka", "Ærø", "Łukasz"]),
    ],
    ids=["nordic", "accents", "cyrillic", "macron"],
)
def test_names_in_any_alphabet_are_entities(text, names):
    assert entities(text) == names


def test_briefing_shape_and_citations(researcher):
    briefing = researcher.research("Who owns the tide-window scheduler?")
    data = briefing.to_dict()
    for key in (
        "executiveSummary",
        "keyFacts",
        "openQuestions",
        "evidence",
        "tokensUsed",
        "reflectionSteps",
        "pagesUsed",
    ):
        assert key in data
    assert data["evidence"], "the scheduler's owner is in memory"
    for item in data["evidence"]:
        interval = item["interval"]
        lines = (
            researcher.kb.read_bytes(interval["path"], interval["commit"])
            .decode()
            .split("\n")[interval["start"] - 1 : interval["end"]]
        )
        # An excerpt is its cited lines as a reader gets them: turn texts verbatim, turn
        # headers compact; or part of one turn, "…" for what it leaves out.
        whole = render_excerpt("\n".join(lines))
        if item["excerpt"] != whole:
            head, text = item["excerpt"].split(": ", 1)
            assert len(interval["turnIds"]) == 1 and whole.startswith(f"{head}: ")
            assert "…" in text and len(text) < len(whole)
            for piece in text.split("…"):
                assert " ".join(piece.split()) in " ".join(whole.split())
        for turn_id in interval["turnIds"]:
            assert turn_id in item["excerpt"]
        assert item["retrieverType"] and item["relevanceScore"] > 0
    assert "Tobias Ferrante" in " ".join(e["excerpt"] for e in data["evidence"])
    assert briefing.tokens_used <= 1500
    assert len(briefing.pages_used) <= 8


def test_dates_in_the_request_point_at_sessions(researcher):
    briefing = researcher.research("What went wrong on 3 February 2026?")
    assert briefing.pages_used[0] == "2026-02-03-calloway-incident/1"
    plans = [a for e in briefing.trace if e.kind == "plan" for a in e.data["actions"]]
    assert any(
        a["tool"] == "page_id" and "2026-02-03-calloway-incident/1" in a["pageIds"] for a in plans
    )


def test_budgets_bound_the_briefing(researcher):
    partial = researcher.research(OFFSITE, max_depth=0)
    assert partial.partial and partial.reflection_steps == 0
    assert any("Budget reached" in q for q in partial.open_questions)
    small = researcher.research(OFFSITE, max_pages=2, max_tokens=300)
    assert small.tokens_used <= 300
    assert len(small.pages_used) <= 2
    again = researcher.research(OFFSITE, max_pages=2, max_tokens=300)
    assert again.to_dict() == small.to_dict(), "the offline engine is deterministic"


@pytest.mark.parametrize("max_pages", [8, 3], ids=["8", "3"])
def test_key_facts_come_from_the_pages_the_briefing_used(researcher, max_pages):
    """The page budget bounds what a briefing draws on, key facts included: asked what went
    wrong in the incident, a fact was cut from the team roster, a page the briefing's evidence
    did not use, so neither a reader nor the agent answering from the evidence could see
    the turn it cited (on LoCoMo, 283 facts in 214 of 760 briefings did so)."""
    for request in (
        "What went wrong in the Calloway incident?",
        "Which vessels does Skerrick operate?",
        "What is the budget?",
    ):
        briefing = researcher.research(request, max_pages=max_pages)
        cited = {re.search(r"\[([^\]]+):L\d+-L\d+\]$", f).group(1) for f in briefing.key_facts}
        assert briefing.key_facts and cited <= set(briefing.pages_used), (request, cited)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_pages": 33}, "maxPages"),
        ({"max_pages": 0}, "maxPages"),
        ({"max_depth": 6}, "maxReflectionDepth"),
        ({"max_tokens": 10}, "maxOutputTokens"),
    ],
)
def test_budget_caps_are_enforced(researcher, kwargs, field):
    with pytest.raises(ValidationError, match=field):
        researcher.research("offsite", **kwargs)


@pytest.mark.parametrize("request_text", ["", "   ", "x" * 20_001])
def test_bad_requests_are_refused(researcher, request_text):
    with pytest.raises(ValidationError, match="request"):
        researcher.research(request_text)


def test_nothing_in_memory_says_so(researcher):
    briefing = researcher.research("zyzzyva quokka xylophone")
    assert not briefing.evidence
    assert briefing.open_questions


def test_words_no_evidence_uses_are_named_as_open_questions(researcher):
    """Searched for again and still absent from the evidence, the words are named for what
    they are, without saying that memory lacks what they mean (it says "owns" for
    "maintains")."""
    briefing = researcher.research(
        "Who maintains the tide-window scheduler and what did they change last?"
    )
    assert not briefing.partial
    reflections = [e for e in briefing.trace if e.kind == "reflect"]
    assert reflections[0].data["reason"].startswith("not yet covered: ")
    assert "maintains" in reflections[0].data["reason"]
    opens = [q for q in briefing.open_questions if q.startswith("Not found")]
    assert len(opens) == 1
    assert re.fullmatch(r"Not found in the evidence: the words '[^']+'(, '[^']+')*", opens[0])
    assert "'maintains'" in opens[0]


def test_a_request_that_asks_two_things_is_answered_for_both(researcher):
    """The turns about the scheduler outnumber those about the offsite: searched for the two
    missing words together, "maintains offsite" found who maintains what; searched for
    apart, the offsite's own turn is carried, and only the word that no turn says as the
    request asks it ("owns", not "maintains") is named as not found."""
    briefing = researcher.research(
        "Who maintains the tide-window scheduler and when is the offsite?"
    )
    covers = [e.data for e in briefing.trace if e.kind == "tool_call" and "covers" in e.data]
    assert {c["covers"]: c["query"] for c in covers} == {
        "maintains": "maintains",
        "offsite": "offsite",
    }
    assert {"schedul", "tide", "window"} <= set(
        next(c for c in covers if c["covers"] == "maintains")["coversWith"]
    )
    excerpts = [e.excerpt for e in briefing.evidence]
    assert any("tide-window scheduler" in x for x in excerpts)
    assert any("Tuesday 28 to Thursday 30 April" in x and "offsite" in x for x in excerpts)
    assert briefing.open_questions == ["Not found in the evidence: the words 'maintains'"]


@pytest.mark.parametrize(
    "request_text",
    [
        "Who maintains the tide-window scheduler?",
        "Who maintains the tide-window scheduler and what did they change last?",
        "Who maintains the scheduler and what city does their sister live in?",
        "Who maintains the tide-window scheduler and when is the offsite?",
    ],
)
def test_a_word_named_as_missing_is_not_in_the_evidence_as_asked(researcher, request_text):
    """Reflection judges the best intervals of its step, and the briefing carries more: a
    word it names as missing is one that no evidence item holds as the request asks it (with
    another word of the same part of the request). Before, "missing: the words 'scheduler'"
    stood above turns about the scheduler, and a turn about "the office" that maintains a
    list counted as saying who maintains the scheduler."""
    briefing = researcher.research(request_text)
    named = [
        word
        for question in briefing.open_questions
        for word in re.findall(r"'([^']+)'", question.split("the words ", 1)[-1])
    ]
    for word in named:
        with_ = asked_with(request_parts(request_text), word)
        holders = [e.excerpt for e in briefing.evidence if holds_as_asked(e.excerpt, word, with_)]
        assert not holders, (word, holders)
    if not named:
        assert not briefing.partial


def test_a_word_memory_lacks_is_named_and_a_misspelt_one_judged_as_memory_spells_it(researcher):
    """A briefing about something memory never mentions said nothing of it: eight pages of
    the nearest evidence, no open question. And a misspelt word counted against the words
    asked beside it: with "schedular", "tide-window" was named as not found above turns
    about the tide-window scheduler, because no turn held it beside the word as typed."""
    briefing = researcher.research("Who maintains the zorbulator and the tide-window schedular?")
    questions = " | ".join(briefing.open_questions)
    assert "Memory never mentions: 'zorbulator'" in questions
    assert "'schedular' as 'scheduler'" in questions
    assert "tide-window" not in questions and "'schedular'," not in questions
    assert any("tide-window scheduler" in e.excerpt for e in briefing.evidence)
    reflected = [e for e in briefing.trace if e.kind == "reflect"]
    assert reflected and all("tide-window" not in (e.data["reason"] or "") for e in reflected)
    assert briefing.tokens_used <= 1500

    lacking = researcher.research(
        "What did we decide about Kubernetes autoscaling?", max_tokens=120
    )
    assert lacking.open_questions[-1] == "Memory never mentions: 'Kubernetes', 'autoscaling'"
    assert lacking.tokens_used <= 120
    # Words memory holds, as typed, are neither named nor read as others.
    held = researcher.research("Who maintains the tide-window scheduler?")
    assert not any("never mentions" in q or "nearest" in q for q in held.open_questions)


def test_llm_plan_schema_rejects_invented_pages(example_kb):
    engine = LLMEngine(
        Researcher(example_kb, "default").toolkit,
        LLMConfig(model="openai/none", api_base="http://127.0.0.1:9/v1"),
    )
    known = engine.toolkit.store.files()
    with pytest.raises(ValidationError):
        engine.check_plan({"plan": []}, known)
    with pytest.raises(ValidationError):
        engine.check_plan({"actions": [{"tool": "page_id", "pageIds": ["made-up/1"]}]}, known)
    actions = engine.check_plan(
        {
            "actions": [
                {"tool": "grep", "query": "x"},
                {"tool": "bm25", "query": "offsite"},
                {"tool": "page_id", "pageIds": ["2026-01-05-ferrylog-kickoff/1"]},
            ]
        },
        known,
    )
    assert [a.tool for a in actions] == ["bm25", "page_id"]
    assert any("grep" in note for note in engine.notes)


def test_a_models_plan_adds_to_the_requests_own_searches(researcher):
    """Whatever the model plans, the request is also searched as asked and in the voice of
    the person it is about; the model's own searches follow (the researcher drops repeats,
    here the model's dense search for the request as asked)."""
    engine = LLMEngine(
        researcher.toolkit,
        LLMConfig(model="openai/none", api_base="http://127.0.0.1:9/v1"),
    )
    request = "What did Dara say about the pilot fee?"
    planned = engine.check_plan(
        {
            "actions": [
                {"tool": "dense", "query": request},
                {"tool": "bm25", "query": "pilot fee pounds"},
            ]
        },
        engine.toolkit.store.files(),
    )
    actions = engine.grounded(request, planned)
    assert [(a.tool, a.query) for a in actions[:2]] == [("bm25", request), ("dense", request)]
    assert [(a.tool, a.speaker) for a in actions[2:4]] == [
        ("dense", "Dara Whitcombe"),
        ("late", "Dara Whitcombe"),
    ]
    assert actions[4:] == planned


def test_llm_engine_unreachable_falls_back_per_step(example_kb):
    researcher = Researcher(example_kb, "default")
    dead = LLMConfig(
        model="openai/none", api_base=f"http://127.0.0.1:{free_port()}/v1", timeout_s=5, retries=2
    )
    researcher.engine = LLMEngine(researcher.toolkit, dead)
    briefing = researcher.research("Who owns the tide-window scheduler?")
    fallbacks = [e.data for e in briefing.trace if e.kind == "fallback"]
    assert {f["stage"] for f in fallbacks} == {"plan", "integrate", "reflect"}
    assert "Connection" in fallbacks[0]["error"]
    # Refused once, the model is not asked again in this request.
    assert all(f["error"].startswith("not asked: the model was unreachable") for f in fallbacks[1:])
    assert briefing.evidence, "the offline steps still found the evidence"
    researcher.close()


def test_a_model_that_never_answers_is_waited_for_once_per_request(example_kb):
    """A hung model server cost a request every step's timeout, each tried three times (15
    connections); a bad answer is still retried, a timeout no more."""
    researcher = Researcher(example_kb, "default")
    with silent_server() as server:
        hung = LLMConfig(model="openai/none", api_base=server.api_base, timeout_s=1, retries=2)
        researcher.engine = LLMEngine(researcher.toolkit, hung)
        briefing = researcher.research("Who owns the tide-window scheduler?")
        assert server.connections == 1
        fallbacks = [e.data for e in briefing.trace if e.kind == "fallback"]
        assert fallbacks[0]["stage"] == "plan" and "Timeout" in fallbacks[0]["error"]
        assert len(fallbacks) >= 3
        assert all(f["error"].startswith("not asked") for f in fallbacks[1:])
        assert briefing.evidence
        # The next request asks again: the model may be back.
        researcher.research("Where will the April offsite be?")
        assert server.connections == 2
    researcher.close()


def test_ask_says_which_steps_the_offline_engine_did_instead(example_kb, capsys, monkeypatch):
    request = "Who owns the tide-window scheduler?"
    with silent_server() as server:
        monkeypatch.setenv("KBMEM_API_BASE", server.api_base)
        monkeypatch.setenv("KBMEM_LLM__TIMEOUT_S", "1")
        monkeypatch.setenv("KBMEM_MODEL", "openai/none")
        code = main(["--kb", str(example_kb.root), "ask", request, "--engine", "llm"])
    out = capsys.readouterr().out
    assert code == 0
    assert "Offline instead of the model for: plan, integrate, reflect (openai/none: Timeout" in out


def test_llm_engine_end_to_end_with_smollm2(example_kb, llm_server):
    researcher = Researcher(example_kb, "default")
    config = LLMConfig(
        model=llm_server.model, api_base=llm_server.api_base, timeout_s=60, retries=1
    )
    researcher.engine = LLMEngine(researcher.toolkit, config)
    briefing = researcher.research("Who owns the tide-window scheduler?", max_depth=1)
    kinds = [e.kind for e in briefing.trace]
    assert "plan" in kinds and kinds[-1] == "done"
    assert kinds.index("plan") <= kinds.index("tool_call")
    # SmolLM2 writes poor plans: whatever it managed, each step either used the model's
    # answer or fell back, and the briefing is whole and cited.
    assert briefing.engine == "llm"
    first = next(e for e in briefing.trace if e.kind == "plan").data["actions"]
    assert {"tool": "bm25", "query": "Who owns the tide-window scheduler?"}.items() <= first[
        0
    ].items()
    assert briefing.evidence
    assert all(e.interval.commit for e in briefing.evidence)
    for event in briefing.trace:
        if event.kind == "fallback":
            assert event.data["error"]
    researcher.close()


def test_the_llm_engine_is_told_which_evidence_a_later_correction_superseded(researcher):
    """A model reads dates, not corrections: the integration prompt says of the kickoff's
    statements that a correction of 23 February replaced their 14 April, and a key fact
    that gives 14 April from those sources only is marked superseded; a fact from the same
    source that still stands, and the correction itself, are not marked."""
    hits = researcher.toolkit.bm25("public launch Tuesday 14 April 21 April", 12)
    later = Supersession.of(researcher.offline, [Candidate(hit) for hit in hits])
    old = next(h for h in hits if "I've put Tuesday 14 April in the board deck" in h.excerpt)
    assert later.note(old) == "2026-01-05; a correction on 2026-02-23 replaced 14 april here"
    fixes = [h for h in hits if h.page_id.startswith("2026-02-23") and "14 April" in h.excerpt]
    assert fixes and all(later.note(h) == "2026-02-23" for h in fixes)
    assert later.fact_mark("The launch is on 14 April.", [old]) == " (superseded on 2026-02-23)"
    assert later.fact_mark("The launch is on 21 April.", [old]) == ""
    for fix in fixes:  # Priya's retraction, and the recorded correction
        assert later.fact_mark("The launch is on 14 April.", [old, fix]) == ""


def test_ask_cli_json(example_kb, capsys):
    code = main(
        [
            "--kb",
            str(example_kb.root),
            "ask",
            "Who owns the tide-window scheduler?",
            "--json",
            "--max-pages",
            "3",
            "--depth",
            "1",
        ]
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["pagesUsed"]) <= 3 and data["evidence"]
    code = main(["--kb", str(example_kb.root), "ask", "  "])
    assert code != 0


def test_question_words_never_become_search_terms(researcher):
    # "was" stems to "wa" when stemmed before the question words are dropped; a follow-up
    # search for "Ferrylog wa" is noise.
    request = "Which company was the first pilot customer for Ferrylog?"
    briefing = researcher.research(request)
    queries = [
        a.get("query") or "" for e in briefing.trace if e.kind == "plan" for a in e.data["actions"]
    ]
    assert not any("wa" in q.split() for q in queries), queries
    # The key fact that answers the question leads the briefing, though the kickoff sentence
    # naming "Ferrylog" ranks with it: the rare terms ("pilot customer") weigh more.
    assert "Skerrick Island Ferries" in researched(briefing)[0]
    assert briefing.executive_summary.startswith(
        "Key fact 2 is the strongest match (Priya Raghunathan, 2026-01-05)"
    )


def test_an_empty_knowledge_base_holds_nothing_and_says_so(empty_kb):
    researcher = Researcher(empty_kb, "default")
    try:
        briefing = researcher.research("Who owns the tide-window scheduler?")
    finally:
        researcher.close()
    assert briefing.evidence == [] and briefing.pages_used == []
    assert "nothing" in briefing.executive_summary
    for tool in ("bm25", "dense", "hybrid"):
        assert researcher.toolkit.search("scheduler owner", tool, 5) == []


def test_the_budget_favours_the_better_page_past_each_pages_best_interval(researcher):
    """Each chosen page gets its best interval first; after that a page's rank discounts its
    intervals' scores, so the best page's second turn wins over a slightly higher-scored
    second turn of the page ranked below it."""
    from kbmem.research.briefing import _cost, select_evidence
    from kbmem.research.state import Candidate, ResearchState

    toolkit = researcher.toolkit
    pages = [
        p
        for p in toolkit.store.files()
        if [h.interval.kind for h in toolkit.index.intervals_of(p)[:3]] == ["turn"] * 3
    ][:2]
    (a1, _, a2), (b1, _, b2) = (toolkit.index.intervals_of(p)[:3] for p in pages)
    state = ResearchState("test")
    for hit, score in ((a1, 1.0), (a2, 0.30), (b1, 0.9), (b2, 0.32)):
        state.candidates[hit.interval.key] = Candidate(hit=hit, score=score)
    assert [p for p, _ in state.page_scores()] == pages

    def cost(hit):
        iv = hit.interval
        return _cost(toolkit, iv.path, iv.commit, iv.start, iv.end)

    budget = cost(a1) + cost(b1) + max(cost(a2), cost(b2))

    def turns(*hits):
        return {(h.page_id, t) for h in hits for t in h.interval.turn_ids}

    chosen = {
        (item.page_id, t)
        for item in select_evidence(toolkit, state, budget)
        for t in item.interval.turn_ids
    }
    assert turns(a2) and turns(b2)
    assert turns(a1, b1, a2) <= chosen
    assert not turns(b2) & chosen


def test_a_matching_turn_lends_context_to_two_turns_each_way(researcher):
    """An answer often comes a turn or two after the question that names its subject: a hit
    passes part of its score to the two turns after it (more to the nearer) and to the two
    before it, and nothing further."""
    from kbmem.research.state import ResearchState
    from kbmem.research.types import PlanAction

    toolkit = researcher.toolkit
    page = next(
        p
        for p in toolkit.store.files()
        if sum(h.interval.kind == "turn" for h in toolkit.index.intervals_of(p)[:7]) == 7
    )
    turns = toolkit.index.intervals_of(page)[:7]
    state = ResearchState("test", around=toolkit.around)
    state.add(PlanAction("bm25", "test"), [turns[3]])

    def score(n: int) -> float:
        cand = state.candidates.get(turns[n].interval.key)
        return cand.score if cand else 0.0

    assert score(3) > score(4) > score(5) > 0
    assert score(3) > score(2) > 0 and score(1) > 0
    assert score(0) == 0 and score(6) == 0
    assert state.candidates[turns[5].interval.key].retrievers == {"context"}


def test_times_of_year_are_not_followed_as_names(researcher):
    """In "Dara and I closed the pilot over Christmas: Skerrick Island Ferries will be our
    first pilot customer" the name worth following is the customer, not the holiday (following
    "Christmas" found an unrelated infrastructure plan and let it outrank the answer)."""
    briefing = researcher.research("Which company was the first pilot customer for Ferrylog?")
    follows = [
        a["query"]
        for e in briefing.trace
        if e.kind == "plan"
        for a in e.data["actions"]
        if a.get("follows")
    ]
    assert follows and "Christmas" not in follows
    assert not any("Terraform" in e.excerpt for e in briefing.evidence)


def test_searches_made_from_request_terms_use_the_requests_words(researcher):
    """Stemming is not idempotent ("endorsement" -> "endors" -> "endor"): a follow-up or
    focus search built from stems would look for other terms than the request's. Built from
    the request's own words it finds the same terms, and the trace reads as words."""
    from kbmem.index.tenant import analyze
    from kbmem.research.offline import spelled

    text = "Which endorsement deals were offered to the ferry operators?"
    stems = analyze(text)
    assert analyze(" ".join(stems)) != stems  # the trap
    words = spelled(stems, text)
    assert analyze(" ".join(words)) == stems
    assert "endorsement" in words and "operators" in words
    # The searches the offline plan and reflection build from the request's terms ("company"
    # used to be searched, and shown, as "compani").
    request = "Which company was the first pilot customer for Ferrylog?"
    briefing = researcher.research(request)
    built = [
        a["query"]
        for e in briefing.trace
        if e.kind == "plan"
        for a in e.data["actions"]
        if a.get("note", "").startswith(("the request's names", "terms not covered"))
    ]
    assert built and any("company" in q.split() for q in built)
    assert all(set(q.split()) <= set(request.rstrip("?").split()) for q in built), built


def test_the_focus_search_names_each_term_once_without_openers(researcher):
    """The names-and-rare-terms search as the trace shows it: no capitalized sentence opener
    taken for a name ("In which town ..."), no term twice ("Femi Adeyemi's ... Adeyemi's")."""
    for request in (
        "In which town is the office of Ferrylog's first pilot customer?",
        "Who was Femi Adeyemi's onboarding buddy?",
    ):
        briefing = researcher.research(request, max_depth=0)
        plan = next(e for e in briefing.trace if e.kind == "plan").data["actions"]
        focus = next(
            a["query"] for a in plan if a.get("note", "").startswith("the request's names")
        )
        words = focus.split()
        assert words[0] != "In"
        assert len({w.lower() for w in words}) == len(words), focus


def _planned(briefing: BriefingContext) -> list[dict]:
    return [a for e in briefing.trace if e.kind == "plan" for a in e.data["actions"]]


def test_a_note_is_read_for_what_it_says_not_for_its_headings(researcher):
    """A note's paragraph is indexed after its page title and section ("Ferrylog glossary /
    Operations words"), and its lines are wrapped. Neither the heading words nor a line break
    may shape the briefing: "Operations" was followed as a name and lifted the glossary's
    Manifest entry to the top, a heading became a key fact, and a fact was cut at a wrap."""
    briefing = researcher.research("Who maintains the glossary?")
    assert researched(briefing)[0].startswith("Maintained by Priya Raghunathan; anyone may edit.")
    assert not any(fact.startswith("Ferrylog glossary") for fact in briefing.key_facts)
    assert any(
        fact.startswith("Maintained by Maya Lindqvist and Tobias Ferrante.")
        for fact in briefing.key_facts
    )
    followed = [a["query"] for a in _planned(briefing) if a.get("follows")]
    assert "Operations" not in followed and "Ferrylog" not in followed
    first = briefing.evidence[0]
    assert first.page_id == "notes/glossary.md" and "Priya Raghunathan" in first.excerpt


def test_what_a_followed_name_finds_never_outranks_what_named_it(researcher):
    """Following "Maintained by Priya Raghunathan" finds Priya's other records, which inherit
    part of its score and add their own: they say nothing about the glossary and must not
    rank above the line that named her (they ranked first: "Do we call Tobias?"). A record
    that already ranked higher on its own keeps its score. And "since when" is how the
    question is asked, not a term to search for."""
    from kbmem.research.state import ResearchState
    from kbmem.research.types import PlanAction

    briefing = researcher.research("Who maintains the glossary and since when?")
    assert any(a.get("follows") and "Priya" in a["query"] for a in _planned(briefing))
    assert all(a.get("query") != "since" for a in _planned(briefing))
    assert researched(briefing)[0].startswith("Maintained by Priya Raghunathan")

    toolkit = researcher.toolkit
    source = next(
        h
        for h in toolkit.bm25("glossary maintained", 10)
        if "Maintained by Priya Raghunathan" in h.excerpt
    )
    found = toolkit.bm25("Priya Raghunathan", 10)
    strong = found[5]
    state = ResearchState("Who maintains the glossary?")
    state.add(PlanAction("bm25", "glossary maintained"), [source])
    for query in ("strong", "stronger", "strongest"):  # three searches ranked it first
        state.add(PlanAction("bm25", query), [strong])
    key = source.interval.key
    before = state.candidates[strong.interval.key].score
    assert before > state.candidates[key].score
    state.follow(
        PlanAction("bm25", "Priya Raghunathan", follows=key), found, weight=1.0, top=2, share=0.8
    )
    ranked = [c.hit.interval.key for c in state.ranked()]
    assert ranked[0] == strong.interval.key and state.candidates[ranked[0]].score >= before
    assert ranked[1] == key  # the source, before everything that following it found
    assert all(
        state.candidates[h.interval.key].score <= state.candidates[key].score
        for h in found
        if h is not strong and h.interval.key != key
    )


def test_a_chain_of_followed_names_does_not_climb(researcher):
    """The incident record names "Calloway Sound Lines"; following it finds the team roster,
    which names "Skerrick Island Ferries"; following that finds the roster again. When the
    roster could inherit from itself, each step lifted it, and a roster entry ("Owns the
    customer relationships with ... Calloway Sound Lines") led the briefing on what went
    wrong in the incident."""
    briefing = researcher.research("What went wrong in the Calloway incident?")
    assert len([a for a in _planned(briefing) if a.get("follows")]) >= 2
    incident = "2026-02-03-calloway-incident/1"
    assert f"[{incident}:" in researched(briefing)[0]
    assert briefing.evidence[0].page_id == incident
    assert all(e.page_id != "notes/team-roster.md" for e in briefing.evidence[:3])


def test_the_first_key_fact_comes_from_a_strong_interval(researcher):
    """Asked which vessels Skerrick operates, Dara's remark about "each Calloway vessel" and
    "the operator config" shares more words with the request than the kickoff record that
    names Skerrick's vessels, but sits in a far weaker interval: it must not lead."""
    briefing = researcher.research("Which vessels does Skerrick operate?")
    assert "MV Corran Belle" in researched(briefing)[0]


def test_a_correction_leads_over_the_statement_it_corrects(researcher):
    """The kickoff put the public launch on 14 April; a later meeting corrected it to 21 April.
    The kickoff's records match the request as well (they rank first among the intervals),
    but the briefing must lead with what memory holds now, say that it corrects an earlier
    statement, and not quote the withdrawn date as a fact of the correcting turn."""
    briefing = researcher.research("When is the public launch?")
    assert "21 April" in researched(briefing)[0] and "2026-02-23" in researched(briefing)[0]
    assert "corrects an earlier statement" in briefing.executive_summary
    correcting = [f for f in briefing.key_facts if "2026-02-23-hiring-and-planning" in f]
    assert correcting and not any("14 April" in f and "not" not in f for f in correcting)
    # The summary points at key fact 1 instead of repeating it.
    assert researched(briefing)[0] not in briefing.executive_summary


def test_an_earlier_statement_of_a_corrected_value_is_marked_superseded(researcher):
    """The kickoff's two statements of 14 April stay among the key facts, as the history of
    the date, but each says that the meeting of 23 February corrected it; the statements of
    21 April and the undated onboarding note are not marked, and the summary names the
    superseded facts by number."""
    briefing = researcher.research("When is the public launch?")
    old = [f for f in briefing.key_facts if "14 April" in f and "not Tuesday 14" not in f]
    assert old, briefing.key_facts
    assert all("(2026-01-05, superseded on 2026-02-23)" in f for f in old)
    rest = [f for f in briefing.key_facts if f not in old]
    assert rest and not any("superseded" in f for f in rest)
    # Numbered as a reader sees the facts: after the direct answer, when it leads them.
    numbers = [str(n) for n, f in enumerate(briefing.shown_facts(), start=1) if f in old]
    assert f"{' and '.join(numbers)} were superseded by a later correction" in (
        briefing.executive_summary
    )


def test_what_a_correction_replaces():
    # "not ... as stated" names the replaced value; the values the correction gives stand.
    launch = correction_of(
        [
            "Correction recorded: the launch is Tuesday 21 April 2026, not Tuesday 14 April "
            "2026 as stated at the kickoff on 5 January."
        ],
        "2026-02-23T09:56:00",
    )
    assert launch is not None and launch.values == {"14 april"}
    # A retraction replaces the values of what it withdraws, less those the speaker repeats.
    budget = correction_of(
        [
            "I need to correct something I said.",
            "I said our monthly AWS budget is 6,500 dollars for 2026.",
            "That's wrong.",
            "It is 5,600 dollars for 2026.",
        ],
        "2026-01-28T10:00:00",
    )
    assert budget is not None and budget.values == {"6,500"}
    assert correction_of(["The budget is 6,500 dollars."]) is None  # no correction
    assert stated_values("On April 14th, or the 21st of April, at 9:30") == {
        "14 april",
        "21 april",
        "9:30",
    }
    # An earlier statement of the replaced value, about the same thing, is superseded; one
    # about something else, or made after the correction, or undated, is not.
    corrections = [launch, budget]
    early = "2026-01-05T09:36:00"
    assert superseded_on("Launch: Tuesday 14 April.", early, corrections) == "2026-02-23"
    assert superseded_on("The Expo opens on 14 April.", early, corrections) == ""
    assert superseded_on("Launch: 14 April.", "2026-03-01T10:00:00", corrections) == ""
    assert superseded_on("Launch: 14 April.", "", corrections) == ""
    assert superseded_on("AWS budget: 6,500 dollars.", early, corrections) == "2026-01-28"


def test_corrections_said_in_other_words():
    """ "I meant Y, not X", "I said X, but it's Y", "instead of", "Scratch that." each name
    what they replace; a "not" outside a correction replaces nothing."""
    cases = {
        "Sorry, I meant Thursday 16 April for the demo, not Tuesday 14 April.": {"14 april"},
        "I said the demo was on 14 May at the kickoff, but it's 19 May.": {"14 may"},
        "Correction: the fee is 2.5 percent instead of 3.5 percent.": {"3.5"},
        "Correction recorded: 5,600 dollars, not 6,500 as stated at the review.": {"6,500"},
    }
    for said, values in cases.items():
        found = correction_of([said], "2026-04-10T10:00:00")
        assert found is not None and found.values == values, said
    scratched = correction_of(["The demo is on 3 May.", "Scratch that.", "It is on 5 May."])
    assert scratched is not None and scratched.values == {"3 may"}
    assert correction_of(["We are not moving the 14 April date."]) is None
    # Someone else's correction, announced, is not one; one's own, announced and made, is.
    assert not states_correction(["Oskar said he has a correction."])
    assert not states_correction(["Good. Oskar, you said you had a correction."])
    assert states_correction(["I have a correction: it is 5,600 dollars, not 6,500."])
    # A statement does not give the value it says is replaced: a later account of the same
    # correction ("I said ... 14 May, but it's 19 May") does not supersede the correction.
    later = correction_of(["I said the demo was on 14 May, but it's 19 May."], "2026-05-01")
    assert later is not None
    fix = "Correction: the demo is on 19 May, not 14 May as stated."
    assert superseded_on(fix, "2026-04-10T10:00:00", [later]) == ""
    assert superseded_on("The demo is on 14 May.", "2026-04-01", [later]) == "2026-05-01"


def test_a_correction_in_passing_supersedes_what_it_corrects(empty_kb):
    """A correction need not be announced: "I said ..., but it's ..." in a later session
    marks the earlier statement superseded, and the correction leads."""
    sessions = {
        "s-plan": (
            "2026-04-01",
            [
                ("Ann", "The Calloway demo is on Thursday 14 May in Oban."),
                ("Bob", "Good, I will book the ferry."),
            ],
        ),
        "s-fix": (
            "2026-04-10",
            [
                ("Ann", "I said the Calloway demo was on 14 May, but it's 19 May."),
                ("Bob", "Thanks, I will move the ferry booking."),
            ],
        ),
    }
    briefing = research_sessions(empty_kb, sessions, "When is the Calloway demo?")
    facts = briefing.key_facts
    assert "19 May" in facts[0], facts
    old = [f for f in facts if "Thursday 14 May" in f]
    assert old and "(2026-04-01, superseded on 2026-04-10)" in old[0], facts


def test_a_question_is_never_a_key_fact(researcher):
    """Asked what Deckhand is, Ines's "Deckhand doesn't change, right?" shares the request's
    rare word, but a question states nothing."""
    briefing = researcher.research("What is Deckhand?")
    assert briefing.key_facts
    assert not any(f.split(" (2026-")[0].endswith("?") for f in briefing.key_facts)


def test_a_retraction_withdraws_what_was_said_since_the_correction_was_announced():
    said = [
        "Yes, and I want it on the record.",
        "I need to correct something I said at the review.",
        "I said our monthly AWS budget is 6,500 dollars.",
        "That's wrong.",
        "The budget is 5,600 dollars a month.",
    ]
    assert standing_sentences(said) == [said[0], said[1], said[4]]
    # Without an announced correction, a retraction withdraws everything before it.
    assert standing_sentences(said[2:]) == [said[4]]
    # "That's wrong" inside a sentence is not a retraction of what came before.
    plain = ["The launch is on 21 April.", "Nothing about that's wrong."]
    assert standing_sentences(plain) == plain


def test_a_search_among_one_speakers_turns_is_no_repeat_of_one_among_everyones(researcher):
    """The request's own plan searches in the voice of the person it is about, among that
    person's turns only; the same words searched among everyone's turns (here the model's
    plan) find other turns too, and are not dropped as a repeat. True repeats still are."""
    engine = LLMEngine(
        researcher.toolkit,
        LLMConfig(model="openai/none", api_base="http://127.0.0.1:9/v1"),
    )
    request = "What did Dara say about the pilot fee?"
    voiced = researcher.toolkit.voiced(request)
    planned = engine.check_plan(
        {"actions": [{"tool": "dense", "query": voiced.text}] * 2},
        engine.toolkit.store.files(),
    )
    state = ResearchState(request)
    actions = researcher._dedupe(engine.grounded(request, planned), state)
    assert [(a.tool, a.query, a.speaker) for a in actions] == [
        ("bm25", request, ""),
        ("dense", request, ""),
        ("dense", voiced.text, "Dara Whitcombe"),
        ("late", voiced.text, "Dara Whitcombe"),
        ("dense", voiced.text, ""),
    ]
    own, everyones = (run_action(researcher.toolkit, a)[0] for a in (actions[2], actions[4]))
    assert own and {h.speaker for h in own} == {"Dara Whitcombe"}
    assert {h.speaker for h in everyones} - {"Dara Whitcombe"}
    assert researcher._dedupe(actions, state) == []


def test_a_turn_too_long_for_the_budget_is_carried_in_part(empty_kb):
    """A hit carries the start of a long turn only (2,000 characters), and facts were cut
    from that start: asked who serviced the winch, the answer, said at the end of a long
    turn, was never a fact. And a turn longer than what was left of the budget was left out
    of the evidence, so a fact cut from it cited lines that no evidence item held. Now the
    evidence carries the part of the turn that holds the request's words, each key fact
    quotes text that an evidence item shows, the excerpt marks what it leaves out, and the
    turns beside it are carried as before."""
    filler = " ".join(f"The harbour log lists crate {n} as checked and stacked." for n in range(90))
    sessions = {
        "s-long": (
            "2026-03-02",
            [("Bob", "Who serviced the Calloway winch, do you know?"),
             ("Ann", f"{filler} The Calloway winch was serviced by Priya on 3 March."),
             ("Bob", "Thanks for the full log.")],
        ),
        "s-short": (
            "2026-03-09",
            [("Bob", "The Calloway winch squeaks again, says Priya."),
             ("Ann", "I will ask her to look at it.")],
        ),
    }  # fmt: skip
    briefing = research_sessions(
        empty_kb, sessions, "Who serviced the Calloway winch?", max_tokens=300
    )
    assert briefing.tokens_used <= 300
    assert "serviced by Priya on 3 March" in researched(briefing)[0], briefing.key_facts
    for fact in researched(briefing):
        m = re.fullmatch(r"\w+: (.*) \(\d{4}-\d\d-\d\d\) \[([^\]]+):L(\d+)-L(\d+)\]", fact)
        quote, page, start, end = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
        assert any(
            e.page_id == page
            and e.interval.start <= start
            and end <= e.interval.end
            and quote in e.excerpt
            for e in briefing.evidence
        ), (fact, [e.excerpt[:80] for e in briefing.evidence])
    part = next(e for e in briefing.evidence if e.page_id.startswith("s-long"))
    assert part.excerpt.startswith("t2 Ann (2026-03-02 10:01): … The harbour log")
    assert part.excerpt.endswith("The Calloway winch was serviced by Priya on 3 March.")
    # The lines it shows stay where they are in the file; what it leaves out is blank.
    header, text = part.source_text.split("\n")
    assert (
        header.startswith("### t2 | Ann |")
        and text in filler + " The Calloway winch was serviced by Priya on 3 March."
    )
    assert "crate 0 " not in text
    # The question just before it is carried too, as an item of its own.
    question = "t1 Bob (2026-03-02 10:00): Who serviced the Calloway winch, do you know?"
    assert question in [e.excerpt for e in briefing.evidence]


def test_a_sentence_too_long_for_the_budget_is_carried_from_its_start(empty_kb):
    """A pasted log line without a full stop is one sentence: the evidence shows its start,
    cut at a token, rather than nothing, and the key fact quotes what it shows."""
    log = " ".join(f"crate {n} checked by Priya" for n in range(400))
    sessions = {
        "s-log": ("2026-03-02", [("Ann", f"Calloway winch log {log}"), ("Bob", "Thanks.")]),
        "s-chat": ("2026-03-09", [("Bob", "The Calloway winch squeaks."), ("Ann", "Noted.")]),
    }
    briefing = research_sessions(
        empty_kb, sessions, "What does the Calloway winch log say?", max_tokens=400
    )
    assert briefing.tokens_used <= 400
    part = next(e for e in briefing.evidence if e.page_id.startswith("s-log"))
    assert part.excerpt.startswith("t1 Ann (2026-03-02 10:00): Calloway winch log crate 0")
    assert part.excerpt.endswith(" …") and len(part.excerpt) < 1000
    fact = next(f for f in researched(briefing) if "[s-log" in f)
    quote = fact.split(": ", 1)[1].rsplit(" (2026-", 1)[0].removesuffix(" …")
    assert quote in part.excerpt, (fact, part.excerpt)


def test_a_messages_opening_cue_is_not_searched_for(researcher):
    # "Quick question:" says what kind of message this is. Searched for, it found "Quick one
    # today" and "quick summary" turns, and the briefing named 'question' as missing.
    request = "Quick question: where do the offsite flights leave from?"
    briefing = researcher.research(request)
    queries = " ".join(a.get("query") or "" for a in _planned(briefing)).lower()
    assert "flights" in queries
    assert "quick" not in queries and "question" not in queries, queries
    assert not any("question" in q for q in briefing.open_questions), briefing.open_questions
    assert briefing.request == request  # the briefing answers what was asked, as asked
    assert "Glasgow" in researched(briefing)[0]


def test_a_note_on_the_answers_form_is_not_searched_for(researcher):
    # "… Answer yes or no." says how to answer: the briefing named 'Answer' as a word memory
    # never mentions, beside the question's own words.
    request = "Are the offsite flights leaving from Glasgow? Answer yes or no."
    briefing = researcher.research(request)
    queries = " ".join(a.get("query") or "" for a in _planned(briefing)).lower()
    assert "flights" in queries
    assert "answer" not in queries, queries
    assert not any("Answer" in q for q in briefing.open_questions), briefing.open_questions
    assert briefing.request == request


def test_asked_when_the_first_key_fact_gives_a_time(researcher):
    # The key facts led with "On-call for the offsite: the boats don't stop sailing" and put
    # the standup's "Offsite: Tuesday 28 to Thursday 30 April 2026, …" last.
    briefing = researcher.research("When is the offsite?")
    assert "Tuesday 28 to Thursday 30 April 2026" in researched(briefing)[0], briefing.key_facts


def test_a_sentence_of_only_the_requests_words_is_no_key_fact(researcher):
    briefing = researcher.research("What did we decide about the data store?")
    assert briefing.key_facts
    assert not any("Okay, the data store." in f for f in briefing.key_facts), briefing.key_facts


def test_a_long_best_turn_is_carried_in_part_and_a_long_paragraph_whole(empty_kb):
    # A 400-token summary took a third of the budget as one page's best turn, and a turn that
    # a key fact cited no longer fitted. A note's paragraph cannot be cut by turns: carried
    # whole where it fits, not left out.
    filler = " ".join(f"Crate {n} was checked and stacked on the quay." for n in range(60))
    sessions = {
        "s-summary": (
            "2026-03-02",
            [("Ann", f"{filler} The Calloway winch was serviced by Priya on 3 March.")],
        ),
    }  # fmt: skip
    note_text = f"# Winch\n\n{filler} The winch manual is in the shed.\n"
    empty_kb.commit_files({"tenants/default/notes/winch.md": note_text.encode()}, "Add note")
    briefing = research_sessions(empty_kb, sessions, "Who serviced the Calloway winch?")
    summary = next(e for e in briefing.evidence if e.page_id.startswith("s-summary"))
    assert "…" in summary.excerpt and "serviced by Priya on 3 March" in summary.excerpt
    assert count_tokens(summary.excerpt) <= 1500 // 10 + 20, summary.excerpt
    note = [e for e in briefing.evidence if e.page_id == "notes/winch.md"]
    assert note and "The winch manual is in the shed." in note[0].excerpt, briefing.evidence


def test_a_long_summary_sentence_is_carried_by_its_clauses(empty_kb):
    # A one-sentence list of actions too long to carry was cut at its start, mid-clause
    # ("…; data …"), and never reached the clause that spoke of the request.
    clauses = [f"crate {n} audit sheet, Ann, Friday {n % 28 + 1} May" for n in range(60)]
    clauses.insert(45, "ferry timetable on the website, Oskar, Monday 4 May")
    sentence = "Actions: " + "; ".join(clauses) + "."
    sessions = {"s-retro": ("2026-04-30", [("Ann", f"Retro done. {sentence}")])}
    briefing = research_sessions(empty_kb, sessions, "Who puts the ferry timetable online?")
    item = next(e for e in briefing.evidence if e.page_id.startswith("s-retro"))
    assert item.partial and item.to_dict()["partial"] is True
    part = item.excerpt
    assert "…" in part and count_tokens(part) <= 1500 // 10 + 20, part
    carried = part.split(": ", 1)[1].removeprefix("… ").removesuffix(" …").rstrip(".;")
    pieces = carried.split("; ")
    assert "ferry timetable on the website, Oskar, Monday 4 May" in pieces, part
    assert set(pieces) <= set(clauses), part  # whole clauses only


def test_a_late_interaction_search_finds_what_was_said_in_other_words(researcher):
    """Late interaction (kbmem.index.late) matches each word of the request to its nearest word in
    a turn: "What did Femi build before joining?" finds Maya's "Femi spent the last four
    years at Brackwater Freight ... where she built their AIS vessel-tracking pipeline"."""
    top = researcher.toolkit.late("What did Femi build before joining?", 1)[0]
    assert "vessel-tracking pipeline" in top.excerpt and top.retriever == "late"
    # Among one speaker's turns only.
    hits = researcher.toolkit.late("the sync service", 50, {"speaker": "Tobias Ferrante"})
    assert hits and {h.speaker for h in hits} == {"Tobias Ferrante"}


def test_a_request_about_a_person_is_searched_word_by_word_among_their_turns(researcher):
    briefing = researcher.research("What does Femi think of saunas?")
    calls = [e.data for e in briefing.trace if e.kind == "tool_call" and e.step == 0]
    late = [c for c in calls if c["tool"] == "late"]
    assert [c.get("speaker", "") for c in late] == ["Femi Adeyemi"], calls
    results = [
        e.data for e in briefing.trace if e.kind == "tool_result" and e.data["tool"] == "late"
    ]
    assert any("I grew up in Aberdeen" in h["excerpt"] for r in results for h in r["hits"])
    # A request about no one in particular is not.
    briefing = researcher.research("When is the offsite?")
    assert not [e for e in briefing.trace if e.kind == "tool_call" and e.data["tool"] == "late"]


def test_late_interaction_ranks_intervals_but_not_their_pages(researcher):
    """Its hits stand in the pool as any search's do, but a page that only they found is
    not chosen for it, and the pages the other searches chose keep their order (on LoCoMo,
    letting them vote for pages cost page coverage)."""
    from kbmem.research.types import PlanAction

    toolkit = researcher.toolkit
    pages = [p for p in toolkit.store.files() if toolkit.index.intervals_of(p)]
    found = toolkit.index.intervals_of(pages[0])[0]
    only_late = toolkit.index.intervals_of(pages[1])[0]
    state = ResearchState("test")
    state.add(PlanAction("bm25", "test"), [found])
    before = state.page_scores()
    state.add(PlanAction("late", "test"), [only_late, found], paged=False)
    assert [c.hit.interval.key for c in state.ranked()][:2] == [
        found.interval.key,
        only_late.interval.key,
    ]
    assert state.candidates[only_late.interval.key].unpaged > 0
    assert state.page_scores() == before
    assert pages[1] not in dict(state.page_scores())


def test_a_hybrid_search_reads_head_once_and_fuses_both_rankings(researcher, monkeypatch):
    """A hybrid search takes its BM25 and dense rankings from one generation, checked
    against HEAD once, and fuses exactly what the two searches give on their own."""
    from kbmem.research.toolkit import fuse

    toolkit = researcher.toolkit
    query = "Who owns the tide-window scheduler?"
    expected = fuse({"bm25": toolkit.bm25(query, 20), "dense": toolkit.dense(query, 20)}, 5)
    kb = toolkit.index.kb
    reads = []
    head = kb.head

    def counted_head():
        reads.append(1)
        return head()

    monkeypatch.setattr(kb, "head", counted_head)
    hits = toolkit.hybrid(query, 5)
    assert len(reads) == 1
    assert [h.interval.key for h in hits] == [h.interval.key for h in expected]
    assert [h.score for h in hits] == [h.score for h in expected]
    assert hits and any("scheduler" in h.excerpt.lower() for h in hits)


def test_a_speakers_name_is_searched_among_the_notes_too(empty_kb):
    # Every turn of someone who talks a lot is headed by their name, so "Who is Rosa Lindgren?"
    # matched each short turn of hers ("Rosa Lindgren: Summary, please.") before the note
    # that says who she is, which never reached the evidence.
    things = "quay crane ramp fuel tickets rota ferry slipway buoys radio weather pier".split()
    sessions = {
        f"s-standup-{n}": (
            f"2026-03-{n + 1:02d}",
            [
                ("Rosa Lindgren", f"Next, the {things[(n + i) % len(things)]}, please.")
                for i in range(8)
            ]
            + [("Ben Okafor", "The quay is clear.")],
        )
        for n in range(25)
    }
    people = [
        f"**{name}**, {role}. Works from the {place} office and keeps the {thing} in order."
        for name, role, place, thing in [
            ("Ben Okafor", "deckhand", "harbour", "mooring lines"),
            ("Ada Quist", "booking clerk", "town", "ticket ledger"),
            ("Rosa Lindgren", "head of harbour operations", "pier", "sailing plans"),
            ("Ivo Marsh", "engineer", "yard", "engine logs"),
        ]
    ]
    note_text = "# Team\n\n" + "\n\n".join(people) + "\n"
    empty_kb.commit_files({"tenants/default/notes/team.md": note_text.encode()}, "Add note")
    briefing = research_sessions(empty_kb, sessions, "Who is Rosa Lindgren?")
    text = " ".join(e.excerpt for e in briefing.evidence)
    assert "head of harbour operations" in text, briefing.evidence


def test_the_names_of_people_who_speak_are_those_a_speaker_bears():
    # kbmem's own turns are not a person's.
    speakers = ["Rosa Lindgren", "Ben", CHAT_AGENT]
    names = ["Rosa Lindgren", "Rosa", "Lindgren", "Ben", "Harbourmaster", CHAT_AGENT]
    assert speaking(names, speakers) == ["Rosa Lindgren", "Rosa", "Lindgren", "Ben"]
