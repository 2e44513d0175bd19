"""Asked whom someone did a thing with, the object of "with" after that verb, a name or not;
asked "whose <noun>", the possessor said before the noun ("my daughter's birthday" is the
speaker's daughter). Synthetic turns through the real functions."""

from __future__ import annotations

from helpers.evidence import turns_item

from kbmem.research.direct import direct_answer


def _line(question: str, asked: str, reply: str) -> str:
    """The first line for ``question`` from Marta asking ``asked`` and Ilse's ``reply``."""
    items = [turns_item("s1", "2024-05-04T19:00:00", ("Marta", asked), ("Ilse", reply))]
    return direct_answer(question, items).line


def test_who_one_worked_with_is_the_object_of_with() -> None:
    line = _line(
        "Who did Ilse work with to raise funds for the shelter?",
        "How did the fundraiser for the shelter go?",
        "We raised funds for the shelter, and we worked with a local charity that helps families.",
    )
    assert line.startswith("a local charity")


def test_whose_noun_is_the_possessor_said_before_it() -> None:
    line = _line(
        "Whose birthday did Ilse celebrate last week?",
        "What did you do last week?",
        # The sentence ranked first names no one: the possessor is in the next.
        "Everyone we love came. We celebrated my brother's birthday with a picnic by the lake.",
    )
    assert line.startswith("Ilse's brother")


def test_a_capitalised_word_without_its_s_owns_nothing() -> None:
    """ "Last birthday was quiet" opens with a capital, not with an owner: the owner is the
    one said with "'s"."""
    line = _line(
        "Whose birthday did Ilse celebrate last week?",
        "What did you do last week?",
        "Last birthday was quiet. This time we had cake for Tomas's birthday at the lake.",
    )
    assert line.startswith("Tomas")
