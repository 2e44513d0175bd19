"""Intervals: the unit of retrieval. A session page is cut into its turns; a page written by
hand into paragraphs, each remembering the section it sits in. An interval is a line range of
one page file as read from one commit, so a citation still resolves after the page changes."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from kbmem.store.pages import TURN_HEADER, Page, turn_line_spans, unescape_line

HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
EXPAND_MODES = ("line", "turn", "paragraph", "section")


@dataclass(frozen=True)
class Interval:
    """Lines ``start``..``end`` (1-based, inclusive) of ``path`` at ``commit``."""

    page_id: str
    path: str  # repository-relative
    start: int
    end: int
    commit: str = ""
    blob: str = ""
    kind: str = "turn"  # turn | paragraph | section | line
    turn_ids: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.path}#{self.start}-{self.end}"

    def citation(self) -> str:
        return f"[{self.page_id}:L{self.start}-L{self.end}]"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["turn_ids"] = list(self.turn_ids)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Interval:
        return cls(
            page_id=str(data["page_id"]),
            path=str(data["path"]),
            start=int(data["start"]),
            end=int(data["end"]),
            commit=str(data.get("commit", "")),
            blob=str(data.get("blob", "")),
            kind=str(data.get("kind", "line")),
            turn_ids=tuple(data.get("turn_ids") or ()),
        )


@dataclass
class IntervalText:
    """An interval with what the indexes need to know about it."""

    interval: Interval
    text: str  # what is indexed: the speaker and the turn, or the section and the paragraph
    speaker: str = ""
    timestamp: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def cut_page(
    page: Page, page_id: str, path: str, commit: str = "", blob: str = ""
) -> list[IntervalText]:
    """All intervals of a page, in order."""
    base = page.body_start_line()
    lines = page.body.split("\n")
    out: list[IntervalText] = []
    spans = turn_line_spans(page.body) if page.is_session_page else []
    if spans:
        for start, end in spans:
            m = TURN_HEADER.match(lines[start])
            assert m is not None
            turn_id, speaker, stamp = m.group(1), m.group(2), m.group(3)
            text = "\n".join(unescape_line(line) for line in lines[start + 1 : end + 1])
            out.append(
                IntervalText(
                    Interval(
                        page_id, path, base + start, base + end, commit, blob, "turn", (turn_id,)
                    ),
                    f"{speaker}: {text}",
                    speaker,
                    stamp,
                )
            )
        return out
    return _paragraphs(lines, base, page, page_id, path, commit, blob)


def paragraph_blocks(lines: list[str]) -> list[tuple[int, int]]:
    """0-based (start, end) of each paragraph: a run of non-blank lines (a fenced code block
    keeps its blank lines); a heading starts a new paragraph and joins the text below it."""
    blocks: list[tuple[int, int]] = []
    i, n = 0, len(lines)
    while i < n:
        if not lines[i].strip():
            i += 1
            continue
        j, in_fence = i, False
        while j < n and (lines[j].strip() or in_fence):
            if lines[j].startswith("```"):
                in_fence = not in_fence
            if j > i and not in_fence and HEADING.match(lines[j]):
                break
            j += 1
        blocks.append((i, j - 1))
        i = j
    merged: list[tuple[int, int]] = []
    for start, end in blocks:
        if merged and all(HEADING.match(lines[k]) for k in range(merged[-1][0], merged[-1][1] + 1)):
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _paragraphs(
    lines: list[str], base: int, page: Page, page_id: str, path: str, commit: str, blob: str
) -> list[IntervalText]:
    title = str(page.meta.get("title") or "")
    section = ""
    out: list[IntervalText] = []
    for start, end in paragraph_blocks(lines):
        heading = HEADING.match(lines[start])
        if heading:
            section = heading.group(2).strip()
        body = "\n".join(lines[start : end + 1])
        context = " / ".join(part for part in (title, section) if part and part not in body)
        out.append(
            IntervalText(
                Interval(page_id, path, base + start, base + end, commit, blob, "paragraph"),
                f"{context}\n{body}" if context else body,
                extra={"section": section},
            )
        )
    return out


def expand_lines(
    lines: list[str], start: int, end: int, mode: str, pad: int, body_start: int
) -> tuple[int, int]:
    """Grow the 1-based line range ``start..end`` of a file to a natural boundary (a ``line``,
    ``turn``, ``paragraph`` or ``section``), then by ``pad`` units on either side. ``lines``
    are the file's lines; ``body_start`` is the first body line (front matter is never part of
    an expansion). A file without turns grows by paragraphs."""
    lo_limit, hi_limit = body_start, len(lines)
    if hi_limit < lo_limit:
        return start, end
    start, end = max(lo_limit, start), min(hi_limit, max(end, start))
    if mode == "line":
        return max(lo_limit, start - pad), min(hi_limit, end + pad)
    if mode == "turn":
        starts = [n for n in range(lo_limit, hi_limit + 1) if TURN_HEADER.match(lines[n - 1])]
        if starts:
            return _expand_turns(lines, start, end, pad, starts, hi_limit)
        mode = "paragraph"
    if mode == "paragraph":
        return _expand_paragraphs(lines, start, end, pad, lo_limit, hi_limit)
    if mode == "section":
        return _expand_section(lines, start, end, pad, lo_limit, hi_limit)
    raise ValueError(mode)


def _expand_turns(
    lines: list[str], start: int, end: int, pad: int, starts: list[int], hi_limit: int
) -> tuple[int, int]:
    """``start..end`` grown to the turns (beginning at lines ``starts``) it touches, and
    ``pad`` turns more on either side, without trailing blank lines."""
    before = [n for n in starts if n <= start] or [starts[0]]
    first_idx = starts.index(before[-1])
    after = [i for i, n in enumerate(starts) if n <= end]
    last_idx = after[-1] if after else first_idx
    first_idx = max(0, first_idx - pad)
    last_idx = min(len(starts) - 1, last_idx + pad)
    lo = starts[first_idx]
    hi = (starts[last_idx + 1] - 1) if last_idx + 1 < len(starts) else hi_limit
    while hi > lo and not lines[hi - 1].strip():
        hi -= 1
    return lo, hi


def _expand_paragraphs(
    lines: list[str], start: int, end: int, pad: int, lo_limit: int, hi_limit: int
) -> tuple[int, int]:
    """``start..end`` grown to the paragraphs (runs of non-blank lines) it touches, and
    ``pad`` paragraphs more on either side."""
    lo, hi = start, end
    for step in range(pad + 1):
        while lo > lo_limit and lines[lo - 2].strip():
            lo -= 1
        while hi < hi_limit and lines[hi].strip():
            hi += 1
        if step < pad:
            lo = max(lo_limit, lo - 1)
            while lo > lo_limit and not lines[lo - 1].strip():
                lo -= 1
            hi = min(hi_limit, hi + 1)
            while hi < hi_limit and not lines[hi - 1].strip():
                hi += 1
    return lo, hi


def _expand_section(
    lines: list[str], start: int, end: int, pad: int, lo_limit: int, hi_limit: int
) -> tuple[int, int]:
    """``start..end`` grown to the Markdown sections it touches, and ``pad`` sections more
    on either side, without trailing blank lines."""
    heads = [n for n in range(lo_limit, hi_limit + 1) if HEADING.match(lines[n - 1])]
    owners = [n for n in heads if n <= start]
    lo = owners[-1] if owners else lo_limit
    idx = heads.index(lo) if lo in heads else -1
    later = [n for n in heads if n > end]
    hi = later[0] - 1 if later else hi_limit
    for _ in range(pad):
        if idx > 0:
            idx -= 1
            lo = heads[idx]
        if later:
            later = later[1:]
            hi = later[0] - 1 if later else hi_limit
    while hi > lo and not lines[hi - 1].strip():
        hi -= 1
    return lo, hi
