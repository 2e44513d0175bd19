"""The direct answer: question typing, dates resolved against the day they were said, and
each kind's extractor on synthetic turns written for these tests (real page text, parsed
from real turn headers; no index needed)."""

from __future__ import annotations

from datetime import date

import pytest
from helpers.evidence import turns_item

from kbmem.dates import date_words, said_dates, written_date
from kbmem.research.answer_types import question_kind
from kbmem.research.direct import NOTHING, WEAK, direct_answer
from kbmem.research.said import points_back


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("When did Ilse repaint the boathouse?", "date"),
        ("What year did the choir start?", "date"),
        ("How long ago did Ilse move?", "date"),
        ("How long did the ferry crossing take?", "duration"),
        ("How many kayaks does Ilse own?", "count"),
        ("How much did the tiles cost?", "number"),
        ("Who fixed the roof?", "person"),
        ("Where did Tomas grow up?", "place"),
        ("In which city does Ilse's brother live?", "place"),
        ("Did Tomas finish the marathon?", "yesno"),
        ("Would Ilse enjoy a pottery class?", "yesno"),
        ("What instruments does Tomas play?", "list"),
        ("What did Ilse bake for the fair?", "thing"),
        ("What has Tomas built this year?", "list"),
        ("How many weeks passed between the two regattas?", "duration"),
        ("What are the names of Ilse's goats?", "names"),
        ("Since when has Tomas sailed?", "date"),
        ("Would Tomas rather live by a lake or the sea?", "choice"),
        ("What did Ilse bake or buy?", "thing"),
        ("What is the name of Ilse's goat?", "person"),
        ("What was the name of the ferry Tomas took?", "person"),
        ("What's the name of the choir's conductor?", "person"),
    ],
)
def test_question_kind_from_wh_word_and_cues(question, kind):
    assert question_kind(question) == kind


def test_dates_are_written_as_people_write_them():
    assert written_date(date(2026, 3, 14)) == "Saturday 14 March 2026"


def test_relative_dates_resolve_against_the_day_they_were_said():
    said_on = date(2024, 9, 11)  # a Wednesday
    written = {
        d.phrase: d.written
        for d in said_dates(
            "Yesterday was long; last Friday I sold the van, two weeks ago we moved, "
            "3 days ago it rained, last year I was in Oslo, last week I rested.",
            said_on,
        )
    }
    assert written["Yesterday"] == "Tuesday 10 September 2024"
    assert written["last Friday"] == "Friday 6 September 2024"
    assert written["two weeks ago"] == "two weeks before 11 September 2024"
    assert written["3 days ago"] == "Sunday 8 September 2024"
    assert written["last year"] == "2023"
    assert written["last week"] == "the week before 11 September 2024"


def test_absolute_dates_need_no_day_said_and_relative_ones_do():
    found = said_dates("We met on 2 March, 2021 and again in June 2022.", None)
    assert [d.written for d in found] == ["Tuesday 2 March 2021", "June 2022"]
    assert said_dates("I saw it yesterday.", None) == []


def test_date_words_are_the_question_s_time_words():
    assert date_words("What did Ilse do in February 2023 on Monday?") == {
        "february",
        "2023",
        "monday",
    }


def test_a_date_question_is_answered_with_the_resolved_day():
    item = turns_item(
        "s4",
        "2024-09-11T10:00:00",
        ("Ilse", "Guess what, I repainted the boathouse last Saturday!"),
        ("Tomas", "Lovely, what colour?"),
    )
    got = direct_answer("When did Ilse repaint the boathouse?", [item])
    assert got.line == "Saturday 7 September 2024"
    assert got.firm and got.sources[0].speaker == "Ilse"


def test_without_a_date_said_the_answer_is_the_day_it_was_told_and_says_so():
    item = turns_item("s2", "2024-05-02T09:00:00", ("Ilse", "I repainted the boathouse green."))
    got = direct_answer("When did Ilse repaint the boathouse?", [item])
    assert got.line.startswith("around 2 May 2024")


def test_a_date_the_question_names_is_not_taken_for_the_answer():
    item = turns_item(
        "s2",
        "2023-02-20T09:00:00",
        (
            "Tomas",
            "In February I started the choir, on the 3rd, a Friday I think: 3 February 2023.",
        ),
    )
    got = direct_answer("When in February did Tomas start the choir?", [item])
    assert got.line == "Friday 3 February 2023"


def test_duration_number_and_count():
    item = turns_item(
        "s1",
        "2024-01-05T09:00:00",
        ("Tomas", "The ferry crossing took 47 minutes in the fog."),
        ("Ilse", "I own three kayaks now, all red."),
    )
    assert direct_answer("How long did the ferry crossing take?", [item]).line == "47 minutes"
    assert direct_answer("How many kayaks does Ilse own?", [item]).line == "three"


def test_how_many_counts_distinct_mentions_across_sessions():
    items = [
        turns_item(
            f"s{n}", f"2024-0{n}-01T09:00:00", ("Ilse", f"I climbed the {peak} ridge today.")
        )
        for n, peak in enumerate(["Storr", "Quiraing", "Storr"], start=1)
    ]
    got = direct_answer("How many times has Ilse climbed a ridge?", items)
    assert got.line == "three times"
    assert len({s.session for s in got.sources}) == 3
    # Asked how many things, not how many times, the ridge climbed twice counts once.
    assert direct_answer("How many ridges has Ilse climbed?", items).line == "two"


def test_how_many_takes_the_largest_number_said_of_the_thing():
    # A part is told more often than the whole ("two goats came"): the whole is the most.
    item = turns_item(
        "s1",
        "2024-01-05T09:00:00",
        ("Ilse", "Two goats came to the fair with me."),
        ("Ilse", "All four goats of mine are asleep now, the goats are tired."),
        ("Tomas", "I saw three people at the goats' pen."),
    )
    assert direct_answer("How many goats does Ilse have?", [item]).line == "four"


def test_how_many_times_counts_the_days_the_person_tells_of_their_own():
    items = [
        turns_item("s1", "2024-03-02T09:00:00", ("Ilse", "We sailed to the lighthouse today.")),
        turns_item("s2", "2024-05-04T09:00:00", ("Ilse", "My kids loved the lighthouse trip.")),
        # Said to another, of the listener's time: not one of Ilse's.
        turns_item("s3", "2024-06-01T09:00:00", ("Ilse", "Wow, the lighthouse suits you.")),
        # Outside the year asked about.
        turns_item("s4", "2023-06-01T09:00:00", ("Ilse", "I sailed to the lighthouse.")),
    ]
    got = direct_answer("How many times has Ilse been to the lighthouse in 2024?", items)
    assert got.line == "twice"
    assert sorted(str(s.day) for s in got.sources) == ["2024-03-02", "2024-05-04"]


def test_who_takes_a_name_other_than_the_one_asked_about():
    item = turns_item(
        "s3",
        "2024-03-01T09:00:00",
        ("Ilse", "Our roof leaked, so my neighbour Joaquim Berg fixed the roof on Sunday."),
    )
    assert direct_answer("Who fixed Ilse's roof?", [item]).line == "Joaquim Berg"


def test_where_takes_the_place_named():
    item = turns_item(
        "s3",
        "2024-03-01T09:00:00",
        ("Tomas", "I grew up in Trondheim, near the fjord."),
    )
    assert direct_answer("Where did Tomas grow up?", [item]).line == "Trondheim"


def test_a_list_is_gathered_across_sessions_and_deduplicated():
    items = [
        turns_item("s1", "2024-01-01T09:00:00", ("Tomas", "I play the cello in a quartet.")),
        turns_item("s2", "2024-02-01T09:00:00", ("Tomas", "Lately I play the banjo on the porch.")),
        turns_item(
            "s3", "2024-03-01T09:00:00", ("Tomas", "Still, I play the cello most evenings.")
        ),
    ]
    line = direct_answer("What instruments does Tomas play?", items).line.lower()
    assert "cello" in line and "banjo" in line and line.count("cello") == 1


def test_yes_no_gives_the_verdict_and_its_reason():
    item = turns_item(
        "s1", "2024-01-01T09:00:00", ("Tomas", "I did not finish the marathon, my knee gave out.")
    )
    line = direct_answer("Did Tomas finish the marathon?", [item]).line
    assert line.startswith("No")


def test_a_sentence_that_points_back_is_read_with_the_one_before():
    assert points_back("It was so great!")
    item = turns_item(
        "s5",
        "2024-06-01T09:00:00",
        (
            "Ilse",
            "We took the kids to the lantern festival downtown. It was magical, they loved it.",
        ),
    )
    got = direct_answer("What was magical for Ilse's kids?", [item])
    assert "lantern festival" in got.line


def test_memory_that_does_not_say_is_told_so():
    item = turns_item("s1", "2024-01-01T09:00:00", ("Tomas", "The weather was grey all week."))
    got = direct_answer("Who won the regatta?", [item])
    assert got.line == NOTHING and not got.sources
    assert direct_answer("Who won the regatta?", []).line == NOTHING


def test_weak_evidence_is_marked():
    item = turns_item(
        "s1", "2024-01-01T09:00:00", ("Tomas", "The garden party was fun, lots of cake.")
    )
    got = direct_answer("Who baked the cake for the garden party at the harbour?", [item])
    assert got.line == NOTHING or got.line.endswith(WEAK)


def test_what_kind_of_is_answered_with_the_noun_phrase_that_names_the_kind():
    item = turns_item(
        "s1",
        "2024-03-02T09:00:00",
        ("Tomas", "The boathouse needs a new floor before the season."),
        ("Tomas", "I'm after oak flooring, which lasts in damp air."),
    )
    assert direct_answer("What kind of flooring is Tomas looking for?", [item]).line == (
        "oak flooring"
    )


def test_names_are_gathered_from_the_sentences_that_answer():
    items = [
        turns_item("s1", "2024-01-05T09:00:00", ("Ilse", "Our first goat is called Pepper.")),
        turns_item("s2", "2024-02-05T09:00:00", ("Ilse", "The new goat, Juniper, butts everyone.")),
    ]
    line = direct_answer("What are the names of Ilse's goats?", items).line
    assert "Pepper" in line and "Juniper" in line and "Ilse" not in line, line


def test_a_place_said_with_a_determiner_ends_before_the_time_words():
    item = turns_item(
        "s1", "2024-06-10T09:00:00", ("Ilse", "We camped in the mountains last week, so quiet.")
    )
    line = direct_answer("Where did Ilse camp?", [item]).line
    assert line.startswith("the mountains") and "last" not in line, line


def test_a_choice_is_answered_with_the_alternative_memory_says_more_for():
    item = turns_item(
        "s1",
        "2024-05-01T09:00:00",
        ("Tomas", "I grew up by the sea and I miss the sea every day."),
        ("Tomas", "A lake is fine for a weekend."),
    )
    got = direct_answer("Would Tomas rather live by a lake or the sea?", [item])
    assert got.line.startswith("sea"), got.line


@pytest.mark.parametrize(
    ("said", "question", "answer"),
    [
        # the reason a causal connective gives
        (
            ("Tomas", "I'm selling the van 'cause the ferry is cheaper now."),
            "Why is Tomas selling the van?",
            "the ferry is cheaper now",
        ),
        # the clause before "so", when what follows says what was asked
        (
            (
                "Tomas",
                "Well, the winters here are long and dark, so selling the van pays for a trip.",
            ),
            "Why is Tomas selling the van?",
            "the winters here are long and dark",
        ),
        # the purpose a verb of wanting gives
        (
            ("Ilse", "I joined the rowing club in May, I wanted to meet people in the harbour."),
            "Why did Ilse join the rowing club?",
            "to meet people in the harbour",
        ),
    ],
)
def test_why_is_answered_with_the_reason_memory_gives(
    said: tuple[str, str], question: str, answer: str
) -> None:
    line = direct_answer(question, [turns_item("s1", "2024-05-01T09:00:00", said)]).line
    assert line.startswith(answer), line


def test_the_name_asked_for_is_the_name_the_sentence_gives():
    item = turns_item(
        "s1",
        "2024-05-01T09:00:00",
        ("Ilse", "We adopted a goat last spring, her name is Pernille and she eats everything."),
    )
    got = direct_answer("What is the name of Ilse's goat?", [item])
    assert got.line == "Pernille" and got.firm, got.line


def test_how_long_ago_is_answered_with_the_stretch_as_said_and_when_that_was():
    item = turns_item(
        "s1", "2024-09-11T09:00:00", ("Ilse", "My uncle built this boat for me ten years ago.")
    )
    got = direct_answer("How long ago did Ilse get her boat?", [item])
    assert got.line == "ten years ago (2014)"
    # Asked when, the same words give the year.
    assert direct_answer("When did Ilse get her boat?", [item]).line.startswith("2014")


def test_a_weekday_cut_short_is_resolved_too():
    said_on = date(2024, 9, 11)  # a Wednesday
    found = said_dates("Last Fri I sailed; next Tues we race.", said_on)
    assert [d.written for d in found] == ["Friday 6 September 2024", "Tuesday 17 September 2024"]


def test_when_is_the_day_the_event_was_told_over_a_date_said_of_another_event():
    items = [
        turns_item(
            "s1",
            "2024-05-02T09:00:00",
            ("Ilse", "I had an interview at the harbour yesterday."),
        ),
        turns_item(
            "s2",
            "2024-06-20T09:00:00",
            ("Ilse", "Guess what: the harbour board accepted me as a pilot!"),
        ),
    ]
    got = direct_answer("When was Ilse accepted as a harbour pilot by the board?", items)
    assert got.line.startswith("around 20 June 2024"), got.line


def test_asked_of_a_plan_a_time_ahead_answers_over_one_gone_by():
    items = [
        turns_item(
            "s1",
            "2024-05-02T09:00:00",
            ("Ilse", "We went sailing to the islands a few weeks ago, so calm."),
        ),
        turns_item(
            "s2",
            "2024-06-20T09:00:00",
            ("Ilse", "We're thinking about sailing to the islands next month."),
        ),
    ]
    got = direct_answer("When is Ilse planning on sailing to the islands?", items)
    assert got.line == "July 2024"
    # Asked what was done, the time gone by answers.
    got = direct_answer("When did Ilse go sailing to the islands?", items)
    assert got.line.startswith("a few weeks before 2 May 2024")


def test_without_a_date_said_an_event_told_twice_is_dated_by_its_first_telling():
    items = [
        turns_item("s3", "2024-07-01T09:00:00", ("Tomas", "The harbour was busy today.")),
        turns_item("s2", "2024-06-20T09:00:00", ("Ilse", "I opened a bakery by the harbour!")),
        turns_item("s1", "2024-03-16T09:00:00", ("Ilse", "My bakery by the harbour is open!")),
    ]
    got = direct_answer("When did Ilse open her bakery by the harbour?", items)
    assert got.line.startswith("around 16 March 2024"), got.line
