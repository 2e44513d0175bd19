"""Intervals: session pages cut into whole turns, notes into paragraphs with their section,
expansion to natural boundaries, and citations that survive later edits of the page."""

from __future__ import annotations

import itertools

import pytest

from kbmem.errors import NotFound, ValidationError
from kbmem.index.intervals import Interval, cut_page, expand_lines
from kbmem.memorize.memorizer import ingest_session
from kbmem.memorize.sessions import session_from_mapping
from kbmem.research.toolkit import Toolkit
from kbmem.store.pages import TURN_HEADER, parse_page, unescape_line
from kbmem.store.pagestore import PageStore
from kbmem.store.repository import KnowledgeBase

TENANT = "acme"

TURNS = [
    ("t1", "Ann Okafor", "Morning all. The harbour crane inspection moved to Thursday."),
    ("t2", "Bob Lindqvist", "Noted.\n\nSecond paragraph of the same turn: the crane is Liebherr."),
    # A line that would read as a turn header must stay inside this turn.
    ("t3", "Ann Okafor", "Quoting the log:\n### t9 | Mallory | 2026-01-01T00:00:00\nend of quote"),
    ("t4", "Chen Wei", "Budget for the crane repair is 14,500 euros, approved by Dana."),
    ("t5", "Bob Lindqvist", "One line."),
    ("t6", "Ann Okafor", "Wrap up: crane Thursday, budget approved, Chen books the engineer."),
]


def session_mapping(session_id: str = "s-crane", turns=TURNS) -> dict:
    return {
        "tenantId": TENANT,
        "sessionId": session_id,
        "title": "Crane inspection",
        "tags": ["harbour", "Maintenance"],
        "classification": "internal",
        "turns": [
            {
                "role": "user",
                "content": text,
                "timestamp": f"2026-01-05T09:0{n}:00",
                "metadata": {"id": tid, "speaker": speaker},
            }
            for n, (tid, speaker, text) in enumerate(turns)
        ],
    }


NOTE = """---
title: Crane handbook
tags: [harbour]
---
# Crane handbook

The crane handbook is kept by Dana.
It is reviewed every spring.

## Inspections

Inspections happen every quarter.

The inspector signs the log book
and files it with the port.

```
code block line one

code block after a blank line
```

## Repairs

Repairs above 10,000 euros need approval.
"""


def file_lines(kb: KnowledgeBase, path: str, rev: str = "HEAD") -> list[str]:
    text = kb.read_bytes(path, rev).decode()
    lines = text.split("\n")
    return lines[:-1] if text.endswith("\n") else lines


@pytest.fixture
def kb(empty_kb: KnowledgeBase) -> KnowledgeBase:
    ingest_session(empty_kb, session_from_mapping(session_mapping()))
    empty_kb.commit_files({f"tenants/{TENANT}/notes/crane.md": NOTE.encode()}, "Add crane note")
    return empty_kb


def intervals(kb: KnowledgeBase, page_id: str, rev: str = "HEAD"):
    record = PageStore(kb, TENANT).read(page_id, rev)
    return record, cut_page(record.page, record.page_id, record.path, record.commit, record.blob)


# -- session pages ----------------------------------------------------------------------------


def test_session_page_intervals_are_whole_turns(kb: KnowledgeBase) -> None:
    record, items = intervals(kb, "s-crane/1")
    lines = file_lines(kb, record.path)
    assert [it.interval.turn_ids for it in items] == [(t[0],) for t in TURNS]
    for item, (tid, speaker, text) in zip(items, TURNS, strict=True):
        iv = item.interval
        assert iv.kind == "turn"
        assert iv.page_id == "s-crane/1"
        assert iv.path == f"tenants/{TENANT}/pages/s-crane/1.md"
        assert iv.commit == kb.head() and iv.blob == record.blob
        # The first line is the turn's header; the rest, unescaped, is the turn verbatim.
        header = TURN_HEADER.match(lines[iv.start - 1])
        assert header is not None and header.group(1) == tid and header.group(2) == speaker
        body = "\n".join(unescape_line(line) for line in lines[iv.start : iv.end])
        assert body == text
        # Nothing of the turn is left outside: the next line is the blank separator, and the
        # one after it is the next turn's header (or the end of the file).
        assert lines[iv.end] == ""
        assert iv.end + 1 == len(lines) or TURN_HEADER.match(lines[iv.end + 1])
        assert item.text == f"{speaker}: {text}"
        assert item.speaker == speaker and item.timestamp.startswith("2026-01-05T09:0")
    # Intervals are in order and do not overlap.
    spans = [(it.interval.start, it.interval.end) for it in items]
    assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))


def test_escaped_turn_header_inside_a_turn_is_not_a_turn(kb: KnowledgeBase) -> None:
    record, items = intervals(kb, "s-crane/1")
    quoted = next(it for it in items if it.interval.turn_ids == ("t3",))
    assert "### t9 | Mallory" in quoted.text
    assert not any("t9" in it.interval.turn_ids for it in items)
    lines = file_lines(kb, record.path)
    assert lines[quoted.interval.start].startswith("Quoting")
    assert lines[quoted.interval.start + 1].startswith("\\### t9")


def test_session_split_into_pages_keeps_turns_whole(empty_kb: KnowledgeBase) -> None:
    empty_kb.settings.data["memorizer"]["page_tokens"] = 40
    result = ingest_session(empty_kb, session_from_mapping(session_mapping()))
    assert len(result.page_ids) >= 3
    seen = []
    for page_id in result.page_ids:
        record, items = intervals(empty_kb, page_id)
        assert [it.interval.turn_ids[0] for it in items] == [t.id for t in record.page.turns()], (
            page_id
        )
        seen += [tid for it in items for tid in it.interval.turn_ids]
    assert seen == [t[0] for t in TURNS]


# -- notes ------------------------------------------------------------------------------------


def test_note_is_cut_into_paragraphs_with_section_context(kb: KnowledgeBase) -> None:
    record, items = intervals(kb, "notes/crane.md")
    lines = file_lines(kb, record.path)
    got = [(it.extra["section"], lines[it.interval.start - 1 : it.interval.end]) for it in items]
    assert got == [
        (
            "Crane handbook",
            [
                "# Crane handbook",
                "",
                "The crane handbook is kept by Dana.",
                "It is reviewed every spring.",
            ],
        ),
        ("Inspections", ["## Inspections", "", "Inspections happen every quarter."]),
        ("Inspections", ["The inspector signs the log book", "and files it with the port."]),
        (
            "Inspections",
            ["```", "code block line one", "", "code block after a blank line", "```"],
        ),
        ("Repairs", ["## Repairs", "", "Repairs above 10,000 euros need approval."]),
    ]
    for item in items:
        assert item.interval.kind == "paragraph"
        assert item.interval.turn_ids == ()
        assert item.interval.commit == kb.head()
    # A paragraph below a heading is indexed with the page title and its section, so that a
    # search for the section's words finds it; a heading already in the text is not repeated.
    assert items[2].text.startswith("Crane handbook / Inspections\nThe inspector")
    assert items[1].text.startswith("Crane handbook\n## Inspections")
    assert items[0].text.startswith("# Crane handbook")


def test_note_without_front_matter_starts_at_line_one() -> None:
    text = "First paragraph\nstill first.\n\nSecond paragraph.\n"
    page = parse_page(text, "x")
    items = cut_page(page, "plain.md", "tenants/acme/plain.md")
    assert [(it.interval.start, it.interval.end) for it in items] == [(1, 2), (4, 4)]
    assert [it.text for it in items] == ["First paragraph\nstill first.", "Second paragraph."]


def test_interval_round_trips_through_a_dict(kb: KnowledgeBase) -> None:
    _, items = intervals(kb, "s-crane/1")
    iv = items[1].interval
    assert Interval.from_dict(iv.to_dict()) == iv
    assert iv.key == f"{iv.path}#{iv.start}-{iv.end}"
    assert iv.citation() == f"[s-crane/1:L{iv.start}-L{iv.end}]"


# -- expansion --------------------------------------------------------------------------------


def test_expand_turn_mode_with_pad(kb: KnowledgeBase) -> None:
    toolkit = Toolkit(kb, TENANT)
    _, items = intervals(kb, "s-crane/1")
    by_turn = {it.interval.turn_ids[0]: it.interval for it in items}
    # A single line inside a turn grows to the whole turn.
    t2 = by_turn["t2"]
    inner = Interval(t2.page_id, t2.path, t2.end, t2.end, t2.commit)
    out = toolkit.expand(inner, "turn", 0)
    assert (out.interval.start, out.interval.end) == (t2.start, t2.end)
    assert out.interval.turn_ids == ("t2",)
    assert out.interval.kind == "turn"
    # pad=1 adds one whole turn on each side; at the edges it stops at the first/last turn.
    out = toolkit.expand(t2, "turn", 1)
    assert (out.interval.start, out.interval.end) == (by_turn["t1"].start, by_turn["t3"].end)
    assert out.interval.turn_ids == ("t1", "t2", "t3")
    assert out.text.startswith("### t1 | Ann Okafor") and out.text.endswith("end of quote")
    out = toolkit.expand(by_turn["t6"], "turn", 2)
    assert out.interval.turn_ids == ("t4", "t5", "t6")
    assert out.interval.end == by_turn["t6"].end
    out = toolkit.expand(by_turn["t1"], "turn", 50)
    assert out.interval.turn_ids == tuple(t[0] for t in TURNS)


def test_expand_line_mode_pads_lines_inside_the_body(kb: KnowledgeBase) -> None:
    toolkit = Toolkit(kb, TENANT)
    record, items = intervals(kb, "s-crane/1")
    lines = file_lines(kb, record.path)
    t4 = items[3].interval
    out = toolkit.expand(t4, "line", 2)
    assert (out.interval.start, out.interval.end) == (t4.start - 2, t4.end + 2)
    assert out.text == "\n".join(lines[t4.start - 3 : t4.end + 2])
    # Never into the front matter, never past the end of the file.
    first = items[0].interval
    out = toolkit.expand(first, "line", 40)
    assert out.interval.start == record.page.body_start_line()
    assert out.interval.end == len(lines)
    assert not out.text.startswith("---")


def test_expand_paragraph_and_section_modes_on_a_note(kb: KnowledgeBase) -> None:
    toolkit = Toolkit(kb, TENANT)
    record, _items = intervals(kb, "notes/crane.md")
    lines = file_lines(kb, record.path)

    def line_of(text: str) -> int:
        return lines.index(text) + 1

    signs = line_of("and files it with the port.")
    iv = Interval("notes/crane.md", record.path, signs, signs, record.commit)
    out = toolkit.expand(iv, "paragraph", 0)
    assert out.text == "The inspector signs the log book\nand files it with the port."
    out = toolkit.expand(iv, "paragraph", 1)
    assert out.interval.start == line_of("Inspections happen every quarter.")
    assert out.interval.end == line_of("code block line one")
    # Turn mode on a page without turns falls back to paragraphs.
    assert toolkit.expand(iv, "turn", 0).text == toolkit.expand(iv, "paragraph", 0).text
    out = toolkit.expand(iv, "section", 0)
    assert out.interval.start == line_of("## Inspections")
    assert out.interval.end == line_of("```") + 4  # the closing fence of the code block
    assert out.text.endswith("code block after a blank line\n```")
    out = toolkit.expand(iv, "section", 1)
    assert out.interval.start == line_of("# Crane handbook")
    assert out.interval.end == line_of("Repairs above 10,000 euros need approval.")
    assert out.interval.kind == "section"


def test_expand_lines_directly() -> None:
    lines = ["a", "", "b1", "b2", "", "c"]
    assert expand_lines(lines, 3, 3, "paragraph", 0, 1) == (3, 4)
    assert expand_lines(lines, 3, 3, "paragraph", 1, 1) == (1, 6)
    assert expand_lines(lines, 4, 4, "line", 1, 1) == (3, 5)
    assert expand_lines(lines, 1, 1, "line", 3, 3) == (3, 4)  # clamped to the body
    with pytest.raises(ValueError):
        expand_lines(lines, 1, 1, "chapter", 0, 1)


def test_expand_refuses_bad_arguments(kb: KnowledgeBase) -> None:
    toolkit = Toolkit(kb, TENANT)
    _, items = intervals(kb, "s-crane/1")
    iv = items[0].interval
    with pytest.raises(ValidationError, match="mode"):
        toolkit.expand(iv, "chapter", 0)
    for pad in (-1, 51, 1.5, True):
        with pytest.raises(ValidationError, match="pad"):
            toolkit.expand(iv, "turn", pad)
    with pytest.raises(ValidationError, match="interval"):
        toolkit.expand(Interval(iv.page_id, iv.path, 5, 4, iv.commit), "line", 0)
    with pytest.raises(ValidationError, match="interval"):
        toolkit.expand({"page_id": iv.page_id}, "line", 0)
    with pytest.raises(ValidationError, match="does not live"):
        toolkit.expand(Interval("s-crane/2", iv.path, 1, 2, iv.commit), "line", 0)


# -- citations survive edits ------------------------------------------------------------------


def test_interval_resolves_to_its_original_text_after_the_page_is_edited(
    kb: KnowledgeBase,
) -> None:
    toolkit = Toolkit(kb, TENANT)
    record, items = intervals(kb, "s-crane/1")
    old = {it.interval.turn_ids[0]: it.interval for it in items}
    old_text = {tid: toolkit.resolve(iv).text for tid, iv in old.items()}
    assert old_text["t4"].endswith("approved by Dana.")
    note_record, note_items = intervals(kb, "notes/crane.md")
    old_note = note_items[2].interval
    old_note_text = toolkit.resolve(old_note).text

    # Someone edits both pages by hand: lines are inserted above and the turn is reworded.
    edited = record.text.replace("14,500 euros", "16,000 euros").replace(
        "# Crane inspection (page 1)\n", "# Crane inspection (page 1)\n\nA note added later.\n"
    )
    assert edited != record.text
    note_edited = note_record.text.replace("## Inspections\n", "## Inspections\n\nNew line.\n")
    kb.commit_files(
        {record.path: edited.encode(), note_record.path: note_edited.encode()}, "Hand edit"
    )
    assert kb.head() != old["t4"].commit

    for tid, iv in old.items():
        again = toolkit.resolve(iv)
        assert again.text == old_text[tid]
        assert again.interval.commit == iv.commit
    assert toolkit.resolve(old_note).text == old_note_text
    # The same line numbers read at HEAD show something else: the commit is what pins them.
    moved = Interval(old["t4"].page_id, old["t4"].path, old["t4"].start, old["t4"].end)
    assert toolkit.resolve(moved).text != old_text["t4"]
    # The new cut of the page has the new text at new lines.
    _, new_items = intervals(kb, "s-crane/1")
    new_t4 = next(it for it in new_items if it.interval.turn_ids == ("t4",))
    assert new_t4.interval.start == old["t4"].start + 2
    assert "16,000 euros" in toolkit.resolve(new_t4.interval).text

    # Even after the page is deleted, the old citation still resolves.
    kb.commit_files({record.path: None}, "Delete the page")
    assert toolkit.resolve(old["t4"]).text == old_text["t4"]
    with pytest.raises(NotFound):
        toolkit.resolve(moved)
