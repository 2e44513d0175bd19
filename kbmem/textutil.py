"""Small text helpers shared by the memorizer, the indexes and the researcher."""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\w+|[^\w\s]")


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
