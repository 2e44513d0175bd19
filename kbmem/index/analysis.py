"""How text becomes index terms: words, lower case, a hyphenated word also as one word, stop
words out, irregular English forms to their base form, then Porter stems.

People spell compounds both ways: "What does Melanie do to destress?" is answered by "I've been
running farther to de-stress", "ice-cream" by "icecream". A hyphenated word gives its parts, as
any word does, and the parts written together ("de-stress": "de", "stress", "destress").

Porter stemming joins "meeting" and "meets" with "meet" but leaves "met", "went" and "took"
alone, and people talk about the past: "When did Jon meet ...?" is answered by "I met ...".
Mapping the common irregular past forms (and a few irregular plurals) to their base form
first lets a question in the present find a memory told in the past. Forms that are also
everyday words of their own ("left", "rose", "ground", "bound", "lay", "spoke") are left out.

The analyzer is pickled into each Whoosh index's schema, so its classes live here, importable
by name; changing what it does means a new index format (``kbmem.index.tenant.INDEX_FORMAT``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from whoosh.analysis import Filter, LowercaseFilter, RegexTokenizer, StemFilter, StopFilter

_FORMS = """
arose:arise arisen:arise awoke:awake awoken:awake been:be began:begin begun:begin beaten:beat
became:become bent:bend bitten:bite bled:bleed blew:blow blown:blow broke:break broken:break
brought:bring built:build burnt:burn bought:buy caught:catch chose:choose chosen:choose
came:come crept:creep dealt:deal dug:dig drew:draw drawn:draw dreamt:dream
drank:drink drunk:drink drove:drive driven:drive ate:eat eaten:eat fell:fall fallen:fall
fed:feed felt:feel fought:fight found:find fled:flee flew:fly flown:fly forbade:forbid
forbidden:forbid forgot:forget forgotten:forget forgave:forgive forgiven:forgive froze:freeze
frozen:freeze got:get gotten:get gave:give given:give went:go gone:go grew:grow grown:grow
hung:hang had:have heard:hear hid:hide hidden:hide held:hold kept:keep knelt:kneel knew:know
known:know led:lead leapt:leap learnt:learn lent:lend lost:lose made:make meant:mean met:meet
paid:pay rode:ride ridden:ride rang:ring rung:ring risen:rise ran:run said:say saw:see
seen:see sought:seek sold:sell sent:send shook:shake shaken:shake shone:shine shot:shoot
shown:show shrank:shrink shrunk:shrink sang:sing sung:sing sank:sink sunk:sink sat:sit
slept:sleep slid:slide spoken:speak spent:spend spun:spin stood:stand stole:steal
stolen:steal stuck:stick stung:sting struck:strike swore:swear sworn:swear swept:sweep
swam:swim swum:swim swung:swing took:take taken:take taught:teach tore:tear torn:tear
told:tell thought:think threw:throw thrown:throw understood:understand woke:wake woken:wake
wore:wear worn:wear wept:weep won:win wrote:write written:write
children:child men:man women:woman people:person mice:mouse feet:foot teeth:tooth
"""
BASE_FORMS: dict[str, str] = dict(pair.split(":") for pair in _FORMS.split())


MAX_JOINED = 3
# Words of letters and digits, with dots ("v1.2") and hyphens ("de-stress", kept for
# HyphenFilter) inside them. Whoosh's default pattern also takes "*" into a word (a
# wildcard of its query language, which kbmem does not use): in markdown it is emphasis,
# and "**Maya Lindqvist**, Head of Engineering" gave the terms "**maya" and "lindqvist**",
# which no search for the name found.
_WORD_PATTERN = r"\w+(?:\.?\w+)*(?:-\w+(?:\.?\w+)*)*"


class _PlainFilter(Filter):  # type: ignore[misc]  # Whoosh is untyped: Filter is Any
    """A filter without settings: two are equal when they are of the same class (Whoosh
    compares analyzers to tell whether a schema changed)."""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))


class IrregularFormFilter(_PlainFilter):
    """Replaces irregular past forms and plurals by their base form (before stemming)."""

    def __call__(self, tokens: Iterator[Any]) -> Iterator[Any]:
        for token in tokens:
            token.text = BASE_FORMS.get(token.text, token.text)
            yield token


class HyphenFilter(_PlainFilter):
    """A hyphenated word (up to MAX_JOINED letters-only parts) as its parts, then as one
    word; any other hyphenated token (dates, "v1-2") as its parts only."""

    def __call__(self, tokens: Iterator[Any]) -> Iterator[Any]:
        for token in tokens:
            if "-" not in token.text:
                yield token
                continue
            parts = [p for p in token.text.split("-") if p]
            joined = "".join(parts)
            for part in parts:
                token.text = part
                yield token
            if 1 < len(parts) <= MAX_JOINED and joined.isalpha():
                token.text = joined
                yield token


def make_analyzer() -> Any:
    """The analyzer of the BM25 index's text field (and of every query)."""
    return (
        RegexTokenizer(_WORD_PATTERN)
        | LowercaseFilter()
        | HyphenFilter()
        | StopFilter()
        | IrregularFormFilter()
        | StemFilter()
    )
