"""The edges of the phrase a "what" answer is cut from its sentence by: no clause opener
before a list ("Recently, A and B"), no conjunction, preposition or subject at its ends,
and the whole coordination it is the second conjunct of. Synthetic sentences through the
real functions."""

from __future__ import annotations

import re

import pytest

from kbmem.research.phrases import verb_object
from kbmem.research.spans import coordinated, novel_phrase


def _tokens(text: str) -> list[str]:
    return re.findall(r"[\w'’-]+|[^\w\s]", text)


@pytest.mark.parametrize("opener", ["Recently", "Honestly", "Thanks", "Lately", "Yeah so"])
def test_a_clause_opener_set_off_by_a_comma_is_no_list_item(opener: str) -> None:
    tokens = _tokens(f"{opener}, tide tables and harbour charts.")
    a = tokens.index("tide")
    assert coordinated(tokens, a, tokens.index("charts")) == (a, tokens.index("charts"))


def test_a_word_of_content_before_the_comma_is_still_an_item() -> None:
    tokens = _tokens("Family, friends and neighbours.")
    a = tokens.index("friends")
    assert coordinated(tokens, a, a) == (0, tokens.index("neighbours"))


def _phrase(text: str, question: str) -> str:
    from kbmem.index.tenant import analyze

    return novel_phrase(text, set(analyze(question)), {"ilse", "toma"}, constituent=True)


@pytest.mark.parametrize(
    ("text", "question", "expected"),
    [
        # A causal conjunction and the subject after it open a clause: the phrase is
        # what the clause says.
        (
            "I chose them 'cause they support older sailors.",
            "What sort of people does the club Ilse is joining help?",
            "support older sailors",
        ),
        # A subject with its verb contracted says who, which the question names.
        (
            "We're putting together a harbour festival.",
            "What events has Ilse planned?",
            "putting together a harbour festival",
        ),
        # A preposition that opens a clause is no part of what it says.
        (
            "I started rowing after watching a regatta on the river.",
            "How did Tomas start rowing?",
            "watching a regatta",
        ),
        # A degree said after the verb phrase ends it.
        (
            "Went up to the coast last week to clear my head a little.",
            "What did Tomas go up to the coast for?",
            "clear my head",
        ),
        # The second conjunct of a coordination brings the first.
        (
            "She got injured and had to stop sailing for a month.",
            "What setback did Ilse face?",
            "injured and had to stop sailing",
        ),
    ],
)
def test_a_what_phrase_is_cut_as_a_constituent(text: str, question: str, expected: str) -> None:
    assert _phrase(text, question) == expected


def test_the_asked_verb_said_as_a_noun_takes_no_object() -> None:
    question = "What did Ilse research?"
    # After a possessive or an article, "research" is a noun: what follows is no object.
    assert verb_object(question, "Do your research and book a mooring early.", set()) == ""
    assert verb_object(question, "I researched tide tables all week.", set()) == "tide tables"
