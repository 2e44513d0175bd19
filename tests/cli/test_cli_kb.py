"""The knowledge-base commands (init, ingest, pages, show, log) as a user runs them, and every
kind of bad input: a clear error naming the field, a non-zero exit, and no commit behind."""

from __future__ import annotations

import json
import logging
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from helpers.kbgit import (
    LOCOMO,
    commit_count,
    fsck,
    git,
    head,
    kbmem,
    run_on_terminal,
    status,
    summit_session,
    write_json,
)

from kbmem.agent.session import ChatSession
from kbmem.cli import main
from kbmem.errors import ValidationError
from kbmem.memorize.schema import Session
from kbmem.memorize.sessions import CHAT_AGENT, is_echo, is_own_answer, session_from_mapping
from kbmem.store.pagestore import PageStore
from kbmem.store.repository import KnowledgeBase

PREFIX = "tenants/default/"
TEXTS = [
    "Maya: the Skerrick pilot goes live on Monday 26 January with a fee of 300 pounds.",
    "Noted: owner Maya Lindqvist; Tobias writes the schema by 19 January.",
]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``kbmem ARGS`` in this process: (exit code, stdout, stderr)."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def kb(empty_kb: KnowledgeBase) -> Path:
    return empty_kb.root


# -- init ------------------------------------------------------------------------------------


def test_init_creates_the_example_knowledge_base(tmp_path: Path) -> None:
    target = tmp_path / "team-kb"
    done = kbmem("init", str(target))
    assert done.returncode == 0, done.stderr
    assert "created knowledge base" in done.stdout
    assert (target / "kbmem.yaml").exists() and (target / ".gitignore").exists()
    assert commit_count(target) > 10
    assert status(target) == ""
    listing = kbmem("pages", env={"KBMEM_KB": str(target)}, cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    pages = [line.split("\t")[0] for line in listing.stdout.splitlines()]
    here = kbmem("pages", cwd=target, env={"KBMEM_KB": ""})  # no --kb, no $KBMEM_KB: the cwd
    assert here.returncode == 0 and here.stdout == listing.stdout
    assert len([p for p in pages if p.endswith(".md")]) >= 3  # hand-written notes
    assert len([p for p in pages if not p.endswith(".md")]) >= 8  # memorized sessions
    # A second init on the same folder refuses and changes nothing.
    before = head(target)
    again = kbmem("init", str(target))
    assert again.returncode == 2
    assert "not empty" in again.stderr
    assert head(target) == before


def test_init_empty_and_a_missing_knowledge_base(tmp_path: Path, capsys) -> None:
    code, out, _err = run(capsys, "init", "--empty", str(tmp_path / "kb"))
    assert code == 0 and "created knowledge base" in out
    assert commit_count(tmp_path / "kb") == 1
    code, out, _err = run(capsys, "--kb", str(tmp_path / "kb"), "pages")
    assert (code, out) == (0, "")
    code, _out, err = run(capsys, "--kb", str(tmp_path / "nowhere"), "pages")
    assert code == 3 and "not a kbmem knowledge base" in err
    (tmp_path / "a-file").write_text("not a folder\n")
    code, _out, err = run(capsys, "init", str(tmp_path / "a-file"))
    assert (
        code == 2
        and err == f"kbmem: error: DIR: {tmp_path / 'a-file'} exists and is not a folder\n"
    )
    code, _out, err = run(capsys, "init", str(tmp_path / "a-file" / "kb"))
    assert code == 2 and "DIR: cannot create" in err and "Not a directory" in err


def test_init_takes_its_folder_from_kb_or_the_environment(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "kbmem --kb DIR init" used to fail with "the following arguments are required: dir".
    monkeypatch.delenv("KBMEM_KB", raising=False)
    code, out, _err = run(capsys, "--kb", str(tmp_path / "a"), "init", "--empty")
    assert code == 0 and f"created knowledge base at {tmp_path / 'a'}" in out
    monkeypatch.setenv("KBMEM_KB", str(tmp_path / "b"))
    code, out, _err = run(capsys, "init", "--empty")
    assert code == 0 and f"created knowledge base at {tmp_path / 'b'}" in out
    monkeypatch.delenv("KBMEM_KB")
    code, _out, err = run(capsys, "init")
    assert code == 2 and "name the folder to create" in err
    code, _out, err = run(capsys, "--kb", str(tmp_path / "a"), "init", str(tmp_path / "c"))
    assert code == 2 and "but --kb names" in err
    assert not (tmp_path / "c").exists()


# -- ingest: the accepted shapes -------------------------------------------------------------


def test_ingest_summit_json_yaml_and_lists(kb: Path, tmp_path: Path, capsys) -> None:
    one = write_json(tmp_path / "one.json", summit_session("kickoff", TEXTS, title="Kickoff"))
    as_yaml = tmp_path / "two.yaml"
    as_yaml.write_text(
        textwrap.dedent(
            """
            tenantId: default
            sessionId: review
            agentId: team-assistant
            title: Sprint review
            classification: confidential
            policyTags: [engineering, finance]
            turns:
              - role: user
                content: "Oskar: staging is up; the budget is 4,200 pounds."
                timestamp: 2026-01-21T10:00:00
                metadata: {speaker: Oskar Brennan}
              - role: assistant
                content: |
                  Recorded the budget.
                  ### not | a | header
                timestamp: 2026-01-21
            """
        ).lstrip()
    )
    many = write_json(
        tmp_path / "many.json",
        [summit_session(f"batch-{n}", [f"Batch item {n} decided by Ines."]) for n in range(2)],
    )
    code, out, err = run(capsys, "--kb", str(kb), "ingest", str(one), str(as_yaml), str(many))
    assert code == 0, err
    assert "4 session(s): 4 created" in out
    store = PageStore(KnowledgeBase(kb), "default")
    assert set(store.files()) == {"kickoff/1", "review/1", "batch-0/1", "batch-1/1"}
    review = store.read("review/1").page
    assert review.meta["classification"] == "confidential"
    assert review.meta["policy_tags"] == ["engineering", "finance"]
    assert review.meta["agent_id"] == "team-assistant"
    turns = review.turns()
    assert turns[0].speaker == "Oskar Brennan" and turns[0].timestamp == "2026-01-21T10:00:00"
    assert turns[1].timestamp == "2026-01-21"
    assert turns[1].text == "Recorded the budget.\n### not | a | header\n"
    # The same files again: nothing new, no commit.
    before = head(kb)
    code, out, _err = run(capsys, "--kb", str(kb), "ingest", str(one), str(as_yaml), str(many))
    assert code == 0 and "4 session(s): 4 unchanged" in out
    assert head(kb) == before


def test_ingest_without_a_session_id_is_still_idempotent(kb: Path, tmp_path: Path, capsys):
    path = write_json(tmp_path / "s.json", summit_session(None, TEXTS, title="Kickoff: v1!"))
    code, out, _err = run(capsys, "--kb", str(kb), "ingest", "--json", str(path))
    assert code == 0
    result = json.loads(out)
    assert result["status"] == "created" and result["sessionId"].startswith("kickoff-v1-")
    code, out, _err = run(capsys, "--kb", str(kb), "ingest", "--json", str(path))
    assert json.loads(out)["status"] == "unchanged"


def test_a_session_id_of_kbmems_own_chats_is_refused(kb: Path, tmp_path: Path, capsys) -> None:
    """kbmem memorizes chat c1 as session ``chat-c1``: an ingested session with that id
    would replace the chat's pages, and the chat's next batch would replace it again."""
    with ChatSession(KnowledgeBase(kb), "default", chat_id="c1") as chat:
        chat.send("The public launch moved to 28 April.")
    chat_page = PREFIX + "pages/chat-c1/1.md"
    before, page = head(kb), KnowledgeBase(kb).read_bytes(chat_page)
    for session_id in ("chat-c1", "chat-not-yet-a-chat", "Chat-C1"):
        path = write_json(tmp_path / "s.json", summit_session(session_id, TEXTS))
        code, out, err = run(capsys, "--kb", str(kb), "ingest", str(path))
        assert code == 2 and out == "", err
        assert "sessionId:" in err and "reserved for kbmem's own chats" in err, err
        with pytest.raises(ValidationError) as refused:
            session_from_mapping(summit_session(session_id, TEXTS))
        assert refused.value.field == "sessionId"
    assert head(kb) == before and status(kb) == ""
    assert KnowledgeBase(kb).read_bytes(chat_page) == page


def test_a_title_that_starts_like_a_chat_is_no_chat(kb: Path, tmp_path: Path, capsys) -> None:
    """A session without an id is named after its title; "Chat with Bob" must not become
    ``chat-with-bob-…``, which is where kbmem would memorize its chat ``with-bob-…``."""
    data = summit_session(
        None, ["Did Bob sign the renewal?", "Yes, on 2 March."], title="Chat with Bob"
    )
    data["turns"][1]["metadata"]["speaker"] = CHAT_AGENT  # an assistant that happens to be named so
    path = write_json(tmp_path / "bob.json", data)
    code, out, err = run(capsys, "--kb", str(kb), "ingest", "--json", str(path))
    assert code == 0, err
    session_id = json.loads(out)["sessionId"]
    assert session_id.startswith("session-chat-with-bob-")
    assert f"{session_id}/1" in PageStore(KnowledgeBase(kb), "default").files()
    # Neither a question in it nor its assistant's answer passes for an echo of a chat.
    assert not is_echo(session_id, "Maya", "Did Bob sign the renewal?")
    assert not is_echo(session_id, CHAT_AGENT, "Yes, on 2 March.")
    assert not is_own_answer(session_id, CHAT_AGENT)
    code, out, _err = run(capsys, "--kb", str(kb), "ingest", "--json", str(path))
    assert code == 0 and json.loads(out)["status"] == "unchanged"
    # A LoCoMo file's name makes the ids of its sessions: the same rule holds.
    chat_log = tmp_path / "chat-log.json"
    chat_log.write_bytes(_locomo_slice(tmp_path, 1).read_bytes())
    code, out, err = run(capsys, "--kb", str(kb), "ingest", "--json", str(chat_log))
    assert code == 0, err
    assert json.loads(out)["sessionId"] == "session-chat-log-s1"


def _locomo_slice(tmp_path: Path, sessions: int = 3) -> Path:
    data = json.loads((LOCOMO / "conv-26.json").read_text())
    part = {"speaker_a": data["speaker_a"], "speaker_b": data["speaker_b"]}
    for n in range(1, sessions + 1):
        part[f"session_{n}"] = data[f"session_{n}"]
        part[f"session_{n}_date_time"] = data[f"session_{n}_date_time"]
    return write_json(tmp_path / "conv-26.json", part)


def test_ingest_a_locomo_conversation(kb: Path, tmp_path: Path, capsys) -> None:
    path = _locomo_slice(tmp_path)
    source = json.loads(path.read_text())
    code, out, err = run(
        capsys, "--kb", str(kb), "--tenant", "locomo", "ingest", "--json", str(path)
    )
    assert code == 0, err
    results = [json.loads(line) for line in out.splitlines()]
    assert [r["sessionId"] for r in results] == ["conv-26-s1", "conv-26-s2", "conv-26-s3"]
    assert {r["tenantId"] for r in results} == {"locomo"}
    store = PageStore(KnowledgeBase(kb), "locomo")
    page = store.read("conv-26-s1/1").page
    turns = page.turns()
    raw = source["session_1"]
    assert [t.id for t in turns] == [r["dia_id"] for r in raw]  # dia_id kept as the turn id
    assert {t.timestamp for t in turns} == {"2023-05-08T13:56:00"}  # "1:56 pm on 8 May, 2023"
    assert [t.speaker for t in turns] == [r["speaker"] for r in raw]
    for turn, item in zip(turns, raw, strict=True):
        expected = item["text"]
        if item.get("blip_caption"):
            expected += f"\n[shares an image: {item['blip_caption']}]"
        assert turn.text == expected
    assert page.meta["title"] == "Caroline and Melanie — session 1"
    assert session_count(kb, "locomo") == 3
    # Without --tenant a LoCoMo file goes to the knowledge base's default tenant.
    code, _out, _err = run(capsys, "--kb", str(kb), "ingest", str(path))
    assert code == 0 and session_count(kb, "default") == 3


def session_count(kb: Path, tenant: str) -> int:
    return len(KnowledgeBase(kb).list_files(f"tenants/{tenant}/sessions"))


def test_a_10_mb_turn_is_stored_whole(kb: Path, tmp_path: Path, capsys) -> None:
    line = "Ferry log: MV Corran Belle left Skerrick at 07:15 — naïve 東京 🚢 tab\tCR\r end."
    text = "\n".join(f"{n:07d} {line}" for n in range(10 * 1024 * 1024 // len(line) + 1))
    assert len(text.encode()) > 10 * 1024 * 1024
    path = write_json(tmp_path / "big.json", summit_session("big", [text, "short reply"]))
    code, _out, err = run(capsys, "--kb", str(kb), "ingest", str(path))
    assert code == 0, err
    stored = KnowledgeBase(kb).read_bytes(f"{PREFIX}pages/big/1.md").decode()
    assert f"### t1 | Maya | 2026-04-01T10:00:00\n{text}\n\n" in stored  # byte for byte
    assert PageStore(KnowledgeBase(kb), "default").read("big/1").page.turns()[0].text == text
    code, out, _err = run(capsys, "--kb", str(kb), "show", "big/1")
    # Shown whole, its CRs as visible escapes: on a terminal a CR lets text overwrite its line.
    assert code == 0 and out == stored.replace("\r", "\\x0d")


# -- pages, show, log ------------------------------------------------------------------------


@pytest.fixture
def two_versions(kb: Path, tmp_path: Path, capsys) -> tuple[str, str]:
    """kickoff/1 in two versions; returns (old commit, new commit)."""
    path = write_json(tmp_path / "s.json", summit_session("kickoff", TEXTS, title="Kickoff"))
    run(capsys, "--kb", str(kb), "ingest", str(path))
    old = head(kb)
    changed = [TEXTS[0], "Correction: the pilot goes live on Monday 2 February."]
    write_json(path, summit_session("kickoff", changed, title="Kickoff"))
    code, out, _err = run(capsys, "--kb", str(kb), "ingest", str(path))
    assert code == 0 and "1 updated" in out
    return old, head(kb)


def test_pages_show_and_log(kb: Path, two_versions: tuple[str, str], capsys) -> None:
    old, new = two_versions
    code, out, _err = run(capsys, "--kb", str(kb), "pages")
    assert code == 0
    assert out == "kickoff/1\t2026-04-01\tKickoff\n"
    code, out, err = run(capsys, "--kb", str(kb), "pages", "--check")
    assert code == 0 and out == "" and "1 page(s), 0 with problems" in err

    code, out, _err = run(capsys, "--kb", str(kb), "show", "kickoff/1")
    assert code == 0 and out == git(kb, "show", f"HEAD:{PREFIX}pages/kickoff/1.md")
    assert "Correction" in out
    code, out, _err = run(capsys, "--kb", str(kb), "show", "kickoff/1", "--at", old)
    assert code == 0 and out == git(kb, "show", f"{old}:{PREFIX}pages/kickoff/1.md")
    assert "Tobias writes the schema" in out and "Correction" not in out
    code, out_rel, _err = run(capsys, "--kb", str(kb), "show", "kickoff/1", "--at", "HEAD~1")
    assert out_rel == out

    code, out, _err = run(capsys, "--kb", str(kb), "log", "kickoff/1")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 2
    assert lines[0].startswith(new[:10]) and lines[1].startswith(old[:10])
    assert "Memorize session kickoff: Kickoff" in lines[0]
    assert f"[{PREFIX}pages/kickoff/1.md]" in lines[0]
    code, out, _err = run(capsys, "--kb", str(kb), "log", "-n", "1", "kickoff/1")
    assert out.splitlines() == lines[:1]
    code, out, _err = run(capsys, "--kb", str(kb), "log")
    assert code == 0 and len(out.splitlines()) == 2  # the tenant's two ingests, not init
    assert [line[:10] for line in out.splitlines()] == [new[:10], old[:10]]

    code, out, _err = run(capsys, "--kb", str(kb), "log", "kickoff/1", "--diff", old, new)
    assert code == 0
    assert "+Correction: the pilot goes live on Monday 2 February." in out
    assert "-Noted: owner Maya Lindqvist; Tobias writes the schema by 19 January." in out
    code, out, _err = run(capsys, "--kb", str(kb), "log", "kickoff/1", "--diff", "HEAD~1", "HEAD")
    assert "+Correction" in out


def test_log_gives_each_commits_full_id_and_whole_message(
    kb: Path, two_versions: tuple[str, str], capsys
) -> None:
    """The one-line log cuts each commit to a short id and its subject; an auditor needs the
    full id (to name the version anywhere) and the whole message (its body, its trailers)."""
    old, new = two_versions
    body = git(kb, "log", "-1", "--format=%B", new).strip()
    date = git(kb, "log", "-1", "--format=%aI", new).strip()
    assert body.startswith("Memorize session kickoff: Kickoff\n\n") and "Kbmem-Session:" in body
    path = f"{PREFIX}pages/kickoff/1.md"

    code, out, _err = run(capsys, "--kb", str(kb), "log", "kickoff/1", "--json")
    commits = json.loads(out)
    assert code == 0 and [c["commit"] for c in commits] == [new, old]
    assert commits[0] == {
        "commit": new,
        "date": date,
        "author": "kbmem",
        "subject": "Memorize session kickoff: Kickoff",
        "path": path,
        "message": body,
    }
    code, out, _err = run(capsys, "--kb", str(kb), "log", "--json", "-n", "1")
    assert code == 0 and [(c["commit"], c["path"]) for c in json.loads(out)] == [(new, None)]

    code, out, _err = run(capsys, "--kb", str(kb), "log", "kickoff/1", "--full")
    first = f"commit {new}\nAuthor: kbmem\nDate:   {date}\nPath:   {path}\n\n"
    first += "".join(f"    {line}\n" if line else "\n" for line in body.split("\n"))
    assert code == 0 and out.startswith(first + f"\ncommit {old}\n")
    code, out, _err = run(capsys, "--kb", str(kb), "log", "--full")
    assert code == 0 and out.startswith(first.replace(f"Path:   {path}\n", ""))
    assert out.count("\ncommit ") == 1 and f"\ncommit {old}\n" in out

    for flag in ("--json", "--full"):
        code, out, err = run(capsys, "--kb", str(kb), "log", "kickoff/1", "--diff", old, new, flag)
        assert (code, out) == (2, "") and f"kbmem: error: {flag}: " in err


def test_notes_named_as_people_name_files(kb: Path, capsys) -> None:
    """Spaces and accents in a hand-written note's name (git quotes such names in its output
    unless told otherwise): listed, shown, and their history followed across a rename."""
    first, second = f"{PREFIX}notes/Team roster.md", f"{PREFIX}notes/Café/Équipe roster.md"
    (kb / first).parent.mkdir(parents=True)
    roster = "---\ntitle: Roster\n---\n" + "".join(f"- person {n}\n" for n in range(8))
    (kb / first).write_text(roster + "Maya owns the pilot.\n")
    git(kb, "add", first)
    git(kb, "commit", "-q", "-m", "Add the roster")
    (kb / second).parent.mkdir()
    git(kb, "mv", first, second)
    (kb / second).write_text(roster + "Maya and Oskar own the pilot.\n")
    git(kb, "commit", "-q", "-am", "Move the roster")
    code, out, _err = run(capsys, "--kb", str(kb), "pages")
    assert code == 0 and out == "notes/Café/Équipe roster.md\t\tRoster\n"
    code, out, _err = run(capsys, "--kb", str(kb), "show", "notes/Café/Équipe roster.md")
    assert code == 0 and out.endswith("Maya and Oskar own the pilot.\n")
    code, out, _err = run(capsys, "--kb", str(kb), "log", "notes/Café/Équipe roster.md")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 2
    assert lines[0].endswith(f"Move the roster  [{second}]")
    assert lines[1].endswith(f"Add the roster  [{first}]")
    old = lines[1].split()[0]
    args = ["log", "notes/Café/Équipe roster.md", "--diff", old, "HEAD"]
    code, out, _err = run(capsys, "--kb", str(kb), *args)
    assert code == 0 and "-Maya owns the pilot.\n+Maya and Oskar own the pilot.\n" in out
    assert f":{first}\n" in out and f":{second}\n" in out
    code, out, err = run(capsys, "--kb", str(kb), "show", "notes/Team roster.md", "--at", old)
    assert code == 0 and out.endswith("Maya owns the pilot.\n"), err


def test_show_and_diff_follow_a_renamed_page(kb: Path, capsys) -> None:
    """`kbmem log NEW` lists the versions from before a rename: `show NEW --at` and `--diff`
    read each under the name the page had then, at any revision, not only at its own."""
    old, new = f"{PREFIX}notes/plan.md", f"{PREFIX}notes/roadmap.md"
    (kb / old).parent.mkdir(parents=True)
    (kb / "other.txt").write_text("unrelated\n")
    git(kb, "add", "other.txt")
    git(kb, "commit", "-q", "-m", "Before the page")
    before = head(kb)
    (kb / old).write_text("---\ntitle: Plan\n---\nShip in May.\n")
    git(kb, "add", old)
    git(kb, "commit", "-q", "-m", "Add the plan")
    added = head(kb)
    (kb / "other.txt").write_text("still unrelated\n")
    git(kb, "commit", "-q", "-am", "Touch something else")
    between = head(kb)  # not a commit of the page
    git(kb, "mv", old, new)
    git(kb, "commit", "-q", "-m", "Rename the plan")
    (kb / new).write_text("---\ntitle: Plan\n---\nShip in June.\n")
    git(kb, "commit", "-q", "-am", "Move the date")

    code, out, _err = run(capsys, "--kb", str(kb), "log", "notes/roadmap.md")
    assert code == 0 and out.splitlines()[-1].startswith(added[:10])
    for rev in (added, between):
        code, out, err = run(capsys, "--kb", str(kb), "show", "notes/roadmap.md", "--at", rev)
        assert code == 0, err
        assert out == git(kb, "show", f"{rev}:{old}")
    code, out, err = run(
        capsys, "--kb", str(kb), "log", "notes/roadmap.md", "--diff", between, "HEAD"
    )
    assert code == 0, err
    assert f"--- {between[:10]}:{old}\n+++ {head(kb)[:10]}:{new}\n" in out
    assert "-Ship in May.\n+Ship in June.\n" in out
    # Where the page never was, under any name: an error that names the page, not a path.
    code, out, err = run(
        capsys, "--kb", str(kb), "log", "notes/roadmap.md", "--diff", before, "HEAD"
    )
    assert code == 3 and out == ""
    assert f"no page 'notes/roadmap.md' in tenant 'default' at {before[:10]}" in err
    code, out, err = run(capsys, "--kb", str(kb), "show", "notes/roadmap.md", "--at", before)
    assert code == 3 and "no page 'notes/roadmap.md'" in err
    # The old name is a page of the past only.
    code, out, err = run(capsys, "--kb", str(kb), "show", "notes/plan.md")
    assert code == 3 and "no page 'notes/plan.md'" in err


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["show", "nope/1"], 3, "no page 'nope/1'"),
        (["log", "nope/1"], 3, "no page 'nope/1'"),
        (["show", "notes/none.md"], 3, "no page"),
        (["show", "../x"], 2, "pageId"),
        (["show", "notes/../../x.md"], 2, "pageId"),
        (["log", "notes/../../x.md"], 2, "pageId"),
        (["show", "/etc/passwd"], 2, "pageId"),
        (["log", "../x"], 2, "pageId"),
        (["show", "pages/kickoff/1.md"], 2, "not a page"),
        (["show", "MEMORY.md"], 2, "not a page"),
        (["show", "notes/two\nlines.md"], 2, "pageId: 'two\\nlines.md' is not a file or folder"),
        (["show", "notes//x.md"], 2, "pageId: '' is not a file or folder name"),
        (["show", "notes/./x.md"], 2, "pageId"),
        (["show", "kickoff/0"], 2, "pageId"),
        (["show", ""], 2, "pageId"),
        (["show", "kickoff/1", "--at", "no-such-rev"], 3, "no such revision"),
        (["show", "kickoff/1", "--at=--upload-pack=x"], 2, "not a revision"),
        (["log", "kickoff/1", "--diff", "HEAD", "no-such-rev"], 3, "no such revision"),
        (["log", "--diff", "HEAD~1", "HEAD"], 2, "PAGE"),
        (["log", "-n", "0"], 2, "-n"),
        (["--tenant", "../x", "pages"], 2, "tenantId"),
        (["--tenant", "", "show", "kickoff/1"], 2, "tenantId"),
        (["--tenant", "other", "show", "kickoff/1"], 3, "no page"),
        (["log", ""], 2, "pageId"),
    ],
)
def test_bad_page_ids_and_revisions(
    kb: Path, two_versions, capsys, args: list[str], code: int, message: str
) -> None:
    before = head(kb)
    got, out, err = run(capsys, "--kb", str(kb), *args)
    assert got == code
    assert message in err and err.startswith("kbmem: error:")
    assert "Traceback" not in err and out == ""
    assert head(kb) == before


def test_a_hand_edited_page_with_broken_front_matter(kb: Path, two_versions, capsys, caplog):
    broken = kb / PREFIX / "notes" / "broken.md"
    broken.parent.mkdir(parents=True)
    broken.write_text("---\ntitle: [never closed\nowner: Priya\n---\n# Broken\n")
    (kb / PREFIX / "notes" / "fine.md").write_text("---\ntitle: Fine\n---\n# Fine\n")
    git(kb, "add", f"{PREFIX}notes")
    git(kb, "commit", "-q", "-m", "Add notes by hand")

    code, out, err = run(capsys, "--kb", str(kb), "pages", "--check")
    assert code == 1
    assert out.startswith(f"{PREFIX}notes/broken.md: ")
    assert out.splitlines() == [
        f"{PREFIX}notes/broken.md: front matter is not valid YAML "
        "(did not find expected ',' or ']' at line 3, column 6)"
    ]
    assert "3 page(s), 1 with problems" in err

    # Listing skips it with a warning and lists the rest; so does every reader of pages.
    listing = kbmem("--kb", str(kb), "pages")
    assert listing.returncode == 0, listing.stderr
    assert [line.split("\t")[0] for line in listing.stdout.splitlines()] == [
        "kickoff/1",
        "notes/fine.md",
    ]
    assert f"skipping {PREFIX}notes/broken.md" in listing.stderr
    with caplog.at_level(logging.WARNING, logger="kbmem"):
        records = list(PageStore(KnowledgeBase(kb), "default").iter_pages())
    assert [r.page_id for r in records] == ["kickoff/1", "notes/fine.md"]
    assert "broken.md" in caplog.text

    # Shown as stored, for the person to repair it, with what is wrong on stderr; the file,
    # the work tree and the history are left as they were.
    stored = git(kb, "show", f"HEAD:{PREFIX}notes/broken.md")
    before = head(kb)
    code, out, err = run(capsys, "--kb", str(kb), "show", "notes/broken.md")
    assert (code, out) == (0, stored)
    assert err == (
        f"kbmem: warning: {PREFIX}notes/broken.md: front matter is not valid YAML "
        "(did not find expected ',' or ']' at line 3, column 6); the page is printed as "
        "stored, for you to repair its header ('kbmem pages --check' lists every such page)\n"
    )
    assert broken.read_text() == stored and status(kb) == "" and head(kb) == before
    # At an older revision too, and under the name it had when it has been renamed since.
    git(kb, "mv", f"{PREFIX}notes/broken.md", f"{PREFIX}notes/still-broken.md")
    git(kb, "commit", "-q", "-m", "Rename the broken note")
    args = ("show", "notes/still-broken.md", "--at", before)
    code, out, err = run(capsys, "--kb", str(kb), *args)
    assert (code, out) == (0, stored) and "not valid YAML" in err
    code, out, _err = run(capsys, "--kb", str(kb), "log", "notes/still-broken.md")
    assert code == 0 and "Add notes by hand" in out
    # kbmem keeps working around it.
    path = write_json(kb.parent / "later.json", summit_session("later", TEXTS))
    code, _out, err = run(capsys, "--kb", str(kb), "ingest", str(path))
    assert code == 0, err


# -- ingest: bad input -----------------------------------------------------------------------

BAD_IDS = ["../x", "/abs", "", "a\x00b", "x" * 129, "a/b", "..", ".hidden", "new\nline"]


def _with_turn_meta(session: dict, **meta: object) -> dict:
    """``session`` whose first turn's metadata is ``meta``."""
    first = {**session["turns"][0], "metadata": meta}
    return {**session, "turns": [first, *session["turns"][1:]]}


def _bad_documents() -> list[tuple[str, str, str]]:
    """(file name, file text, what the error must name)."""
    good = summit_session("ok", TEXTS)
    cases = [
        ("bad.json", '{"tenantId": "default", "turns": [}', "malformed JSON at line 1"),
        ("bad.json", "", "is empty; it holds no session"),
        ("bad.yaml", "tenantId: [default\nturns:\n  - role: user\n", "malformed YAML"),
        ("bad.yml", "tenantId: default\n\tturns: []\n", "malformed YAML"),
        ("bad.json", json.dumps({k: v for k, v in good.items() if k != "tenantId"}), "tenantId"),
        ("bad.json", json.dumps({**good, "tenantId": None}), "tenantId: missing"),
        ("bad.json", json.dumps({**good, "turns": []}), "turns: is empty"),
        ("bad.json", json.dumps({k: v for k, v in good.items() if k != "turns"}), "turns: missing"),
        ("bad.json", json.dumps({**good, "turns": "hello"}), "turns: must be a list"),
        ("bad.json", json.dumps({**good, "turns": [{"role": "user"}]}), "turns[0].content"),
        ("bad.json", json.dumps({**good, "turns": [{"content": "x"}]}), "turns[0].role"),
        (
            "bad.json",
            json.dumps({**good, "turns": [{"role": "user", "content": 5}]}),
            "turns[0].content: must be text",
        ),
        (
            "bad.json",
            json.dumps({**good, "turns": [{"role": "u", "content": "x", "timestamp": "soon"}]}),
            "turns[0].timestamp",
        ),
        (  # a number is no date (pydantic's lax date would read 86400 as 2 January 1970)
            "bad.json",
            json.dumps({**good, "turns": [{"role": "u", "content": "x", "timestamp": 86400}]}),
            "turns[0].timestamp: must be text",
        ),
        ("bad.json", json.dumps({**good, "turns": [{"role": "u", "content": "  "}]}), "turns"),
        ("bad.json", json.dumps([good, {**good, "sessionId": "../x"}]), "[1]: sessionId"),
        ("bad.json", json.dumps({**good, "agentId": "../agent"}), "agentId"),
        ("bad.json", json.dumps({**good, "policyTags": "secret"}), "policyTags"),
        ("bad.json", "[]", "bad.json: is an empty list"),
        ("bad.json", json.dumps(_with_turn_meta(good, id="a\x00b")), "turns[0].metadata.id"),
        ("bad.json", json.dumps(_with_turn_meta(good, id="x" * 129)), "turns[0].metadata.id"),
        ("bad.json", json.dumps(_with_turn_meta(good, id="a b")), "turns[0].metadata.id"),
        ("bad.json", json.dumps(_with_turn_meta(good, dia_id=["D1"])), "metadata.dia_id"),
        ("bad.json", json.dumps(_with_turn_meta(good, speaker={"a": 1})), "metadata.speaker"),
        ("bad.json", json.dumps(_with_turn_meta(good, speaker="M\x00")), "metadata.speaker"),
        ("bad.json", json.dumps(_with_turn_meta(good, name="n" * 201)), "metadata.name"),
        (
            "bad.json",
            json.dumps({**good, "turns": [_with_turn_meta(good, id="t7")["turns"][0]] * 2}),
            "turns[1].metadata.id: turn id 't7' repeats",
        ),
        ("conv-1.json", json.dumps({"session_1": "hello"}), "conv-1.json: session_1: must be"),
        ("conv-1.json", json.dumps({"session_1": []}), "conv-1.json: session_1: every session"),
        (
            "conv-1.json",
            json.dumps({"session_1": [{"speaker": "A", "dia_id": "D 1", "text": "hi"}]}),
            "conv-1.json: session_1: turns[0].metadata.dia_id",
        ),
        ("bad.json", json.dumps(["not a session"]), "session"),
        ("bad.json", json.dumps({**good, "tenantId": 7}), "tenantId: must be a string"),
        ("bad.json", "\udcff", "not UTF-8"),
    ]
    cases += [("bad.json", json.dumps({**good, "sessionId": v}), "sessionId") for v in BAD_IDS]
    cases += [("bad.json", json.dumps({**good, "tenantId": v}), "tenantId") for v in BAD_IDS]
    return cases


@pytest.mark.parametrize(("name", "text", "field"), _bad_documents())
def test_bad_input_names_the_field_and_leaves_no_commit(
    kb: Path, tmp_path: Path, capsys, name: str, text: str, field: str
) -> None:
    good = write_json(tmp_path / "good.json", summit_session("good-first", TEXTS))
    bad = tmp_path / name
    bad.write_bytes(text.encode("utf-8", "surrogateescape"))
    before = head(kb)
    code, out, err = run(capsys, "--kb", str(kb), "ingest", str(good), str(bad))
    assert code == 2
    assert err.startswith("kbmem: error:") and field in err, err
    assert "Traceback" not in err and out == ""
    assert head(kb) == before  # the good file before it was not committed either
    assert status(kb) == ""


def test_ingest_leaves_other_tools_fields_be_where_the_api_model_refuses_them(
    kb: Path, tmp_path: Path, capsys
) -> None:
    """One session model for the CLI and the API: a file another tool wrote may carry fields
    of its own (``kbmem ingest`` leaves them be), while the API's configuration of the same
    model refuses them, naming the field and its position."""
    session = summit_session("with-extras", TEXTS)
    session["exportedBy"] = "another tool"
    session["turns"] = [{**t, "mood": "calm"} for t in session["turns"]]
    path = write_json(tmp_path / "extras.json", session)
    code, _out, err = run(capsys, "--kb", str(kb), "ingest", str(path))
    assert code == 0, err
    plain = summit_session("with-extras", TEXTS)
    for bad, field in (
        ({**plain, "exportedBy": "another tool"}, "exportedBy"),
        ({k: v for k, v in session.items() if k != "exportedBy"}, "turns[0].mood"),
    ):
        with pytest.raises(ValidationError) as refused:
            session_from_mapping(bad, "default", Session)
        assert refused.value.field == field and "not a field" in refused.value.problem


@pytest.mark.parametrize("tenant", BAD_IDS)
def test_bad_tenant_option_is_refused(kb: Path, tmp_path: Path, capsys, tenant: str) -> None:
    no_tenant = write_json(tmp_path / "s.json", summit_session("s1", TEXTS, tenant=None))
    with_tenant = write_json(tmp_path / "t.json", summit_session("s2", TEXTS))
    locomo = _locomo_slice(tmp_path, 1)
    before = head(kb)
    for path in (no_tenant, with_tenant, locomo):
        code, _out, err = run(capsys, "--kb", str(kb), "--tenant", tenant, "ingest", str(path))
        assert code == 2 and "tenantId" in err, err
    assert head(kb) == before


def test_tenant_option_and_file_must_agree(kb: Path, tmp_path: Path, capsys) -> None:
    path = write_json(tmp_path / "s.json", summit_session("s1", TEXTS, tenant="acme"))
    code, _out, err = run(capsys, "--kb", str(kb), "--tenant", "other", "ingest", str(path))
    assert code == 2 and "tenantId" in err and "'acme'" in err
    no_tenant = write_json(tmp_path / "n.json", summit_session("s2", TEXTS, tenant=None))
    code, _out, err = run(capsys, "--kb", str(kb), "--tenant", "acme", "ingest", str(no_tenant))
    assert code == 0, err
    assert session_count(kb, "acme") == 1


def test_ingest_says_when_it_creates_a_tenant(kb: Path, tmp_path: Path, capsys) -> None:
    first = write_json(tmp_path / "a.json", summit_session("s1", TEXTS, tenant=None))
    code, out, err = run(capsys, "--kb", str(kb), "--tenant", "acme", "ingest", str(first))
    assert code == 0 and "1 session(s): 1 created" in out, err
    assert "kbmem: created tenant 'acme': it held nothing before this session" in err
    assert "(other tenants: none)" in err
    # The tenant exists now: its next session, or the same again, creates nothing.
    second = write_json(tmp_path / "b.json", summit_session("s2", TEXTS, tenant=None))
    code, out, err = run(
        capsys, "--kb", str(kb), "--tenant", "acme", "ingest", str(first), str(second)
    )
    assert code == 0 and "created tenant" not in err, err
    # A tenantId in the file can start one too; --json says so as well.
    other = write_json(tmp_path / "c.json", summit_session("s3", TEXTS, tenant="acme-eu"))
    code, out, err = run(capsys, "--kb", str(kb), "ingest", "--json", str(other))
    assert code == 0 and json.loads(out)["tenantCreated"] is True
    assert "kbmem: created tenant 'acme-eu'" in err and "(other tenants: acme)" in err
    code, out, err = run(
        capsys, "--kb", str(kb), "--tenant", "acme", "ingest", "--json", str(second)
    )
    assert code == 0 and json.loads(out)["tenantCreated"] is False and err == ""


def test_common_options_also_come_after_the_command(kb: Path, tmp_path: Path, capsys) -> None:
    """``kbmem ingest FILE --tenant acme --kb DIR`` is ``kbmem --kb DIR --tenant acme ingest
    FILE``; an option given before the command is not reset by the command's defaults."""
    path = write_json(tmp_path / "s.json", summit_session("s1", TEXTS, tenant=None))
    code, _out, err = run(capsys, "ingest", str(path), "--tenant", "acme", "--kb", str(kb))
    assert code == 0, err
    assert session_count(kb, "acme") == 1
    code, out, err = run(capsys, "--kb", str(kb), "--tenant", "acme", "pages")
    assert code == 0 and "s1/1" in out, err
    code, out2, err = run(capsys, "--kb", str(kb), "pages", "--tenant", "acme")
    assert code == 0 and out2 == out, err
    code, _out, err = run(capsys, "--kb", str(kb), "pages", "--tenant", "../acme")
    assert code == 2 and "tenantId" in err


def test_ingest_refuses_to_overwrite_a_users_uncommitted_edit(
    kb: Path, tmp_path: Path, capsys
) -> None:
    first = write_json(tmp_path / "first.json", summit_session("first", TEXTS))
    assert run(capsys, "--kb", str(kb), "ingest", str(first))[0] == 0
    memory = kb / PREFIX / "MEMORY.md"
    edited = memory.read_text() + "- [2026-04-02] by-hand — a memo the user is still writing\n"
    memory.write_text(edited)
    second = write_json(tmp_path / "second.json", summit_session("second", TEXTS[::-1]))
    before = head(kb)
    code, out, err = run(capsys, "--kb", str(kb), "ingest", str(second))
    assert code == 5 and out == ""
    assert f"kbmem: error: {PREFIX}MEMORY.md: changed in the work tree but not committed" in err
    assert head(kb) == before and memory.read_text() == edited
    assert status(kb) == f" M {PREFIX}MEMORY.md\n"
    # Committed by the user, it is the memory kbmem builds on.
    git(kb, "commit", "-q", "-am", "Add a memo by hand")
    code, _out, err = run(capsys, "--kb", str(kb), "ingest", str(second))
    assert code == 0, err
    assert "by-hand — a memo the user is still writing" in memory.read_text()
    assert "] second — " in memory.read_text() and status(kb) == ""


def test_a_missing_input_file(kb: Path, tmp_path: Path, capsys) -> None:
    code, _out, err = run(capsys, "--kb", str(kb), "ingest", str(tmp_path / "none.json"))
    assert code == 2 and "none.json" in err and "cannot read" in err
    folder = tmp_path / "sessions"
    folder.mkdir()
    code, _out, err = run(capsys, "--kb", str(kb), "ingest", str(folder))
    assert code == 2 and err == f"kbmem: error: {folder}: is a folder; name the files in it\n"


def test_a_session_over_the_documented_limit_leaves_no_commit(
    kb: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    monkeypatch.setenv("KBMEM_MEMORIZER__MAX_SESSION_BYTES", "5000")
    small = write_json(tmp_path / "small.json", summit_session("small", TEXTS))
    big = write_json(tmp_path / "big.json", summit_session("big", ["x " * 3000]))
    before = head(kb)
    code, _out, err = run(capsys, "--kb", str(kb), "ingest", str(small), str(big))
    assert code == 2
    assert "memorizer.max_session_bytes" in err and "'big'" in err and "turns" in err
    assert head(kb) == before
    fsck(kb)


def test_ingest_prints_a_progress_bar_only_on_a_terminal(kb: Path, tmp_path: Path, capsys) -> None:
    path = write_json(
        tmp_path / "many.json",
        [summit_session(f"p{n}", [f"Progress item {n} for Ines."]) for n in range(3)],
    )
    code, out, err = run(capsys, "--kb", str(kb), "ingest", str(path))
    assert code == 0
    assert out == "3 session(s): 3 created\n"
    # Not a TTY: tqdm stays quiet; the one line is the news that the first session made the
    # new knowledge base's default tenant.
    created = "kbmem: created tenant 'default': it held nothing before this session"
    assert err == f"{created} (other tenants: none)\n"
    saved = yaml.safe_load(KnowledgeBase(kb).read_bytes(f"{PREFIX}sessions/p0.yaml"))
    assert saved["pages"] == ["p0/1"]


def test_ingest_shows_a_progress_bar_on_a_terminal(kb: Path, tmp_path: Path) -> None:
    path = write_json(
        tmp_path / "many.json",
        [summit_session(f"p{n}", [f"Progress item {n} for Ines."]) for n in range(3)],
    )
    code, out, shown = run_on_terminal(
        [sys.executable, "-m", "kbmem.cli", "--kb", str(kb), "ingest", str(path)], timeout=120
    )
    assert code == 0
    assert out == "3 session(s): 3 created\n"
    assert b"\ringest:   0%|" in shown and b"0/3 [" in shown and b"session/s]" in shown


def test_log_shows_only_the_tenants_own_history(kb: Path, tmp_path: Path, capsys) -> None:
    """Commit messages name sessions and notes: one tenant's log must not show another's."""
    mine = summit_session("kickoff", TEXTS, title="Kickoff")
    theirs = summit_session("acquisition", ["Secret: we buy Calloway."], "other", "Acquisition")
    for name, data in (("mine.json", mine), ("theirs.json", theirs)):
        code, _out, err = run(
            capsys, "--kb", str(kb), "ingest", str(write_json(tmp_path / name, data))
        )
        assert code == 0, err
    code, out, _err = run(capsys, "--kb", str(kb), "log")
    assert code == 0 and "Kickoff" in out and "Acquisition" not in out
    code, out, _err = run(capsys, "--kb", str(kb), "--tenant", "other", "log")
    assert code == 0 and "Acquisition" in out and "Kickoff" not in out
    code, out, _err = run(capsys, "--kb", str(kb), "--tenant", "nobody", "log")
    assert code == 0 and out == ""
