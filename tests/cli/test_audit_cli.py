"""The command line: a scripted chat on stdin, ``kbmem turns``, ``kbmem audit`` (also after
the cited page changed), and ``kbmem ask``."""

from __future__ import annotations

import io
import json
import threading
from dataclasses import replace

import pytest
from helpers.kbgit import commit_edit, git
from helpers.turns import QUESTION, TENANT, commit_chat, commit_turn

from kbmem.agent.context import TurnContext
from kbmem.agent.provenance import read_turn, turn_dir
from kbmem.agent.records import ContextItem
from kbmem.cli import main
from kbmem.interfaces.service import Memory
from kbmem.llm.local import LocalLLMServer
from kbmem.store.repository import KnowledgeBase
from kbmem.textutil import markdown_text


def run(
    kb: KnowledgeBase,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    *argv: str,
    stdin: str = "",
) -> tuple[int, str, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main(["--kb", str(kb.root), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_scripted_chat_then_turns_and_audit(
    kb: KnowledgeBase,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    questions = (
        "Who is Femi Adeyemi's onboarding buddy?\n\nWhat is the team's monthly AWS budget?\n"
    )
    code, out, err = run(kb, capsys, monkeypatch, "chat", "--no-tui", "--json", stdin=questions)
    assert code == 0, err
    turns = [json.loads(line) for line in out.splitlines()]
    assert [t["turn"] for t in turns] == [1, 2] and all(t["status"] == "complete" for t in turns)
    assert "Tobias Ferrante" in turns[0]["answer"] and turns[0]["citations"]
    assert "5,600 dollars" in turns[1]["answer"]
    chat_id = turns[0]["chat_id"]
    assert f"committed chat {chat_id} turns 1-2" in err  # the chat's end commits its turns
    assert f"Kbmem-Turns: {chat_id} 1-2" in git(kb.root, "log", "-1", "--format=%B")

    code, out, _ = run(kb, capsys, monkeypatch, "chat", "--no-tui", stdin=questions)
    assert code == 0 and "Tobias Ferrante" in out and "{" not in out.splitlines()[0]

    code, out, _ = run(kb, capsys, monkeypatch, "turns", chat_id)
    lines = out.splitlines()
    assert code == 0 and len(lines) == 2
    assert lines[0].startswith(f"{chat_id}/1\t") and "onboarding buddy" in lines[0]
    assert "(pending)" not in out

    code, out, _ = run(kb, capsys, monkeypatch, "audit", f"{chat_id}/1")
    assert code == 0
    assert "Question:\n  Who is Femi Adeyemi's onboarding buddy?" in out
    assert "Tools called:\n  1. research " in out
    assert "Intervals the turn read (" in out and "    | ### " in out
    # The answer opens with the direct answer, then its evidence.
    assert "Answer:\n  Tobias Ferrante\n" in out and "\n  From memory:" in out
    assert "recorded in commit" in out
    citation = turns[0]["citations"][0]
    assert citation in out

    # Edit the cited page: the audit still shows the text the answer rested on.
    code, out_json, _ = run(kb, capsys, monkeypatch, "audit", f"{chat_id}/1", "--json")
    audit = json.loads(out_json)
    cited = next(i for i in audit["intervals"] if i["cited"])
    old_text = cited["text"]
    page = kb.read_bytes(cited["path"]).decode().split("\n")
    page[cited["start"] - 1 : cited["end"]] = ["GONE"] * (cited["end"] - cited["start"] + 1)
    kb.commit_files({cited["path"]: "\n".join(page).encode()}, "Rewrite a turn by hand")
    code, out_json, _ = run(kb, capsys, monkeypatch, "audit", f"{chat_id}/1", "--json")
    again = json.loads(out_json)
    same = next(i for i in again["intervals"] if i["path"] == cited["path"] and i["cited"])
    assert same["text"] == old_text and same["changed_since"] is True
    assert "GONE" not in same["text"]

    code, out, _ = run(kb, capsys, monkeypatch, "audit", "--last")
    assert code == 0 and "What is the team's monthly AWS budget?" in out


def test_the_text_audit_shows_every_interval_the_turn_read(
    kb: KnowledgeBase,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An auditor asks what the agent read before it answered: the text audit lists every
    interval the turn's tool calls gave the agent (the research's whole briefing, not only
    the lines the answer quotes), the cited ones first and marked, each at its commit, as
    the JSON audit does."""
    code, _out, err = run(
        kb, capsys, monkeypatch, "chat", "--no-tui", "--chat", "read", stdin=f"{QUESTION}\n"
    )
    assert code == 0, err
    code, out_json, _ = run(kb, capsys, monkeypatch, "audit", "read/1", "--json")
    audit = json.loads(out_json)
    (call,) = audit["tool_calls"]
    given = {(iv["page_id"], iv["start"], iv["end"]) for iv in call["intervals"]}
    listed = {(iv["page_id"], iv["start"], iv["end"]): iv for iv in audit["intervals"]}
    cited = [key for key, iv in listed.items() if iv["cited"]]
    # The briefing gave more than the answer quotes; the audit keeps all of it.
    assert len(given) > len(cited) > 0 and given <= set(listed)

    code, text, _ = run(kb, capsys, monkeypatch, "audit", "read/1")
    assert code == 0
    heads = [line for line in text.splitlines() if line.startswith("  [")]
    assert f"Intervals the turn read ({len(listed)}, {len(cited)} cited by the answer)" in text
    assert len(heads) == len(listed)
    for (page_id, start, end), iv in listed.items():
        (head,) = [line for line in heads if line.startswith(f"  [{page_id}:L{start}-L{end}] ")]
        assert f" @ {iv['commit'][:10]} " in head
        assert ("; cited" in head) == iv["cited"]
        assert ("; shown to the agent" in head) != iv["cited"]
    # The cited ones come first: an auditor reads what the answer rests on before the rest.
    assert all("; cited" in line for line in heads[: len(cited)])


def test_the_audit_shows_a_long_turn_as_the_agent_was_shown_it_in_part(
    kb: KnowledgeBase,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Asked when the offsite is, the briefing carries the Q1 retrospective's long summary
    turn in part. The audit showed the whole turn as what the agent read; it shows what the
    agent was shown, and says it was only part."""
    args = ("chat", "--no-tui", "--chat", "part")
    code, _out, err = run(kb, capsys, monkeypatch, *args, stdin="When is the offsite?\n")
    assert code == 0, err
    code, out_json, _ = run(kb, capsys, monkeypatch, "audit", "part/1", "--json")
    audit = json.loads(out_json)
    (part,) = [iv for iv in audit["intervals"] if iv["shown"]]
    assert part["page_id"] == "2026-03-20-q1-retrospective/2", part
    assert "offsite details to the team this week, Dara;" in part["shown"]
    assert "… " in part["shown"] and "Went well:" in part["text"]
    assert "Went well:" not in part["shown"]  # a sentence the briefing left out
    (call,) = audit["tool_calls"]
    assert [iv["shown"] for iv in call["intervals"] if iv.get("shown")] == [part["shown"]]

    code, text, _ = run(kb, capsys, monkeypatch, "audit", "part/1")
    assert code == 0
    block = text.split(f"[{part['page_id']}:L{part['start']}-L{part['end']}] ", 1)[1]
    block = block.split("\n  [", 1)[0].split("\nAnswer:", 1)[0]
    shown, whole = block.split("carried in part; the agent was shown only:\n", 1)[1].split(
        "\n    | ", 1
    )
    assert all(line.startswith("    > ") for line in shown.splitlines()), block
    assert "offsite details to the team this week, Dara;" in shown
    assert "Went well:" not in shown and "Went well:" in whole, block


@pytest.mark.parametrize("first_whole", [False, True])
def test_an_interval_shown_whole_by_any_call_was_read_whole(first_whole: bool) -> None:
    """Two research calls of one turn give the same lines, one in part and one whole: the
    agent read them whole, and the audit must not say it saw only part. Two in part stay in
    part."""
    ctx = TurnContext("c", 1, TENANT, "q", [], None, lambda _event: None, threading.Event())
    part = ContextItem("p/1", f"tenants/{TENANT}/pages/p/1.md", 3, 4, "c0ffee", "bm25", 0.5)
    part.shown = "t1 Ann: … the part shown …"
    records = [replace(part, shown=""), replace(part, cited=True)]
    for item in records if first_whole else records[::-1]:
        ctx.add_context(item)
    ((read,),) = [ctx.context]
    assert read.shown == "" and read.cited
    ctx.context.clear()
    for item in (part, replace(part)):
        ctx.add_context(item)
    assert [c.shown for c in ctx.context] == [part.shown]


SAID = r"**tin 4** `code` <b>shelf</b> [a](b) #7 x_y_z C:\keys."
FACT = f"Remember this: the spare key is kept in {SAID}"


def test_plain_text_shows_an_answer_without_its_markdown_escapes(
    kb: KnowledgeBase,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The offline agent's answer is Markdown that quotes memory as written: ``**`` is
    stored as ``\\*\\*``. A Markdown view (the TUI, answer.md, the JSON) keeps the escapes;
    the plain text of `kbmem chat --no-tui` and `kbmem audit` shows what was said, as the
    Markdown view reads."""
    code, _, err = run(kb, capsys, monkeypatch, "chat", "--no-tui", stdin=FACT + "\n")
    assert code == 0, err
    args = ("chat", "--no-tui", "--chat", "plain")
    code, out, err = run(kb, capsys, monkeypatch, *args, stdin="Where is the spare key kept?\n")
    assert code == 0, err
    (said,) = [line for line in out.splitlines() if "spare key" in line]
    assert SAID in said, said
    record = read_turn(kb, TENANT, "plain", 1)
    (stored,) = [line for line in record.answer.splitlines() if "spare key" in line]
    assert said == markdown_text(stored) and stored != said
    assert r"\*\*tin 4\*\* \`code\` \<b\>shelf\</b\> \[a\](b) \#7 x\_y\_z C:\\keys." in stored
    answer_md = kb.read_bytes(turn_dir(TENANT, "plain", 1) + "answer.md").decode()
    assert answer_md == record.answer + "\n"

    code, text, _ = run(kb, capsys, monkeypatch, "audit", "plain/1")
    answer = text.split("\nAnswer:\n", 1)[1]
    assert code == 0 and f"  {said}\n" in answer and "\\*" not in answer
    code, out_json, _ = run(kb, capsys, monkeypatch, "audit", "plain/1", "--json")
    assert json.loads(out_json)["answer"] == record.answer


def test_audit_errors_name_the_problem(
    kb: KnowledgeBase,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, _, err = run(kb, capsys, monkeypatch, "audit", "--last")
    assert code == 3 and "no chat turns" in err
    code, _, err = run(kb, capsys, monkeypatch, "audit")
    assert code == 2 and "TURN: give a turn id like <chat-id>/<n>, or --last" in err
    code, _, err = run(kb, capsys, monkeypatch, "audit", "nochat/1", "--last")
    assert code == 2 and "or give --last, not both" in err
    code, _, err = run(kb, capsys, monkeypatch, "audit", "nochat/-1")
    assert code == 2 and "'-1' is not a turn number: it must be a whole number from 1" in err
    code, _, err = run(kb, capsys, monkeypatch, "audit", "../../etc/1")
    assert code == 2 and "chat_id" in err
    code, _, err = run(kb, capsys, monkeypatch, "audit", "nochat/3")
    assert code == 3 and "no turn nochat/3" in err
    code, out, err = run(kb, capsys, monkeypatch, "turns")
    assert code == 0 and out == "" and "no turns" in err
    code, out, err = run(kb, capsys, monkeypatch, "turns", "nochat")
    assert code == 3 and out == "" and "has no chat 'nochat'" in err


def test_a_damaged_turn_is_an_error_not_a_traceback_and_is_still_listed(
    empty_kb: KnowledgeBase,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = commit_turn(empty_kb, "hand", 1)
    commit_turn(empty_kb, "hand", 2, "Who owns FL-212?")
    commit_edit(empty_kb.root, folder + "tool_calls.jsonl", lambda old: old + b'{"broken": ')
    problem = f"{folder}tool_calls.jsonl: line 2: malformed JSON (Expecting value at column 12)"

    code, out, err = run(empty_kb, capsys, monkeypatch, "audit", "hand/1")
    assert (code, out, err) == (2, "", f"kbmem: error: {problem}\n")
    code, out, err = run(empty_kb, capsys, monkeypatch, "turns", "hand")
    first, second = out.splitlines()
    assert code == 0 and err == ""
    assert first.startswith("hand/1\t") and first.endswith(f"\tdamaged\t{QUESTION}  ({problem})")
    assert second.startswith("hand/2\t") and "\tcomplete\tWho owns FL-212?" in second
    code, out, _ = run(empty_kb, capsys, monkeypatch, "turns", "--json")
    listed = {t["n"]: t for t in json.loads(out)}
    assert (listed[1]["status"], listed[1]["problem"]) == ("damaged", problem)
    assert (listed[2]["status"], listed[2]["problem"]) == ("complete", None)


def test_turns_come_a_window_at_a_time_reading_only_the_window(
    empty_kb: KnowledgeBase,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``kbmem turns --limit/--offset`` lists a window as the API does, reading the files of
    the window's turns only (three each), and says on stderr how to read on."""
    commit_chat(empty_kb, "long", 40)
    read: list[str] = []
    read_blob = KnowledgeBase.read_blob
    monkeypatch.setattr(
        KnowledgeBase, "read_blob", lambda self, blob: read.append(blob) or read_blob(self, blob)
    )
    window = ("turns", "long", "--limit", "5", "--offset", "10")
    code, out, err = run(empty_kb, capsys, monkeypatch, *window)
    lines = out.splitlines()
    assert code == 0 and [line.split("\t")[0] for line in lines] == [
        f"long/{n}" for n in range(11, 16)
    ]
    assert lines[0].endswith("\tcomplete\tQuestion 11?")
    assert err == "kbmem: turns 11-15 of 40; --offset 15 reads on\n"
    assert len(read) == 3 * 5, len(read)
    code, out, err = run(empty_kb, capsys, monkeypatch, "turns", "--json", "--offset", "38")
    assert code == 0 and err == ""  # the end: nothing to read on
    assert [t["turn"] for t in json.loads(out)] == ["long/39", "long/40"]
    code, out, err = run(empty_kb, capsys, monkeypatch, "turns", "--offset", "40")
    assert (code, out, err) == (0, "", "no turns past 40\n")
    code, _, err = run(empty_kb, capsys, monkeypatch, "turns", "--limit", "0")
    assert code == 2 and "--limit: must be a positive number" in err


def test_a_chat_closed_before_its_first_turn_leaves_nothing_behind(
    empty_kb: KnowledgeBase,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A chat the API or the MCP server started and closed without a turn leaves no record (its
    file under .kbmem/chats/ would stay forever): ``kbmem turns`` then knows it no more than an
    invented id, while the chat is listed with no turns as long as it is open."""
    memory = Memory(empty_kb, TENANT)
    chat_id, _ = memory.open_chat()
    assert memory.list_turns(chat_id)["total"] == 0
    code, out, err = run(empty_kb, capsys, monkeypatch, "turns", chat_id, "--json")
    assert (code, json.loads(out)) == (0, [])
    memory.close_chat(chat_id)
    assert not list((empty_kb.state_dir / "chats").glob(f"*{chat_id}*"))
    code, _, err = run(empty_kb, capsys, monkeypatch, "turns", chat_id)
    assert code == 3 and f"tenant 'default' has no chat {chat_id!r}" in err
    code, _, err = run(empty_kb, capsys, monkeypatch, "turns", "invented")
    assert code == 3 and "tenant 'default' has no chat 'invented'" in err


def test_a_batch_of_one_turn_is_committed_as_turn_n(
    kb: KnowledgeBase,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, _, err = run(
        kb, capsys, monkeypatch, "chat", "--no-tui", "--chat", "one", stdin="Who owns FL-212?\n"
    )
    assert code == 0 and "kbmem: committed chat one turn 1 (" in err, err
    assert git(kb.root, "log", "-1", "--format=%s") == "Record chat one turn 1\n"
    assert "Kbmem-Turns: one 1-1" in git(kb.root, "log", "-1", "--format=%B")  # for machines


def test_ask_prints_a_cited_briefing(
    kb: KnowledgeBase,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, out, _ = run(kb, capsys, monkeypatch, "ask", "Who is Femi Adeyemi's onboarding buddy?")
    assert code == 0
    assert out.startswith("Briefing: Who is Femi Adeyemi's onboarding buddy?")
    assert "Evidence:\n  [" in out and ":L" in out and "Tobias Ferrante" in out
    code, out, _ = run(
        kb, capsys, monkeypatch, "ask", "Who owns FL-212?", "--json", "--max-pages", "2"
    )
    briefing = json.loads(out)
    assert code == 0 and briefing["request"] == "Who owns FL-212?"
    assert 0 < len(briefing["pagesUsed"]) <= 2 and briefing["evidence"]
    code, _, err = run(kb, capsys, monkeypatch, "ask", "x", "--max-pages", "99")
    assert code == 2 and "maxPages" in err


def test_kbmem_model_makes_the_scripted_chat_use_the_llm_agent(
    kb: KnowledgeBase,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    llm_server: LocalLLMServer,
) -> None:
    monkeypatch.setenv("KBMEM_MODEL", llm_server.model)
    monkeypatch.setenv("KBMEM_API_BASE", llm_server.api_base)
    monkeypatch.setenv("KBMEM_LLM__MAX_PROMPT_TOKENS", "700")  # small prompts: a 135M model
    code, out, err = run(
        kb, capsys, monkeypatch, "chat", "--no-tui", "--json", stdin="Who owns FL-212?\n"
    )
    assert code == 0, err
    assert "(llm agent)" in err
    (turn,) = [json.loads(line) for line in out.splitlines()]
    assert turn["answer"].strip() and turn["status"] in ("complete", "partial")
    record = read_turn(kb, TENANT, turn["chat_id"], 1)
    assert record.agent == "llm" and record.model == llm_server.model
    # Whether the model called research itself or kbmem did it for it, memory was read.
    assert any(c.name == "research" and c.error is None for c in record.tool_calls)
    assert record.context
