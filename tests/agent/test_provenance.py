"""Provenance snapshots: what each file of a turn holds, reading a turn back from git, safe
path segments, and an audit that resolves intervals at their commits after the page changed."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
import yaml
from helpers.kbgit import commit_edit, head, plant_intervals
from helpers.turns import QUESTION, ROSTER, TENANT, commit_chat, commit_older_turn, commit_turn

from kbmem.agent.journal import ChatJournal
from kbmem.agent.provenance import (
    SNAPSHOT_FILES,
    TurnFormatError,
    audit_turn,
    check_turn_number,
    last_turn,
    list_turns,
    parse_turn_id,
    read_turn,
    render_audit,
    turn_dir,
)
from kbmem.agent.records import TurnRecord
from kbmem.agent.session import ChatSession, check_chat_id
from kbmem.errors import NotFound, ValidationError
from kbmem.store.repository import KnowledgeBase


def test_snapshot_files_hold_the_turn(kb: KnowledgeBase) -> None:
    with ChatSession(kb, TENANT, chat_id="snap") as chat:
        record = chat.send(QUESTION)
    folder = turn_dir(TENANT, "snap", 1)
    assert folder == f"tenants/{TENANT}/turns/snap/1/"
    files = {name: kb.read_bytes(folder + name).decode() for name in SNAPSHOT_FILES}

    assert files["answer.md"] == record.answer + "\n"

    reasoning = files["reasoning.md"]
    assert QUESTION in reasoning and "`research`" in reasoning and "## Used" in reasoning
    assert "step 0 plan:" in reasoning  # the researcher's plan, step by step
    # ...including the search in the voice of the person asked about, among their turns.
    assert "dense 'my onboarding buddy' among Femi Adeyemi's turns" in reasoning
    assert all(c.citation() in reasoning for c in record.context)

    calls = [json.loads(line) for line in files["tool_calls.jsonl"].splitlines()]
    assert [c["name"] for c in calls] == ["research"]
    call = calls[0]
    assert call["arguments"] == {"request": QUESTION} and call["error"] is None
    assert call["started_at"] <= call["finished_at"] and call["result_chars"] > 100
    assert call["intervals"] and {"page_id", "path", "start", "end", "commit"} <= set(
        call["intervals"][0]
    )

    pack = yaml.safe_load(files["context_pack.yaml"])
    assert pack["question"] == QUESTION and pack["status"] == "complete"
    assert pack["chat_id"] == "snap" and pack["turn"] == 1 and pack["agent"] == "offline"
    assert len(pack["intervals"]) == len(record.context) > 0
    for item in pack["intervals"]:
        assert set(item) >= {"page_id", "path", "lines", "commit", "retriever", "score"}
        start, end = item["lines"]
        assert 1 <= start <= end and len(item["commit"]) == 40
        assert kb.read_bytes(item["path"], item["commit"])  # the version cited exists

    again = read_turn(kb, TENANT, "snap", 1)
    assert (again.question, again.answer, again.status) == (QUESTION, record.answer, "complete")
    assert [c.citation() for c in again.context] == [c.citation() for c in record.context]
    assert [c.commit for c in again.context] == [c.commit for c in record.context]
    assert [c.name for c in again.tool_calls] == ["research"]


def test_an_audit_shows_what_an_older_turn_read_not_only_what_it_cited(
    kb: KnowledgeBase,
) -> None:
    """A turn committed when the offline agent recorded only the intervals it cited still
    has all that its research gave it in its tool calls: the audit reads them from there,
    marked as shown to the agent, each once."""
    commit, ranges = commit_older_turn(kb, "older")
    audit = audit_turn(kb, TENANT, "older", 1)
    assert [(r.item.start, r.item.end) for r in audit.intervals] == ranges
    assert [r.item.cited for r in audit.intervals] == [True, False, False]
    assert all(r.error is None and r.text for r in audit.intervals)
    assert {r.item.call_id for r in audit.intervals} == {"call-1-1"}
    assert [r.item.score for r in audit.intervals] == [0.5, 0.4, 0.3]
    text = render_audit(audit)
    assert "Intervals the turn read (3, 1 cited by the answer)" in text
    for start, end in ranges[1:]:
        line = f"  [notes/team-roster.md:L{start}-L{end}] {ROSTER} @ {commit[:10]} (bm25"
        assert line in text
    assert text.count("; shown to the agent)") == 2 and text.count("; cited)") == 1
    assert len(audit.to_dict()["intervals"]) == 3


def test_turn_ids_and_chat_ids_are_safe_path_segments() -> None:
    for bad in ("../x", "a/b", "", ".hidden", "x" * 101, "a b", "a\x00b"):
        with pytest.raises(ValidationError):
            check_chat_id(bad)
    for bad in ("0", "01", "-1", "1/2", "..", "x", "1000000", "\u00b2", " 1"):
        with pytest.raises(ValidationError, match="must be a whole number from 1 to 999999"):
            check_turn_number(bad)
    with pytest.raises(ValidationError):
        turn_dir(TENANT, "../../etc", 1)
    with pytest.raises(ValidationError):
        turn_dir("../other", "chat", 1)
    assert parse_turn_id("my-chat.2/12") == ("my-chat.2", 12)
    for bad in ("12", "chat/", "/3", "chat/0", "../x/1"):
        with pytest.raises(ValidationError):
            parse_turn_id(bad)


def test_audit_resolves_intervals_at_their_commit_after_the_page_changed(
    kb: KnowledgeBase,
) -> None:
    with ChatSession(kb, TENANT, chat_id="audited") as chat:
        record = chat.send(QUESTION)
    cited = [c for c in record.context if c.cited]
    assert cited
    target = cited[0]
    before = kb.read_bytes(target.path, target.commit).decode().split("\n")
    original = "\n".join(before[target.start - 1 : target.end])
    # Someone rewrites the cited lines (and shifts everything by adding lines on top).
    current = kb.read_bytes(target.path).decode().split("\n")
    edited = current[: target.start - 1] + ["REWRITTEN"] * (target.end - target.start + 1)
    edited += current[target.end :]
    edited.insert(target.start - 1, "An extra line written later.")
    kb.commit_files({target.path: "\n".join(edited).encode()}, "Edit a page by hand")

    audit = audit_turn(kb, TENANT, "audited", 1)
    assert audit.committed and audit.recorded_in is not None
    resolved = {r.item.citation(): r for r in audit.intervals}
    assert resolved[target.citation()].text == original
    assert resolved[target.citation()].changed_since is True
    assert resolved[target.citation()].error is None
    text = render_audit(audit)
    assert QUESTION in text and record.answer.split("\n")[1] in text
    assert "research" in text and "page changed since" in text
    assert all(f"    | {line}" in text for line in original.split("\n"))
    assert "REWRITTEN" not in text

    # Still resolves after the page is deleted outright.
    kb.commit_files({target.path: None}, "Delete the page")
    gone = audit_turn(kb, TENANT, "audited", 1)
    assert {r.item.citation(): r.text for r in gone.intervals}[target.citation()] == original


def test_turns_are_listed_from_git_and_from_the_journal(kb: KnowledgeBase) -> None:
    chat = ChatSession(kb, TENANT, chat_id="listed", batch_turns=2)
    for question in (QUESTION, "What is the team's monthly AWS budget?", "Who owns FL-212?"):
        chat.send(question)
    listed = list_turns(kb, TENANT, "listed").turns
    assert [(t.turn, t.committed) for t in listed] == [(1, True), (2, True), (3, False)]
    pending = audit_turn(kb, TENANT, "listed", 3)
    assert pending.record.question == "Who owns FL-212?" and not pending.committed
    assert "journaled, not committed yet" in render_audit(pending)
    chat.close()
    assert [t.committed for t in list_turns(kb, TENANT, "listed").turns] == [True, True, True]
    with pytest.raises(NotFound):
        audit_turn(kb, TENANT, "listed", 4)


def test_a_listing_of_every_turn_reads_each_turn_once(
    kb: KnowledgeBase,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An open chat's journal holds every turn since it opened, committed or not: listing
    every turn (as the TUI's Audit does) reads the committed ones from git only, and parses
    of the journal only the turn git lacks; an audit of that turn parses it alone."""
    chat = ChatSession(kb, TENANT, chat_id="open", batch_turns=2)
    for question in (QUESTION, "Who owns FL-212?") * 2 + ("What is the AWS budget?",):
        chat.send(question)
    parsed: list[int] = []
    from_dict = TurnRecord.from_dict
    monkeypatch.setattr(
        TurnRecord, "from_dict", classmethod(lambda _c, d: parsed.append(d["turn"]) or from_dict(d))
    )
    read: list[str] = []
    read_blob = kb.read_blob
    monkeypatch.setattr(kb, "read_blob", lambda blob: read.append(blob) or read_blob(blob))
    listed = list_turns(kb, TENANT)
    assert [(t.turn_id, t.committed) for t in listed.turns] == [
        ("open/1", True),
        ("open/2", True),
        ("open/3", True),
        ("open/4", True),
        ("open/5", False),
    ]
    assert (listed.total, listed.next_offset) == (5, None)
    assert parsed == [5] and len(read) == 3 * 4, (parsed, len(read))
    parsed.clear()
    assert audit_turn(kb, TENANT, "open", 5).record.question == "What is the AWS budget?"
    assert parsed == [5]
    chat.close()


def test_the_last_turn_is_found_reading_each_chats_last_turn_only(
    empty_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``kbmem audit --last`` reads the last turn of each chat, not every turn: the newest
    turn of a chat is its last."""
    commit_chat(empty_kb, "long", 60)
    commit_chat(empty_kb, "later", 3, started=1000.0)
    commit_chat(empty_kb, "earlier", 2, started=0.0)
    read: list[str] = []
    read_blob = empty_kb.read_blob
    monkeypatch.setattr(empty_kb, "read_blob", lambda blob: read.append(blob) or read_blob(blob))
    assert last_turn(empty_kb, TENANT) == ("later", 3)
    assert len(read) == 3 * 3, len(read)
    with pytest.raises(NotFound, match="has no chat turns yet"):
        last_turn(empty_kb, "other")


def test_audit_refuses_intervals_outside_the_tenants_pages(kb: KnowledgeBase) -> None:
    """A snapshot edited by hand to cite another tenant's page, or a file of the tenant that
    is no page, is audited without reading that file: the interval says why."""
    with ChatSession(kb, "other", chat_id="spy") as chat:
        chat.send("Who is on the team?")
    commit = head(kb.root)
    foreign = "is not a page of tenant 'other'"
    planted = [  # (path, page id, why it is refused)
        (f"tenants/{TENANT}/notes/team-roster.md", "notes/team-roster.md", foreign),
        (f"tenants/other/../{TENANT}/notes/team-roster.md", "notes/team-roster.md", foreign),
        (f"/tenants/{TENANT}/notes/team-roster.md", "notes/team-roster.md", foreign),
        ("tenants/other/MEMORY.md", "MEMORY.md", foreign),  # the tenant's own file, no page
        ("tenants/other/turns/spy/1/answer.md", "turns/spy/1/answer.md", foreign),
        ("tenants/other/pages/chat-spy/1.md", "notes/team-roster.md", "does not live at"),
    ]
    plant_intervals(
        kb.root,
        turn_dir("other", "spy", 1),
        [
            {"page_id": page_id, "path": path, "lines": [1, 12], "commit": commit, "cited": True}
            for path, page_id, _why in planted
        ],
    )

    audit = audit_turn(kb, "other", "spy", 1)
    assert audit.committed and [r.item.path for r in audit.intervals] == [p for p, *_ in planted]
    for resolved, (path, _page_id, why) in zip(audit.intervals, planted, strict=True):
        assert resolved.text == "" and resolved.changed_since is False
        assert resolved.error and resolved.error.startswith("refused: ") and why in resolved.error
        assert resolved.error.endswith("; it was not read") and repr(path) in resolved.error
    text = render_audit(audit)
    assert text.count("    ! refused: ") == len(planted)
    for shown in (text, json.dumps(audit.to_dict())):
        assert "Maya Lindqvist" not in shown and "# Team roster" not in shown


# (file, how it was damaged: its bytes -> new bytes, None to delete it, what the error says)
DAMAGES: dict[str, tuple[str, Callable[[bytes], bytes | None], str]] = {
    "a torn call": (
        "tool_calls.jsonl",
        lambda old: old + b'{"broken": ',
        "line 2: malformed JSON (Expecting value at column 12)",
    ),
    "a call that is no object": ("tool_calls.jsonl", lambda old: old + b"[1]\n", "line 2: must"),
    "a call with no id": ("tool_calls.jsonl", lambda _: b'{"name": "x"}\n', "line 1: missing"),
    "an answer not in UTF-8": ("answer.md", lambda old: old + b"\xff\n", "line 2: not UTF-8"),
    "an interval that is no mapping": (
        "context_pack.yaml",
        lambda old: old.replace(b"intervals: []", b"intervals: [3]"),
        "interval 1 must be a mapping",
    ),
    "a context pack that is no YAML": ("context_pack.yaml", lambda _: b"a: [", "malformed YAML"),
    "a deleted answer": ("answer.md", lambda _: None, "missing, though the turn's folder is"),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_turn_is_named_and_still_listed(empty_kb: KnowledgeBase, damage: str) -> None:
    """A snapshot file edited by hand so that it cannot be read: reading the turn names the
    file and the line (exit 2, HTTP 422: the stored data is at fault), and the turn is still
    listed, as damaged: an auditor must see that it exists."""
    folder = commit_turn(empty_kb, "hand", 1)
    commit_turn(empty_kb, "hand", 2, "Who owns FL-212?")
    name, change, problem = DAMAGES[damage]
    commit_edit(empty_kb.root, folder + name, change)

    with pytest.raises(TurnFormatError) as caught:
        audit_turn(empty_kb, TENANT, "hand", 1)
    error = caught.value
    assert str(error).startswith(f"{folder}{name}: ") and problem in str(error)
    assert (error.exit_code, error.http_status) == (2, 422)
    listed = {t.turn: t for t in list_turns(empty_kb, TENANT, "hand").turns}
    assert (listed[1].status, listed[1].committed, listed[1].problem) == (
        "damaged",
        True,
        str(error),
    )
    # Its question, when its context_pack.yaml still gives it.
    assert listed[1].question == ("" if damage == "a context pack that is no YAML" else QUESTION)
    assert (listed[2].status, listed[2].problem) == ("complete", None)
    assert audit_turn(empty_kb, TENANT, "hand", 2).record.question == "Who owns FL-212?"


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_chat_with_a_damaged_turn_opens_while_its_exchanges_read(
    empty_kb: KnowledgeBase, damage: str
) -> None:
    """Opening a chat reads each committed turn's question and answer (its pages are rebuilt
    from them at the next batch). Damaged tool calls do not stop that: the chat opens with
    every exchange. A damaged question or answer does, naming the file: rebuilding the
    chat's pages without that exchange would drop it from memory."""
    folder = commit_turn(empty_kb, "hand", 1)
    commit_turn(empty_kb, "hand", 2, "Who owns FL-212?")
    name, change, problem = DAMAGES[damage]
    commit_edit(empty_kb.root, folder + name, change)
    if name == "tool_calls.jsonl":
        with ChatSession(empty_kb, TENANT, chat_id="hand") as chat:
            assert [(n, q) for n, q, _a in chat.history] == [
                (1, QUESTION),
                (2, "Who owns FL-212?"),
            ]
            assert chat.next_turn == 3
    else:
        with pytest.raises(TurnFormatError, match=problem.split(" (")[0]):
            ChatSession(empty_kb, TENANT, chat_id="hand")


def test_an_unknown_chat_is_not_found_but_an_open_one_has_no_turns_yet(
    empty_kb: KnowledgeBase,
) -> None:
    assert list_turns(empty_kb, TENANT).turns == []  # no chat at all: nothing to list, no error
    commit_turn(empty_kb, "theirs", 1, tenant="other")
    for chat_id in ("nope", "theirs"):  # another tenant's chat is none of this one's
        with pytest.raises(NotFound, match=f"tenant 'default' has no chat '{chat_id}'"):
            list_turns(empty_kb, TENANT, chat_id)
    journal = ChatJournal.open(empty_kb, "fresh.1", TENANT)  # open, before its first turn
    assert list_turns(empty_kb, TENANT, "fresh.1").turns == []
    journal.close(remove=True)
    with pytest.raises(NotFound):
        list_turns(empty_kb, TENANT, "fresh.1")
