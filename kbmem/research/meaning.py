"""How near in meaning a phrase is to a class of things, by the index's sentence embedder
(kbmem.index.embedder): a list question's items are checked against the class the
question asks the members of ("what instruments …?": "clarinet" is near, "Summer Sounds"
and "water" are not). The model knows common nouns and well-known names of places and
things; it cannot know what an invented title or a person's first name names."""

from __future__ import annotations

from kbmem.index.embedder import embed


def nearness(kind: str, phrases: list[str]) -> list[float]:
    """The cosine of each of ``phrases`` with ``kind`` (the embedder's vectors are of unit
    length)."""
    if not phrases:
        return []
    vectors = embed([kind, *phrases])
    return [float(vectors[0] @ v) for v in vectors[1:]]
