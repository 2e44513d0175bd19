"""Sentences as the offline agent's reading pools them, built by hand from turns."""

from __future__ import annotations

from helpers.evidence import turns_item
from kbmem.agent.offline import Sentence
from kbmem.textutil import split_sentences


def read_pool(*turns: tuple[str, str], questions: bool = False) -> list[Sentence]:
    """Each turn's sentences in the order said, cited to the lines ``turns_item`` writes
    them on. The agent never reads a question as a statement: questions are left out unless
    ``questions`` keeps them (to test what is done with them)."""
    item = turns_item("s-talk", "2026-03-01T10:00:00", *turns)
    pool: list[Sentence] = []
    for n, (speaker, text) in enumerate(turns):
        start = 10 + 3 * n  # turns_item's header line of the turn; its text is on the next
        for sentence in split_sentences(text, cut="prose"):
            if questions or not sentence.endswith("?"):
                order = len(pool) + 1
                pool.append(Sentence(sentence, speaker, item, start, start + 1, frozenset(), order))
    return pool
