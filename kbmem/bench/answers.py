"""Answering a LoCoMo question from its briefing with an LLM, scored as in the GAM paper.

Both scores compare the model's answer with the gold one after LoCoMo's normalisation
(lower case, commas and punctuation removed, the articles "a", "an", "the" and the word "and"
dropped), on Porter-stemmed tokens as LoCoMo's own evaluation does:

- **token F1**: the harmonic mean of token precision and recall (bag of tokens);
- **BLEU-1**: clipped unigram precision times the brevity penalty ``exp(1 - r/c)`` when the
  answer (``c`` tokens) is shorter than the gold one (``r`` tokens)."""

from __future__ import annotations

import math
import re
import string
from collections import Counter

from whoosh.lang.porter import stem

from kbmem.llm.client import LLMConfig, complete
from kbmem.research.types import BriefingContext
from kbmem.textutil import truncate_tokens

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCT = str.maketrans("", "", string.punctuation + "‘’“”")
ANSWER_TOKENS = 48  # a LoCoMo answer is a phrase; a long reply only dilutes precision
PROMPT_OVERHEAD = 200  # instructions and question, in tokens, kept out of the briefing's room

SYSTEM = (
    "You answer a question about past conversations using only the memory briefing you are "
    "given: key facts and excerpts, each with its date. Reply with the answer alone, as a "
    "short phrase (a name, a date, a number or a few words), without explanation. Resolve "
    'relative dates ("last week", "yesterday") against the date of the excerpt that says '
    "them. If the briefing does not settle the question, give the likeliest answer it supports."
)


def normalize(text: str) -> list[str]:
    """LoCoMo's answer normalisation, then Porter stems."""
    text = str(text).replace(",", "").lower().translate(_PUNCT)
    return [stem(w) for w in _ARTICLES.sub(" ", text).split()]


def token_f1(prediction: str, gold: str) -> float:
    pred, ref = normalize(prediction), normalize(gold)
    common = sum((Counter(pred) & Counter(ref)).values())
    if not pred or not ref or not common:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def bleu1(prediction: str, gold: str) -> float:
    pred, ref = normalize(prediction), normalize(gold)
    if not pred or not ref:
        return 0.0
    clipped = sum((Counter(pred) & Counter(ref)).values())
    penalty = 1.0 if len(pred) > len(ref) else math.exp(1 - len(ref) / len(pred))
    return penalty * clipped / len(pred)


def briefing_text(briefing: BriefingContext, max_tokens: int) -> str:
    """The briefing as the model reads it: key facts, then each excerpt (whose turn headers
    carry speaker and time) under its citation, cut to ``max_tokens`` deterministically."""
    parts = []
    if briefing.shown_facts():
        parts.append("Key facts:\n" + "\n".join(f"- {f}" for f in briefing.shown_facts()))
    for item in briefing.evidence:
        parts.append(f"{item.interval.citation()}\n{item.excerpt}")
    return truncate_tokens("\n\n".join(parts), max(max_tokens, 0))


def answer(config: LLMConfig, question: str, briefing: BriefingContext) -> str:
    """The model's short answer (its first non-empty line). Raises LLMError when the model
    fails; an empty reply is an empty answer, which scores 0."""
    room = config.max_prompt_tokens - PROMPT_OVERHEAD
    messages = [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": f"Memory briefing:\n{briefing_text(briefing, room)}\n\n"
            f"Question: {question}\nShort answer:",
        },
    ]
    reply = complete(config, messages, max_tokens=ANSWER_TOKENS)
    lines = [line.strip() for line in reply.strip().splitlines() if line.strip()]
    first = lines[0] if lines else ""
    return re.sub(r"^(short\s+)?answer\s*:\s*", "", first, flags=re.I)
