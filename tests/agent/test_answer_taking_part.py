"""Asked what someone took part in ("What events has X participated in?", "… attended?",
"What activities has X done?"), a thing they tell they joined, went to, attended or took up
is one of them, though the question's own verb is not said: English tells taking part by
any of these verbs. A plan ("going to") is none. On synthetic turns (no index)."""

from __future__ import annotations

from helpers.evidence import line_items, turns_item

from kbmem.research.direct import direct_answer

# An event Ilse tells she took part in, by the question's own verb.
CLEAN_UP = turns_item(
    "s1",
    "2024-03-01T09:00:00",
    ("Ilse", "I participated in the harbour clean-up event last month."),
)


def test_a_thing_joined_is_one_taken_part_in() -> None:
    items = [
        CLEAN_UP,
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            ("Ilse", "Last weekend I joined a mentorship program for young artists at the event."),
        ),
    ]
    line = direct_answer("What events has Ilse participated in?", items).line
    assert "mentorship program" in line_items(line)


def test_a_plan_to_go_is_no_part_taken() -> None:
    items = [
        CLEAN_UP,
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            ("Ilse", "Next month I'm going to a poetry festival, another event I can't wait for."),
        ),
    ]
    line = direct_answer("What events has Ilse participated in?", items).line
    assert "poetry festival" not in line_items(line)
