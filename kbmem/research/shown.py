"""What a shared picture shows, as the answer to a "what" question.

Memory keeps a picture shared in a chat as its caption inside the turn ("Here's our latest
work. [shares an image: a photo of a painting of a sunset with a palm tree]"). The caption
is no one's words: it describes the scene, and in a conversation about one subject nearly
every caption shares a word with a question about it. So a caption answers only when it
shows the very thing the question asks for, by grammar that holds in any conversation:

- its head noun is the noun the question asks about ("what sign …?": "a sign posted on a
  door …"), or the noun whose preposition the question asks for ("what did X receive a
  certificate for?": "a certificate of completion …", what follows the noun);
- its sentence says the question's verb with a pointer as the object ("they made this!",
  "I made it to …", "it was made for …"): the picture is what was made;
- its sentence says the question's verb with a noun object that is the caption's head
  ("I made a painting too!" + "a painting of a castle"): the picture says which one;
- its sentence points at the picture ("here's …") and the caption's head is the question's
  verb made a noun ("paint": "a painting of a sunset …"), of which it shows what;
- the question asks what a thing says ("what did the posters say?"), and the caption
  shows writing ("a sign that says …").

Speaker's words that say which one answer instead, in their sentence and below it
(kbmem.research.what._picture_shown): a noun phrase of the asked noun, a title in quotes
or the object the question's grammar asks for stop a picture of the noun; an object of the
asked verb that names a thing ("I baked a lemon cake") stops the pictures of the sentences
below. A pointer ("signs like this", "made it") is no such word: it points at the picture.
"""

from __future__ import annotations

import re
from collections.abc import Set

from kbmem.index.tenant import analyze
from kbmem.research.said import STOP
from kbmem.research.spans import PREPOSITIONS, stem_set
from kbmem.research.types import Said

CAPTION = re.compile(r"\s*\\?\[shares an image:\s*([^\]\\]*?)\s*\\?\]?\s*$")
# How a captioner opens what it describes ("a photo of", its quirk "a photography of", "a
# close up of"): the frame, not the scene.
_FRAME = re.compile(
    r"^(?:(?:a|an|the)\s+)?(?:(?:close[- ]?up|blurry|black\s+and\s+white|cropped)\s+)?"
    r"(?:(?:photo(?:graph|graphy)?|picture|image|pic|snapshot|screenshot|close[- ]?up)\s+of\s+)+",
    re.I,
)
_OPENERS = frozenset(
    "a an the some two three four five six several many few lots one this these".split()
)
# A noun that counts or gathers others ("a group of children", "a pair of shoes"): the
# scene's head is what it gathers.
_GATHERS = frozenset("group couple pair bunch crowd row pile stack set lot number".split())
_NOUN_ENDS = PREPOSITIONS | frozenset("that which who while and or as".split())
# Writing that a picture shows: a sign "that says …", a poster "saying …".
_WRITING = re.compile(
    r"\b(?:(?:that|which)\s+(?:says|said|reads|read)|saying|reading|stating(?:\s+that)?"
    r"|with\s+the\s+words?)\s+(.+)$",
    re.I,
)
# A thing (the noun after a determiner), not a person named, asked what it says.
_ASKS_WRITING = re.compile(
    r"^\s*what\s+(?:did|does|do)\s+(?:the|a|an|this|that|these|those)\s+[^?]*?"
    r"\b(?:say|read|show)\s*\?*\s*$",
    re.I,
)
# A sentence that presents the picture it carries.
_PRESENTS = re.compile(
    r"\b(?:here['’]?s|here\s+(?:is|are)|take\s+a\s+look|have\s+a\s+look|check\s+(?:it|this|"
    r"these|that)\s+out|check\s+out|look\s+at\s+(?:this|these|it)|this\s+is|these\s+are)\b",
    re.I,
)
# "What did X share a photo of?": the wh-word is the object of the picture's "of", so what
# the picture shows is the answer itself (whatever else the question adds after "of": "when
# …", "near Fort Wayne", "as part of …").
_ASKS_PICTURED = re.compile(
    r"^\s*what\s+(?:did|does|do|has|have|had)\s+[^?]*?\b(?:shar|tak|post|send|sent|show)\w*\s+"
    r"(?:(?:a|an|the|some|this|that|these|those)\s+)?(?:photo(?:graph)?|picture|pic|image|snapshot)s?"
    r"\s+of\s*(?:\?|$|(?:when|while|as|during|after|before|near|at|in|on|from|for|last|this|"
    r"that|which|with|to)\b)",
    re.I,
)
_POINTER_OBJECTS = frozenset("this it these that them those".split())
_PASSIVE_POINTER = re.compile(
    r"\b(?:it|this|that|these|they)\s+(?:is|was|were|are)\s+(?:[a-z]+ly\s+)?([a-z]+)\b", re.I
)
# The question's verb's object is a phrase of at most this many words in the speaker's
# words ("made a painting", "made a small clay bowl").
OBJECT_REACH = 4
_STRANDED = re.compile(r"([a-z][\w'’-]*)\s+([a-z]+)\s*\?*\s*$", re.I)


def split_caption(text: str) -> tuple[str, str]:
    """The speaker's words of a sentence and what its picture shows (the caption without
    its frame, "" when the sentence shares none)."""
    found = CAPTION.search(text)
    if not found:
        return text, ""
    return text[: found.start()].strip(), _FRAME.sub("", found.group(1).strip())


def scene_head(scene: str) -> tuple[list[str], int]:
    """The words of a caption's scene and the index of its head noun: the last word of its
    first noun phrase (to a preposition, a clause word, or a participle that follows the
    noun: "a dog sitting …", "a sign posted on …"), through a noun that gathers others ("a
    group of children": children); -1 when it has none."""
    words = scene.split()
    at = 0
    while True:
        while at < len(words) and words[at].lower() in _OPENERS:
            at += 1
        start = end = at
        while end < len(words):
            low = words[end].lower()
            following = words[end + 1].lower() if end + 1 < len(words) else ""
            if low in _NOUN_ENDS:
                break
            if end > start and _participle(low, following):
                break
            end += 1
        if end == start:
            return words, -1
        head = end - 1
        if words[head].lower() in _GATHERS and end < len(words) and words[end].lower() == "of":
            at = end + 1
            continue
        return words, head


def _participle(word: str, following: str) -> bool:
    """Whether ``word``, after a noun, is a participle that qualifies it ("sitting on",
    "posted on", "holding a"), not the noun itself ("a large painting of")."""
    if following in ("of", ""):
        return False
    return (word.endswith("ing") and len(word) > 5) or (
        word.endswith("ed") and following in PREPOSITIONS | _OPENERS
    )


def _after(words: list[str], at: int, joins: tuple[str, ...]) -> str:
    """The words after index ``at`` when the first of them is one of ``joins`` ("of"), to
    the caption's end; ""."""
    if at + 1 < len(words) and words[at + 1].lower() in joins and at + 2 < len(words):
        return " ".join(words[at + 2 :])
    return ""


def _head_phrase(words: list[str], head: int) -> str:
    """The caption's head noun with the words before it in its phrase (no determiner)."""
    start = head
    while start > 0 and words[start - 1].lower() not in _OPENERS | _NOUN_ENDS:
        start -= 1
    return " ".join(words[start : head + 1])


def _says_verb_of(words: str, verb: set[str], head: str) -> str:
    """How the speaker's ``words`` say the question's ``verb`` of the picture: "pointer"
    when its object is a pointer ("made this!", "it was made for …"), "named" when its
    object's noun is the caption's ``head`` ("made a painting"), else ""."""
    tokens = re.findall(r"[\w'’-]+|[^\w\s]", words)
    head_stems = stem_set(head)
    for n, token in enumerate(tokens):
        if not verb or not _same(set(analyze(token)), verb):
            continue
        if _pointer_object(tokens[n + 1 : n + 4]) and not verb & _LIGHT_VERBS:
            return "pointer"
        reach = tokens[n + 1 : n + 1 + OBJECT_REACH]
        if head_stems and any(stem_set(t) == head_stems for t in reach):
            return "named"
    for found in _PASSIVE_POINTER.finditer(words):
        if verb and _same(set(analyze(found.group(1))), verb):
            return "pointer"
    return ""


# Verbs too light to say what a picture is ("I did it!", "got it").
_LIGHT_VERBS = frozenset(stem_set("do did get got have had go went"))
# "Made it to the finals", "made it through", "made it home": "it" is no thing there.
_ARRIVAL = frozenset("through back home out up there here".split())
_DETERMINERS = frozenset("a an the my our your his her their this that these those".split())


def _pointer_object(following: list[str]) -> bool:
    """Whether the words after a verb (``following``, up to three) open with a pointer as
    its object ("this!", "it to show …"): not "this" as the determiner of a noun ("this
    bowl"), nor "it" of arriving ("made it to the top")."""
    low = [t.lower() for t in following]
    if not low or low[0] not in _POINTER_OBJECTS:
        return False
    if len(low) == 1:
        return True
    if low[1] in _ARRIVAL or (
        low[1] == "to" and len(low) > 2 and (low[2] in _DETERMINERS or following[2][:1].isupper())
    ):
        return False
    if low[0] in ("it", "them"):
        return True
    return not re.match(r"[\w'’-]+$", low[1]) or low[1] in PREPOSITIONS | STOP


def points_at(words: str, noun: str) -> bool:
    """Whether ``words`` say ``noun`` as the one their picture shows ("signs like this",
    "this sign")."""
    stem = re.escape(noun.lower().rstrip("s"))
    return bool(
        re.search(
            rf"\b{stem}\w*\s+like\s+(?:this|these|that)\b|\b(?:this|these)\s+(?:\w+\s+)?{stem}",
            words,
            re.I,
        )
    )


def pointed(words: str, verb: set[str]) -> bool:
    """Whether ``words`` say ``verb`` (its stems) with a pointer as its object ("made
    this!", "it was made for …")."""
    return _says_verb_of(words, verb, "") == "pointer"


def _same(a: Set[str], b: Set[str]) -> bool:
    """Whether two words' stems are of one word (one a stem of four letters or more that
    the other starts with: "particip", "participat")."""
    if a == b:
        return bool(a)
    if len(a) != 1 or len(b) != 1:
        return False
    x, y = sorted((next(iter(a)), next(iter(b))), key=len)
    return len(x) >= 4 and y.startswith(x)


def shown(question: str, s: Said, noun: str, verb: set[str]) -> str:
    """What ``s``'s picture shows as the answer to ``question`` (its asked ``noun`` and
    ``verb``'s stems, either may be empty), by the rules of the module's docstring; "" when
    the picture is not shown to be the thing asked."""
    words, scene = split_caption(s.claim or s.text)
    if not scene:
        return ""
    if _ASKS_PICTURED.match(question):
        return scene
    tokens, head = scene_head(scene)
    if head < 0:
        return ""
    head_stems = stem_set(tokens[head])
    writing = _WRITING.search(scene)
    if writing and _ASKS_WRITING.match(question):
        return writing.group(1)
    start = head - len(_head_phrase(tokens, head).split()) + 1
    if noun and head_stems == stem_set(noun):
        return " ".join(tokens[start:]) if head_stems else ""
    stranded = _STRANDED.search(question.strip())
    if stranded and stranded.group(2).lower() in PREPOSITIONS:
        asked, prep = stem_set(stranded.group(1)), stranded.group(2).lower()
        # "What did X receive a certificate for?": what the certificate is of.
        if head_stems == asked:
            return _after(tokens, head, ("of", prep))
    how = _says_verb_of(words, verb, tokens[head])
    if how:
        return " ".join(tokens[start:]) if how == "named" else scene
    if verb and _same(head_stems, verb) and _PRESENTS.search(words):
        # "Here's our latest work [a painting of a sunset]": what was painted.
        return _after(tokens, head, ("of",))
    return ""
