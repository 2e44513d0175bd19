"""Small text helpers shared by the memorizer, the indexes and the researcher."""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\w+|[^\w\s]")
# Where text is cut into the pieces that are embedded, memoed and quoted as facts: after a
# sentence's closing ., ! or ?, and (PIECE_BREAK) at line breaks too, so that an image's
# caption line or a list item is a piece of its own. The offline agent reads sentences more
# carefully (kbmem.agent.offline.split_sentences: wrapped lines joined, "e.g. this" kept
# whole); these cuts are cheaper and are what the indexes were built with.
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")
PIECE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")


def count_tokens(text: str) -> int:
    """A model-free token count (words and punctuation), close to what LLM tokenizers give
    for English prose; one function so that every budget and benchmark counts alike."""
    return len(_TOKEN.findall(text))


def truncate_tokens(text: str, limit: int) -> str:
    """Cut ``text`` after ``limit`` tokens, deterministically, at a token boundary."""
    if limit <= 0:
        return ""
    for count, match in enumerate(_TOKEN.finditer(text), start=1):
        if count > limit:
            return text[: match.start()].rstrip() + " …"
    return text


def slug(text: str, max_len: int = 48) -> str:
    s = re.sub(r"[^A-Za-z0-9]+", "-", text.lower()).strip("-")
    return s[:max_len].strip("-") or "untitled"
