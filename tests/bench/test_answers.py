"""Answer scoring for ``kbmem bench locomo --engine llm``: LoCoMo's normalisation, token F1
and BLEU-1, and a real answer from the SmolLM2 llama.cpp server."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from helpers.kbgit import LOCOMO, commit_count

from kbmem.bench import answers
from kbmem.errors import LLMError
from kbmem.llm.client import LLMConfig
from kbmem.llm.local import LocalLLMServer, free_port
from kbmem.research.researcher import Researcher


@pytest.fixture
def briefing(example_kb):
    researcher = Researcher(example_kb, "default")
    try:
        yield researcher.research("Who owns the tide-window scheduler?")
    finally:
        researcher.close()


def test_normalisation_drops_case_punctuation_articles_and_stems():
    assert answers.normalize("The Grand-Opening, and a party!") == ["grandopen", "parti"]


@pytest.mark.parametrize(
    ("prediction", "gold", "f1"),
    [
        ("7 May 2023", "7 May, 2023", 1.0),
        ("a trophy", "the trophy", 1.0),
        ("Paris", "Tromsø", 0.0),
        ("", "anything", 0.0),
        # precision 1/3, recall 1/1
        ("pottery and painting classes", "pottery", 2 * (1 / 3) / (1 / 3 + 1)),
    ],
)
def test_token_f1(prediction, gold, f1):
    assert answers.token_f1(prediction, gold) == pytest.approx(f1)


def test_bleu1_clips_counts_and_penalises_short_answers():
    assert answers.bleu1("trophy trophy trophy", "a trophy") == pytest.approx(1 / 3)
    # one of three reference tokens, in a one-token answer: precision 1, brevity exp(1 - 3)
    assert answers.bleu1("Tromsø", "in Tromsø Norway") == pytest.approx(math.exp(-2))
    assert answers.bleu1("", "x") == 0.0


def test_the_briefing_text_fits_the_room(briefing):
    text = answers.briefing_text(briefing, 10_000)
    assert briefing.evidence[0].interval.citation() in text
    short = answers.briefing_text(briefing, 30)
    assert len(short.split()) < 40 and short.endswith("…")


def test_a_real_model_answers_from_a_briefing(briefing, llm_server: LocalLLMServer):
    config = LLMConfig(llm_server.model, llm_server.api_base, timeout_s=180, retries=0)
    said = answers.answer(config, "Who owns the tide-window scheduler?", briefing)
    assert said.strip() and "\n" not in said  # one short line, whatever its quality


def test_an_unreachable_model_raises_llm_error(briefing):
    config = LLMConfig("openai/none", f"http://127.0.0.1:{free_port()}/v1", timeout_s=5, retries=0)
    with pytest.raises(LLMError):
        answers.answer(config, "Who owns it?", briefing)


def test_answer_recall_is_the_share_of_gold_tokens_said():
    from kbmem.bench.answers_chat import answer_recall, first_line

    assert answer_recall("She moved from Sweden in 2019", "Sweden") == 1.0
    assert answer_recall("Oslo", "Sweden, 4 years ago") == 0.0
    assert answer_recall("4 years", "4 years ago") == pytest.approx(2 / 3)
    assert first_line("\n\nSweden\n\nFrom memory:\n- …") == "Sweden"
    # The agent's notice of how it answered is no answer: the line after it is.
    fallback = "[the model's answer was empty; answering offline from the briefing]\nSweden\n"
    assert first_line(fallback) == "Sweden"
    assert first_line("[cut: the answer reached its limit] Sweden") != "Sweden"


def test_an_unknown_conversation_is_refused_by_name(tmp_path):
    from kbmem.bench.answers_chat import chosen_files
    from kbmem.errors import ValidationError

    (tmp_path / "conv-1.json").write_text("{}")
    assert chosen_files(tmp_path, "1") == [tmp_path / "conv-1.json"]
    with pytest.raises(ValidationError, match="conv-9"):
        chosen_files(tmp_path, "conv-9")


def _slice(folder: Path, sessions: int = 3) -> Path:
    """conv-26's first sessions, with the questions whose evidence lies in them (a slice, so
    the test indexes a few sessions, not thirty)."""
    data = json.loads((LOCOMO / "conv-26.json").read_text())
    part = {"speaker_a": data["speaker_a"], "speaker_b": data["speaker_b"]}
    for n in range(1, sessions + 1):
        part[f"session_{n}"] = data[f"session_{n}"]
        part[f"session_{n}_date_time"] = data[f"session_{n}_date_time"]
    inside = re.compile(rf"D[1-{sessions}]:\d+$")
    part["qa"] = [
        q for q in data["qa"] if q.get("evidence") and all(inside.match(e) for e in q["evidence"])
    ]
    folder.mkdir()
    (folder / "conv-26.json").write_text(json.dumps(part))
    return folder


def test_bench_answers_on_one_conversation(tmp_path):
    """``kbmem bench answers`` end to end on a slice of a LoCoMo conversation, three questions
    each in a fresh chat: every key the issue names, scores in range, and nothing asked
    becomes memory (the kept knowledge base has the ingest's commits only)."""
    from kbmem.bench import answers_chat

    data = _slice(tmp_path / "data")
    keep = tmp_path / "kept"
    result = answers_chat.run(data_dir=data, limit=3, conversations="conv-26", dir=keep)
    commits = commit_count(keep / "kb")
    assert result["questions"] == 3
    for block in (result, *result["categories"].values()):
        assert set(block["first_line"]) == {"f1", "bleu1", "recall"}
        assert set(block["answer"]) == {"f1", "bleu1", "recall", "mean_tokens"}
        assert all(0.0 <= block["first_line"][k] <= 1.0 for k in ("f1", "bleu1", "recall"))
    assert set(result["baselines"]["bm25_turn"]) == {"f1", "recall"}
    assert result["answer"]["mean_tokens"] > 0 and result["answer"]["recall"] > 0
    # The same run again, on the kept knowledge base: the questions asked left no commit.
    again = answers_chat.run(data_dir=data, limit=3, conversations="1", dir=keep)
    assert commit_count(keep / "kb") == commits
    assert again["first_line"] == result["first_line"]  # deterministic, and nothing learnt
    assert "first F1/BLEU/rec" in answers_chat.render(result)
    # The offline answer's first lines hold only words its turns read.
    assert result["fidelity"] == {"first_line_unfounded": 0.0}
    assert "nothing read gives: 0.0%" in answers_chat.render(result)
    # What a turn read is resolved from the knowledge base: the lines the answer stands on,
    # against which a word of no interval read is found out.
    from kbmem.agent.offline import OfflineAgent
    from kbmem.agent.tools import AgentTools
    from kbmem.bench.locomo import locomo_kb
    from kbmem.research.fidelity import unfounded_words
    from kbmem.research.toolkit import Toolkit

    with locomo_kb(data, keep) as built:
        tenant = "conv-26"
        researcher = Researcher(built.kb, tenant, toolkit=Toolkit(built.kb, tenant))
        try:
            tools = AgentTools(built.kb, tenant, researcher)
            ctx = answers_chat.ask(OfflineAgent(), tools, tenant, "Where did Caroline go?")
            read = answers_chat.read_texts(built.kb, ctx)
        finally:
            researcher.close()
    assert read and all(read)
    assert "Caroline" in "\n".join(read)
    line = answers_chat.first_line(ctx.answer)
    assert unfounded_words(line, read) == []
    assert unfounded_words(line + " Zanzibarian", read) == ["zanzibarian"]
