"""Quotes of turns close together in one passage share one citation (kbmem.agent.offline
.quotation, in_runs): a citation costs more words than most quoted sentences, and the lines
between two near turns are as easy for a reader to check. Hand-built turns through the real
functions."""

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


def _read(*turns: tuple[str, str]) -> list[Sentence]:
    return read_pool(*turns, questions=True)


def _quotes(pool: list[Sentence], shown: list[Sentence], question: str) -> list[Sentence]:
    """What quotation quotes when ``shown`` must all be shown."""
    direct = DirectAnswer(NOT_SAID, [], False, "thing")
    reading = Reading(shown[:1], shown[1:], shown, pool)
    return quotation(direct, reading, set(question_terms(question)))


TALK = (
    ("Omar", "I ran a charity race for mental health last Saturday."),
    ("Ines", "That charity race sounds great, you must be proud!"),
    ("Omar", "Thanks! The race raised money for the new clinic."),
    ("Ines", "Lovely."),
    ("Omar", "We should go hiking soon."),
    ("Ines", "Sure."),
    ("Omar", "My sister also ran a charity race, in Lisbon."),
)


def test_quotes_of_near_turns_share_one_citation() -> None:
    pool = _read(*TALK)
    race, proud = pool[0], pool[1]
    quoted = _quotes(pool, [race, proud], "What did Omar run last Saturday?")
    assert len(quoted) == 1, quoted
    # One quote, cited from the first turn's lines to the last's, the other speaker named.
    assert (quoted[0].start, quoted[0].end) == (race.start, proud.end), quoted
    answer = OfflineAgent._quotes(quoted, ANSWER_HEAD)
    assert "Omar: I ran a charity race" in answer, answer
    assert "… Ines: That charity race sounds great" in answer, answer
    assert answer.count("[s-talk/1:") == 1, answer


def test_a_turn_said_further_on_keeps_its_own_citation() -> None:
    pool = _read(*TALK)
    race, sister = pool[0], pool[-1]
    quoted = _quotes(pool, [race, sister], "Who ran a charity race?")
    # Five turns between them: a citation of all those lines would be no help to a reader.
    assert len(quoted) == 2, quoted
    answer = OfflineAgent._quotes(quoted, ANSWER_HEAD)
    assert answer.count("[s-talk/1:") == 2, answer


def test_the_speaker_is_not_repeated_within_one_quote() -> None:
    pool = _read(*TALK)
    race, clinic = pool[0], pool[3]
    quoted = _quotes(pool, [race, clinic], "What was Omar's charity race for?")
    answer = OfflineAgent._quotes(quoted, ANSWER_HEAD)
    assert "Saturday. … The race raised money" in answer, answer
