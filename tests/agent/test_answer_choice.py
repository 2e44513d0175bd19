"""Asked "A or B?": a name offered whole (its initials too), a speaker's name in an option
not read as support for it, and when neither option is said, "Memory does not say." with
what memory holds still quoted (the chat does not claim it holds nothing). Synthetic turns
through the real functions."""

from __future__ import annotations

from helpers.evidence import turns_item

from kbmem.research.answer_types import alternatives
from kbmem.research.direct import NOTHING, direct_answer


def test_initials_stay_with_the_name_they_open() -> None:
    offered = alternatives("Would Ilse enjoy books by C. S. Lewis or Mark Twain?")
    assert offered == ("C. S. Lewis", "Mark Twain")


def test_a_speakers_name_in_an_option_is_no_support_for_it() -> None:
    items = [
        turns_item(
            "s1",
            "2024-05-04T19:00:00",
            ("John", "Hi Ilse, have you been reading much lately?"),
            ("Ilse", "Oh John, I enjoy reading books so much, John, every single night."),
            ("Ilse", "The Narnia stories by Lewis are my favourite."),
            ("Ilse", "Would you enjoy reading books with me, John?"),
            ("Ilse", "John, reading books with you would be fun, John."),
        )
    ]
    answer = direct_answer("Would Ilse enjoy reading books by C. S. Lewis or John Greene?", items)
    assert answer.line.startswith("C. S. Lewis")


def test_neither_option_said_is_not_said_but_still_quoted() -> None:
    items = [
        turns_item(
            "s1",
            "2024-05-04T19:00:00",
            ("Marta", "What did you do at the weekend?"),
            ("Ilse", "I took my kids to the park on Saturday, they played for hours."),
        )
    ]
    answer = direct_answer("Would Ilse rather go to a national park or a theme park?", items)
    assert answer.line == NOTHING
    assert answer.sources
