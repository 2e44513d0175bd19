"""The direct answer's line is extracted, never invented (issue 32), as a property over
evidence and questions it has never seen: generated sessions of turns (names, places,
numbers, dates and relative dates, quotes, odd unicode, very long and empty turns) and
questions of every kind the answer types know. The line never raises, is one short line,
renders as written once escaped for the chat, and holds only words of the evidence or of
its own fixed forms (kbmem.research.fidelity)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbmem.agent.offline import markdown_literal
from kbmem.research.direct import direct_answer
from kbmem.research.fidelity import evidence_texts, unfounded_words
from kbmem.research.types import EvidenceItem
from tests.helpers.evidence import turns_item

NAMES = ["Maria", "John", "Zoë", "Nate", "Joanna", "Li Wei"]
PLACES = ["Paris", "Boston", "the lake", "São Paulo", "my mom's house"]
THINGS = ["a guitar", "pottery", "the marathon", "a `code` *star*", "[link](x)", "dogs"]
TIMES = [
    "yesterday",
    "last week",
    "two years ago",
    "the other day",
    "on 3 May 2023",
    "last Friday",
    "next month",
    "in 2019",
    "a few days ago",
]
NUMBERS = ["3", "two", "seventeen", "1,000", "42"]
ODD = ["", "…", "\u200b", "ðŸ˜€", "“quoted”", "|#|", "\n\n", "x" * 3000]

_fragment = st.one_of(
    st.builds(
        "{} went to {} {}.".format,
        st.sampled_from(["I", "We", "My sister"]),
        st.sampled_from(PLACES),
        st.sampled_from(TIMES),
    ),
    st.builds("I have {} {}.".format, st.sampled_from(NUMBERS), st.sampled_from(["kids", "cats"])),
    st.builds("{} loves {}.".format, st.sampled_from(NAMES), st.sampled_from(THINGS)),
    st.builds('She said "{}" to me.'.format, st.sampled_from(THINGS)),
    st.builds("Did you see {}?".format, st.sampled_from(NAMES)),
    st.builds("I met {} at {}.".format, st.sampled_from(NAMES), st.sampled_from(PLACES)),
    st.sampled_from(["Yes!", "No, never.", "Because it was fun.", "Wow, that's great!"]),
    st.sampled_from(ODD),
    st.text(max_size=40),
)
_turn = st.tuples(st.sampled_from(NAMES), st.lists(_fragment, max_size=4).map(" ".join))
_stamp = st.dates().map(lambda d: f"{d.isoformat()}T13:56:00")
_session = st.tuples(_stamp, st.lists(_turn, min_size=1, max_size=5))
evidence_lists = st.lists(_session, max_size=3).map(
    lambda sessions: [
        turns_item(f"s{n}", stamp, *turns) for n, (stamp, turns) in enumerate(sessions)
    ]
)

questions = st.one_of(
    st.builds(
        "{} {} {}?".format,
        st.sampled_from(
            [
                "How many",
                "When did",
                "Who did",
                "Where did",
                "Which city did",
                "What state did",
                "Did",
                "Would",
                "Why did",
                "How did",
                "What did",
                "What are the things",
                "How long has",
                "What kind of",
                "Is it likely that",
            ]
        ),
        st.sampled_from(NAMES),
        st.sampled_from(["go to Paris", "have kids", "meet", "love", "do last week", "say"]),
    ),
    st.text(max_size=60),
)

LONGEST = 300  # characters: one short line, however long the turns


def _check(question: str, evidence: list[EvidenceItem]) -> None:
    answer = direct_answer(question, evidence)
    line = answer.line
    assert "\n" not in line and "\r" not in line
    assert 0 < len(line) <= LONGEST
    shown = markdown_literal(line)
    # Escaped for the chat, the line renders as its words: no markup character stays bare.
    for mark in "`*_[]<>|#~":
        assert all(shown[i - 1] == "\\" for i, c in enumerate(shown) if c == mark)
    assert unfounded_words(line, evidence_texts(evidence)) == [], (question, line)


# The same examples on every run, so that CI never fails on a search's luck; a wider random
# search (derandomize off, thousands of examples) is how the cut-word case below was found.
@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(question=questions, evidence=evidence_lists)
def test_direct_answer_is_extracted_from_generated_evidence(
    question: str, evidence: list[EvidenceItem]
) -> None:
    _check(question, evidence)


def test_kin_written_form_is_founded_on_the_word_spoken() -> None:
    """ "Maria's mother" stands on "my mom", said by Maria."""
    evidence = [turns_item("s1", "2023-05-03T19:00:00", ("Maria", "My mom and I made dinner."))]
    assert unfounded_words("Maria's mother", evidence_texts(evidence)) == []
    assert unfounded_words("Maria's uncle", evidence_texts(evidence)) == ["uncle"]


def test_relative_time_said_at_the_calendars_edge_is_left_out() -> None:
    """ "Yesterday", said on the first day the calendar writes, names no day: the answer
    does not raise."""
    evidence = [turns_item("s1", "0001-01-01T13:56:00", ("Maria", "I went to Paris yesterday."))]
    assert direct_answer("When did Maria go to Paris?", evidence).line
    said = "I went to Paris three years ago."
    evidence = [turns_item("s1", "0002-06-01T13:56:00", ("Maria", said))]
    assert direct_answer("When did Maria go to Paris?", evidence).line


def test_line_from_a_very_long_sentence_is_one_short_line() -> None:
    """A yes/no reason taken from a turn that runs on into a very long token (a pasted link
    or code) stays a short line: the quotes give the sentence whole."""
    turn = "I went to Paris yesterday. https://example.org/" + "x" * 3000
    evidence = [turns_item("s1", "2023-05-03T13:56:00", ("Maria", turn))]
    line = direct_answer("Did Maria go to Paris?", evidence).line
    assert len(line) <= LONGEST and line.startswith("Yes")


def test_region_of_a_named_city_is_founded_on_the_city() -> None:
    """ "Indiana (Fort Wayne)" stands on "Fort Wayne": the gazetteer puts it in Indiana, and
    in no other state."""
    texts = ["Joanna: I went hiking near Fort Wayne last summer."]
    assert unfounded_words("Indiana (Fort Wayne)", texts) == []
    assert unfounded_words("Ohio (Fort Wayne)", texts) == ["ohio"]
    assert unfounded_words("Indiana (Gary)", texts) == ["indiana", "gary"]


def test_word_cut_by_the_bound_is_founded_before_the_weak_tag() -> None:
    """A line cut inside a long word, "…" and then the weak tag after it, stands on the
    word it was cut from; a cut word no text begins does not."""
    texts = ["Maria: " + "x" * 3000 + " I went to Paris yesterday."]
    assert unfounded_words("x" * 198 + "… (weak evidence)", texts) == []
    assert unfounded_words("yz… (weak evidence)", texts) == ["yz"]


def test_citations_claim_nothing() -> None:
    """A quote's citation points at what was read: its page id and lines are no words of
    the answer; the quote's own words still are."""
    texts = ["### T1 | Maria | 2023-05-03T19:00:00\nMaria: I finally finished my screenplay."]
    quote = "- Maria: I finally finished my screenplay. [conv-42-s2/1:L36-L38]"
    assert unfounded_words(quote, texts) == []
    assert unfounded_words(quote.replace("screenplay", "novel"), texts) == ["novel"]
