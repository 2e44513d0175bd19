"""People said by their relation to the speaker ("my mom", "our neighbours"): who a
sentence tells of when it names no one, as a reader would write it ("Maria's mother")."""

from __future__ import annotations

import re

# Nouns that say who a person is to someone: family, and the people of one's days.
_KIN_NOUNS = (
    "mom|mum|mother|dad|father|parents?|sister|brother|siblings?|aunt|auntie|uncle|cousin"
    "|grandma|grandmother|grandpa|grandfather|grandparents|wife|husband|partner|boyfriend"
    "|girlfriend|fiancée?|sons?|daughters?|kids|children|family|friends?|neighbou?rs?"
    "|boss|coworkers?|co-workers?|colleagues?|teammates?|mentors?|roommates?|classmates?"
)
_KIN = re.compile(
    rf"\b(my|our)\s+((?:(?:best|old|close|dear|little|big|older|younger)\s+)?(?:{_KIN_NOUNS}))\b",
    re.I,
)
# The words people speak with, as they are written of a person ("mom": "mother").
WRITTEN = {"mom": "mother", "mum": "mother", "dad": "father", "auntie": "aunt"}
WRITTEN |= {"grandma": "grandmother", "grandpa": "grandfather"}


def kin(text: str, speaker: str) -> tuple[str, str]:
    """The first person ``text`` tells of by their relation to its ``speaker``, as whose and
    what relation ("My mom and I made dinner", said by Maria: "Maria's", "mother"); two
    empty strings when it names none."""
    found = _KIN.search(text)
    if not found:
        return "", ""
    whose = f"{speaker.split()[0]}'s" if speaker else found.group(1).lower()
    words = [WRITTEN.get(w.lower(), w.lower()) for w in found.group(2).split()]
    return whose, " ".join(words)
