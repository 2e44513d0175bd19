"""A day of the month said alone ("the 14th"): English takes its month from the date said
just before it (in the sentence, or the sentence before), else from the month it was said in
(the next month when that day has passed); an ordinal a noun follows ("the 14th century")
counts things, not days. Synthetic sentences through the real functions."""

from __future__ import annotations

from datetime import date

from helpers.evidence import turns_item

from kbmem.dates import said_dates
from kbmem.research.direct import direct_answer


def _written(text: str, said_on: date, before: str = "") -> list[str]:
    return [d.written for d in said_dates(text, said_on, before)]


def test_a_day_alone_takes_the_month_of_the_date_said_before_it() -> None:
    before = "The regatta is on Friday 9 May."
    assert _written("The 16th is the prize-giving.", date(2025, 3, 1), before) == [
        "Friday 16 May 2025"
    ]
    assert _written("We sail from 2 June to the 5th.", date(2025, 3, 1)) == [
        "Monday 2 June 2025",
        "Thursday 5 June 2025",
    ]


def test_without_a_month_before_a_day_alone_is_of_the_month_said_or_the_next() -> None:
    assert _written("Let's meet on the 28th.", date(2025, 5, 20)) == ["Wednesday 28 May 2025"]
    # The 3rd of May has passed on 20 May: the 3rd next to come is in June.
    assert _written("Let's meet on the 3rd.", date(2025, 5, 20)) == ["Tuesday 3 June 2025"]


def test_a_day_alone_told_as_gone_by_is_the_last_one_passed() -> None:
    assert _written("We sailed on the 3rd.", date(2025, 5, 20)) == ["Saturday 3 May 2025"]
    assert _written("It was on the 25th.", date(2025, 5, 20)) == ["Friday 25 April 2025"]


def test_an_ordinal_a_noun_follows_counts_things_not_days() -> None:
    assert _written("A 14th century chapel on the 3rd floor.", date(2025, 5, 20)) == []
    assert _written("It is the 2nd time I came here.", date(2025, 5, 20)) == []


def test_a_day_alone_answers_when_its_event_is_asked() -> None:
    item = turns_item(
        "s1",
        "2025-03-02T10:00:00",
        (
            "Lena Okafor",
            "I said the store opens on Tuesday 8 April. That's wrong. The store opens on "
            "Tuesday 15 April. The 8th is the first day of the Harbour Book Fair in Dundee, "
            "and we have a stand there.",
        ),
    )
    line = direct_answer("When is the Harbour Book Fair?", [item]).line
    assert line == "Tuesday 8 April 2025", line


def test_a_day_alone_takes_its_month_from_earlier_in_its_turn() -> None:
    item = turns_item(
        "s1",
        "2025-03-02T10:00:00",
        (
            "Lena Okafor",
            "The store opens on Tuesday 15 April. I checked twice. The 8th is the first day "
            "of the Harbour Book Fair in Dundee.",
        ),
    )
    line = direct_answer("When is the Harbour Book Fair?", [item]).line
    assert line == "Tuesday 8 April 2025", line


def test_a_day_alone_a_preposition_follows_is_a_day() -> None:
    # "after", "before", "with", "from" relate the day to an event; no noun follows it.
    assert _written("We sailed on the 3rd with my uncle.", date(2025, 5, 20)) == [
        "Saturday 3 May 2025"
    ]
    assert _written("The party is on the 28th after the exams.", date(2025, 5, 20)) == [
        "Wednesday 28 May 2025"
    ]
