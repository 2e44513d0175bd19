"""The command line: a scripted chat on stdin, ``kbmem turns``, ``kbmem audit`` (also after
the cited page changed), and ``kbmem ask``."""

from __future__ import annotations

import io
import json

import pytest
from kbgit import git
from test_agent import TENANT, indexed_master, kb  # noqa: F401  (fixtures)

from kbmem.agent.provenance import read_turn
from kbmem.cli import main
from kbmem.local_llm import LocalLLMServer
from kbmem.store import KnowledgeBase


def run(
    kb: KnowledgeBase,  # noqa: F811
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
    kb: KnowledgeBase,  # noqa: F811
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
    assert "Intervals the answer rested on" in out and "    | ### " in out
    assert "Answer:\n  From memory:" in out and "recorded in commit" in out
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


def test_audit_errors_name_the_problem(
    kb: KnowledgeBase,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, _, err = run(kb, capsys, monkeypatch, "audit", "--last")
    assert code == 3 and "no chat turns" in err
    code, _, err = run(kb, capsys, monkeypatch, "audit")
    assert code == 2 and "TURN" in err
    code, _, err = run(kb, capsys, monkeypatch, "audit", "../../etc/1")
    assert code == 2 and "chat_id" in err
    code, _, err = run(kb, capsys, monkeypatch, "audit", "nochat/3")
    assert code == 3 and "no turn nochat/3" in err
    code, out, err = run(kb, capsys, monkeypatch, "turns")
    assert code == 0 and out == "" and "no turns" in err


def test_ask_prints_a_cited_briefing(
    kb: KnowledgeBase,  # noqa: F811
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
    kb: KnowledgeBase,  # noqa: F811
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
