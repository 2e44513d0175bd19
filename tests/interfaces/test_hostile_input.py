"""Hostile input and hand-edited data, as a user or a script would bring them: text that is
not UTF-8 (a JSON escape of half a surrogate pair, bytes in an argument or on stdin), a
session record broken by hand, and files copied or moved between tenants by hand. Each is
refused with a message naming the problem, or handled, and nothing stored is lost or wrong.
Real git repositories, real indexes, the real command line."""

from __future__ import annotations

import io
import json
import logging
import os
import threading
from contextlib import suppress
from pathlib import Path

import pytest
from helpers.kbgit import commit_edit, git, head, kb_with_page_tokens, status, summit_session

from kbmem.cli import main
from kbmem.errors import ValidationError
from kbmem.memorize.memorizer import ingest_session
from kbmem.memorize.sessions import session_from_mapping
from kbmem.research.toolkit import Toolkit
from kbmem.store.pagestore import PageStore
from kbmem.store.repository import KnowledgeBase

PREFIX = "tenants/default/"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``kbmem ARGS`` in this process: (exit code, stdout, stderr)."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# -- text that is not UTF-8 ------------------------------------------------------------------


def test_a_session_with_half_a_surrogate_pair_is_refused_naming_the_field(
    empty_kb: KnowledgeBase, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """JSON can carry "\\ud800", which no file or git commit can hold: the ingest crashed
    with a UnicodeEncodeError traceback (exit 1) while hashing the session."""
    before = head(empty_kb.root)
    bad = summit_session("s1", ["fine", "half a pair: \ud800 here"])
    path = tmp_path / "s.json"
    path.write_text(json.dumps(bad))  # ASCII: the file holds the escape, as a client sends it
    code, out, err = run(capsys, "--kb", str(empty_kb.root), "ingest", str(path))
    assert code == 2 and out == ""
    assert f"{path}: turns[1].content: holds half of a UTF-16 surrogate pair" in err
    assert "Traceback" not in err
    assert head(empty_kb.root) == before and status(empty_kb.root) == ""


@pytest.mark.parametrize(
    ("where", "data"),
    [
        ("title", {"title": "x\udcff"}),
        (
            "turns[0].metadata",
            {"turns": [{"role": "u", "content": "a", "metadata": {"\ud800": 1}}]},
        ),
        ("turns[0].role", {"turns": [{"role": "\udfff", "content": "a"}]}),
    ],
    ids=["title", "key", "role"],
)
def test_every_field_with_half_a_pair_is_named(where: str, data: dict) -> None:
    session = {"tenantId": "default", "turns": [{"role": "user", "content": "a"}], **data}
    with pytest.raises(ValidationError) as info:
        session_from_mapping(session)
    assert info.value.field == where and info.value.problem.startswith("holds half of a UTF-16")


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (["search", "tide \udcff"], "query"),
        (["ask", "\udcffscheduler"], "request"),
    ],
    ids=["search", "ask"],
)
def test_an_argument_that_is_not_utf8_is_refused_naming_it(
    example_kb: KnowledgeBase, capsys: pytest.CaptureFixture[str], args: list[str], name: str
) -> None:
    """Python keeps bytes that are not UTF-8 in an argument as lone surrogates; a search or
    a request with one crashed in the tokenizer (TypeError traceback)."""
    code, out, err = run(capsys, "--kb", str(example_kb.root), *args)
    assert code == 2 and out == ""
    assert err == f"kbmem: error: {name}: is not UTF-8 text\n"


def test_a_query_with_half_a_pair_searches_and_never_rebuilds_the_index(
    example_kb: KnowledgeBase, caplog: pytest.LogCaptureFixture
) -> None:
    """The embedder's tokenizer raised on a lone surrogate, and the index took the error for
    damage: it rebuilt itself from scratch, twice, and the search failed all the same."""
    toolkit = Toolkit(example_kb, "default")
    with caplog.at_level(logging.WARNING, logger="kbmem"):
        hits = toolkit.search("tide-window \udcff scheduler", "hybrid", 3)
    assert hits and "rebuild" not in caplog.text
    plain = toolkit.search("tide-window scheduler", "hybrid", 1)
    assert hits[0].interval.page_id == plain[0].interval.page_id


def test_a_chat_line_that_is_not_utf8_is_refused_and_earlier_turns_are_kept(
    example_kb: KnowledgeBase, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``kbmem chat --no-tui`` with bytes that are not UTF-8 on stdin crashed writing its
    journal (UnicodeEncodeError traceback), and an over-long line failed naming no line;
    now either names the line, exits 2, and the turns answered before it are committed."""
    root = example_kb.root
    raw = b"Who owns the tide-window scheduler?\nwho \xff owns it?\nnever asked\n"
    stdin = io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8")
    monkeypatch.setattr("sys.stdin", stdin)
    code, out, err = run(capsys, "--kb", str(root), "chat", "--no-tui", "--chat", "bytes")
    assert code == 2 and "Traceback" not in err
    assert err.endswith("kbmem: error: stdin line 2: is not UTF-8 text\n")
    assert "Tobias Ferrante" in out
    assert "committed chat bytes turn 1" in err
    assert "Kbmem-Turns: bytes 1-1" in git(root, "log", "-1", "--format=%B")
    code, out, _err = run(capsys, "--kb", str(root), "turns", "bytes")
    assert code == 0 and len(out.splitlines()) == 1 and "(pending)" not in out

    monkeypatch.setattr("sys.stdin", io.StringIO("Who owns FL-212?\n" + "x" * 20_001 + "\n"))
    code, _out, err = run(capsys, "--kb", str(root), "chat", "--no-tui", "--chat", "long")
    assert code == 2
    assert err.endswith("kbmem: error: stdin line 2: longer than 20000 characters\n")
    assert "committed chat long turn 1" in err


# -- a session record broken by hand ---------------------------------------------------------


def test_a_session_whose_record_was_broken_by_hand_is_memorized_whole_again(
    empty_kb: KnowledgeBase, caplog: pytest.LogCaptureFixture
) -> None:
    """With its record unreadable, a session memorized again was taken for a new one: the
    pages an older, longer version had were left behind, searchable, and the result said
    "created"."""
    kb = kb_with_page_tokens(empty_kb, 60)
    texts = [f"Sentence number {n} about the ferry timetable and its owners." for n in range(20)]
    long = ingest_session(kb, session_from_mapping(summit_session("shrinks", texts)))
    assert len(long.page_ids) >= 3
    record = f"{PREFIX}sessions/shrinks.yaml"
    commit_edit(kb.root, record, lambda old: b"pages: [never closed\n" + old)
    with caplog.at_level(logging.WARNING, logger="kbmem"):
        short = ingest_session(kb, session_from_mapping(summit_session("shrinks", texts[:2])))
    assert short.status == "updated"
    assert caplog.text.count(f"{record} is not valid YAML") == 1  # once, though read twice
    assert sorted(PageStore(kb, "default").files()) == ["shrinks/1"]
    assert status(kb.root) == ""
    # A file in the session's folder that is no page is the user's, and stays.
    git(kb.root, "rm", "-q", "--", record)
    (kb.root / PREFIX / "pages/shrinks/README.txt").write_text("mine\n")
    git(kb.root, "add", "--", f"{PREFIX}pages/shrinks/README.txt")
    git(kb.root, "commit", "-q", "-m", "Lose the record, add a file")
    again = ingest_session(kb, session_from_mapping(summit_session("shrinks", texts[:1])))
    assert again.status == "updated" and again.page_ids == ["shrinks/1"]
    assert kb.read_bytes(f"{PREFIX}pages/shrinks/README.txt") == b"mine\n"


# -- history never follows a copy, nor out of the tenant -------------------------------------


def test_a_copied_page_has_its_own_history_not_another_tenants(
    example_kb: KnowledgeBase, capsys: pytest.CaptureFixture[str]
) -> None:
    """``git log --follow`` takes a copy for a rename: a note copied (nearly as it was) into
    another tenant showed the first tenant's commits as its own history, and ``log --diff``
    against one of them printed the first tenant's text."""
    root = example_kb.root
    roster = (root / PREFIX / "notes/team-roster.md").read_text()
    other = root / "tenants/other/notes/roster.md"
    other.parent.mkdir(parents=True)
    other.write_text(roster.replace("Tobias Ferrante", "T. F."))
    git(root, "add", "tenants/other")
    git(root, "commit", "-q", "-m", "Copy the roster for the other team")
    copied = head(root)
    theirs = git(root, "log", "--format=%H", "--", f"{PREFIX}notes/team-roster.md").split()[-1]

    history = PageStore(example_kb, "other").history("notes/roster.md")
    assert [c.sha for c in history] == [copied]
    code, out, _err = run(capsys, "--kb", str(root), "--tenant", "other", "log", "notes/roster.md")
    assert code == 0 and len(out.splitlines()) == 1 and "Team roster" not in out
    diff = ["log", "notes/roster.md", "--diff", theirs, "HEAD"]
    code, out, err = run(capsys, "--kb", str(root), "--tenant", "other", *diff)
    assert code == 3 and "Tobias Ferrante" not in out
    assert "does not exist" in err or "no page" in err


def test_a_page_moved_in_from_another_tenant_begins_its_history_with_the_move(
    example_kb: KnowledgeBase,
) -> None:
    root = example_kb.root
    (root / "tenants/other").mkdir()
    git(root, "mv", f"{PREFIX}notes/glossary.md", "tenants/other/glossary.md")
    git(root, "commit", "-q", "-m", "Move the glossary")
    history = PageStore(example_kb, "other").history("glossary.md")
    assert [c.path for c in history] == ["tenants/other/glossary.md"]
    # A rename inside the tenant is still followed.
    git(root, "mv", "tenants/other/glossary.md", "tenants/other/terms.md")
    git(root, "commit", "-q", "-m", "Rename it")
    history = PageStore(example_kb, "other").history("terms.md")
    assert [c.path for c in history] == ["tenants/other/terms.md", "tenants/other/glossary.md"]


def test_a_turn_is_recorded_in_its_own_commit_when_an_earlier_answer_was_the_same(
    example_kb: KnowledgeBase, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same question in two chats gives the same answer.md: the audit of the second
    named the first chat's commit as the one that recorded it (git followed the copy)."""
    root = example_kb.root
    commits = []
    for chat in ("first", "second"):
        monkeypatch.setattr("sys.stdin", io.StringIO("Who owns the tide-window scheduler?\n"))
        code, _out, err = run(capsys, "--kb", str(root), "chat", "--no-tui", "--chat", chat)
        assert code == 0, err
        commits.append(head(root))
    code, out, _err = run(capsys, "--kb", str(root), "audit", "second/1", "--json")
    assert code == 0
    assert json.loads(out)["recorded_in"] == commits[1]
    code, out, _err = run(capsys, "--kb", str(root), "audit", "second/1")
    assert f"recorded in commit {commits[1][:10]}" in out.splitlines()[0]


# -- a tenant that holds nothing -------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [["search", "tide-window"], ["ask", "Who owns the scheduler?"], ["pages"], ["log"]],
    ids=["search", "ask", "pages", "log"],
)
def test_a_misspelt_tenant_is_named_not_read_as_an_empty_memory(
    example_kb: KnowledgeBase, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    """``--tenant defualt`` answered "no hits", an empty list or an empty briefing, exit 0,
    with nothing to say that no such tenant holds anything."""
    code, out, err = run(capsys, "--kb", str(example_kb.root), "--tenant", "defualt", *args)
    assert code == 0 and "Tobias" not in out
    assert "kbmem: tenant 'defualt' holds nothing yet (tenants: default)\n" in err
    code, out, err = run(capsys, "--kb", str(example_kb.root), *args)
    assert code == 0 and "holds nothing" not in err


# -- files that are no session file ----------------------------------------------------------


def test_a_file_without_end_is_refused_at_the_limit(
    empty_kb: KnowledgeBase,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pipe or a device has no size to check before reading: ``kbmem ingest /dev/zero``
    read until memory ran out (MemoryError traceback, or the process killed). Here a named
    pipe that would give three times the limit: it is refused once the limit is passed."""
    limit = 1 << 20
    monkeypatch.setattr("kbmem.memorize.sessions.MAX_FILE_BYTES", limit)
    pipe = tmp_path / "endless.json"
    os.mkfifo(pipe)

    def feed() -> None:
        with suppress(BrokenPipeError), pipe.open("wb") as out:
            for _ in range(3):
                out.write(b" " * limit)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    code, out, err = run(capsys, "--kb", str(empty_kb.root), "ingest", str(pipe))
    writer.join(10)
    assert code == 2 and out == ""
    assert err == f"kbmem: error: {pipe}: holds more than {limit} bytes, the limit\n"


@pytest.mark.parametrize("text", ["", " \n\n"], ids=["empty", "blank"])
@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_an_empty_session_file_says_so(
    empty_kb: KnowledgeBase,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    text: str,
    suffix: str,
) -> None:
    """An empty file was "malformed JSON at line 1 column 1: Expecting value" (JSON) or
    "session: a session must be a mapping" (YAML)."""
    path = tmp_path / f"s{suffix}"
    path.write_text(text)
    code, _out, err = run(capsys, "--kb", str(empty_kb.root), "ingest", str(path))
    assert code == 2 and err == f"kbmem: error: {path}: is empty; it holds no session\n"


@pytest.mark.parametrize("value", ['"soon"', "-5", ".nan"], ids=["text", "negative", "nan"])
def test_a_lock_timeout_that_is_no_number_of_seconds_is_refused_naming_it(
    empty_kb: KnowledgeBase,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    value: str,
) -> None:
    """``git.lock_timeout_s`` was never checked: text crashed the first write (ValueError
    traceback); a negative wait or NaN was taken as "do not wait"."""
    root = empty_kb.root
    (root / "kbmem.yaml").write_text(f"git:\n  lock_timeout_s: {value}\n")
    path = tmp_path / "s.json"
    path.write_text(json.dumps(summit_session("s1", ["The crane budget is 14,500 euros."])))
    code, _out, err = run(capsys, "--kb", str(root), "ingest", str(path))
    assert code == 2 and "Traceback" not in err
    assert err.startswith("kbmem: error: git.lock_timeout_s: must be a number of seconds, 0 or")
