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


def test_prose_does_not_cut_after_an_initial_or_a_title_before_a_name() -> None:
    # "Have you read all of George R. | R. Martin's books?" lost its question mark to the cut,
    # and a list read "George R" as a name the speaker had read.
    text = "Have you read George R. R. Martin? I love Dr. Seuss. So do I. J.K. Rowling too."
    assert split_sentences(text, cut="prose") == [
        "Have you read George R. R. Martin?",
        "I love Dr. Seuss.",
        "So do I.",
        "J.K. Rowling too.",
    ]
