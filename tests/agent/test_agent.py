"""The chat agent on a real knowledge base with real indexes and real git: offline turns,
batch commits with trailers, the journal across a SIGKILL, a writer holding the lock,
cancellation, tool-argument errors, and a chat's content found again by a later chat."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from helpers.kbgit import ROOT, git, head
from helpers.turns import TENANT

from kbmem.agent.batch import committed_turns
from kbmem.agent.context import TurnContext
from kbmem.agent.events import (
    AgentEvent,
    BatchCommitted,
    Notice,
    ReplyDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
)
from kbmem.agent.journal import journal_dir, read_journal
from kbmem.agent.offline import (
    NOTED,
    NOTHING,
    RELATED_HEAD,
    OfflineAgent,
    focused,
    followed_references,
    paragraph_subject,
    question_terms,
)
from kbmem.agent.provenance import SNAPSHOT_FILES, list_turns, turn_dir
from kbmem.agent.session import ChatSession
from kbmem.errors import ValidationError
from kbmem.memorize.sessions import CHAT_AGENT, is_request, is_statement, without_cue
from kbmem.research.answer_types import answer_type, gives, merit
from kbmem.research.toolkit import Toolkit
from kbmem.research.types import BriefingContext, TraceEvent
from kbmem.store.repository import KnowledgeBase
from kbmem.textutil import count_tokens, split_sentences, truncate_tokens

QUESTIONS = [
    "Who is Femi Adeyemi's onboarding buddy?",
    "Which recruitment agency did the team use for the backend engineer hire?",
    "When did the duplicate-sailings incident at Calloway Sound Lines happen?",
    "What is Ferrylog's public launch date?",
    "What is the team's monthly AWS budget?",
    "In which city will the team's April offsite take place?",
]


def trailers_of(root: Path, chat_id: str) -> list[str]:
    """The ``Kbmem-Turns`` trailer values of every commit, oldest first."""
    out = git(root, "log", "--reverse", "--format=%(trailers:key=Kbmem-Turns,valueonly)")
    return [line for line in out.splitlines() if line.startswith(chat_id + " ")]


def run_script(kb_root: Path, body: str) -> subprocess.Popen[str]:
    """Run Python code in a child process with ``kb`` opened at ``kb_root``."""
    code = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from kbmem.store.repository import KnowledgeBase
        from kbmem.agent.session import ChatSession
        kb = KnowledgeBase(Path({str(kb_root)!r}))
        """
    ) + textwrap.dedent(body)
    return subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_line(proc: subprocess.Popen[str], expected: str, timeout: float = 300) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.strip() == expected:
            return
        if not line and proc.poll() is not None:
            raise AssertionError(f"child exited early: {proc.stderr.read() if proc.stderr else ''}")
    raise AssertionError(f"child never printed {expected!r}")


# -- turns and batches ---------------------------------------------------------------------


def test_twelve_offline_turns_make_three_batch_commits_with_snapshots(kb: KnowledgeBase) -> None:
    events: list[AgentEvent] = []
    chat = ChatSession(kb, TENANT, on_event=events.append)
    assert chat.agent_name == "offline" and chat.batch_turns == 5
    start = head(kb.root)
    records = []
    for n in range(12):
        records.append(chat.send(QUESTIONS[n % len(QUESTIONS)], on_event=events.append))
        if n == 6:
            assert chat.pending_turns == [6, 7]
    assert chat.pending_turns == [11, 12]
    chat.close()
    assert chat.pending_turns == []

    assert trailers_of(kb.root, chat.chat_id) == [
        f"{chat.chat_id} 1-5",
        f"{chat.chat_id} 6-10",
        f"{chat.chat_id} 11-12",
    ]
    new_commits = git(kb.root, "rev-list", f"{start}..HEAD").split()
    assert len(new_commits) == 3
    last = git(kb.root, "log", "-1", "--format=%B")
    assert f"Kbmem-Session: chat-{chat.chat_id}" in last and "Kbmem-Tenant: default" in last
    # Every snapshot file of every turn, and nothing else changed but the chat's memory.
    files = kb.list_files(f"tenants/{TENANT}/turns/{chat.chat_id}")
    for n in range(1, 13):
        for name in SNAPSHOT_FILES:
            assert turn_dir(TENANT, chat.chat_id, n) + name in files
    changed = set(git(kb.root, "diff", "--name-only", start, "HEAD").split())
    pages = {p for p in changed if p.startswith(f"tenants/{TENANT}/pages/chat-{chat.chat_id}/")}
    assert changed - set(files) - pages == {
        f"tenants/{TENANT}/MEMORY.md",
        f"tenants/{TENANT}/sessions/chat-{chat.chat_id}.yaml",
    }
    text = "".join(kb.read_bytes(p).decode() for p in sorted(pages))
    assert "### q1 | user |" in text and "### a12 | kbmem |" in text
    assert git(kb.root, "status", "--porcelain") == ""
    assert journal_files(kb) == []  # journal and lock file gone once committed

    # Events: each turn starts, streams exactly its answer, and finishes; three batches.
    for record in records:
        mine = [e for e in events if e.turn == record.turn and e.chat_id == chat.chat_id]
        assert isinstance(mine[0], TurnStarted) and isinstance(mine[-1], TurnFinished)
        streamed = "".join(e.text for e in mine if isinstance(e, ReplyDelta))
        assert streamed == record.answer and record.status == "complete"
        assert sum(isinstance(e, ReplyDelta) for e in mine) > 1  # streamed in pieces
        assert [e.name for e in mine if isinstance(e, ToolCallStarted)] == ["research"]
        json.dumps([e.to_dict() for e in mine])  # every event is JSON-serialisable
    batches = [e for e in events if isinstance(e, BatchCommitted)]
    assert [(b.first, b.last) for b in batches] == [(1, 5), (6, 10), (11, 12)]
    assert batches[-1].commit == head(kb.root)


def test_offline_answer_quotes_and_cites_the_evidence(kb: KnowledgeBase) -> None:
    with ChatSession(kb, TENANT) as chat:
        record = chat.send("Who is Femi Adeyemi's onboarding buddy?")
    assert "Tobias Ferrante" in record.answer
    cited = [c for c in record.context if c.cited]
    assert cited and all(c.citation() in record.answer for c in cited)
    for item in cited:
        lines = kb.read_bytes(item.path, item.commit).decode().split("\n")
        text = "\n".join(lines[item.start - 1 : item.end])
        assert text.startswith("### ") or item.page_id.startswith("notes/")
        assert item.retriever and item.score > 0 and len(item.commit) == 40


def test_the_example_names_who_does_what_is_asked_and_which_one_is_meant(
    kb: KnowledgeBase,
) -> None:
    # "I own the sync service, …, and for the next two weeks the Postgres migration" was
    # answered "Postgres", a name said further on; "Skerrick Island Ferries will be our
    # first pilot customer" lost to another sentence that had the word "company".
    with ChatSession(kb, TENANT) as chat:
        owner = chat.send("Who owns the sync service?")
        pilot = chat.send("Which company was signed as the first pilot customer?")
    assert owner.answer.split("\n", 1)[0] == "Tobias Ferrante", owner.answer
    assert pilot.answer.split("\n", 1)[0] == "Skerrick Island Ferries", pilot.answer


def test_the_example_answers_a_newcomers_who_which_how_much_and_when(
    kb: KnowledgeBase,
) -> None:
    # The roster's "Owns Deckhand (…)." goes on about the name its entry opens with: it was
    # answered "Owns Deckhand"; "Maya Lindqvist owns the Port Manifest Gateway exporter"
    # was answered with the object's name; "using Halyard Talent as the recruiter" with the
    # sentence's first words; RDS's cost with the budget said first; the offsite's three
    # days with the last.
    expected = {
        "Who owns Deckhand?": "Ines Kovacic",
        "Who owns the manifest exporter?": "Maya Lindqvist",
        "Who owns the on-call rota?": "Oskar Brennan",
        "Who owns the customer relationships?": "Dara Whitcombe",
        "Who is Femi's onboarding buddy?": "Tobias Ferrante",
        "Which recruiter did the team use?": "Halyard Talent",
        "Which company signed a letter of intent?": "Inverlochy Boat Company",
        "How much does RDS Multi-AZ cost per month?": "380 dollars",
        "When is the offsite?": "Tuesday 28 to Thursday 30 April 2026",
        "How late did the Glenaray leave during the incident?": "38 minutes",
        "When was the PostgreSQL cutover?": "Saturday 14 March 2026",
        "Did the public launch date change?": "Yes",
        "What caused the Calloway incident?": "the UKHO Admiralty feed returned",
    }
    with ChatSession(kb, TENANT) as chat:
        got = {q: chat.send(q).answer.split("\n", 1)[0] for q in expected}
    assert all(got[q].startswith(a) for q, a in expected.items()), got


def test_the_example_answers_the_budget_asked_not_a_corrected_other_one(
    kb: KnowledgeBase,
) -> None:
    # "Correction recorded: the monthly AWS budget is 5,600 dollars" said little of the
    # offsite's budget, but a correction counted double: it was the answer.
    with ChatSession(kb, TENANT) as chat:
        budget = chat.send("How much is the offsite budget?")
        who = chat.send("Who is Femi Adeyemi?")
    assert budget.answer.split("\n", 1)[0] == "6,000 pounds", budget.answer
    assert who.answer.split("\n", 1)[0] == "a senior backend engineer", who.answer


def test_the_answer_finds_the_turn_a_key_fact_cites(kb: KnowledgeBase) -> None:
    # The research's key facts named the offsite's dates and place, from a long standup
    # summary; its turn did not fit the evidence's budget after the others, so the answer,
    # which reads the evidence, quoted the public launch and the Q1 actions ("April").
    with ChatSession(kb, TENANT) as chat:
        record = chat.send("Where will the April offsite be?")
    lines = [line for line in record.answer.splitlines() if line.startswith("- ")]
    assert any("Offsite: Tuesday 28 to Thursday 30 April 2026" in x for x in lines), record.answer
    assert "Offsite" in lines[0], record.answer


def test_a_question_that_asks_two_things_is_answered_for_both(kb: KnowledgeBase) -> None:
    # The scheduler's sentences outweighed the offsite's, which covered a fifth of the
    # question's words: the answer quoted three sentences on the scheduler and none on the
    # offsite. Each part is now answered by the sentences that cover most of it.
    with ChatSession(kb, TENANT) as chat:
        record = chat.send("Who maintains the tide-window scheduler and when is the offsite?")
    lines = [line for line in record.answer.splitlines() if line.startswith("- ")]
    assert 2 <= len(lines) <= 3, record.answer
    quotes = [x.rsplit(" [", 1)[0] for x in lines]  # ("welcome-and-offsite" is in a citation)
    assert any("tide-window scheduler" in x for x in quotes), record.answer
    assert any("offsite" in x.lower() for x in quotes), record.answer
    cited = {c.citation() for c in record.context if c.cited}
    assert all(any(c in x for c in cited) for x in lines), record.answer


@pytest.mark.parametrize(
    "question",
    ["When is the offsite?", "Who maintains the tide-window scheduler and when is the offsite?"],
)
def test_when_is_answered_with_a_date_rather_than_a_weekday(
    kb: KnowledgeBase, question: str
) -> None:
    # Dara's turn names the offsite beside "for the Wednesday" and gives its dates two
    # sentences on: the answer quoted the Wednesday, which says no week.
    with ChatSession(kb, TENANT) as chat:
        record = chat.send(question)
    quotes = [x.rsplit(" [", 1)[0] for x in record.answer.splitlines() if x.startswith("- ")]
    offsite = [x for x in quotes if "offsite" in x.lower()]
    assert offsite, record.answer
    assert all("30 April" in x for x in offsite if "for the Wednesday" in x), record.answer
    assert any("28 to Thursday 30 April" in x for x in quotes), record.answer


def test_each_part_of_a_question_asks_for_its_own_kind_of_answer(kb: KnowledgeBase) -> None:
    # "how many people are coming to the offsite" asks for a number, though the question as a
    # whole opens with "Who": its answer was "On-call for the offsite: the boats don't stop
    # sailing because we're away."
    with ChatSession(kb, TENANT) as chat:
        record = chat.send(
            "Who owns the sync service and how many people are coming to the offsite?"
        )
    quotes = [x.rsplit(" [", 1)[0] for x in record.answer.splitlines() if x.startswith("- ")]
    assert any("seven people" in x for x in quotes), record.answer
    assert any("Tobias Ferrante" in x and "sync service" in x for x in quotes), record.answer


def test_a_part_of_a_question_is_not_answered_by_a_word_of_it_alone(kb: KnowledgeBase) -> None:
    # "where do the flights leave from": "I want to leave this room with a decision" holds
    # one of its words, and says nothing of the flights. (A part's answer covering only a
    # third of the part's weight took it.)
    with ChatSession(kb, TENANT) as chat:
        record = chat.send("Who owns the sync service and where do the flights leave from?")
    assert "leave this room" not in record.answer, record.answer
    assert "Tobias Ferrante" in record.answer, record.answer


def test_a_note_sentence_keeps_whom_its_paragraph_is_about(kb: KnowledgeBase) -> None:
    # notes/team-roster.md: "**Oskar Brennan**, Infrastructure and SRE. Owns AWS, Terraform,
    # monitoring, ..." -- the sentence that answers does not name him; the answer must.
    with ChatSession(kb, TENANT) as chat:
        record = chat.send("Who owns Terraform and the on-call rota?")
    roster = [line for line in record.answer.splitlines() if "notes/team-roster.md" in line]
    assert roster, record.answer
    assert roster[0].startswith("- Oskar Brennan — Owns AWS, Terraform"), roster[0]


def test_the_answer_gives_the_corrected_date_not_the_one_it_replaced(kb: KnowledgeBase) -> None:
    # The kickoff put the public launch on 14 April and the board deck repeated it; a later
    # meeting corrected it to 21 April. The kickoff's lines match the question as well as the
    # correction's, and the correcting turn itself repeats the old date before "That's wrong."
    with ChatSession(kb, TENANT) as chat:
        record = chat.send("When is the public launch?")
    lines = [line for line in record.answer.splitlines() if line.startswith("- ")]
    assert lines and "21 April" in lines[0], record.answer
    stale = [line for line in lines if "14 April" in line and "21 April" not in line]
    assert not stale, record.answer


def test_asked_when_the_answer_gives_a_time(kb: KnowledgeBase) -> None:
    # "When is the offsite?" was answered with three sentences that say "offsite" and no date
    # ("On-call for the offsite: the boats don't stop sailing").
    with ChatSession(kb, TENANT) as chat:
        record = chat.send("When is the offsite?")
        going = chat.send("How many people are going to the offsite?")
        count = chat.send("How many people are coming to the offsite?")
    lines = [line for line in record.answer.splitlines() if line.startswith("- ")]
    assert lines and "28 to Thursday 30 April" in lines[0], record.answer
    assert not any("boats don't stop sailing" in x for x in lines), record.answer
    going_quotes = [x for x in going.answer.splitlines() if x.startswith("- ")]
    assert going_quotes and "seven people" in going_quotes[0], going.answer
    # Priya's "Three days, …, for seven people" leaves "offsite" to the sentence before it,
    # which is shown with it.
    priya = (
        "- Priya Raghunathan: Now that we have a real launch date, I want to book a team "
        "offsite for the week after it. Three days, Tuesday 28 to Thursday 30 April, budget of "
        "about 6,000 pounds all in for seven people"
    )
    assert any(x.startswith(priya) for x in count.answer.splitlines()), count.answer


def test_asked_when_each_quote_says_the_day_it_was_said(kb: KnowledgeBase) -> None:
    # "Skerrick went live on 26 January" was said on 20 March; "yesterday" needs its day.
    with ChatSession(kb, TENANT) as chat:
        when = chat.send("When did Skerrick go live?")
        who = chat.send("Who is the first pilot customer?")
    lines = [line for line in when.answer.splitlines() if line.startswith("- ")]
    # The day as people write it ("Friday 20 March 2026"), not as an ISO stamp.
    day = r"\([A-Z][a-z]+day \d{1,2} [A-Z][a-z]+ \d{4}\): "
    assert lines and all(re.match(r"- [^:(]+ " + day, x) for x in lines), lines
    assert not re.search(day, who.answer), who.answer


def test_a_long_summary_sentence_is_quoted_where_it_speaks_of_the_question() -> None:
    actions = (
        "Actions: facts page in the knowledge base, Priya Raghunathan, Friday 27 March; "
        "Deckhand 1.3 with crew handover note, Ines Kovacic, Friday 3 April; sample files for "
        "customer imports, Ines; remove FL-87 sentinel code and write a scheduler design note, "
        "Tobias Ferrante, Friday 3 April; Inverlochy onboarding plan, Dara, Friday 3 April, "
        "go-live target May; offsite details to the team this week, Dara; Femi joins on-call "
        "Monday 6 April, four-person rota, Oskar Brennan; data-store decision checklist, Femi, "
        "Friday 10 April; delete DynamoDB tables after a final export, Oskar, Monday 13 April."
    )
    offsite = focused(actions, {"offsit"}, 40)
    assert offsite.startswith("Actions: … offsite details to the team this week, Dara; Femi")
    assert offsite.endswith(" …") and count_tokens(offsite) <= 40
    # From its start when that is where the terms are, or when none are; short text as it is.
    assert focused(actions, {"fact", "page"}, 40) == truncate_tokens(actions, 40)
    assert focused(actions, {"zebra"}, 40) == truncate_tokens(actions, 40)
    assert focused("Offsite: 28 April; Tromsø.", {"troms"}, 40) == "Offsite: 28 April; Tromsø."


def test_a_sentence_of_only_the_questions_words_is_no_answer(kb: KnowledgeBase) -> None:
    # Maya's "Okay, the data store." says "data store" and nothing else.
    with ChatSession(kb, TENANT) as chat:
        record = chat.send("What did we decide about the data store?")
    lines = [line for line in record.answer.splitlines() if line.startswith("- ")]
    assert lines and not any("Okay, the data store." in x for x in lines), record.answer


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("When is the offsite?", "time"),
        ("And when did Femi join?", "time"),
        ("On what date did Skerrick go live?", "time"),
        ("How long ago was the kickoff?", "time"),
        ("How many vessels does Skerrick run?", "number"),
        ("How much is the pilot fee?", "number"),
        ("Where is the offsite?", None),
        ("What did Dara say when the pilot went live?", None),
        ("How long is the flight?", None),
    ],
)
def test_what_kind_of_answer_a_question_asks_for(question: str, kind: str | None) -> None:
    assert answer_type(question) == kind


@pytest.mark.parametrize(
    ("sentence", "time"),
    [
        ("Dates as Priya proposed: Tuesday 28 to Thursday 30 April.", True),
        ("The cutover is on 14 May at 22:00.", True),
        ("We went live last week.", True),
        ("She moved there two years ago.", True),
        ("Backups are kept since 2024-01-05.", True),
        ("We may march on regardless.", False),
        ("On-call for the offsite: the boats don't stop sailing because we're away.", False),
    ],
)
def test_which_sentences_give_a_time(sentence: str, time: bool) -> None:
    assert gives("time", sentence) is time


def test_a_date_answers_when_better_than_a_time_that_names_no_week() -> None:
    terms = question_terms("When is the offsite?")
    dated = merit("Dates as Priya proposed: Tuesday 28 to Thursday 30 April.", terms, "time")
    vague = merit("The offsite is on the Wednesday, in the seminar room.", terms, "time")
    untimed = merit("The offsite is in the seminar room.", terms, "time")
    assert dated == 1.0
    assert untimed < vague < dated
    # Asked for no time, a weekday is as good as a date.
    assert merit("The offsite is on the Wednesday, in the seminar room.", terms, None) == 1.0


def test_a_name_alone_is_no_reference_to_resolve() -> None:
    # The offsite summary's "Dara Whitcombe" was followed as a name. Taken as a reference
    # like "Dara sister", the first sentence that Dara said resolved it: "I do."
    def plan(query: str) -> TraceEvent:
        return TraceEvent(
            "plan", 1, {"actions": [{"tool": "bm25", "query": query, "follows": "p#1-2"}]}
        )

    briefing = BriefingContext(
        "", [], [], [], 0, 1, [], trace=[plan("Dara Whitcombe"), plan("Dara sister")]
    )
    assert followed_references(briefing) == [("p#1-2", frozenset({"dara", "sister"}))]


def test_the_person_asked_about_answers_in_their_own_words(kb: KnowledgeBase) -> None:
    # Asked what Priya corrected, Priya's own "I need to correct something I said" is the
    # answer; Maya's agenda line names Priya and a correction but corrected nothing.
    with ChatSession(kb, TENANT) as chat:
        record = chat.send("What did Priya correct?")
    lines = [line for line in record.answer.splitlines() if line.startswith("- ")]
    assert lines and lines[0].startswith("- Priya Raghunathan: "), record.answer
    assert "correct" in lines[0], record.answer


def test_a_statement_that_a_later_correction_replaced_says_so(kb: KnowledgeBase) -> None:
    # Asked what went into the board deck, the kickoff's "I've put Tuesday 14 April in the
    # board deck" is the answer, and the meeting of 23 February corrected that date: the
    # answer says so. The briefing is narrowed to those two sessions.
    message = "What launch date did Priya put in the board deck?"
    with ChatSession(kb, TENANT) as chat:
        briefing = chat.tools.researcher.research(message)
        kept = ("2026-01-05-ferrylog-kickoff/1", "2026-02-23-hiring-and-planning/1")
        briefing.evidence = [e for e in briefing.evidence if e.page_id in kept]
        assert {e.page_id for e in briefing.evidence} == set(kept)
        ctx = TurnContext(
            chat_id=chat.chat_id,
            turn=1,
            tenant=TENANT,
            message=message,
            history=[],
            tools=chat.tools,
            emit=lambda event: None,
            cancel_event=threading.Event(),
        )
        chosen = [s.text for s in OfflineAgent().select(ctx, briefing)]
    deck = [text for text in chosen if "board deck" in text and "14 April" in text]
    assert deck and deck[0].endswith("(superseded on 2026-02-23)"), chosen
    assert not any("superseded" in text for text in chosen if "21 April" in text), chosen


def test_questions_asked_again_change_no_key_fact(kb: KnowledgeBase) -> None:
    # Each chat memorizes the question (it matches the request word for word) and kbmem's
    # answer, which quotes "Correction recorded: ... not Tuesday 14 April 2026 as stated" under
    # today's date. Asked again, the briefing cites the same sources as before the chats:
    # the echoes take none of a search's places, lead no fact and correct nothing.
    request = "When is the public launch?"
    with ChatSession(kb, TENANT) as chat:
        before = chat.tools.researcher.research(request)
    for question in (request, "What public launch date did the assistant record?"):
        with ChatSession(kb, TENANT) as chat:
            record = chat.send(question)
        assert "not Tuesday 14 April 2026 as stated" in record.answer, record.answer
    with ChatSession(kb, TENANT) as chat:
        after = chat.tools.researcher.research(request)
    found = [
        hit["pageId"]
        for event in after.trace
        if event.kind == "tool_result"
        for hit in event.data.get("hits", [])
    ]
    assert any(page.startswith("chat-") for page in found), found  # the echoes were found
    assert after.key_facts == before.key_facts
    assert "21 April" in after.key_facts[0]  # the direct answer, then the fact it is from
    marks = [f for f in after.key_facts if "superseded on" in f]
    assert marks and all("superseded on 2026-02-23)" in f for f in marks), after.key_facts


def test_each_list_item_is_a_sentence_of_its_own() -> None:
    text = (
        "- Public launch: **Tuesday 21 April 2026**. (Corrected on\n"
        "  23 February.)\n"
        "- Budget: 5,600"
    )
    assert split_sentences(text, cut="prose") == [
        "Public launch: **Tuesday 21 April 2026**.",
        "(Corrected on 23 February.)",
        "Budget: 5,600",
    ]


def test_a_sentence_opening_with_a_capital_outside_ascii_is_cut_off() -> None:
    text = "We met in Oslo. Åsa came too. Ōsaka is next. 3 people stayed."
    assert split_sentences(text, cut="prose") == [
        "We met in Oslo.",
        "Åsa came too.",
        "Ōsaka is next.",
        "3 people stayed.",
    ]


def test_paragraph_subject_is_the_bold_lead_only() -> None:
    assert paragraph_subject(["**Tobias Ferrante**, Senior Backend Engineer. Owns x."]) == (
        "Tobias Ferrante"
    )
    assert paragraph_subject(["- **Tide window:** the hours around high water."]) == "Tide window"
    assert paragraph_subject(["Plain text with **bold** later."]) == ""
    assert paragraph_subject([]) == ""


def test_a_misspelt_word_is_answered_and_said_to_be_read_as_a_near_one(kb: KnowledgeBase) -> None:
    with ChatSession(kb, TENANT) as chat:
        record = chat.send("Who maintains the tide-window schedular?")
    assert "\n\nFrom memory:\n" in record.answer  # after the direct answer's line
    assert "tide-window scheduler" in record.answer and "Tobias Ferrante" in record.answer
    # Memory does not hold the word as typed, and the answer says what was searched instead.
    assert "never mentions: schedular (searched as the nearest word it holds)" in record.answer


def test_offline_says_plainly_when_memory_holds_nothing(kb: KnowledgeBase) -> None:
    with ChatSession(kb, TENANT) as chat:
        record = chat.send("What is the airspeed of an unladen swallow?")
    assert record.answer.startswith(NOTHING)
    assert "airspeed" in record.answer and not any(c.cited for c in record.context)
    assert record.tool_calls[0].name == "research" and record.tool_calls[0].error is None
    # What the research gave the agent is recorded all the same: an auditor sees what it read.
    given = [(i["path"], i["start"], i["end"]) for i in record.tool_calls[0].intervals]
    assert [(c.path, c.start, c.end) for c in record.context] == given


def test_a_later_chat_finds_what_an_earlier_chat_said(kb: KnowledgeBase) -> None:
    fact = "Remember this: the spare wheelhouse key is kept in the blue biscuit tin."
    with ChatSession(kb, TENANT) as first:
        first.send(fact)
    with ChatSession(kb, TENANT) as second:
        record = second.send("Where is the spare wheelhouse key kept?")
    assert "blue biscuit tin" in record.answer
    assert any(c.page_id == f"chat-{first.chat_id}/1" and c.cited for c in record.context)


def test_asking_again_answers_from_the_sources_not_from_earlier_answers(
    kb: KnowledgeBase,
) -> None:
    # Each chat is memorized when it closes: the question and the answer, which quotes its
    # sources. Asked a fifth time, the answer is the same, from the same first source: the
    # earlier questions and answers take no search's places and no page's. (They are memory
    # all the same: the words they repeat count as more common, which may reorder sources
    # that score nearly alike further down.)
    question = "Who owns the tide-window scheduler?"
    answers = []
    for _ in range(5):
        with ChatSession(kb, TENANT) as chat:
            answers.append(chat.send(question))
    first, last = answers[0], answers[-1]
    assert last.answer.splitlines()[0] == first.answer.splitlines()[0] == "Tobias Ferrante"
    cited = [(c.page_id, c.start) for c in last.context if c.cited]
    assert cited[0] == next((c.page_id, c.start) for c in first.context if c.cited)
    assert not any(page.startswith("chat-") for page, _ in cited), last.answer
    assert not any(c.page_id.startswith("chat-") for c in last.context), last.answer
    # The search tool (CLI, the agent's tool) ranks the sources above the five askings too.
    for tool in ("bm25", "dense", "hybrid"):
        hits = Toolkit(kb, TENANT).search(question, tool, 5)
        assert len(hits) == 5 and not any(h.page_id.startswith("chat-") for h in hits), tool


def test_a_multi_hop_answer_quotes_where_the_reference_leads(kb: KnowledgeBase) -> None:
    # "The offsite will be in the city where my sister lives" (Dara, 2 March) names no city;
    # Dara's "I'm flying to Tromsø to see my sister Niamh" (21 January) does. The research
    # follows "Dara sister"; the answer quotes both, the second right after the first.
    with ChatSession(kb, TENANT) as chat:
        record = chat.send("In which city will the team's April offsite take place?")
    lines = record.answer.split("\n")
    where = next(n for n, line in enumerate(lines) if "city where my sister lives" in line)
    assert "Tromsø" in lines[where + 1], record.answer
    assert "[2026-01-21-sprint1-review/1:L85-L86]" in lines[where + 1]
    assert any(c.page_id == "2026-01-21-sprint1-review/1" and c.cited for c in record.context)


def test_a_request_typed_without_its_question_mark_is_no_answer(kb: KnowledgeBase) -> None:
    # Asked in one chat without a question mark, then in a later one: the later answer quotes
    # the sources, not the earlier request (which names every word of the question), and not
    # the earlier "memory holds nothing" about a word memory lacks.
    with ChatSession(kb, TENANT) as first:
        first.send("Who owns the tide-window scheduler and the zyzzyva quokka")
    with ChatSession(kb, TENANT) as second:
        record = second.send("Who owns the tide-window scheduler and the zyzzyva quokka?")
    assert "Tobias Ferrante" in record.answer
    cited = [c.page_id for c in record.context if c.cited]
    assert cited and not any(p.startswith(f"chat-{first.chat_id}") for p in cited), record.answer


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("Who owns the scheduler", True),
        ("tell me about the offsite", True),
        ("Does Femi have a buddy", True),
        ("Where is the key kept?", True),
        ("the launch moved to 28 April?", True),
        ("What a day!", False),
        ("What a relief, the crane passed.", False),
        ("Remember: the key is in the tin.", False),
        ("Whoever owns it, the scheduler failed.", False),
        ("Give me a summary of the offsite", True),
        ("find a spare key", True),
        ("april offsite budget", False),
        ("Quick question: who owns the scheduler", True),
    ],
)
def test_a_request_is_told_from_a_statement(text: str, asks: bool) -> None:
    assert is_request(text) is asks


@pytest.mark.parametrize(
    ("text", "states"),
    [
        ("Remember: the key is in the tin.", True),
        ("What a day!", True),
        ("Whoever owns it, the scheduler failed.", True),
        ("deploy failed 503 web-7 14:02 retry 3 build 4512 rollback started", True),
        ("april offsite budget", False),  # search words typed as a query
        ("Who owns the scheduler", False),
        ("Give me a summary of the offsite.", False),
        ("", False),
    ],
)
def test_a_statement_is_told_from_search_words(text: str, states: bool) -> None:
    assert is_statement(text) is states


@pytest.mark.parametrize(
    ("text", "rest"),
    [
        ("Correction: the flights leave from Edinburgh.", "the flights leave from Edinburgh."),
        ("Remember this: the key is in the tin.", "the key is in the tin."),
        ("remember that Femi starts on Monday.", "Femi starts on Monday."),
        ("FYI - the build is green.", "the build is green."),
        ("Quick question: who owns the scheduler", "who owns the scheduler"),
        ("Remember Femi?", "Remember Femi?"),  # no cue: about remembering Femi
        ("Notes from the retro are in the wiki.", "Notes from the retro are in the wiki."),
        ("Note:", "Note:"),  # nothing after it
        ("note-taking app is down again.", "note-taking app is down again."),
        ("Update—the launch moved.", "the launch moved."),
    ],
)
def test_a_messages_opening_cue_is_not_what_it_is_about(text: str, rest: str) -> None:
    assert without_cue(text) == rest


def test_a_statement_is_noted_not_answered_as_a_question(kb: KnowledgeBase) -> None:
    # A pasted log used to be answered "Memory holds nothing on this question. It never
    # mentions: error, 503, host, 4512."; a correction, with bullets as if it were asked.
    log = "The deploy failed with error 503 at 14:02 on host web-7, retry count 3, build 4512."
    correction = "Correction: the offsite flights leave from Edinburgh, not Glasgow."
    with ChatSession(kb, TENANT) as chat:
        noted = chat.send(log)
        corrected = chat.send(correction)
        chatted = chat.send("What a day!")
    assert noted.answer == NOTED and chatted.answer == NOTED, (noted.answer, chatted.answer)
    # Memory was still searched, and what it gave is recorded for an audit.
    assert noted.tool_calls[0].name == "research" and noted.tool_calls[0].error is None
    assert not any(c.cited for c in noted.context)
    # Memory is searched for what the message is about, not for its "Correction:" (the
    # researcher drops the cue; the call records the message as it was said).
    call = corrected.tool_calls[0]
    assert call.arguments["request"] == correction
    searched = [
        a.get("query") or "" for e in call.trace if e["kind"] == "plan" for a in e["actions"]
    ]
    assert searched and not any("correction" in q.lower() for q in searched), searched
    # What memory says on a correction is shown, cited: here, what it corrects.
    head, related = corrected.answer.split("\n\n", 1)
    assert head == NOTED and related.startswith(RELATED_HEAD + "\n"), corrected.answer
    glasgow = "Dara Whitcombe: Flights from Glasgow via Oslo on the Tuesday morning"
    assert any(line.startswith(f"- {glasgow}") for line in related.split("\n")), related
    assert "[2026-03-02-welcome-and-offsite/1:L84-L85]" in related
    assert any(
        c.cited and c.page_id == "2026-03-02-welcome-and-offsite/1" for c in corrected.context
    )
    # The log is memory now, and the acknowledgement is no answer to a later question.
    with ChatSession(kb, TENANT) as later:
        record = later.send("Which host did the deploy fail on?")
        again = later.send(correction)
    # Said again, the correction is found in memory, and kbmem's own earlier bullets are not
    # quoted beside the sources they quoted.
    bullets = again.answer.split("\n\n", 1)[1].split("\n")[1:]
    assert f"- user: {correction} [chat-{chat.chat_id}/1:L" in again.answer, again.answer
    assert bullets and not any(b.startswith(f"- {CHAT_AGENT}:") for b in bullets), again.answer
    assert "web-7" in record.answer and "Noted" not in record.answer, record.answer
    assert any(c.cited and c.page_id == f"chat-{chat.chat_id}/1" for c in record.context)


def test_quoted_text_shows_as_written_in_markdown(kb: KnowledgeBase) -> None:
    # The answer is Markdown; a quote of memory must not turn into emphasis, code, a link or
    # HTML, nor lose characters, when it is rendered.
    from markdown_it import MarkdownIt

    fact = "Remember this: the spare key is kept in **tin 4** `code` <b>shelf</b> [a](b) #7 x_y_z."
    with ChatSession(kb, TENANT) as first:
        first.send(fact)
    with ChatSession(kb, TENANT) as second:
        record = second.send("Where is the spare key kept?")
    line = next(line for line in record.answer.split("\n") if "spare key" in line)
    tokens = MarkdownIt("commonmark").parseInline(line.removeprefix("- "))[0].children or []
    shown = "".join(t.content for t in tokens if t.type in ("text", "text_special"))
    assert "**tin 4** `code` <b>shelf</b> [a](b) #7 x_y_z." in shown, line
    assert {t.type for t in tokens} <= {"text", "text_special", "softbreak"}, line
    # Quoted again, kbmem's own escaped answer is unescaped first, not escaped twice.
    with ChatSession(kb, TENANT) as third:
        again = third.send("Where is the spare key kept?")
    assert "\\\\" not in again.answer, again.answer


def test_a_chat_can_be_continued_by_its_id(kb: KnowledgeBase) -> None:
    with ChatSession(kb, TENANT, batch_turns=2) as chat:
        chat.send(QUESTIONS[0])
        chat.send(QUESTIONS[1])
        chat.send(QUESTIONS[2])
    with ChatSession(kb, TENANT, chat_id=chat.chat_id) as again:
        assert [h[0] for h in again.history] == [1, 2, 3]
        assert again.send(QUESTIONS[3]).turn == 4
    assert trailers_of(kb.root, chat.chat_id)[-1] == f"{chat.chat_id} 4-4"
    with pytest.raises(ValidationError, match="chat_id"):
        ChatSession(kb, TENANT, chat_id="../escape")


# -- failures ------------------------------------------------------------------------------


def test_cancel_journals_the_turn_as_interrupted(kb: KnowledgeBase) -> None:
    chat = ChatSession(kb, TENANT)

    def cancel_on_first_delta(event: AgentEvent) -> None:
        if isinstance(event, ReplyDelta):
            chat.cancel()

    record = chat.send(QUESTIONS[0], on_event=cancel_on_first_delta)
    assert record.status == "interrupted" and "[interrupted" in record.answer
    journaled = read_journal(journal_dir(kb) / TENANT / f"{chat.chat_id}.jsonl").turns
    assert [(r.turn, r.status) for r in journaled] == [(1, "interrupted")]
    assert chat.send(QUESTIONS[1]).status == "complete"  # the next turn is not cancelled
    chat.close()
    answer = kb.read_bytes(turn_dir(TENANT, chat.chat_id, 1) + "answer.md").decode()
    assert answer.rstrip("\n") == record.answer


def test_ctrl_c_during_a_turn_is_journaled_then_raised(kb: KnowledgeBase) -> None:
    chat = ChatSession(kb, TENANT)

    def ctrl_c(event: AgentEvent) -> None:
        if isinstance(event, ToolCallFinished):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        chat.send(QUESTIONS[0], on_event=ctrl_c)
    assert chat.pending_turns == [1]
    journaled = read_journal(journal_dir(kb) / TENANT / f"{chat.chat_id}.jsonl").turns
    assert journaled[0].status == "interrupted" and "Ctrl-C" in (journaled[0].error or "")
    chat.close()
    assert trailers_of(kb.root, chat.chat_id) == [f"{chat.chat_id} 1-1"]


def test_sigkill_between_batches_then_every_turn_committed_exactly_once(
    kb: KnowledgeBase,
) -> None:
    child = run_script(
        kb.root,
        f"""
        chat = ChatSession(kb, "default", chat_id="killed", batch_turns=5)
        for q in {QUESTIONS + QUESTIONS[:2]!r}:
            chat.send(q)
        print("ready", flush=True)
        time.sleep(600)
        """,
    )
    try:
        wait_for_line(child, "ready")
        assert trailers_of(kb.root, "killed") == ["killed 1-5"]
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    state = read_journal(journal_dir(kb) / TENANT / "killed.jsonl")
    assert [r.turn for r in state.pending] == [6, 7, 8]

    events: list[AgentEvent] = []
    with ChatSession(kb, TENANT, on_event=events.append) as other:
        assert other.chat_id != "killed"
        recovered = [e for e in events if isinstance(e, BatchCommitted)]
        assert [(e.chat_id, e.first, e.last, e.recovered) for e in recovered] == [
            ("killed", 6, 8, True)
        ]
    assert trailers_of(kb.root, "killed") == ["killed 1-5", "killed 6-8"]
    assert committed_turns(kb, TENANT, "killed") == set(range(1, 9))
    for n in range(1, 9):
        assert kb.blob_id(turn_dir(TENANT, "killed", n) + "answer.md") is not None
    page = kb.read_bytes(f"tenants/{TENANT}/pages/chat-killed/1.md").decode()
    assert "### q8 | user |" in page and "### q1 | user |" in page
    assert journal_files(kb) == []  # the dead chat's lock file is cleaned up too
    before = head(kb.root)
    ChatSession(kb, TENANT).close()  # nothing left to recover: no new commit
    assert head(kb.root) == before


def test_crash_after_the_commit_before_the_journal_mark_does_not_commit_twice(
    kb: KnowledgeBase,
) -> None:
    chat = ChatSession(kb, TENANT, chat_id="late-mark")
    chat.send(QUESTIONS[0])
    chat.send(QUESTIONS[1])
    journal = journal_dir(kb) / TENANT / "late-mark.jsonl"
    unmarked = journal.read_bytes()  # what the disk held between the commit and the mark
    chat.close()
    assert trailers_of(kb.root, "late-mark") == ["late-mark 1-2"]
    journal.write_bytes(unmarked)
    before = head(kb.root)
    ChatSession(kb, TENANT).close()
    assert head(kb.root) == before and trailers_of(kb.root, "late-mark") == ["late-mark 1-2"]
    assert not journal.exists()


def test_a_writer_holding_the_lock_makes_the_batch_wait_nothing_lost(kb: KnowledgeBase) -> None:
    holder = run_script(
        kb.root,
        """
        with kb.write_lock():
            print("locked", flush=True)
            time.sleep(3)
        """,
    )
    events: list[AgentEvent] = []
    chat = ChatSession(kb, TENANT, batch_turns=1, on_event=events.append)
    try:
        wait_for_line(holder, "locked", timeout=60)
        started = time.monotonic()
        record = chat.send(QUESTIONS[0], on_event=events.append)
        assert holder.wait(timeout=60) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    assert record.status == "complete"
    assert any(isinstance(e, Notice) and "waits" in e.message for e in events)
    assert time.monotonic() - started > 0.5
    assert trailers_of(kb.root, chat.chat_id) == [f"{chat.chat_id} 1-1"]
    chat.close()


def test_a_lock_held_past_the_timeout_keeps_the_turns_journaled(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KBMEM_GIT__LOCK_TIMEOUT_S", "1.5")
    kb = KnowledgeBase(kb.root)
    holder = run_script(
        kb.root,
        """
        with kb.write_lock():
            print("locked", flush=True)
            time.sleep(4)
        """,
    )
    events: list[AgentEvent] = []
    chat = ChatSession(kb, TENANT, batch_turns=1, on_event=events.append)
    try:
        wait_for_line(holder, "locked", timeout=60)
        record = chat.send(QUESTIONS[0], on_event=events.append)
        assert record.status == "complete" and chat.pending_turns == [1]
        postponed = [
            e.message for e in events if isinstance(e, Notice) and "postponed" in e.message
        ]
        # The whole wait is reported, not one of the short tries it was made of.
        assert len(postponed) == 1 and f"held {kb.root} for over 1.5 s;" in postponed[0]
        assert holder.wait(timeout=60) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    chat.send(QUESTIONS[1])  # the next batch takes both turns
    assert trailers_of(kb.root, chat.chat_id) == [f"{chat.chat_id} 1-2"]
    chat.close()


def test_invalid_tool_arguments_come_back_as_the_tools_result(kb: KnowledgeBase) -> None:
    chat = ChatSession(kb, TENANT)
    events: list[AgentEvent] = []
    ctx = TurnContext(
        chat_id=chat.chat_id,
        turn=1,
        tenant=TENANT,
        message="test",
        history=[],
        tools=chat.tools,
        emit=events.append,
        cancel_event=threading.Event(),
    )
    bad = {
        "search": ['{"query": 5}', '{"query": "offsite", "k": 0}', '{"query": "x", "tool": "ls"}'],
        "read_page": ['{"id": "../../etc/passwd"}', '{"id": "nope/1"}', "{not json"],
        "expand": ['{"interval": "offsite"}', '{"interval": "x:L1-L2", "pad": 99}'],
        "research": ['{"request": ""}', '["a list"]', '{"request": "x", "extra": 1}'],
        "delete_everything": ["{}"],
    }
    for name, arguments in bad.items():
        for raw in arguments:
            result = chat.tools.call(ctx, name, raw)
            assert result.error and result.text.startswith("error: "), (name, raw)
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert len(finished) == sum(len(v) for v in bad.values())
    assert all(e.error for e in finished) and len(ctx.tool_calls) == len(finished)
    good = chat.tools.call(ctx, "search", '{"query": "offsite", "k": 3}')
    assert good.error is None and len(good.items) == 3
    page = chat.tools.call(ctx, "read_page", {"id": good.items[0].page_id, "start": 1, "end": 5})
    assert page.error is None and page.items[0].end == 5
    # Each interval names the call that read it, so that an audit can tie the two.
    assert page.items[0].call_id == page.call_id == ctx.tool_calls[-1].call_id
    assert all(item.call_id == good.call_id for item in good.items)
    citation = good.items[0].citation().strip("[]")
    grown = chat.tools.call(ctx, "expand", {"interval": citation, "mode": "turn", "pad": 1})
    assert grown.error is None and grown.items[0].start <= good.items[0].start
    assert grown.items[0].call_id == grown.call_id
    chat.close()


def test_send_refuses_empty_messages_without_journaling(kb: KnowledgeBase) -> None:
    chat = ChatSession(kb, TENANT)
    with pytest.raises(ValidationError, match="message"):
        chat.send("   ")
    assert chat.next_turn == 1 and chat.pending_turns == []
    chat.close()
    assert journal_files(kb) == []  # not even the chat's lock file is left


def test_best_excerpt_shows_the_sentence_that_answers():
    from kbmem.agent.offline import best_excerpt

    text = (
        "Noted. I'll track this as the Ferrylog v1 kickoff on Monday 5 January 2026.\n"
        "On customers. Skerrick Island Ferries will be our first pilot customer. They run "
        "two boats."
    )
    question = "Which company was the first pilot customer for Ferrylog?"
    line = best_excerpt(text, question, 60)
    assert line.startswith("… Skerrick Island Ferries will be our first pilot customer.")
    assert len(line) <= 60 and line.endswith("…")
    # Nothing to match: the text's start, whole when it fits.
    assert best_excerpt("One. Two.", "", 60) == "One. Two."
    assert best_excerpt("", question, 60) == ""


def test_recovery_removes_stale_lock_files_but_not_an_open_chats(kb: KnowledgeBase) -> None:
    stale = journal_dir(kb) / "ended-long-ago.lock"
    stale.touch()
    with ChatSession(kb, TENANT) as open_chat:
        assert not stale.exists()
        mine = journal_dir(kb) / TENANT / f"{open_chat.chat_id}.lock"
        assert mine.exists()
        ChatSession(kb, TENANT).close()  # a second chat's start-up recovery runs meanwhile
        assert mine.exists()  # the open chat keeps its lock
    assert journal_files(kb) == []


def test_two_tenants_may_use_the_same_chat_id(kb: KnowledgeBase) -> None:
    """Chat ids are unique within a tenant only: another tenant's chat "standup" must not
    make this one's turns look committed (they were never written to git)."""
    with ChatSession(kb, TENANT, chat_id="standup", batch_turns=1) as chat:
        chat.send("Who owns Terraform?")
        chat.send("Who is Femi Adeyemi's onboarding buddy?")
    with ChatSession(kb, "other", chat_id="standup", batch_turns=1) as chat:
        record = chat.send("What did we decide?")
    assert record.tenant == "other" and record.turn == 1
    assert committed_turns(kb, TENANT, "standup") == {1, 2}
    assert committed_turns(kb, "other", "standup") == {1}
    assert kb.blob_id(turn_dir("other", "standup", 1) + "answer.md") is not None
    assert journal_files(kb) == []


def test_the_same_chat_id_may_be_open_in_two_tenants_at_once(kb: KnowledgeBase) -> None:
    with ChatSession(kb, TENANT, chat_id="standup", batch_turns=5) as mine:
        mine.send("Who owns Terraform?")
        with ChatSession(kb, "other", chat_id="standup", batch_turns=5) as theirs:
            theirs.send("What did we decide?")
            paths = sorted(
                str(p.relative_to(journal_dir(kb))) for p in journal_dir(kb).rglob("*.jsonl")
            )
            assert paths == [f"{TENANT}/standup.jsonl", "other/standup.jsonl"]
            assert [
                r.tenant for r in read_journal(journal_dir(kb) / "other" / "standup.jsonl").turns
            ] == ["other"]
    assert committed_turns(kb, TENANT, "standup") == {1}
    assert committed_turns(kb, "other", "standup") == {1}
    assert journal_files(kb) == []


def test_a_journal_an_older_kbmem_left_at_the_top_is_still_recovered(kb: KnowledgeBase) -> None:
    chat = ChatSession(kb, TENANT, chat_id="old-layout", batch_turns=5)
    chat.send(QUESTIONS[0])
    journal = journal_dir(kb) / TENANT / "old-layout.jsonl"
    unmarked = journal.read_bytes()
    chat.journal.close(remove=True)  # as if the process died, its journal moved to the old place
    (journal_dir(kb) / "old-layout.jsonl").write_bytes(unmarked)
    assert committed_turns(kb, TENANT, "old-layout") == set()
    assert [t.turn for t in list_turns(kb, TENANT, "old-layout").turns] == [1]
    ChatSession(kb, TENANT).close()  # start-up recovery
    assert committed_turns(kb, TENANT, "old-layout") == {1}
    assert journal_files(kb) == []


def journal_files(kb: KnowledgeBase) -> list[str]:
    """Every journal and lock file, in any folder (tenant folders themselves stay)."""
    return sorted(str(p) for p in journal_dir(kb).rglob("*") if p.is_file())
