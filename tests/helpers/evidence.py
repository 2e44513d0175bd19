"""Evidence items built by hand, as the researcher hands them to the answer's ranking: for
tests of sentence reading and ranking that need no index."""

from __future__ import annotations

from kbmem.index.intervals import Interval
from kbmem.research.types import EvidenceItem


def turns_item(session: str, stamp: str, *turns: tuple[str, str]) -> EvidenceItem:
    """An evidence item holding ``turns`` (speaker, text) as a session page writes them."""
    lines: list[str] = []
    for n, (speaker, text) in enumerate(turns, start=1):
        lines += [f"### T{n} | {speaker} | {stamp}", text, ""]
    source = "\n".join(lines)
    interval = Interval(f"{session}/1", f"pages/{session}/1.md", 10, 10 + len(lines) - 1, "c0ffee")
    return EvidenceItem(f"{session}/1", source, 1.0, "bm25", interval, session, source)


def line_items(answer: str) -> list[str]:
    """The items of an answer's first line (a list question's), without its "(weak
    evidence)" tag."""
    return answer.split("\n", 1)[0].split(" (")[0].split(", ")
