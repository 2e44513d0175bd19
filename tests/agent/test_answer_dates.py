"""The times a "when" answer and a question that names a time are read by: the days a
said time spans on the calendar, the stretch a question names ("the week before …",
"between … and …"), and an event told after it happened counted in the time it happened.
On synthetic text, then end to end on a memorized conversation with the real indexes and
the offline agent."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from helpers.evidence import turns_item
from helpers.talk import memorize

from kbmem.agent.session import ChatSession
from kbmem.agent.tools import resolved_dates
from kbmem.dates import DateWindow, date_windows, said_dates, year_windows
from kbmem.memorize.template import init_kb
from kbmem.research.direct import direct_answer
from kbmem.research.when import asked_event, asks_ahead


def test_a_said_time_spans_the_days_it_means() -> None:
    said_on = date(2023, 4, 18)  # a Tuesday
    spans = {
        d.phrase: (d.first, d.last)
        for d in said_dates(
            "Last month we met, last week I rested, two weeks ago it rained, last year I moved, "
            "yesterday I sang, in June 2022 I sailed, recently I read.",
            said_on,
        )
    }
    assert spans["Last month"] == (date(2023, 3, 1), date(2023, 3, 31))
    assert spans["last week"] == (date(2023, 4, 11), date(2023, 4, 17))
    assert spans["two weeks ago"] == (date(2023, 4, 4), date(2023, 4, 4))
    assert spans["last year"] == (date(2022, 1, 1), date(2022, 12, 31))
    assert spans["yesterday"] == (date(2023, 4, 17), date(2023, 4, 17))
    assert spans["June 2022"] == (date(2022, 6, 1), date(2022, 6, 30))
    # Too vague to place on the calendar.
    assert spans["recently"] == (None, None)


def test_a_window_meets_a_stretch_with_a_day_in_it() -> None:
    march = DateWindow(date(2023, 3, 1), date(2023, 3, 31))
    assert march.meets(date(2023, 3, 31), date(2023, 4, 6))
    assert not march.meets(date(2023, 4, 1), date(2023, 4, 6))
    june = DateWindow(None, None, 6)  # "in June", any year
    assert june.meets(date(2022, 5, 20), date(2022, 6, 2))
    assert not june.meets(date(2022, 7, 1), date(2022, 7, 31))


def test_the_stretch_a_question_names() -> None:
    # The week before a day: the days up to it (with a day's slack), not the day alone.
    assert date_windows("Where was Ilse in the week before 16 November 2023?") == [
        DateWindow(date(2023, 11, 8), date(2023, 11, 17))
    ]
    # Between two days, the first without its year: the year of the second.
    assert date_windows("Where was Ilse between August 11 and August 15 2023?") == [
        DateWindow(date(2023, 8, 10), date(2023, 8, 16))
    ]
    # A day named after the words "week before" of something else stays a day.
    assert date_windows("What did Ilse do on 3 May 2023?") == [
        DateWindow(date(2023, 5, 2), date(2023, 5, 4))
    ]


def test_an_event_told_after_it_happened_answers_for_its_time(tmp_path: Path) -> None:
    kb = init_kb(tmp_path / "kb", with_history=False)
    memorize(
        kb,
        "acme",
        {
            "s-march": (
                "2023-03-06",
                [
                    ("Ilse", "My colleagues brought a cake to the office today."),
                    ("Tomas", "Lucky you!"),
                ],
            ),
            "s-april": (
                "2023-04-18",
                [
                    ("Ilse", "I attended a robotics convention with my colleagues last month."),
                    ("Tomas", "Sounds like fun."),
                ],
            ),
        },
    )
    with ChatSession(kb, "acme") as chat:
        reply = chat.send("What did Ilse attend with her colleagues in March 2023?")
    first = reply.answer.split("\n", 1)[0]
    assert "convention" in first, reply.answer


def test_a_model_reads_a_weekday_as_its_day_on_the_calendar() -> None:
    item = turns_item("s4", "2024-09-11T10:00:00", ("Ilse", "I sold the van last Friday."))
    # Resolved against the day it was said, and written as people write a date.
    assert direct_answer("When did Ilse sell the van?", [item]).line == "Friday 6 September 2024"
    assert resolved_dates(item) == '\nDates resolved: "last Friday" = Friday 6 September 2024'


def test_a_dated_sentence_of_another_event_does_not_answer_when(tmp_path: Path) -> None:
    kb = init_kb(tmp_path / "kb", with_history=False)
    memorize(
        kb,
        "acme",
        {
            "s-interview": (
                "2026-03-10",
                [("Ilse", "Oh, btw, I had an interview for a design internship yesterday!")],
            ),
            "s-news": (
                "2026-03-27",
                [
                    ("Ilse", "A lot's happened - I just got accepted for a fashion internship!"),
                    ("Tomas", "Congrats, Ilse!"),
                ],
            ),
        },
    )
    assert asked_event("When did Ilse get accepted for the design internship?") == {"accept"}
    assert asked_event("When did Ilse's brother adopt a goat?") == {"adopt"}
    assert asked_event("Where did Ilse go?") == frozenset()
    with ChatSession(kb, "acme") as chat:
        reply = chat.send("When did Ilse get accepted for the design internship?")
    # The interview's day is dated, but the sentence saying the event asked is the news.
    assert reply.answer.startswith("around 27 March 2026"), reply.answer


def test_a_stretch_of_time_is_answered_without_the_words_that_carry_it(tmp_path: Path) -> None:
    kb = init_kb(tmp_path / "kb", with_history=False)
    memorize(
        kb,
        "acme",
        {
            "s-1": (
                "2026-03-10",
                [
                    ("Ilse", "I've had my kayak since I was a student, I love kayaking."),
                    ("Ilse", "My rowing club friends and I have been together for 4 years now."),
                ],
            )
        },
    )
    with ChatSession(kb, "acme") as chat:
        club = chat.send("How long has Ilse had her rowing club friends?")
    assert club.answer.split("\n", 1)[0].split(" (")[0] == "4 years", club.answer


def test_asked_which_month_or_year_the_answer_is_that_month_or_year(tmp_path: Path) -> None:
    kb = init_kb(tmp_path / "kb", with_history=False)
    memorize(
        kb,
        "acme",
        {
            "s-1": (
                "2026-07-02",
                [("Ilse", "Last Friday I scored 40 points in the harbour league game!")],
            ),
            "s-2": ("2026-09-14", [("Ilse", "I bought my first sailing boat yesterday.")]),
        },
    )
    with ChatSession(kb, "acme") as chat:
        month = chat.send("In which month's game did Ilse score 40 points?")
        year = chat.send("What year did Ilse buy her first sailing boat?")
    assert month.answer.split("\n", 1)[0].split(" (")[0] == "June 2026", month.answer
    assert year.answer.split("\n", 1)[0].split(" (")[0] == "2026", year.answer


def test_a_season_is_named_by_its_year() -> None:
    def written(text: str, said_on: date) -> str:
        return said_dates(text, said_on)[0].written

    # Said while summer lasts, the last one is a year back; said after it, this year's.
    assert written("We camped there last summer.", date(2023, 8, 11)) == "the summer of 2022"
    assert written("We camped there last summer.", date(2023, 10, 2)) == "the summer of 2023"
    assert written("We sail next spring.", date(2023, 4, 1)) == "the spring of 2024"
    assert written("We sail next spring.", date(2023, 1, 9)) == "the spring of 2023"
    assert written("We move this fall.", date(2023, 6, 1)) == "the fall of 2023"
    fall = said_dates("We move this fall.", date(2023, 6, 1))[0]
    assert (fall.first, fall.last) == (date(2023, 9, 1), date(2023, 11, 30))
    # A winter spans two calendar years: told from the day said.
    assert written("We skied last winter.", date(2023, 3, 9)) == "the winter before 9 March 2023"


def test_a_time_said_in_the_turn_dates_the_event_it_tells(tmp_path: Path) -> None:
    kb = init_kb(tmp_path / "kb", with_history=False)
    memorize(
        kb,
        "acme",
        {
            "s-1": (
                "2026-05-20",
                [
                    (
                        "Ilse",
                        "Here's a pic from last Friday with my crew. We had a great time "
                        "throwing a small party for the lifeboat volunteers.",
                    ),
                    ("Tomas", "They deserve it!"),
                ],
            ),
        },
    )
    with ChatSession(kb, "acme") as chat:
        reply = chat.send("When did Ilse throw a party for the lifeboat volunteers?")
    # Said on Wednesday 20 May 2026: "last Friday" is the 15th.
    assert reply.answer.split("\n", 1)[0].split(" (")[0] == "Friday 15 May 2026", reply.answer


def test_when_is_x_doing_asks_of_what_is_arranged_ahead(tmp_path: Path) -> None:
    kb = init_kb(tmp_path / "kb", with_history=False)
    memorize(
        kb,
        "acme",
        {
            "s-1": (
                "2026-06-03",
                [
                    ("Ilse", "Last week I hosted a gaming party for my whole rowing crew."),
                    ("Tomas", "Fun!"),
                    ("Ilse", "I'm hosting another gaming party next weekend!"),
                ],
            ),
        },
    )
    assert asks_ahead("When is Ilse hosting a gaming party?")
    assert not asks_ahead("When is the gaming party?")  # no one doing it: no tense to read
    with ChatSession(kb, "acme") as chat:
        reply = chat.send("When is Ilse hosting a gaming party?")
    assert reply.answer.split("\n", 1)[0].split(" (")[0] == ("the weekend after 3 June 2026"), (
        reply.answer
    )


def test_a_plan_asked_subject_first_is_dated_by_the_event_it_names() -> None:
    # People type "When X is planning to …?" as well as "When is X planning to …?"; the
    # event is the verb the plan carries, not "plan".
    assert asked_event("When Ilse is planning to open her bakery?") == {"open"}
    assert asked_event("When is Ilse going to move to Ghent?") == {"move"}
    evidence = [
        turns_item(
            "s1", "2026-02-04T09:00:00", ("Ilse", "I'm getting ready for a bakery fair next month.")
        ),
        turns_item(
            "s2", "2026-06-19T09:00:00", ("Ilse", "The official opening of my bakery is tomorrow.")
        ),
    ]
    line = direct_answer("When Ilse is planning to open her bakery?", evidence).line
    assert line.split(" (")[0] == "Saturday 20 June 2026", line


def test_a_year_or_a_season_of_it_named_ranks_what_was_said_then() -> None:
    assert year_windows("What did Ilse paint in 2025?") == [
        DateWindow(date(2025, 1, 1), date(2025, 12, 31))
    ]
    assert year_windows("Where did Ilse sail during the summer of 2021?") == [
        DateWindow(date(2021, 6, 1), date(2021, 8, 31))
    ]
    assert year_windows("Where did Ilse ski in winter 2024?") == [
        DateWindow(date(2024, 1, 1), date(2024, 2, 29)),
        DateWindow(date(2024, 12, 1), date(2024, 12, 31)),
    ]
    # "since 2016" is no time something happened in.
    assert year_windows("What has Ilse painted since 2016?") == []
    evidence = [
        turns_item("s1", "2024-05-01T09:00:00", ("Ilse", "I painted a fox on the barn door!")),
        turns_item("s2", "2025-05-01T09:00:00", ("Ilse", "I painted a harbour at dawn!")),
    ]
    assert direct_answer("What did Ilse paint in 2025?", evidence).line == "harbour"


def test_asked_of_a_plan_a_time_said_with_a_verb_of_a_plan_is_ahead() -> None:
    # "this weekend" does not say ahead by its words; "I'm going to … this weekend" does by
    # its verb, and answers a plan before a sentence the question says less of.
    evidence = [
        turns_item(
            "s1",
            "2026-06-19T09:00:00",
            ("Ilse", "I'm going to bake the lemon cake for my family this weekend."),
        ),
        turns_item("s2", "2026-09-02T09:00:00", ("Ilse", "I'll come over tomorrow with cake.")),
    ]
    line = direct_answer("When is Ilse going to bake the lemon cake for her family?", evidence)
    assert line.line.split(" (")[0] == "the weekend of 19 June 2026", line.line


def test_a_month_named_against_the_day_said_is_placed() -> None:
    said = date(2023, 12, 8)
    assert [d.written for d in said_dates("Last August I told you about the fair.", said)] == [
        "August 2023"
    ]
    assert [d.written for d in said_dates("We met last December.", said)] == ["December 2022"]
    assert [d.written for d in said_dates("See you next March!", said)] == ["March 2024"]
    # A modal "may" is no month.
    assert said_dates("It may be this may be fine.", said) == []


def test_asked_when_something_began_a_stretch_it_has_gone_on_places_its_start() -> None:
    item = turns_item(
        "s1",
        "2026-12-06T10:00:00",
        ("Ilse", "I'm learning how to play the cello now."),
        ("Tomas", "Wow, how long has that been going?"),
        ("Ilse", "I've been playing for about four months now and I love it."),
    )
    line = direct_answer("When did Ilse start playing the cello?", [item]).line
    assert line.split(" (")[0] == "August 2026", line
