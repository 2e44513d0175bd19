"""The terminal UI driven with Pilot on real copies of the example knowledge base: a real
offline agent answers, real git history is browsed, real failures become toasts."""

from __future__ import annotations

import asyncio
import html
import re
import shutil
from pathlib import Path

import pytest
from helpers.kbgit import commit_edit, plant_intervals
from helpers.talk import talk
from helpers.turns import commit_older_turn
from kbmem_tui.app import KbmemApp
from kbmem_tui.scenarios import (
    GLOSSARY,
    GLOSSARY_NEW,
    GLOSSARY_OLD,
    QUESTION,
    SIZE,
    ask,
    edit_glossary,
    history_scenario,
    make_app,
    settle,
    wait_until,
)
from kbmem_tui.screens.audit import AuditScreen, IntervalCard
from kbmem_tui.screens.chat import ChatScreen
from kbmem_tui.screens.help import HelpScreen
from kbmem_tui.screens.history import HistoryScreen
from kbmem_tui.screens.interval import IntervalScreen
from kbmem_tui.screens.prompt import ChoiceScreen, PromptScreen
from kbmem_tui.widgets.chat_log import AgentReply, Citation, PromptInput, Suggestions, UserMessage
from kbmem_tui.widgets.interval_view import NumberedLines
from kbmem_tui.widgets.status_bar import StatusBar
from kbmem_tui.widgets.trace import BriefingView, ResearchCallView, ToolCallView, TracePanel
from rich.cells import cell_len
from rich.console import Console
from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import (
    DataTable,
    Footer,
    ListItem,
    Markdown,
    OptionList,
    Static,
    Tab,
    TabbedContent,
    Tree,
)
from textual.widgets._footer import FooterKey

from kbmem.agent.provenance import read_turn, turn_dir, turn_intervals
from kbmem.agent.session import ChatSession
from kbmem.memorize.memorizer import ingest_session
from kbmem.memorize.sessions import session_from_mapping
from kbmem.store.repository import KnowledgeBase

ANSWER = "Skerrick Island Ferries"


def rendered(widget: Static) -> str:
    """What a Static shows, as plain text."""
    content = widget.content
    console = Console(width=200, record=True, color_system=None)
    console.print(Text(content) if isinstance(content, str) else content)
    return console.export_text()


def toasts(app: KbmemApp) -> list[tuple[str, str, str]]:
    return [(n.severity, n.title, n.message) for n in app._notifications]


def cited_in_view(history: HistoryScreen) -> bool:
    """The highlighted lines of the History screen's Source tab are scrolled into view."""
    cited = history.query_one(NumberedLines).cited()
    source = history.query_one("#source-scroll")
    return cited is not None and source.region.overlaps(cited.region)


def footer_key(screen: Screen, key: str) -> FooterKey:
    return next(k for k in screen.query(FooterKey) if k.key == key)


def file_lines(kb: KnowledgeBase, path: str, commit: str, start: int, end: int) -> list[str]:
    return kb.read_bytes(path, commit).decode("utf-8").split("\n")[start - 1 : end]


def test_chat_streams_the_answer_and_fills_the_trace(kb: KnowledgeBase) -> None:
    asyncio.run(_chat_streams(kb))


async def _chat_streams(kb: KnowledgeBase) -> None:
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, ChatScreen)
        # First run: suggested questions, the ones the example's README lists.
        await wait_until(pilot, lambda: bool(screen.query(Suggestions)), "suggestions")
        suggestions = screen.query_one(Suggestions)
        assert suggestions.questions[0] == QUESTION and len(suggestions.questions) == 4
        readme = kb.read_bytes("README.md").decode("utf-8")
        assert all(f"- {q}\n" in readme for q in suggestions.questions)

        # ↓ from the message box reaches them; enter asks the highlighted one.
        await pilot.press("down", "enter")
        # The question shows at once, literally; the suggestions give way to the chat.
        assert rendered(screen.query_one(UserMessage)).strip() == QUESTION
        assert not screen.query(Suggestions)
        await wait_until(
            pilot, lambda: screen.reply is not None and screen.reply.finished, "the answer"
        )
        await wait_until(pilot, lambda: bool(app.turn_records()), "the journaled turn")
        reply = screen.reply
        assert isinstance(reply, AgentReply)
        record = app.turn_records()[0]
        # Streamed: many pieces went through the Markdown stream, and together they are
        # the answer the agent journaled (citations turned into links).
        assert reply.deltas > 3
        assert ANSWER in record.answer
        assert ANSWER in reply.markdown.source
        assert "](cite:" in reply.markdown.source
        # The citations are listed under the answer, each pinned to the commit it was read at.
        cited = {(c.page_id, c.start, c.end) for c in record.context if c.cited}
        assert {(c.page_id, c.start, c.end) for c in reply.citations} == cited
        assert all(len(c.commit) == 40 for c in reply.citations)

        # The trace panel filled live: the research call, its plan and searches, the briefing.
        panel = screen.query_one(TracePanel)
        research = panel.query_one(ResearchCallView)
        assert "step 0: plan" in " ".join(rendered(s) for s in research.query(Static))
        calls = list(research.query(ToolCallView))
        # One widget per search the researcher ran, none lost, all under the call's head.
        searches = [e for e in record.tool_calls[0].trace if e["kind"] == "tool_call"]
        assert len(calls) == len(searches) >= 2
        assert research.children[0] is research.head
        assert all(c.status == "done" for c in calls)
        assert sum(c.hit_count or 0 for c in calls) > 0
        briefing = panel.query_one(BriefingView)
        await wait_until(
            pilot,
            lambda: "Skerrick" in rendered(briefing.query_one(".evidence", Static)),
            "the briefing's excerpts",
        )
        # Its key facts are the briefing's as it was handed over: the direct answer first.
        facts = rendered(briefing.query_one(".facts", Static))
        assert facts.startswith("• Direct answer:") and ANSWER in facts.splitlines()[0]
        evidence = rendered(briefing.query_one(".evidence", Static))
        for page_id, _start, _end in cited:
            assert page_id in evidence

        # The status bar counts the journaled turn waiting for the batch commit.
        assert app.status.pending_turns == 1
        assert "turns pending 1/5" in rendered(screen.query_one(StatusBar))

        # The input keeps a history.
        await pilot.press("up")
        assert screen.query_one(PromptInput).text == QUESTION
        await pilot.press("down")
        assert screen.query_one(PromptInput).text == ""

        # A citation opens the cited lines as they were at that commit ...
        reply.query_one(".citations", OptionList).focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, IntervalScreen), "the dialog")
        dialog = app.screen
        await wait_until(pilot, lambda: bool(dialog.query(NumberedLines)), "the cited lines")
        first = reply.citations[0]
        cited_block = dialog.query_one(NumberedLines).cited()
        assert cited_block is not None
        shown = rendered(cited_block)
        path = first.path or _page_path(first.page_id)
        for line in file_lines(kb, path, first.commit, first.start, first.end):
            assert line.strip()[:40] in shown
        # ... and from there the whole page at that commit, on the History screen.
        await pilot.press("h")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen), "History")
        history = app.screen
        await wait_until(pilot, lambda: history.shown is not None, "the page")
        assert history.shown.commit == first.commit
        assert history.query_one(TabbedContent).active == "source"
        await wait_until(pilot, lambda: cited_in_view(history), "the cited lines in view")


def _page_path(page_id: str) -> str:
    if page_id.endswith(".md"):
        return f"tenants/default/{page_id}"
    session, seq = page_id.rsplit("/", 1)
    return f"tenants/default/pages/{session}/{seq}.md"


def test_history_shows_versions_a_diff_and_the_page_at_any_commit(kb: KnowledgeBase) -> None:
    edit = edit_glossary(kb)
    asyncio.run(_history(kb, edit))


async def _history(kb: KnowledgeBase, edit: str) -> None:
    path = f"tenants/default/{GLOSSARY}"
    versions = kb.log(path)
    assert versions[0].sha == edit and len(versions) == 2
    created = versions[1].sha
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f3")
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        tree = screen.query_one(Tree)
        await wait_until(pilot, lambda: bool(tree.root.children), "the page tree")
        # Pages by tenant, then sessions and notes.
        tenant = tree.root.children[0]
        labels = [str(child.label) for child in tenant.children]
        assert labels[0] == "MEMORY.md"
        assert labels[1].startswith("sessions (10)") and labels[2].startswith("notes (4)")
        node = next(n for n in tenant.children[2].children if n.data.page_id == GLOSSARY)
        tree.focus()
        tree.move_cursor(node)
        await pilot.press("enter")
        await wait_until(pilot, lambda: screen.shown is not None, "the page")
        # The viewer: front matter as a table, the content rendered.
        table = screen.query_one("#front-matter", DataTable)
        fields = [str(table.get_row_at(n)[0]) for n in range(table.row_count)]
        assert fields[:2] == ["title", "created_at"]
        assert "Maintained by Femi Adeyemi" in screen.query_one("#page-body", Markdown).source
        assert screen.check_action("diff", ()) is True

        # Versions from git, newest first; a diff of the two.
        await pilot.press("v")
        versions_table = screen.query_one("#version-table", DataTable)
        assert versions_table.row_count == 2
        assert str(versions_table.get_row_at(0)[4]) == "Glossary: Femi Adeyemi maintains it now"
        assert str(versions_table.get_row_at(0)[2]) == "2026-03-24 09:15"
        await pilot.press("d")
        await wait_until(
            pilot, lambda: "@@" in rendered(screen.query_one("#diff-text", Static)), "the diff"
        )
        diff = rendered(screen.query_one("#diff-text", Static))
        assert f"{created[:7]} → {edit[:7]}" in diff
        assert f"-{GLOSSARY_OLD}" in diff
        assert "+" + GLOSSARY_NEW.splitlines()[0] in diff
        assert screen.query_one(TabbedContent).active == "diff"

        # The page as it was at its first version: pick it in the list.
        await pilot.press("v", "down", "enter")
        await wait_until(
            pilot, lambda: screen.shown is not None and screen.shown.commit == created, "v1"
        )
        assert GLOSSARY_OLD in screen.query_one("#page-body", Markdown).source

        # ... or at any commit, typed: the example's Q1 retrospective commit (after the note
        # was written, before the edit) shows the first version.
        q1 = next(c.sha for c in kb.log() if "q1-retrospective" in c.message)
        await pilot.press("g", *q1[:10], "enter")
        await wait_until(
            pilot, lambda: screen.shown is not None and screen.shown.commit == q1, "@q1"
        )
        assert screen.shown.version == created  # the version in effect at that commit
        assert GLOSSARY_OLD in screen.query_one("#page-body", Markdown).source
        # A commit from before the note existed is a toast, not a crash.
        first = kb.log()[-1].sha
        await pilot.press("g", *first[:10], "enter")
        await wait_until(pilot, lambda: bool(toasts(app)), "the toast")
        severity, _title, message = toasts(app)[-1]
        assert severity == "error" and "did not exist at" in message
        assert screen.shown.commit == q1  # still showing what it showed


async def open_audit(app: KbmemApp, pilot: Pilot) -> AuditScreen:
    """The Audit screen (f4), once it shows a turn."""
    await pilot.press("f4")
    screen = app.screen
    assert isinstance(screen, AuditScreen)
    await wait_until(pilot, lambda: screen.current is not None, "the turn")
    return screen


async def interval_cards(pilot: Pilot, screen: AuditScreen, count: int = 0) -> list[IntervalCard]:
    """The chosen turn's interval cards (tab i), once there are ``count`` (or any)."""
    await pilot.press("i")
    items = screen.query_one("#interval-list")
    await wait_until(
        pilot,
        lambda: (
            len(items.query(IntervalCard)) == count if count else bool(items.query(IntervalCard))
        ),
        "the intervals",
    )
    return list(items.query(IntervalCard))


def test_audit_shows_the_turn_just_made(kb: KnowledgeBase) -> None:
    asyncio.run(_audit(kb))


async def _audit(kb: KnowledgeBase) -> None:
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot)
        record = app.turn_records()[0]
        screen = await open_audit(app, pilot)
        assert screen.current.turn_id == "readme-demo/1"
        assert not screen.current.committed  # journaled, waiting for the batch
        cards = await interval_cards(pilot, screen)
        assert len(cards) == len(record.context) > 0
        for card in cards:
            item = card.resolved.item
            # Cited as the chat's sources are: the commit id right after the "@".
            head = rendered(card.query_one(".head", Static))
            assert head.startswith(f"{item.citation()} @{item.commit[:10]} · ")
            block = card.query_one(NumberedLines).cited()
            assert block is not None
            shown = rendered(block)
            # Resolved at the interval's own commit, the cited lines highlighted.
            for line in file_lines(kb, item.path, item.commit, item.start, item.end):
                assert line.strip()[:40] in shown
        # The tool calls and the reasoning are there too.
        await pilot.press("t")
        assert [v.call_name for v in screen.query(ToolCallView)] == [
            c.name for c in record.tool_calls
        ]
        await pilot.press("r")
        reasoning = screen.query_one("#reasoning-text", Markdown).source
        assert QUESTION in reasoning and "## Used" in reasoning

        # Commit now: the turn is read back from its snapshot in git.
        await pilot.press("c")
        await wait_until(
            pilot, lambda: screen.current is not None and screen.current.committed, "the commit"
        )
        committed = read_turn(kb, "default", "readme-demo", 1)
        assert committed.answer == record.answer
        assert [c.to_dict() for c in committed.context] == [c.to_dict() for c in record.context]
        assert app.status.pending_turns == 0
        # Nothing is pending any more: the footer greys the commit key out.
        assert screen.check_action("commit_now", ()) is None
        # The footer recomposes when the bindings change: its keys may be briefly absent.
        await wait_until(
            pilot,
            lambda: any(k.key == "c" and k.has_class("-disabled") for k in screen.query(FooterKey)),
            "grey c",
        )

        # Jump from an interval to its page at that commit.
        first = (await interval_cards(pilot, screen))[0].resolved.item
        screen.query_one("#interval-list").focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen), "History")
        history = app.screen
        await wait_until(pilot, lambda: history.shown is not None, "the page")
        assert history.shown.commit == first.commit
        assert history.shown.entry.page_id == first.page_id
        assert history.query_one(TabbedContent).active == "source"
        cited = history.query_one(NumberedLines).cited()
        assert cited is not None and history.query_one(NumberedLines).start == first.start
        await wait_until(pilot, lambda: cited_in_view(history), "the cited lines in view")


def test_audit_screen_shows_every_interval_the_turn_read(kb: KnowledgeBase) -> None:
    """As `kbmem audit` does: all that the turn's tool calls gave the agent, the cited
    interval first, for a turn recorded when the offline agent kept only what it cited."""
    asyncio.run(_audit_all_read(kb))


async def _audit_all_read(kb: KnowledgeBase) -> None:
    commit, ranges = commit_older_turn(kb, "older")
    app = KbmemApp(kb, "default", chat_id="next", cursor_blink=False, show_times=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f4")
        screen = app.screen
        assert isinstance(screen, AuditScreen)
        screen.select_turn("older/1")
        await wait_until(
            pilot,
            lambda: screen.current is not None and screen.current.turn_id == "older/1",
            "the turn",
        )
        cards = await interval_cards(pilot, screen, 3)
        assert [(c.resolved.item.start, c.resolved.item.end) for c in cards] == ranges
        heads = [rendered(c.query_one(".head", Static)) for c in cards]
        assert all(f"@{commit[:10]} · " in head for head in heads)
        assert "cited in the answer" in heads[0]
        assert all("shown to the agent" in head for head in heads[1:])
        for card in cards:  # each read at its commit, its lines highlighted
            item = card.resolved.item
            shown = rendered(card.query_one(NumberedLines).cited())
            for line in file_lines(kb, item.path, item.commit, item.start, item.end):
                assert line.strip()[:40] in shown


def test_audit_screen_reads_no_file_outside_the_tenants_pages(kb: KnowledgeBase) -> None:
    asyncio.run(_audit_refuses(kb))


async def _audit_refuses(kb: KnowledgeBase) -> None:
    with ChatSession(kb, "other", chat_id="spy") as chat:
        chat.send("Who is on the team?")
    roster = "tenants/default/notes/team-roster.md"
    plant_intervals(
        kb.root,
        turn_dir("other", "spy", 1),
        [{"page_id": "notes/team-roster.md", "path": roster, "lines": [1, 12], "cited": True}],
    )
    app = KbmemApp(kb, "other", chat_id="spy", cursor_blink=False, show_times=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_audit(app, pilot)
        (card,) = await interval_cards(pilot, screen)
        assert card.resolved.problem.startswith(f"refused: {roster!r} is not a page")
        assert not card.query(NumberedLines) and card.resolved.text == ""
        shown = " ".join(rendered(s) for s in card.query(Static))
        assert "refused" in shown and "Maya Lindqvist" not in shown


def test_audit_says_a_page_changed_since_and_which_commit_recorded_the_turn(
    kb: KnowledgeBase,
) -> None:
    """What `kbmem audit` says, the Audit screen says too: it showed the cited version of a
    page edited since with nothing to tell it from the page as it is now, named no commit
    for the turn, gave the tool calls' hits without the commit they were read at, and showed
    lines outside the file as an interval with no lines at all."""
    asyncio.run(_audit_changed(kb))


async def _audit_changed(kb: KnowledgeBase) -> None:
    with ChatSession(kb, "default", chat_id="asked") as chat:
        record = chat.send(QUESTION)
    recorded = kb.head()
    cited = next(c for c in record.context if c.cited)
    commit_edit(kb.root, cited.path, lambda old: b"Rewritten by hand.\n")
    plant_intervals(
        kb.root,
        turn_dir("default", "asked", 1),
        [
            {**cited.to_dict(), "lines": [cited.start, cited.end]},
            {
                "page_id": "notes/glossary.md",
                "path": "tenants/default/notes/glossary.md",
                "lines": [900, 901],
                "commit": cited.commit,
                "cited": True,
            },
        ],
    )
    app = KbmemApp(kb, "default", chat_id="next", cursor_blink=False, show_times=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_audit(app, pilot)
        # The two planted in the context, then the others the research gave the agent.
        read = turn_intervals(read_turn(kb, "default", "asked", 1))
        assert len(read) > 2
        cards = await interval_cards(pilot, screen, len(read))
        title = rendered(screen.query_one("#turn-title", Static))
        assert f"committed in @{recorded[:10]}" in title
        changed, outside, *shown = cards
        assert not any(card.resolved.item.cited for card in shown)
        assert changed.resolved.item.page_id == cited.page_id
        assert "page changed since" in rendered(changed.query_one(".head", Static))
        shown = rendered(changed.query_one(NumberedLines).cited())
        assert "Rewritten by hand" not in shown  # the version the answer read
        assert "outside the file" in outside.resolved.problem
        assert "outside the file" in rendered(outside.query_one(".problem", Static))
        assert "page changed since" not in rendered(outside.query_one(".head", Static))
        await pilot.press("t")
        (call,) = screen.query(ToolCallView)
        hits = rendered(call.result_view)
        assert f"@{cited.commit[:10]}" in hits


def test_audit_shows_what_the_agent_was_shown_of_a_turn_carried_in_part(
    kb: KnowledgeBase,
) -> None:
    """Asked when the offsite is, the briefing carries the Q1 retrospective's long summary
    turn in part: its card says so and shows that part, beside the lines at their commit."""
    asyncio.run(_audit_in_part(kb))


async def _audit_in_part(kb: KnowledgeBase) -> None:
    with ChatSession(kb, "default", chat_id="part") as chat:
        record = chat.send("When is the offsite?")
    (part,) = [c for c in record.context if c.shown]
    app = KbmemApp(kb, "default", chat_id="next", cursor_blink=False, show_times=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_audit(app, pilot)
        cards = await interval_cards(pilot, screen)
        (card,) = [c for c in cards if c.resolved.item.shown]
        assert card.resolved.item.citation() == part.citation()
        assert "carried in part" in rendered(card.query_one(".head", Static))
        shown = rendered(card.query_one(".shown", Static))
        assert "The agent was shown only:" in shown
        assert "offsite details to the team this week, Dara;" in shown
        assert "Went well:" not in shown
        assert all("carried in part" not in rendered(c.query_one(".head", Static))
                   for c in cards if c is not card)  # fmt: skip


def test_keys_that_arrive_in_a_burst_send_the_whole_message(kb: KnowledgeBase) -> None:
    """Keys queue up when the terminal sends them together (typing fast, tmux send-keys, a
    busy app): enter sends what was typed before it, all of it, and what was typed after it
    stays in the box for the next message. (Enter was a priority binding: it ran ahead of
    the queued keys and sent "Who owns the tide-window sched", and the rest was lost.)"""
    asyncio.run(_burst(kb))


async def _burst(kb: KnowledgeBase) -> None:
    app = KbmemApp(kb, "default", cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.chat.session is not None, "the chat to open")
        question = "Who owns the tide-window scheduler?"
        for key in [*question, "enter", *"and then"]:
            app.post_message(events.Key(key, key if len(key) == 1 else None))
        screen = app.screen
        assert isinstance(screen, ChatScreen)
        await wait_until(pilot, lambda: bool(screen.query(UserMessage)), "the question", 30)
        assert rendered(screen.query_one(UserMessage)).strip() == question
        await wait_until(pilot, lambda: not screen.running, "the answer")
        assert screen.query_one(PromptInput).text == "and then"


def test_audit_lists_a_damaged_turn_and_says_what_is_wrong(kb: KnowledgeBase) -> None:
    asyncio.run(_audit_damaged(kb))


async def _audit_damaged(kb: KnowledgeBase) -> None:
    with ChatSession(kb, "default", chat_id="hand") as chat:
        chat.send(QUESTION)
        chat.send("Who is on the team?")
    # A torn line in turn 1's tool calls, committed by hand: the turn cannot be read whole.
    calls = turn_dir("default", "hand", 1) + "tool_calls.jsonl"
    commit_edit(kb.root, calls, lambda old: old + b'{"broken": ')
    app = KbmemApp(kb, "default", chat_id="next", cursor_blink=False, show_times=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_audit(app, pilot)
        # Both turns are listed, newest first; the damaged one is marked so, not left out.
        assert screen.order == ["hand/2", "hand/1"]
        table = screen.query_one("#turn-table", DataTable)
        row = [str(cell) for cell in table.get_row("hand/1")]
        assert row[0] == "✗" and row[-1].startswith("damaged Which company")
        assert str(table.get_row("hand/2")[0]) == "✓"
        assert not [t for t in toasts(app) if t[0] != "information"]
        # Chosen, it says what is wrong (the file and the line), on every tab.
        table.focus()
        await pilot.press("down")
        await wait_until(pilot, lambda: screen.current.turn_id == "hand/1", "the damaged turn")
        damaged = screen.current
        assert damaged.damaged and damaged.record is None
        title = rendered(screen.query_one("#turn-title", Static))
        assert "hand/1 · damaged · committed" in title
        assert f"{calls}: line 2: malformed JSON" in " ".join(title.split())
        await pilot.press("i")
        items = screen.query_one("#interval-list")
        await wait_until(pilot, lambda: bool(items.query(ListItem)), "the intervals tab")
        assert not items.query(IntervalCard)
        assert "cannot be read" in rendered(items.query_one(Static))
        # Its reasoning.md is intact, and shown.
        assert QUESTION in screen.query_one("#reasoning-text", Markdown).source
        assert screen.check_action("open_interval", ()) is None
        await pilot.press("o", "t", "r", "a")
        # The readable turn next to it still shows whole.
        await pilot.press("up")
        await wait_until(
            pilot,
            lambda: screen.current.turn_id == "hand/2" and bool(items.query(IntervalCard)),
            "the readable turn",
        )
        assert not screen.current.damaged and screen.current.record is not None
        assert "damaged" not in rendered(screen.query_one("#turn-title", Static))
        assert app.is_running


def test_a_failing_tool_is_a_toast_not_a_crash(kb: KnowledgeBase, tmp_path: Path) -> None:
    asyncio.run(_failing(kb, tmp_path))


async def _failing(kb: KnowledgeBase, tmp_path: Path) -> None:
    app = KbmemApp(kb, "default", cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.chat.session is not None, "the chat to open")
        # The knowledge base goes away under the running app (an unmounted disk, a folder
        # moved): research cannot read git any more.
        shutil.move(kb.root, tmp_path / "moved-away")
        await pilot.press(*"[bold red]Where is the offsite?[/]", "enter")
        screen = app.screen
        assert isinstance(screen, ChatScreen)
        await wait_until(pilot, lambda: not screen.running, "the turn to fail")
        errors = [t for t in toasts(app) if t[0] == "error"]
        # The turn's failure says where: the knowledge base that is gone. (The background
        # index sync may fail too, and say so in its own toast.)
        assert any(
            title == "The turn failed" and str(kb.root) in message
            for _severity, title, message in errors
        ), errors
        assert screen.reply is not None and screen.reply.has_class("-failed")
        # Text from the user is never markup: the brackets show as typed.
        assert (
            rendered(screen.query_one(UserMessage)).strip() == "[bold red]Where is the offsite?[/]"
        )
        # The app is still alive and usable: History reports its own failure the same way.
        await pilot.press("f3")
        assert isinstance(app.screen, HistoryScreen)
        await wait_until(
            pilot, lambda: len([t for t in toasts(app) if t[0] == "error"]) > 1, "a toast"
        )
        assert app.is_running


def test_palette_commands_help_and_greyed_out_actions(kb: KnowledgeBase) -> None:
    asyncio.run(_palette(kb))


async def _palette(kb: KnowledgeBase) -> None:
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        from kbmem_tui.commands import KbmemCommands

        titles = [title for title, _help, _cb in KbmemCommands(app.screen).commands()]
        for wanted in (
            "chat: new",
            "kb: reindex",
            "kb: commit now",
            "view: history",
            "view: audit",
            "engine: choose model",
        ):
            assert wanted in titles
        assert all(": " in title for title in titles)
        await pilot.press("ctrl+p")
        await pilot.press(*"view: audit")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, AuditScreen), "Audit")
        # Nothing to open or commit yet: those keys are greyed out.
        assert app.screen.check_action("open_interval", ()) is None
        assert app.screen.check_action("commit_now", ()) is None
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        help_text = app.screen.query_one(Markdown).source
        assert "engine: choose model" in help_text and "F3" in help_text
        await pilot.press("escape")
        assert isinstance(app.screen, AuditScreen)
        # The chosen engine shows in the status bar (offline: no model configured).
        assert app.status.engine == "offline" and app.status.model is None


def test_choosing_the_engine_in_use_keeps_the_chat(kb: KnowledgeBase) -> None:
    asyncio.run(_same_engine(kb))


async def _same_engine(kb: KnowledgeBase) -> None:
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot)
        chat = app.screen
        assert isinstance(chat, ChatScreen)
        session = app.chat.session
        assert session is not None and session.chat_id == "readme-demo"

        async def choose(*keys: str, typed: str = "") -> None:
            app.clear_notifications()
            await pilot.press("ctrl+p", *"engine: choose")
            await pilot.pause(0.3)
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, ChoiceScreen), "the choice")
            await pilot.press(*keys)
            if typed:  # "another litellm model…" asks which
                await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen), "prompt")
                await pilot.press(*typed, "enter")
            await wait_until(pilot, lambda: app.screen is chat, "the chat screen")
            await wait_until(pilot, lambda: all(w.is_finished for w in app.workers), "workers")

        # The offline engine, in use (and highlighted): the chat and its conversation stay.
        await choose("enter")
        assert app.chat.session is session and not session.closed
        assert rendered(chat.query_one(UserMessage)).strip() == QUESTION
        assert [m for _s, _t, m in toasts(app)] == [
            "Already using the offline engine; the chat goes on."
        ]
        # Another model: a new chat, as before.
        await choose("down", "enter", typed="ollama/llama3")  # "another litellm model…"
        await wait_until(pilot, lambda: app.chat.session is not session, "the new chat")
        await wait_until(pilot, lambda: not chat.query(UserMessage), "the conversation cleared")
        llm = app.chat.session
        assert (llm.agent_name, llm.model) == ("llm", "ollama/llama3")
        assert (app.status.engine, app.status.model) == ("llm", "ollama/llama3")
        assert session.closed and llm.chat_id != "readme-demo"
        # That model, chosen again from the list (now highlighted): kept too.
        await choose("enter")
        assert app.chat.session is llm and not llm.closed
        assert [m for _s, _t, m in toasts(app)] == [
            "Already using the llm engine with ollama/llama3; the chat goes on."
        ]
        # Back to the offline engine: another new chat.
        await choose("home", "enter")
        await wait_until(pilot, lambda: app.chat.session is not llm, "the offline chat")
        assert app.chat.session.agent_name == "offline" and app.status.engine == "offline"


def test_research_steps_that_arrive_early_stay_under_their_call() -> None:
    """A warm researcher reports its plan before the research call's widget has composed its
    head line: the steps must still show under the head, not above it."""
    from textual.app import App

    class TraceApp(App[None]):
        def compose(self) -> ComposeResult:
            yield TracePanel(show_times=False)

    async def run() -> None:
        app = TraceApp()
        async with app.run_test() as pilot:
            panel = app.query_one(TracePanel)
            # All in one go, as the worker's events are handled: no await in between.
            panel.tool_call_started("call-1-1", "research", {"request": "Where is the offsite?"})
            plan = {"actions": [{"tool": "bm25", "query": "offsite"}]}
            panel.research_step("call-1-1", "plan", 0, plan)
            panel.research_step("call-1-1", "tool_call", 0, {"call": 0, "tool": "bm25"})
            panel.note("call-1-1", "waiting for the index to reach the latest commit…")
            await pilot.pause()
            view = panel.calls["call-1-1"]
            assert isinstance(view, ResearchCallView)
            kinds = [type(child).__name__ for child in view.children]
            assert view.children[0] is view.head, kinds
            assert kinds[1:] == ["StepLine", "ToolCallView", "StepLine"]
            assert "step 0: plan" in rendered(view.children[1])

    asyncio.run(run())


def test_the_message_box_keeps_every_line_of_a_paste(kb: KnowledgeBase) -> None:
    asyncio.run(_multi_line(kb))


async def _multi_line(kb: KnowledgeBase) -> None:
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, ChatScreen)
        prompt = screen.query_one(PromptInput)
        assert app.focused is prompt
        one_line = prompt.size.height
        # The footer tells the key for a new line (enter sends).
        assert footer_key(screen, "ctrl+j").description == "New line"
        assert footer_key(screen, "enter").description == "Send"
        # A pasted list keeps its lines, ctrl+j adds one, and the box grows with them.
        app.post_message(events.Paste(f"Two questions:\n- {QUESTION}"))
        await pilot.pause()
        await pilot.press("ctrl+j", *"- Who owned the pilot?")
        message = f"Two questions:\n- {QUESTION}\n- Who owned the pilot?"
        assert prompt.text == message
        await pilot.pause()
        assert prompt.size.height == one_line + 2
        # Enter sends all of it: shown, journaled and back under ↑ with every line.
        await pilot.press("enter")
        assert prompt.text == ""
        assert rendered(screen.query_one(UserMessage)).strip() == message
        await wait_until(pilot, lambda: bool(app.turn_records()), "the journaled turn")
        assert app.turn_records()[0].question == message
        await pilot.press("up")
        assert prompt.text == message
        # A long paste: the box stops growing at a few lines and scrolls instead.
        prompt.clear()
        app.post_message(events.Paste("\n".join(f"line {n}" for n in range(30))))
        await pilot.pause()
        assert prompt.region.height == 8 and prompt.max_scroll_y > 0  # borders included
        assert prompt.text.count("\n") == 29


def test_an_over_long_message_is_refused_before_it_is_sent(kb: KnowledgeBase) -> None:
    asyncio.run(_too_long(kb))


async def _too_long(kb: KnowledgeBase) -> None:
    from kbmem.config import MAX_REQUEST_CHARS

    paragraph = "The winter timetable keeps the dawn sailing from Skerrick on weekdays. "
    text = "\n".join([paragraph] * (MAX_REQUEST_CHARS // len(paragraph) + 1))
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, ChatScreen)
        prompt = screen.query_one(PromptInput)
        app.post_message(events.Paste(text))
        await pilot.pause()
        await pilot.press("enter")
        # Refused here, with the limit and the length; nothing is sent and the text stays.
        severity, title, message = toasts(app)[-1]
        assert (severity, title) == ("warning", "Message too long")
        assert f"{len(text.strip()):,} characters" in message
        assert f"{MAX_REQUEST_CHARS:,}" in message
        assert prompt.text == text
        assert not screen.query(UserMessage) and screen.reply is None and not screen.running


def test_a_turn_that_fails_before_it_starts_stops_thinking(kb: KnowledgeBase) -> None:
    asyncio.run(_fails_before_start(kb))


async def _fails_before_start(kb: KnowledgeBase) -> None:
    from kbmem.config import MAX_REQUEST_CHARS

    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, ChatScreen)
        # Sent past the message box (as the benchmark sends), the chat refuses it before the
        # turn starts: the reply says it failed, and its header no longer says "thinking…".
        screen.send("x" * (MAX_REQUEST_CHARS + 1))
        reply = screen.reply
        assert reply is not None
        await wait_until(pilot, lambda: bool(reply.query(".error")), "the refusal")
        assert rendered(reply.query_one(".who", Static)).strip() == "kbmem · failed"
        error = rendered(reply.query_one(".error", Static))
        assert f"longer than {MAX_REQUEST_CHARS} characters" in error
        assert not screen.running


def test_the_help_shows_its_own_keys(kb: KnowledgeBase) -> None:
    asyncio.run(_help_keys(kb))


async def _help_keys(kb: KnowledgeBase) -> None:
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f3")
        assert footer_key(app.screen, "p").description == "Page"
        await pilot.press("f1")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        await pilot.pause()
        # Its footer, on the bottom row, offers only what works here: History's keys do not.
        keys = [(k.key, k.description) for k in help_screen.query(FooterKey)]
        assert keys == [("escape", "Close")]
        bottom, _region = help_screen.get_widget_at(0, SIZE[1] - 1)
        assert help_screen.query_one(Footer) in bottom.ancestors_with_self
        await pilot.press("escape")
        assert isinstance(app.screen, HistoryScreen)


def test_the_dialogs_show_their_own_keys(kb: KnowledgeBase) -> None:
    edit = edit_glossary(kb)
    asyncio.run(_dialog_keys(kb, edit))


async def _dialog_keys(kb: KnowledgeBase, edit: str) -> None:
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await history_scenario(pilot)
        history = app.screen
        assert isinstance(history, HistoryScreen)
        assert footer_key(history, "g").description == "At rev"

        def own_footer(dialog: Screen) -> list[tuple[str, str]]:
            # Its footer is on the bottom row, over History's, whose keys do not apply here.
            bottom, _region = dialog.get_widget_at(0, SIZE[1] - 1)
            assert dialog.query_one(Footer) in bottom.ancestors_with_self
            return [(k.key, k.description) for k in dialog.query(FooterKey)]

        # A line of text: "g" asks for a revision; enter (shown in the footer) sends it.
        await pilot.press("g")
        prompt = app.screen
        assert isinstance(prompt, PromptScreen)
        await pilot.pause()
        assert own_footer(prompt) == [("enter", "OK"), ("escape", "Cancel")]
        # Typed ahead, all at once (as into a busy app): enter comes after every character.
        parent = kb.resolve(f"{edit}~1")
        for key in [*parent[:12], "enter"]:
            app.post_message(events.Key(key, key if len(key) == 1 else "\r"))
        await wait_until(pilot, lambda: app.screen is history, "the prompt to close")
        await wait_until(
            pilot, lambda: history.shown is not None and history.shown.commit != edit, "the rev"
        )
        assert history.shown.commit == parent

        # A choice: the engine; escape leaves it as it was.
        await pilot.press("ctrl+p", *"engine: choose")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ChoiceScreen), "the choice")
        choice = app.screen
        await pilot.pause()
        assert own_footer(choice) == [("enter", "Choose"), ("escape", "Cancel")]
        await pilot.press("escape")
        assert app.screen is history


NARROW = (80, 24)


def all_keys_show(screen: Screen) -> list[str]:
    """The footer's keys, each checked to be on screen whole, in front of anything else."""
    keys = []
    for key in screen.query(FooterKey):
        region = key.region
        assert region.width and region.right <= screen.size.width, (key.key, region)
        assert region.bottom <= screen.size.height, (key.key, region)
        for x in (region.x, region.right - 1):
            assert screen.get_widget_at(x, region.y)[0] is key, (key.key, region)
        keys.append(key.key)
    return keys


def test_a_narrow_terminal_shows_every_key_and_readable_panes(kb: KnowledgeBase) -> None:
    asyncio.run(_narrow(kb))


async def _narrow(kb: KnowledgeBase) -> None:
    width, height = NARROW
    app = make_app(kb)
    async with app.run_test(size=NARROW) as pilot:
        await ask(pilot)
        chat = app.screen
        assert isinstance(chat, ChatScreen)
        await pilot.pause()
        # The status bar says everything it can in the width: the pending turns too.
        bar = chat.query_one(StatusBar)
        status = rendered(bar).strip()
        assert cell_len(status) <= bar.content_size.width and status.endswith("pending 1/5")
        assert status.startswith("example-kb │ default │ offline │ index @")
        # Every key, the other screens' among them; the message box's hint fits it.
        keys = ["enter", "ctrl+j", "ctrl+t", "ctrl+o", "ctrl+n", "f1", "f2", "f3", "f4"]
        assert all_keys_show(chat) == keys
        prompt = chat.query_one(PromptInput)
        assert cell_len(str(prompt.placeholder)) <= prompt.scrollable_content_region.width
        assert "↑: history" in str(prompt.placeholder)
        assert chat.query_one("#conversation").size.width >= 48

        await pilot.press("f3")
        history = app.screen
        assert isinstance(history, HistoryScreen)
        await pilot.pause()
        assert "f4" in all_keys_show(history)
        # The tree above the page, each as wide as the screen; the page gets more rows.
        page, tree = history.query_one("#page-pane").region, history.query_one(Tree).region
        assert page.width == tree.width == width and page.y >= tree.bottom
        assert page.height > tree.height

        await pilot.press("f4")
        audit = app.screen
        assert isinstance(audit, AuditScreen)
        await wait_until(pilot, lambda: audit.current is not None, "the turn")
        await pilot.pause()
        assert all_keys_show(audit)[-1] == "f4"
        # The turns above the turn, each as wide as the screen: no column or tab cut off.
        table = audit.query_one("#turn-table", DataTable)
        assert table.virtual_size.width <= table.scrollable_content_region.width
        detail = audit.query_one("#turn-detail").region
        assert detail.width == width and detail.y >= table.region.bottom
        for tab in audit.query(Tab):
            assert tab.region.right <= width, tab.label

        # A dialog's footer covers the one below (two rows here) and shows its own keys.
        await pilot.press("f1")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        await pilot.pause()
        assert all_keys_show(help_screen) == ["escape"]
        below = audit.query_one(Footer).region
        assert help_screen.query_one(Footer).region == below and below.bottom == height
        await pilot.press("escape")

        # Wide again: one row of keys, the command palette's on the right; labels back.
        await pilot.resize_terminal(140, 42)
        await pilot.pause(0.3)
        keys = all_keys_show(audit)
        assert keys[-1] == "ctrl+p" and len({k.region.y for k in audit.query(FooterKey)}) == 1
        assert rendered(audit.query_one(StatusBar)).startswith("KB example-kb │ tenant default")
        # The turns beside the turn.
        assert audit.query_one("#turn-detail").region.y == audit.query_one("#turn-pane").region.y


def test_the_interval_dialog_cites_the_commit_as_one_token(kb: KnowledgeBase) -> None:
    asyncio.run(_interval_title(kb))


async def _interval_title(kb: KnowledgeBase) -> None:
    head = kb.head()
    assert head is not None
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await app.push_screen(IntervalScreen(Citation(GLOSSARY, 1, 2, head), "default"))
        dialog = app.screen
        await wait_until(pilot, lambda: bool(dialog.query(NumberedLines)), "the lines")
        title = rendered(dialog.query_one("#interval-title", Static)).strip()
        assert title == f"[{GLOSSARY}:L1-L2] @{head[:10]}"


def test_a_wrapped_diff_line_keeps_its_marker_and_colour(kb: KnowledgeBase) -> None:
    edit_glossary(kb)
    asyncio.run(_wrapped_diff(kb))


async def _wrapped_diff(kb: KnowledgeBase) -> None:
    app = make_app(kb)
    # Narrow: the diff pane is the screen's 60 columns, so the edited lines wrap.
    async with app.run_test(size=(60, 40)) as pilot:
        await history_scenario(pilot)
        diff = app.screen.query_one("#diff-text", Static)
        strips = [diff.render_line(y) for y in range(diff.size.height)]
        rows = [strip.text for strip in strips]
        first = next(n for n, row in enumerate(rows) if row.startswith("-here, add it."))
        # Every row the removed line takes starts with its "-" and has its colour.
        wanted, got, n = "".join(GLOSSARY_OLD.split()), "", first
        while got != wanted:
            assert rows[n].startswith("-"), rows[first : n + 1]
            got += "".join(rows[n][1:].split())
            n += 1
        assert n - first >= 2  # it did wrap
        colours = {
            segment.style.color
            for strip in strips[first:n]
            for segment in strip
            if segment.text.strip() and segment.style is not None
        }
        assert len(colours) == 1


def test_history_at_80_columns_shows_every_label_whole(kb: KnowledgeBase) -> None:
    asyncio.run(_history_labels(kb))


async def _history_labels(kb: KnowledgeBase) -> None:
    app = make_app(kb)
    async with app.run_test(size=NARROW) as pilot:
        await pilot.press("f3")
        history = app.screen
        assert isinstance(history, HistoryScreen)
        tree = history.query_one(Tree)
        await wait_until(pilot, lambda: bool(tree.root.children), "the page tree")
        tree.root.expand_all()
        tree.focus()
        await pilot.pause()
        # No line of the tree is wider than the tree: nothing to scroll sideways to.
        assert tree.virtual_size.width <= tree.scrollable_content_region.width
        # Every entry shows its whole label on its row: sessions, their pages, notes.
        labels = []
        for line in range(tree.last_line + 1):
            tree.cursor_line = line
            await pilot.pause()
            node = tree.get_node_at_line(line)
            assert node is not None
            row = tree.render_line(line - round(tree.scroll_offset.y)).text
            assert f" {node.label.plain}" in row, (node.label.plain, row)
            labels.append(node.label.plain)
        assert "2026-01-12-architecture-review" in labels
        assert "notes/architecture-overview.md" in labels
        assert "Choose a page in the tree." in rendered(history.query_one("#page-title", Static))
        # A page chosen in the tree gets the screen's width below it.
        node = tree.root.children[0].children[2].children[0]  # the first note
        tree.move_cursor(node)
        await pilot.press("enter")
        await wait_until(pilot, lambda: history.shown is not None, "the page")
        pane = history.query_one("#page-pane").region
        assert pane.width == NARROW[0] and pane.y >= tree.region.bottom


CROWDED = (
    "llm · openai/gpt-4o-mini",
    "llm · gpt-4o-mini",
    "gpt-4o-mini",
    "index syncing 120/253",
    "syncing 120/253",
    "embedder loading…",
    "example-kb",
    "default",
)


@pytest.mark.parametrize(
    "busy", ["researching…", "stopping the turn, then committing…"], ids=["turn", "quit"]
)
def test_a_crowded_status_bar_drops_its_least_important_parts(kb: KnowledgeBase, busy: str) -> None:
    asyncio.run(_crowded_status(kb, busy))


async def _crowded_status(kb: KnowledgeBase, busy: str) -> None:
    app = KbmemApp(kb, "default", "openai/gpt-4o-mini", kb_label="example-kb", background=False)
    async with app.run_test(size=NARROW) as pilot:
        # What the workers set while a turn runs as the index syncs and the model loads.
        app.set_status(
            index_known=True, syncing=True, sync_progress="120/253", embedder="loading", busy=busy
        )
        await pilot.pause()
        bar = app.screen.query_one(StatusBar)
        status = rendered(bar).strip()
        assert cell_len(status) <= bar.content_size.width, status
        # Whole parts, never one cut in a word; what is running and what is pending stay.
        parts = status.split(" │ ")
        assert parts[-2:] == ["pending 0/5", busy], status
        assert all(part in CROWDED for part in parts[:-2]), status
        assert "syncing 120/253" in status  # the index's progress outlasts names and labels

        # Wide enough, the whole line, as before.
        await pilot.resize_terminal(170, 42)
        await pilot.pause(0.3)
        assert rendered(bar).strip() == (
            "KB example-kb │ tenant default │ llm · openai/gpt-4o-mini │ index syncing 120/253"
            f" │ embedder loading… │ turns pending 0/5 │ {busy}"
        )


def test_a_dialog_names_its_keys_once_in_its_footer(kb: KnowledgeBase) -> None:
    asyncio.run(_dialog_hints(kb))


async def _dialog_hints(kb: KnowledgeBase) -> None:
    app = make_app(kb)

    def said_once(dialog: Screen) -> None:
        """The footer names the dialog's keys; nothing in the dialog says them again."""
        keys = list(dialog.query(FooterKey))
        assert {k.key for k in keys} >= {"enter", "escape"}
        body = " ".join(rendered(s) for s in dialog.query(".dialog Static")).lower()
        for word in {w.lower() for k in keys for w in (k.key, k.key_display, k.description)}:
            assert not re.search(rf"(?<!\w){re.escape(word)}(?!\w)", body), (word, body)

    async with app.run_test(size=NARROW) as pilot:
        await history_scenario(pilot)
        history = app.screen
        await pilot.press("g")
        prompt = app.screen
        assert isinstance(prompt, PromptScreen)
        await pilot.pause()
        said_once(prompt)
        await pilot.press("escape")
        assert app.screen is history

        await pilot.press("ctrl+p", *"engine: choose")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ChoiceScreen), "the choice")
        choice = app.screen
        await pilot.pause()
        said_once(choice)
        await pilot.press("escape")
        assert app.screen is history


# What a model or a page may say that the terminal must not obey, and HTML that Textual's
# Markdown dropped: an escape sequence that retitles the window, one that clears the screen.
TERMINAL_ESCAPES = "\x1b]0;pwned\x07\x1b[2J"
ARCHIVE = "The Orkney archive lives under tenants/<tenant>/orkney-archive on the share"


def test_control_characters_and_html_in_memory_show_as_text(kb: KnowledgeBase) -> None:
    asyncio.run(_escapes(kb))


async def _escapes(kb: KnowledgeBase) -> None:
    turns = [("Wren Alsop", f"{ARCHIVE} {TERMINAL_ESCAPES}since Monday.")]
    ingest_session(kb, session_from_mapping(talk("default", "s-archive", turns)))
    app = make_app(kb)
    async with app.run_test(size=(200, 50)) as pilot:
        await ask(pilot, "Where does the Orkney archive live?")
        await wait_until(pilot, lambda: bool(app.turn_records()), "the journaled turn")
        assert "\x1b" in app.turn_records()[0].answer  # the offline answer quotes the turn
        await settle(pilot)
        shown = screen_text(app)
        assert "\x1b" not in shown and "\x07" not in shown
        assert ARCHIVE in shown and "\\x1b]0;pwned\\x07\\x1b[2J" in shown
        await pilot.press("f4")
        await wait_until(pilot, lambda: isinstance(app.screen, AuditScreen), "Audit")
        await settle(pilot)
        shown = screen_text(app)
        assert "\x1b" not in shown and ARCHIVE in shown


def screen_text(app: KbmemApp) -> str:
    """Every character the screen shows (what the terminal is sent, without the styles)."""
    svg = app.export_screenshot()
    return html.unescape("".join(re.findall(r"<text[^>]*>(.*?)</text>", svg))).replace("\xa0", " ")


def test_a_model_answer_with_html_and_escapes_shows_as_written() -> None:
    asyncio.run(_model_markup())


async def _model_markup() -> None:
    # A model writes anything: the pieces come as streamed (a CRLF and an escape cut in two).
    answer = (
        "Pages are under tenants/<tenant>/pages <!-- see the README --> and <b>nowhere</b>"
        " else.\r\nSee [bold red]the roster[/] \x1b]0;pwned\x07[notes/team-roster.md:L21-L23]"
    )
    cuts = sorted({*range(0, len(answer), 7), answer.index("\n"), answer.index("]0;")})
    pieces = [answer[a:b] for a, b in zip(cuts, [*cuts[1:], len(answer)], strict=True)]
    assert any(p.endswith("\r") for p in pieces) and any(p.endswith("\x1b") for p in pieces)

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield AgentReply("kbmem")

    app = Host()
    async with app.run_test(size=(160, 12)) as pilot:
        reply = app.query_one(AgentReply)
        for piece in pieces:
            await reply.write(piece)
        await reply.finish("complete", answer)
        await pilot.pause()
        shown = screen_text(app)
    assert "tenants/<tenant>/pages <!-- see the README --> and <b>nowhere</b> else." in shown
    assert "See [bold red]the roster[/]" in shown
    assert "\\x1b]0;pwned\\x07notes/team-roster.md:L21-L23" in shown  # a citation's link
    assert "\x1b" not in shown and "\\r" not in shown
