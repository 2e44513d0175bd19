"""The sentences of the evidence as the direct answer reads them (kbmem.types.Said): each with
who said it and on which day (its turn's header) and the sentence said just before it; and
which of them only point back to that one ("It was great!")."""

from __future__ import annotations

import re

from kbmem.dates import stamp_day
from kbmem.research.types import EvidenceItem, Said
from kbmem.store.pages import TURN_HEADER, unescape_line
from kbmem.textutil import split_sentences

STOP = frozenset(
    "i me my mine we us our ours you your yours he him his she her hers they them their theirs "
    "it its this that these those a an the and or but so of to in on at for with by from as is "
    "are was were be been being am do does did done have has had having will would can could "
    "should shall may might must not no yes just really very so too also then than there here "
    "what which who whom whose when where why how all any some more most such only own same "
    "out up down over about into again once because while if thanks thank oh wow hey hi yeah "
    "great good nice awesome amazing cool glad happy love totally definitely sure well lot "
    "like get got go going went make made know think feel felt lol haha".split()
)
# Words of thanks, greeting, leave-taking and assent ("Thanks, Maria!", "Yep!", "Talk to you
# later!"): a sentence made only of these, of the words that say little (STOP) and of the
# speakers' names tells a reader nothing, whatever was asked; a reply often opens with one,
# and its answer follows.
CIVILITIES = frozenset(
    "absolutely agreed appreciate aw aww awww bye care congrats congratulations enjoy exactly "
    "gosh hello indeed later ok okay omg right soon sorry sounds talk true welcome whoa woah "
    "woohoo yay yep yup".split()
)
# The sentences before one, in its turn, kept as what it may lean on (a long note is one
# turn; what it leans on was said a few sentences before).
EARLIER = 6
POINTERS = frozenset("it its that this those these they them theirs there one".split())


def read_sentences(evidence: list[EvidenceItem]) -> list[Said]:
    """Every sentence of the evidence's turns (or paragraphs), with speaker and day."""
    out: list[Said] = []
    names = {w.lower() for item in evidence for w in _speakers(item)}
    for item in evidence:
        lines = (item.source_text or item.excerpt).split("\n")
        base = item.interval.start
        speaker, stamp, start = "", "", base
        body: list[str] = []
        units: list[tuple[str, str, int, int, list[str]]] = []
        for n, line in enumerate(lines):
            header = TURN_HEADER.match(line)
            if header:
                if body:
                    units.append((speaker, stamp, start, base + n - 1, body))
                speaker, stamp, start, body = header.group(2), header.group(3), base + n, []
            elif line.strip() and not line.startswith("#"):
                body.append(unescape_line(line))
        if body:
            units.append((speaker, stamp, start, base + len(lines) - 1, body))
        previous = ""
        for speaker, stamp, start, end, body in units:
            day = stamp_day(stamp)
            opens = True
            told = [previous]  # what was said before each sentence of the turn, in order
            for text in split_sentences(" ".join(body), cut="prose"):
                text = text.strip()
                if not text:
                    continue
                replies = opens and asks(previous)
                out.append(
                    Said(
                        text,
                        speaker,
                        day,
                        item,
                        start,
                        end,
                        previous,
                        item.session_id,
                        replies,
                        earlier=" ".join(told[-EARLIER:]).strip(),
                    )
                )
                told.append(text)
                if opens and replies and says_nothing(text, names):
                    continue  # the reply's answer is still to come, after the thanks
                previous, opens = text, False
    return out


def _speakers(item: EvidenceItem) -> list[str]:
    """The first names of who speaks in ``item``."""
    text = item.source_text or item.excerpt
    return [
        m.group(2).split()[0] for m in map(TURN_HEADER.match, text.split("\n")) if m and m.group(2)
    ]


def asks(text: str) -> bool:
    """Whether ``text`` asks something (an image it shares aside: "How often do you all work
    out? [shares an image: ...]")."""
    return text.split("[shares", 1)[0].rstrip().endswith("?")


def says_nothing(text: str, names: set[str]) -> bool:
    """Whether ``text`` is only thanks, a greeting or assent (see CIVILITIES), maybe with a
    speaker's name (``names``: their first names, lower case; a name cut short, "Mel", is
    Melanie's). A number, another name and an image shared say something."""
    if "[shares" in text:
        return False
    for word in re.findall(r"[A-Za-z0-9']+", text):
        low = word.lower()
        if low in STOP or low.split("'")[0] in STOP or low in CIVILITIES:
            continue
        if word[0].isupper() and len(low) >= 3 and any(n.startswith(low) for n in names):
            continue
        return False
    return True


def points_back(text: str) -> bool:
    """Whether a sentence leans on the one before for what it is about ("It was great!")."""
    words = re.findall(r"[a-z']+", text.lower())
    content = [w for w in words if w not in STOP]
    return bool(set(words) & POINTERS) and len(content) <= 3


def known_names(sentences: list[Said]) -> frozenset[str]:
    """Speakers, and words written capitalised inside a sentence (not after its start)."""
    names = {s.speaker.split()[0] for s in sentences if s.speaker}
    for s in sentences:
        for m in re.finditer(r"(?<=[a-z,;] )([A-Z][a-z]+)\b", s.text):
            names.add(m.group(1))
    return frozenset(names)
