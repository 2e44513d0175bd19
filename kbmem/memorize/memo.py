"""Memo engines: a short memo μ for each session, written in view of the existing memory.

``offline`` is deterministic and extractive: the session's most informative sentences, which
keep its names, dates and numbers. ``llm`` asks a model for one line in the spirit of GAM's
memorizing step, checks the answer, and falls back to the offline memo when it is unusable.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Protocol

from kbmem.errors import LLMError, ModelUnreachable
from kbmem.llm.client import LLMConfig, complete
from kbmem.memorize.sessions import Session
from kbmem.textutil import PIECE_BREAK, truncate_tokens

MAX_MEMO_CHARS = 400
MAX_MEMO_SENTENCES = 5000  # sentences the offline memo reads at most
# Words of any alphabet ("Tromsø", "café", "Москва"), and numbers, dates and times.
_WORD = re.compile(r"[^\W\d_](?:[^\W\d_]|['’-])+|\d[\d:.,/-]*")
# The label the memo prompt ends with, which a small model may say again before its memo.
_MEMO_LABEL = re.compile(r"^\W*(?:the\s+)?(?:one[- ]line\s+)?memo\s*:[\s*]*", re.I)
_LETTERS = re.compile(r"\b[^\W\d_]+")


def _capitalized(word: str) -> bool:
    """A capital then a small letter, in any alphabet ("Tromsø", "Åsa"; not "NASA")."""
    return len(word) > 1 and word[0].isupper() and word[1].islower()


STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "then",
        "so",
        "to",
        "of",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "i",
        "you",
        "he",
        "she",
        "we",
        "they",
        "me",
        "him",
        "her",
        "us",
        "them",
        "my",
        "your",
        "his",
        "our",
        "their",
        "what",
        "which",
        "who",
        "whom",
        "when",
        "where",
        "why",
        "how",
        "do",
        "does",
        "did",
        "done",
        "have",
        "has",
        "had",
        "not",
        "no",
        "yes",
        "just",
        "really",
        "very",
        "too",
        "also",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "about",
        "into",
        "over",
        "than",
        "there",
        "here",
        "all",
        "any",
        "some",
        "more",
        "most",
        "much",
        "many",
        "such",
        "only",
        "own",
        "same",
        "other",
        "out",
        "up",
        "down",
        "off",
        "again",
        "once",
        "lot",
        "get",
        "got",
        "like",
        "well",
        "oh",
        "hey",
        "hi",
        "thanks",
        "thank",
        "okay",
        "ok",
        "yeah",
        "sure",
        "know",
        "think",
        "going",
        "one",
        "two",
        "good",
        "great",
        "nice",
        "cool",
        "wow",
    ]
)


@dataclass
class Memo:
    text: str
    engine: str
    fallback_reason: str = ""


class MemoEngine(Protocol):
    name: str
    # A memo may take seconds to minutes (a model call): the memorizer never writes one while
    # it holds the write lock (a quick engine's memo it writes again there, when the memory
    # moved on since).
    slow: bool

    def write(self, session: Session, memory: list[str]) -> Memo: ...


def one_line(text: str) -> str:
    return " ".join(text.split())


def _date_part(session: Session) -> str:
    return session.created_at[:10]


def participants(session: Session) -> list[str]:
    seen: dict[str, None] = {}
    for turn in session.turns:
        seen.setdefault(turn.speaker, None)
    return list(seen)


class OfflineMemo:
    """Extractive memo: score sentences by the rare words, names and numbers they carry."""

    name = "offline"
    slow = False

    def __init__(self, sentences: int = 3, max_words: int = 28):
        self.sentences = sentences
        self.max_words = max_words

    def write(self, session: Session, memory: list[str]) -> Memo:
        raw = [s for turn in session.turns for s in PIECE_BREAK.split(turn.text)]
        if len(raw) > MAX_MEMO_SENTENCES:
            # A huge session (a book, a 10 MB log) is read at evenly spread sentences, so the
            # memo stays quick and deterministic; the pages still keep every byte.
            step = len(raw) / MAX_MEMO_SENTENCES
            raw = [raw[int(n * step)] for n in range(MAX_MEMO_SENTENCES)]
        candidates: list[tuple[int, str]] = []
        for sentence in raw:
            sentence = one_line(sentence)
            if len(_WORD.findall(sentence)) >= 4:
                candidates.append((len(candidates), sentence))
        words_per = [
            [w.lower() for w in _WORD.findall(s) if w.lower() not in STOPWORDS]
            for _, s in candidates
        ]
        df = Counter(w for words in words_per for w in set(words))
        n = max(len(candidates), 1)
        known = {w.lower() for line in memory for w in _WORD.findall(line)}
        scored = []
        for (pos, sentence), words in zip(candidates, words_per, strict=True):
            if not words:
                continue
            # Sorted: a float sum in set order would vary with the process's hash seed.
            score = sum(
                math.log(1 + n / df[w]) * (0.6 if w in known else 1.0) for w in sorted(set(words))
            )
            score += 1.5 * sum(map(_capitalized, _LETTERS.findall(sentence[1:])))
            if re.search(r"\d", sentence):
                score += 2.0
            scored.append((score / math.sqrt(len(words) + 4), pos, sentence))
        best = sorted(sorted(scored, reverse=True)[: self.sentences], key=lambda item: item[1])
        parts = [truncate_tokens(s, self.max_words) for _, _, s in best]
        head = f"{_date_part(session)} · {', '.join(participants(session))}"
        if session.title:
            head += f" · {session.title}"
        body = " ".join(parts) if parts else one_line(session.turns[0].text)[:200]
        return Memo(text=one_line(f"{head}: {body}")[: MAX_MEMO_CHARS * 2], engine=self.name)


MEMO_PROMPT = """You keep the long-term memory of a team's conversations.
Below is the memory so far (one line per earlier session) and a new session.
Write ONE line, at most 60 words, saying what this session adds to the memory: the decisions,
facts, names, owners, dates and numbers a reader would later need to find it. No preamble,
no quotes, no list, just the line."""


class LLMMemo:
    """A model writes the memo; unusable answers fall back to the offline memo."""

    name = "llm"
    slow = True

    def __init__(
        self,
        config: LLMConfig,
        fallback: OfflineMemo | None = None,
        memory_lines: int = 20,
        session_tokens: int = 3000,
        max_tokens: int = 160,
    ):
        self.config = config
        self.fallback = fallback or OfflineMemo()
        self.memory_lines = memory_lines
        self.session_tokens = session_tokens
        self.max_tokens = max_tokens  # the answer's budget; a 60-word line needs about 100

    def prompt(self, session: Session, memory: list[str]) -> list[dict[str, str]]:
        recent = memory[-self.memory_lines :]
        transcript = "\n".join(
            f"{t.speaker} ({t.timestamp or 'undated'}): {t.text}" for t in session.turns
        )
        transcript = truncate_tokens(transcript, self.session_tokens)
        user = (
            f"MEMORY:\n{chr(10).join(recent) or '(empty)'}\n\nNEW SESSION "
            f"'{session.title or session.session_id}' on {session.created_at or 'unknown date'}:"
            f"\n{transcript}\n\nThe one-line memo:"
        )
        return [{"role": "system", "content": MEMO_PROMPT}, {"role": "user", "content": user}]

    def write(self, session: Session, memory: list[str]) -> Memo:
        reason = ""
        for _attempt in range(max(1, self.config.retries + 1)):
            try:
                answer = complete(
                    self.config, self.prompt(session, memory), max_tokens=self.max_tokens
                )
            except ModelUnreachable as exc:
                reason = str(exc)
                break  # asking again would wait again
            except LLMError as exc:
                reason = str(exc)
                continue
            problem = self.check(answer, session)
            if not problem:
                head = f"{_date_part(session)} · {', '.join(participants(session))}"
                return Memo(text=f"{head}: {self.cleaned(answer)}", engine=self.name)
            reason = problem
        memo = self.fallback.write(session, memory)
        memo.fallback_reason = f"llm memo unusable ({reason}); used the offline memo"
        return memo

    @staticmethod
    def cleaned(answer: str) -> str:
        """The memo in a model's answer: one line, without the label the prompt ends with
        ("The one-line memo:", which small models repeat) and without wrapping quotes."""
        text = _MEMO_LABEL.sub("", one_line(answer))
        return text.strip("\"'` ")

    @staticmethod
    def check(answer: str, session: Session) -> str:
        """Why an answer is not a usable memo, or '' when it is."""
        text = LLMMemo.cleaned(answer)
        if not text:
            return "empty answer"
        if len(text) > MAX_MEMO_CHARS:
            return f"too long ({len(text)} characters)"
        if len(_WORD.findall(text)) < 4:
            return "too short"
        if text.lstrip().startswith(("{", "[", "<")):
            return "structured data instead of a sentence"
        source = {w.lower() for t in session.turns for w in _WORD.findall(t.text)} - STOPWORDS
        said = {w.lower() for w in _WORD.findall(text)} - STOPWORDS
        if not said & source:
            return "shares no word with the session (not grounded)"
        return ""


def memo_engine(settings: object, model: str | None = None) -> MemoEngine:
    """The engine the settings ask for (``memorizer.memo_engine``)."""
    section = settings.section("memorizer")  # type: ignore[attr-defined]
    offline = OfflineMemo(sentences=int(section["memo_sentences"]))
    if section["memo_engine"] == "llm" or model:
        config = LLMConfig.from_settings(settings, model)
        if config is None:
            from kbmem.errors import ValidationError

            raise ValidationError(
                "memo_engine is 'llm' but no model is set (llm.model or KBMEM_MODEL)", "llm.model"
            )
        return LLMMemo(config, offline)
    return offline
