"""Answer scoring for ``kbmem bench locomo --engine llm``: LoCoMo's normalisation, token F1
and BLEU-1, and a real answer from the SmolLM2 llama.cpp server."""

from __future__ import annotations

import math

import pytest

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
    config = LLMConfig(llm_server.model, llm_server.api_base, timeout_s=60, retries=0)
    said = answers.answer(config, "Who owns the tide-window scheduler?", briefing)
    assert said.strip() and "\n" not in said  # one short line, whatever its quality


def test_an_unreachable_model_raises_llm_error(briefing):
    config = LLMConfig("openai/none", f"http://127.0.0.1:{free_port()}/v1", timeout_s=5, retries=0)
    with pytest.raises(LLMError):
        answers.answer(config, "Who owns it?", briefing)
