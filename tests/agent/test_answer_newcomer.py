"""A newcomer's questions of a team's memory: who does the verb asked (its subject, or the
name a list entry opens with when the entry goes on without one), which N (the name said as
N, or as the subject of the verb asked), the amount nearest what is asked (and a sentence
naming an amount before one that only says a number), how late, when a habit recurs, what a
name or code is, and a stretch of days. Synthetic sentences through the real functions (the
example knowledge base itself: tests/agent/test_agent.py)."""

from __future__ import annotations

from helpers.evidence import turns_item

from kbmem.index.intervals import Interval
from kbmem.research.direct import direct_answer
from kbmem.research.types import EvidenceItem


def note_item(page: str, *paragraphs: str) -> EvidenceItem:
    """An evidence item holding a note's paragraphs (no speaker, no turns)."""
    source = "\n\n".join(paragraphs)
    lines = source.count("\n") + 1
    interval = Interval(f"{page}/1", f"pages/{page}/1.md", 10, 10 + lines - 1, "c0ffee")
    return EvidenceItem(f"{page}/1", source, 1.0, "bm25", interval, page, source)


# Each entry a paragraph of its own, as the index cuts a note into intervals.
ROSTER = [
    note_item(f"roster-{n}", entry)
    for n, entry in enumerate(
        (
            "**Maya Lindqvist**, Head of Engineering. Chairs planning and retros, makes the final "
            "call on technical decisions. Owns the Harbourmaster front-end.",
            "**Ines Kovacic**, Product Designer. Owns Deckhand (the app and its conflict screens).",
            "**Dara Whitcombe**, Customer Success Lead. Owns the customer relationships with "
            "Skerrick Island Ferries and Calloway Sound Lines.",
        )
    )
]


def test_a_list_entry_without_a_subject_is_said_of_the_name_it_opens_with() -> None:
    assert direct_answer("Who owns Deckhand?", ROSTER).line == "Ines Kovacic"
    owner = direct_answer("Who owns the customer relationships?", ROSTER).line
    assert owner == "Dara Whitcombe", owner
    final = direct_answer("Who makes the final call on technical decisions?", ROSTER).line
    assert final.startswith("Maya Lindqvist"), final


def test_who_does_the_verb_asked_is_its_subject_named_as_its_speaker() -> None:
    item = turns_item(
        "s1",
        "2026-01-12T10:00:00",
        ("Maya Lindqvist", "Oskar owns the infrastructure, monitoring and the on-call rota."),
        ("Oskar Brennan", "Fine by me."),
        ("Assistant", "(7) Maya Lindqvist owns the Port Manifest Gateway exporter."),
    )
    assert direct_answer("Who owns the on-call rota?", [item]).line.startswith("Oskar Brennan")
    exporter = direct_answer("Who owns the manifest exporter?", [item]).line
    assert exporter.startswith("Maya Lindqvist"), exporter


def test_the_person_asked_of_is_not_the_answer() -> None:
    item = turns_item(
        "s1",
        "2026-03-02T09:00:00",
        ("Assistant", "Femi Adeyemi joined today; onboarding buddy Tobias Ferrante."),
    )
    got = direct_answer("Who is Femi's onboarding buddy?", [item]).line
    assert got == "Tobias Ferrante", got


def test_which_n_is_the_name_said_as_n_or_doing_what_is_asked() -> None:
    hired = turns_item(
        "s1",
        "2026-01-21T14:00:00",
        ("Maya", "One engineer, and we're using Halyard Talent as the recruiter this time."),
    )
    assert direct_answer("Which recruiter did the team use?", [hired]).line == "Halyard Talent"
    signed = turns_item(
        "s2",
        "2026-03-20T09:00:00",
        (
            "Assistant",
            "Customers: Calloway Sound Lines signed its annual contract on Thursday; "
            "Inverlochy Boat Company signed a letter of intent the same day.",
        ),
    )
    got = direct_answer("Which company signed a letter of intent?", [signed]).line
    assert got == "Inverlochy Boat Company", got


def test_how_much_is_the_amount_said_nearest_what_is_asked() -> None:
    item = turns_item(
        "s1",
        "2026-02-16T09:00:00",
        (
            "Oskar",
            "The real budget is 5,600 dollars a month, and even so, RDS Multi-AZ at about "
            "380 dollars a month fits comfortably.",
        ),
    )
    got = direct_answer("How much does RDS Multi-AZ cost per month?", [item]).line
    assert got.startswith("380 dollars"), got


def test_how_much_is_answered_by_a_sentence_naming_an_amount() -> None:
    # The best sentence says a number ("PostgreSQL 16") but no amount of money; the next
    # one names what RDS costs.
    item = turns_item(
        "s1",
        "2026-02-16T09:00:00",
        ("Maya", "Decision: the store moves to PostgreSQL 16 on RDS Multi-AZ, cost agreed."),
        ("Oskar", "RDS Multi-AZ is maybe 380 dollars a month at our size."),
    )
    got = direct_answer("How much does RDS Multi-AZ cost per month?", [item]).line
    assert got.startswith("380 dollars"), got


def test_when_a_habit_recurs_is_its_frequency_and_time() -> None:
    overview = note_item(
        "architecture",
        "The tide-window scheduler is the nightly job that writes the sailings.",
        "The tide-window scheduler runs nightly at 04:00 and writes seven days of sailings.",
        "The tide-window scheduler was deployed on Friday 23 January 2026.",
    )
    got = direct_answer("When does the tide-window scheduler run?", [overview])
    assert got.line == "nightly at 04:00" and got.firm, got.line
    # Asked when it happened (the past), the date answers.
    got = direct_answer("When was the tide-window scheduler deployed?", [overview])
    assert got.line.startswith("Friday 23 January 2026"), got.line


def test_what_a_name_or_code_is_is_its_gloss() -> None:
    item = turns_item(
        "s1",
        "2026-03-02T09:00:00",
        ("Ines", "At Skerrick the crew board from two doors, with a tablet at each: see FL-212."),
        ("Ines", "Boarding is now idempotent (FL-212, fixed by Femi on 6 March)."),
        ("Maya", "Femi's first ticket is FL-212 (cross-tablet duplicate boarding passes)."),
        ("Maya", "Deckhand, the Android crew app, syncs every minute."),
    )
    # The gloss in brackets, not what the sentence tells of the ticket ("fixed by Femi").
    got = direct_answer("What is FL-212?", [item])
    assert got.line == "cross-tablet duplicate boarding passes", got.line
    assert direct_answer("What is Deckhand?", [item]).line == "the Android crew app"


def test_who_someone_is_is_said_where_the_sentence_opens_with_them() -> None:
    # The credits name Maya in passing, with another's role beside her name; the roster's
    # entry opens with her name and says her title, capitalised as names are.
    notes = note_item(
        "architecture",
        "**Harbourmaster** (front-end Maya Lindqvist, design Ines Kovacic) is the dashboard.",
        "**Maya Lindqvist**, Head of Engineering. Chairs planning and retros.",
        "Sprint review with Maya, Tobias and Oskar on Wednesday.",
    )
    got = direct_answer("Who is Maya Lindqvist?", [notes]).line
    assert got == "Head of Engineering", got


def test_how_late_asks_by_how_long() -> None:
    item = turns_item(
        "s1",
        "2026-02-03T09:15:00",
        ("Oskar", "The harbour master held the Glenaray. She left at 07:53, 38 minutes late."),
    )
    got = direct_answer("How late did the Glenaray leave?", [item])
    assert got.kind == "duration" and got.line.startswith("38 minutes"), got.line


def test_a_stretch_of_days_is_answered_from_its_first_day() -> None:
    item = turns_item(
        "s1",
        "2026-03-02T09:00:00",
        ("Assistant", "Offsite: Tuesday 28 to Thursday 30 April 2026, in Tromsø."),
    )
    got = direct_answer("When is the offsite?", [item]).line
    assert got == "Tuesday 28 to Thursday 30 April 2026", got


def test_a_day_counted_from_the_date_said_is_the_events() -> None:
    # "Current as of 16 March, two days after the cutover": 16 March is the note's day.
    item = note_item(
        "architecture", "Current as of 16 March 2026, two days after the PostgreSQL cutover."
    )
    got = direct_answer("When was the PostgreSQL cutover?", [item]).line
    assert got == "Saturday 14 March 2026", got


def test_a_correction_says_yes_the_value_changed() -> None:
    # Its "not" is said of the value it replaced, not against what it states.
    item = turns_item(
        "s1",
        "2026-02-23T09:00:00",
        (
            "Assistant",
            "Correction recorded: the public launch is Tuesday 21 April 2026, not Tuesday "
            "14 April 2026 as stated at the kickoff on 5 January.",
        ),
    )
    got = direct_answer("Did the public launch date change?", [item]).line
    assert got.startswith("Yes"), got


def test_an_entry_is_the_last_one_opened_before_the_sentence() -> None:
    # A bold name opening the next entry is not cut from the sentence before: "… front-end.
    # **Ines Kovacic**, Product Designer." is read as one sentence.
    roster = note_item("roster", " ".join(item.excerpt for item in ROSTER))
    assert direct_answer("Who owns Deckhand?", [roster]).line.startswith("Ines Kovacic")
    owner = direct_answer("Who owns the customer relationships?", [roster]).line
    assert owner.startswith("Dara Whitcombe"), owner


def test_what_is_asked_is_the_field_a_record_labels_with_it() -> None:
    item = turns_item(
        "s1",
        "2026-02-03T10:00:00",
        (
            "Assistant",
            "Incident summary, Tuesday 3 February 2026. Opening an incident record: customer "
            "Calloway Sound Lines, vessel MV Glenaray. Root cause: the feed returned the "
            "06:48 high water for 3 February twice; the guard was not yet built.",
        ),
    )
    got = direct_answer("What caused the Calloway incident?", [item]).line
    assert got == "the feed returned the 06:48 high water for 3 February twice", got
