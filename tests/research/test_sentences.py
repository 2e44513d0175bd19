"""The one sentence splitter (kbmem.textutil.split_sentences) and its three cuts."""

from __future__ import annotations

from kbmem.textutil import sentence_spans, split_sentences

TEXT = "Dinner was at 7. we left e.g. early!\nSee the photo\n\n  - a caption line.  Next one"


def test_sentences_cut_after_a_full_stop_only() -> None:
    assert split_sentences(TEXT, cut="sentences") == [
        "Dinner was at 7.",
        "we left e.g.",
        "early!",
        "See the photo\n\n  - a caption line.",
        "Next one",
    ]


def test_pieces_cut_at_line_breaks_too() -> None:
    assert split_sentences(TEXT, cut="pieces") == [
        "Dinner was at 7.",
        "we left e.g.",
        "early!",
        "See the photo",
        "- a caption line.",
        "Next one",
    ]


def test_prose_joins_wrapped_lines_and_cuts_before_a_capital_only() -> None:
    assert split_sentences(TEXT, cut="prose") == [
        "Dinner was at 7. we left e.g. early!",
        "See the photo",
        "a caption line.",
        "Next one",
    ]


def test_spans_are_the_exact_text_between_breaks() -> None:
    spans = sentence_spans(TEXT, cut="pieces")
    assert [TEXT[a:b] for a, b in spans] == [
        "Dinner was at 7.",
        "we left e.g.",
        "early!",
        "See the photo",
        "  - a caption line.",
        "Next one",
    ]
    assert split_sentences("  \n\n ", cut="pieces") == [] == sentence_spans("", cut="sentences")
