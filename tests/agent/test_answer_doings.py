"""Asked what someone does ("What does X do to unwind?"), an activity named by its -ing
form keeps the object it takes, opened by a determiner or a possessive ("reading a good
mystery novel"): the verb alone does not say what is done. The object ends before the
verb of the clause the -ing phrase is the subject of ("… helps me unwind"), and its own
words are no activity of their own. On synthetic turns (no index)."""

from __future__ import annotations

from helpers.evidence import line_items, turns_item

from kbmem.research.direct import direct_answer


def test_an_activity_keeps_the_object_it_takes() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Ilse", "Reading a good mystery novel helps me unwind after work."),
        ),
        turns_item(
            "s2",
            "2024-04-01T09:00:00",
            ("Ilse", "I've been swimming more to unwind, it clears my head."),
        ),
    ]
    line = direct_answer("What does Ilse do to unwind?", items).line
    assert sorted(line_items(line)) == ["Reading a good mystery novel", "swimming"], line


def test_the_object_s_words_are_no_activity_of_their_own() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Ilse", "To unwind I've been improving my drawing skills at night."),
        ),
    ]
    line = direct_answer("What does Ilse do to unwind?", items).line
    assert line_items(line) == ["improving my drawing skills"], line


def test_a_quantity_of_a_noun_is_one_object() -> None:
    items = [
        turns_item(
            "s1",
            "2024-03-01T09:00:00",
            ("Ilse", "To remember good days I started writing some of my favorite memories down."),
        ),
    ]
    line = direct_answer("What does Ilse do to remember good days?", items).line
    assert line_items(line) == ["writing some of my favorite memories"], line


def test_an_activity_that_is_the_subject_of_be_takes_no_object() -> None:
    # "Baking is therapy for me": what baking is, not a thing baked.
    items = [
        turns_item("s1", "2024-03-01T09:00:00", ("Odile", "Baking is therapy for me.")),
        turns_item("s2", "2024-04-01T09:00:00", ("Odile", "I baked a lemon tart for my sister.")),
    ]
    line = direct_answer("What has Odile baked?", items).line
    assert line_items(line) == ["lemon tart"], line
