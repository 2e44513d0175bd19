"""The reply to the other speaker's follow-up question about the direct answer's sentence, as
kbmem.agent.offline.quotation quotes it: from its first sentence that says something (not its
thanks), and with the sentence after it when that first one is only a short reaction."""

from __future__ import annotations

from helpers.pool import read_pool

from kbmem.agent.offline import (
    ANSWER_HEAD,
    OfflineAgent,
    Reading,
    Sentence,
    question_terms,
    quotation,
)
from kbmem.research.direct import NOTHING as NOT_SAID
from kbmem.research.types import DirectAnswer

_read = read_pool


def _quoted(pool: list[Sentence], question: str) -> str:
    """The quotes when the first sentence of ``pool`` is the best one."""
    direct = DirectAnswer(NOT_SAID, [], False, "thing")
    reading = Reading([pool[0]], [], [pool[0]], pool)
    chosen = quotation(direct, reading, set(question_terms(question)))
    return OfflineAgent._quotes(chosen, ANSWER_HEAD)


def test_a_reply_that_opens_with_thanks_is_quoted_from_what_it_says() -> None:
    pool = _read(
        ("Omar", "We celebrated my daughter's birthday with a concert in the park."),
        ("Ines", "Oh fun! Who played?"),
        ("Omar", "Thanks, Ines! It was Matt Patterson, he is so talented!"),
    )
    answer = _quoted(pool, "Who played at the concert for Omar's daughter's birthday?")
    assert "Matt Patterson" in answer, answer


def test_a_reply_that_opens_with_a_short_reaction_brings_its_detail() -> None:
    pool = _read(
        ("Omar", "Big news: I got promoted at work!"),
        ("Ines", "Congrats on the promotion! How did you feel when you found out?"),
        (
            "Omar",
            "I was really excited. The hard work paid off now that I'm an assistant manager. "
            "We went out for dinner after.",
        ),
    )
    answer = _quoted(pool, "What did Omar get promoted to?")
    assert "assistant manager" in answer, answer
    assert "dinner" not in answer, answer


def test_a_reply_that_opens_with_its_detail_is_quoted_alone() -> None:
    pool = _read(
        ("Omar", "Big news: I got promoted at work!"),
        ("Ines", "Congrats! How did you feel when you found out?"),
        (
            "Omar",
            "It feels like the hard work I put in over the years has finally paid off. "
            "We went out for dinner after.",
        ),
    )
    answer = _quoted(pool, "What did Omar get promoted to?")
    assert "paid off" in answer, answer
    assert "dinner" not in answer, answer


def test_a_follow_up_that_asks_before_its_own_news_is_replied_to() -> None:
    # The other asks, then tells their own news: the next turn still answers the question.
    pool = _read(
        ("Omar", "We celebrated my daughter's birthday with a concert in the park."),
        (
            "Ines",
            "Sounds wonderful! Who played? I went to a pottery class last week, so much fun.",
        ),
        ("Omar", "Thanks, Ines! It was Matt Patterson, he is so talented!"),
    )
    answer = _quoted(pool, "Who played at the concert for Omar's daughter's birthday?")
    assert "Matt Patterson" in answer, answer


def test_a_turn_that_asks_nothing_brings_no_reply() -> None:
    pool = _read(
        ("Omar", "We celebrated my daughter's birthday with a concert in the park."),
        ("Ines", "Sounds wonderful! I went to a pottery class last week, so much fun."),
        ("Omar", "Thanks, Ines! It was Matt Patterson, he is so talented!"),
    )
    answer = _quoted(pool, "Who played at the concert for Omar's daughter's birthday?")
    assert "Matt Patterson" not in answer, answer
