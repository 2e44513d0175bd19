"""The page format: front matter + body, turns in a stable line format, byte-for-byte round
trips, and broken front matter reported with a message that names the problem."""

from __future__ import annotations

import random

import pytest

from kbmem.errors import PageFormatError
from kbmem.store.pages import (
    Page,
    Turn,
    parse_page,
    parse_turns,
    render_page,
    render_turn,
    render_turns,
    turn_line_spans,
)
from kbmem.store.pagestore import PageStore

# Text that could confuse a line format: headers inside text, escapes, blank and CR lines.
TRICKY_TEXTS = [
    "plain text",
    "",
    "\n",
    "\n\n\n",
    "trailing newline\n",
    "two trailing newlines\n\n",
    "\nleading newline",
    "### a | b | c",
    "### t9 | Maya Lindqvist | 2026-01-05T09:30:00",
    "before\n### a | b | c\nafter",
    "\\### x",
    "\\\\### x",
    "\\\\\\### a | b | c\n",
    "### not a header because nothing follows",
    "###no space",
    "ends with a header\n### a | b |",
    "carriage\rreturn",
    "windows line\r\nendings\r\n",
    "\r",
    "lone CR at the end\r",
    "### a | b | c\r",
    "unicode: naïve café — 東京 🚢 Ωμέγα",
    "---\nlooks: like front matter\n---",
    "trailing spaces   \n\ttab\t",
    "\x00nul and \x1b escape",
]


def _turn(n: int, text: str, speaker: str = "Maya Lindqvist", ts: str = "2026-01-05T09:30:00"):
    return Turn(id=f"t{n}", speaker=speaker, timestamp=ts, text=text)


@pytest.mark.parametrize("text", TRICKY_TEXTS)
def test_single_turn_text_round_trips_exactly(text: str) -> None:
    turn = _turn(1, text)
    [back] = parse_turns(render_turn(turn))
    assert back == turn


def test_all_tricky_texts_in_one_body_round_trip_and_keep_their_count() -> None:
    turns = [_turn(n, text) for n, text in enumerate(TRICKY_TEXTS, start=1)]
    body = "# heading (page 1)\n\n" + render_turns(turns)
    back = parse_turns(body)
    assert back == turns  # no phantom turn from a header-like line of text
    assert render_turns(back) == render_turns(turns)


def test_random_texts_round_trip() -> None:
    """Fuzz with a fixed seed: random mixes of the fragments that matter to the format."""
    pieces = ["### ", "\\", "a | b | c", "\n", "\r", "x", " ", "|", "é", "🚢", "---", "\n\n"]
    rng = random.Random(20260105)
    for _round in range(300):
        turns = [
            _turn(n, "".join(rng.choice(pieces) for _ in range(rng.randint(0, 25))))
            for n in range(1, rng.randint(1, 5) + 1)
        ]
        assert parse_turns(render_turns(turns)) == turns


def test_speaker_with_separator_and_empty_timestamp_round_trip() -> None:
    turns = [
        Turn("D1:1", "a | b", "", "speaker holds the separator"),
        Turn("D1:2", "Caroline", "2023-05-08T13:56:00", "x"),
        Turn("t-3", "", "", "no speaker, no time"),
    ]
    assert parse_turns(render_turns(turns)) == turns


def test_turn_line_spans_point_at_each_turn() -> None:
    turns = [_turn(1, "one\ntwo"), _turn(2, ""), _turn(3, "### a | b | c\nlast\n")]
    body = "# h (page 1)\n\n" + render_turns(turns)
    lines = body.split("\n")
    spans = turn_line_spans(body)
    assert len(spans) == 3
    for (start, end), turn in zip(spans, turns, strict=True):
        assert lines[start] == f"### {turn.id} | {turn.speaker} | {turn.timestamp}"
        assert end - start == len(turn.text.split("\n"))


@pytest.mark.parametrize(
    ("turn", "problem"),
    [
        (Turn("", "s", "", "x"), "id"),
        (Turn("has space", "s", "", "x"), "id"),
        (Turn("t1", "s", "2026-01-05 09:30", "x"), "timestamp"),
        (Turn("t1", "two\nlines", "", "x"), "speaker"),
    ],
)
def test_render_turn_refuses_what_the_line_format_cannot_hold(turn: Turn, problem: str) -> None:
    with pytest.raises(PageFormatError, match=problem):
        render_turn(turn)


def _session_page() -> Page:
    meta = {
        "id": "kickoff/1",
        "session_id": "kickoff",
        "tenant_id": "default",
        "agent_id": "team-assistant",
        "sequence": 1,
        "title": "Kickoff: the plan — v1 (draft)",
        "created_at": "2026-01-05T09:30:00",
        "memo": "2026-01-05 · Maya: 'quoted' and \"double\" # not a comment: yes",
        "memo_version": 3,
        "tags": ["kickoff", "2026"],
        "classification": "internal",
        "policy_tags": [],
        "origin_run_id": "",
        "request_intent": "a\n---\nmulti-line intent with a fence inside\n",
        "turns": ["t1", "t3"],
        "header": "Session 'Kickoff' of 2026-01-05 with Maya; page 1 of 1.",
    }
    body = "# Kickoff (page 1)\n\n" + render_turns(
        [_turn(1, "### a | b | c"), _turn(2, "---\n"), _turn(3, "naïve 🚢\r")]
    )
    return Page(meta=meta, body=body)


def test_session_page_render_parse_render_is_byte_identical() -> None:
    page = _session_page()
    text = render_page(page)
    parsed = parse_page(text)
    assert parsed.meta == page.meta
    assert parsed.body == page.body
    assert render_page(parsed) == text
    assert parsed.is_session_page
    assert [t.text for t in parsed.turns()] == ["### a | b | c", "---\n", "naïve 🚢\r"]
    # The body starts on the line the page says it does.
    assert text.split("\n")[parsed.body_start_line() - 1] == "# Kickoff (page 1)"


def test_memorized_pages_round_trip_byte_for_byte(example_kb) -> None:
    store = PageStore(example_kb, "default")
    records = list(store.iter_pages())
    session_pages = [r for r in records if r.page.is_session_page]
    assert len(session_pages) >= 8
    for record in session_pages:
        page = record.page
        assert render_page(parse_page(record.text)) == record.text
        # Rebuilt from the parsed turns alone, the page is the same bytes again.
        heading = page.body[: page.body.index("\n### ") + 1]
        assert render_page(Page(meta=page.meta, body=heading + render_turns(page.turns()))) == (
            record.text
        )


def test_hand_written_page_without_front_matter() -> None:
    text = "# Team notes\r\n\r\nNo header here.\n### a | b | c\n"
    page = parse_page(text)
    assert page.meta == {}
    assert not page.has_front_matter
    assert page.body == text
    assert page.body_start_line() == 1
    assert not page.is_session_page and page.turns() == []
    assert render_page(page) == text


def test_hand_written_page_with_front_matter_keeps_the_body_exactly() -> None:
    body = "# Glossary\n\n---\n\nA horizontal rule above, not a fence.\n"
    text = (
        "---\ntitle: Ferrylog glossary\ncreated_at: 2026-01-14\n"
        "tags: [glossary, product]\nowner: Priya\n---\n" + body
    )
    page = parse_page(text)
    assert page.meta == {
        "title": "Ferrylog glossary",
        "created_at": "2026-01-14",  # an unquoted date is read as text, not rejected
        "tags": ["glossary", "product"],
        "owner": "Priya",
    }
    assert page.body == body
    assert page.body_start_line() == 7
    assert text.split("\n")[page.body_start_line() - 1] == "# Glossary"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("---\n---\n", ({}, "")),
        ("---\n---\nbody", ({}, "body")),
        ("---\ntitle: only a header\n---", ({"title": "only a header"}, "")),
        ("---\n# a comment\n---\nx\n", ({}, "x\n")),
    ],
)
def test_edge_front_matter_shapes(text: str, expected: tuple[dict, str]) -> None:
    page = parse_page(text)
    assert (page.meta, page.body) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("---\ntitle: never closed\n\nbody\n", "never closed"),
        ("---\ntitle: [unclosed\n---\nbody\n", "not valid YAML"),
        ("---\ntitle: 'a\n---\n", "not valid YAML"),
        ("---\n\tbad: tab indentation\n---\n", "not valid YAML"),
        ("---\n- a\n- b\n---\nbody\n", "must be a mapping"),
        ("---\njust a string\n---\n", "must be a mapping"),
        ("---\ntags: solo\n---\n", "'tags' must be a list"),
        ("---\nsequence: two\n---\n", "'sequence' must be an integer"),
        ("---\nmemo_version: true\n---\n", "'memo_version' must be an integer"),
        ("---\ntitle: [a, b]\n---\n", "'title' must be text"),
        ("---\nmemo: {a: 1}\n---\n", "'memo' must be text"),
    ],
)
def test_broken_front_matter_names_the_problem(text: str, problem: str) -> None:
    with pytest.raises(PageFormatError) as info:
        parse_page(text, "default:notes/broken.md")
    message = str(info.value)
    assert problem in message
    assert "default:notes/broken.md" in message
