"""The llm memo engine against a real llama.cpp server running SmolLM2, its checks, its
fallback to the offline memo when the model answers badly or not at all, and a slow model
that keeps no other writer out of the knowledge base while it writes."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from helpers.kbgit import git, kbmem, summit_session, write_json
from helpers.silent import silent_server, slow_model

from kbmem.agent.batch import chat_session_id
from kbmem.agent.session import ChatSession
from kbmem.cli import main
from kbmem.errors import ValidationError
from kbmem.llm.client import LLMConfig
from kbmem.llm.local import LocalLLMServer, free_port
from kbmem.memorize.memo import MAX_MEMO_CHARS, LLMMemo, OfflineMemo, memo_engine
from kbmem.memorize.memorizer import IngestResult, ingest_session, read_memory
from kbmem.memorize.sessions import Session, session_from_mapping
from kbmem.store.pagestore import PageStore
from kbmem.store.repository import KnowledgeBase

# One small session for every model call here: the server reuses the prompt it has already
# read, so only the first test pays for reading it.
SESSION = summit_session(
    "pilot",
    [
        "Maya: the Skerrick pilot goes live on Monday 26 January, 300 pounds a month.",
        "Noted: Skerrick Island Ferries pilot, live 26 January, fee 300 pounds, owner Maya.",
    ],
    title="Pilot",
    day="2026-01-05",
)


@pytest.fixture
def session() -> Session:
    return session_from_mapping(SESSION)


def _config(server: LocalLLMServer, **changes: object) -> LLMConfig:
    config = LLMConfig(model=server.model, api_base=server.api_base, timeout_s=60, retries=1)
    for name, value in changes.items():
        setattr(config, name, value)
    return config


def test_the_model_writes_a_checked_memo(llm_server: LocalLLMServer, session: Session) -> None:
    memo = LLMMemo(_config(llm_server)).write(session, [])
    assert memo.engine == "llm", memo.fallback_reason
    assert memo.fallback_reason == ""
    head = "2026-01-05 · Maya, Assistant: "
    assert memo.text.startswith(head)
    answer = memo.text[len(head) :]
    assert LLMMemo.check(answer, session) == ""  # the answer passed the engine's own check
    assert len(answer) <= MAX_MEMO_CHARS and "\n" not in answer
    assert answer != OfflineMemo().write(session, []).text[len(head) :]


def test_a_useless_answer_falls_back_to_the_offline_memo(
    llm_server: LocalLLMServer, session: Session
) -> None:
    # Two tokens is all the model may say: a real answer, and too short to be a memo.
    memo = LLMMemo(_config(llm_server), max_tokens=2).write(session, [])
    assert memo.engine == "offline"
    assert memo.fallback_reason.startswith("llm memo unusable (too short")
    assert memo.fallback_reason.endswith("used the offline memo")
    assert memo.text == OfflineMemo().write(session, []).text


def test_an_unreachable_model_falls_back_with_the_reason(session: Session) -> None:
    dead = LLMConfig(
        model="openai/smollm2",
        api_base=f"http://127.0.0.1:{free_port()}/v1",
        timeout_s=10,
        retries=1,
    )
    memo = LLMMemo(dead).write(session, [])
    assert memo.engine == "offline"
    assert "openai/smollm2" in memo.fallback_reason
    assert "Connection" in memo.fallback_reason
    assert memo.text == OfflineMemo().write(session, []).text


def test_a_model_that_never_answers_is_waited_for_once(session: Session) -> None:
    """A timeout is not retried (a useless answer is: see above); with retries=2 a hung
    server used to cost three timeouts per session."""
    with silent_server() as server:
        hung = LLMConfig("openai/smollm2", server.api_base, timeout_s=1, retries=2)
        memo = LLMMemo(hung).write(session, [])
        assert server.connections == 1
    assert memo.engine == "offline" and "Timeout" in memo.fallback_reason


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("", "empty answer"),
        ("   \n  ", "empty answer"),
        ("Skerrick pilot.", "too short"),
        ('{"memo": "Skerrick pilot goes live on 26 January"}', "structured data"),
        ("[Skerrick pilot goes live on 26 January]", "structured data"),
        ("Quarterly revenue forecasts for widgets improved slightly overall.", "not grounded"),
        ("Skerrick " * 60, "too long"),
    ],
)
def test_the_check_rejects_unusable_answers(session: Session, answer: str, problem: str) -> None:
    assert problem in LLMMemo.check(answer, session)


@pytest.mark.parametrize(
    "answer",
    [
        'The one-line memo: "Skerrick pilot starts 26 January at 300 pounds a month."',
        "**One-line memo:** Skerrick pilot starts 26 January at 300 pounds a month.",
        "Memo: Skerrick pilot starts 26 January at 300 pounds a month.",
    ],
    ids=["label", "bold", "short"],
)
def test_the_prompts_label_said_again_is_not_part_of_the_memo(
    session: Session, answer: str
) -> None:
    """SmolLM2 often opens with the words the prompt ends with."""
    assert LLMMemo.cleaned(answer) == "Skerrick pilot starts 26 January at 300 pounds a month."
    assert LLMMemo.check(answer, session) == ""
    assert LLMMemo.cleaned("Memoranda go to Maya.") == "Memoranda go to Maya."


def test_the_check_accepts_a_grounded_line(session: Session) -> None:
    answer = '"Skerrick Island Ferries pilot starts 26 January at 300 pounds a month."'
    assert LLMMemo.check(answer, session) == ""


def test_settings_choose_the_engine(empty_kb: KnowledgeBase) -> None:
    settings = empty_kb.settings
    assert isinstance(memo_engine(settings), OfflineMemo)
    assert isinstance(memo_engine(settings, "openai/smollm2"), LLMMemo)
    settings.data["memorizer"]["memo_engine"] = "llm"
    with pytest.raises(ValidationError, match=r"llm\.model"):
        memo_engine(settings)


def test_kbmem_ingest_with_a_local_model_end_to_end(
    llm_server: LocalLLMServer, empty_kb: KnowledgeBase, tmp_path: Path
) -> None:
    path = write_json(tmp_path / "pilot.json", SESSION)
    env = {"KBMEM_API_BASE": llm_server.api_base, "KBMEM_LLM__RETRIES": "1"}
    done = kbmem(
        "--kb", str(empty_kb.root), "ingest", "--model", "openai/smollm2", "--json", str(path),
        env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "created"
    assert result["memoNote"] == ""  # the model's memo was used, not the fallback
    offline = OfflineMemo().write(session_from_mapping(SESSION), []).text
    assert result["memo"] != offline
    page = PageStore(empty_kb, "default").read("pilot/1").page
    assert page.meta["memo"] == result["memo"]
    assert read_memory(empty_kb, "default") == [("2026-01-05", "pilot", result["memo"])]
    assert git(empty_kb.root, "log", "-1", "--format=%(trailers:key=Kbmem-Session,valueonly)")


def test_kbmem_ingest_notes_the_fallback_when_the_model_is_unreachable(
    empty_kb: KnowledgeBase, tmp_path: Path, capsys, monkeypatch
) -> None:
    path = write_json(tmp_path / "pilot.json", SESSION)
    monkeypatch.setenv("KBMEM_API_BASE", f"http://127.0.0.1:{free_port()}/v1")
    monkeypatch.setenv("KBMEM_LLM__TIMEOUT_S", "10")
    code = main(["--kb", str(empty_kb.root), "ingest", "--model", "openai/smollm2", str(path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out == "1 session(s): 1 created\n"
    assert "note: pilot: llm memo unusable (openai/smollm2: " in err
    assert "used the offline memo" in err
    page = PageStore(empty_kb, "default").read("pilot/1").page
    assert page.meta["memo"] == OfflineMemo().write(session_from_mapping(SESSION), []).text


# A model that takes its time: long enough that a writer kept out for it is plain to see.
SLOW_S = 4


def test_a_chats_llm_memo_keeps_no_writer_waiting(example_kb: KnowledgeBase) -> None:
    """Quitting commits the chat, memo and all; the memo used to be written while the commit
    held the write lock, so every other writer (an HTTP ingest, another chat) waited for the
    whole model call. Here an ingest lands while the model writes; the memory the memo was
    written in view of changed, so it is written again in view of the new memory."""
    kb = example_kb
    chat = ChatSession(kb, "default")  # the offline agent answers
    chat.send("What is the team's monthly AWS budget?")
    memo = "The team's monthly AWS budget is 5,600 dollars."
    with slow_model(memo, SLOW_S) as model:
        # Read when the batch commits: the chat's memo is written by the model.
        kb.settings.data["memorizer"]["memo_engine"] = "llm"
        kb.settings.data["llm"].update(model="openai/slow", api_base=model.api_base)
        closing = threading.Thread(target=chat.close)
        closing.start()
        assert model.asked.wait(60)
        started = time.monotonic()
        # Another writer with its own view of the knowledge base, as another process has.
        other = ingest_session(KnowledgeBase(kb.root), session_from_mapping(SESSION))
        waited = time.monotonic() - started
        answered = model.answered.is_set()
        closing.join(60)
    assert other.status == "created"
    assert not answered, f"the ingest waited {waited:.1f} s for the model"
    assert not closing.is_alive() and chat.closed
    assert len(model.prompts) == 2
    assert "] pilot: " not in model.prompts[0][1]["content"]
    assert "] pilot: " in model.prompts[1][1]["content"]
    memory = {sid: text for _date, sid, text in read_memory(kb, "default")}
    assert memory["pilot"] == other.memo
    assert memory[chat_session_id(chat.chat_id)].endswith(f": {memo}")


def test_an_ingests_llm_memo_keeps_no_writer_waiting(empty_kb: KnowledgeBase) -> None:
    """An ingest with an llm memo (HTTP, MCP, the CLI) and another tenant's ingest meanwhile:
    that memory is not this tenant's, so the memo is written once, and is the one used."""
    memo = "Skerrick pilot starts 26 January at 300 pounds a month."
    results: list[IngestResult] = []
    with slow_model(memo, SLOW_S) as model:
        engine = LLMMemo(LLMConfig("openai/slow", model.api_base, retries=0))
        ingesting = threading.Thread(
            target=lambda: results.append(
                ingest_session(empty_kb, session_from_mapping(SESSION), engine)
            )
        )
        ingesting.start()
        assert model.asked.wait(60)
        started = time.monotonic()
        other_session = summit_session("rota", ["Ops rota: Tobias is on call this week."], "ops")
        other = ingest_session(KnowledgeBase(empty_kb.root), session_from_mapping(other_session))
        waited = time.monotonic() - started
        answered = model.answered.is_set()
        ingesting.join(60)
    assert other.status == "created"
    assert not answered, f"the other ingest waited {waited:.1f} s for the model"
    assert len(model.prompts) == 1
    (result,) = results
    assert result.status == "created" and result.memo_note == ""
    assert result.memo == f"2026-01-05 · Maya, Assistant: {memo}"
    assert read_memory(empty_kb, "default") == [("2026-01-05", "pilot", result.memo)]
    assert PageStore(empty_kb, "default").read("pilot/1").page.meta["memo"] == result.memo
