"""The edges of the phrase a "what" answer is cut from its sentence by: no clause opener
before a list ("Recently, A and B"), no conjunction, preposition or subject at its ends,
and the whole coordination it is the second conjunct of. Synthetic sentences through the
real functions."""

from __future__ import annotations

import re

import pytest

from kbmem.research.spans import coordinated


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
