"""A decision or a state changed later: "that decision was reversed in favour of Y", "moved
from X to Y", "X was replaced by Y", "replaced X with Y". Asked in the past ("What did the
team choose?"), memory answers with what holds now; asked of what was replaced ("When did
they choose X?"), with the earlier statement. Synthetic
sentences through the real functions."""

from __future__ import annotations

from helpers.evidence import turns_item
from test_answer_newcomer import note_item

from kbmem.research.direct import direct_answer
from kbmem.research.offline import changed_in
from kbmem.research.types import EvidenceItem

HISTORY = note_item(
    "stack",
    "History: on 3 March 2025 the group chose Redis (clustered, with nightly snapshots). On 9 "
    "May 2025 that decision was reversed in favour of Memcached, because of the memory bill.",
)


def test_a_change_says_what_it_replaced_and_what_holds_now() -> None:
    assert changed_in("That decision was reversed in favour of Memcached, because of cost.") == (
        "",
        "Memcached",
        True,
    )
    assert changed_in("The cache moves from Redis to Memcached on Friday.") == (
        "Redis",
        "Memcached",
        False,
    )
    assert changed_in("We replaced Jenkins with Buildkite.") == ("Jenkins", "Buildkite", False)
    assert changed_in("Jenkins was replaced by Buildkite.") == ("Jenkins", "Buildkite", False)
    assert changed_in("We chose Redis for the cache.") is None


def test_a_reversed_decision_is_answered_with_what_replaced_it() -> None:
    line = direct_answer("What cache did the group choose?", [HISTORY]).line
    assert line.startswith("Memcached"), line


def test_asked_of_what_was_replaced_the_earlier_statement_answers() -> None:
    line = direct_answer("When did the group choose Redis?", [HISTORY]).line
    assert "3 March 2025" in line, line


def _nora_moves() -> EvidenceItem:
    """Nora's later turn telling she moved from Glasgow to Inverness."""
    return turns_item(
        "s2",
        "2025-06-01T10:00:00",
        ("Nora Bell", "Big news: I moved from Glasgow to Inverness last week."),
    )


def test_a_move_answers_where_one_lives_now() -> None:
    item = turns_item(
        "s1",
        "2025-02-01T10:00:00",
        ("Nora Bell", "I live in Glasgow, in a flat near the river."),
    )
    now = direct_answer("Where does Nora live?", [item, _nora_moves()]).line
    assert now.startswith("Inverness"), now


def test_a_move_does_not_supersede_what_is_said_of_someone_else() -> None:
    tom = turns_item("s1", "2025-02-01T10:00:00", ("Tom Reid", "I live in Glasgow."))
    line = direct_answer("Where does Tom live?", [tom, _nora_moves()]).line
    assert line.startswith("Glasgow"), line
