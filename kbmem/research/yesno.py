"""The answer to a yes-or-no question and to an "A or B?" one (kbmem.research.extract):
``yesno``, yes or no by the negation the best sentence and the question differ in, with the
reason in the evidence's words; ``choice``, the one of the two things offered that the
ranked sentences say more for."""

from __future__ import annotations

import re

from kbmem.index.tenant import analyze
from kbmem.research.answer_types import alternatives
from kbmem.research.extract import FIRM_SHARE, Extracted
from kbmem.research.grammar import CLAUSE_CUT, REASON_WORDS
from kbmem.research.joint import joint_names, speaks_for_both
from kbmem.research.ranking import Ranking
from kbmem.research.said import points_back
from kbmem.research.spans import NEGATION
from kbmem.research.types import Said


def yesno(r: Ranking) -> Extracted:
    """Yes, or no when the best sentence and the question differ in negation; "likely"
    for a question that asks what would or could be; the reason from the sentence when it
    says enough of the question (FIRM_SHARE) to be one."""
    best = r.best()
    text = best.claim if not points_back(best.claim) else f"{best.before} {best.claim}"
    # A sentence that says little of the question is about something else: its negation
    # ("we didn't share much") says nothing of the answer's (the line says it is weak).
    said = r.ranked[0][1] >= FIRM_SHARE
    negated = said and (
        bool(NEGATION.search(_without_unknowing(_without_replaced(text)).lower()))
        != bool(NEGATION.search(r.question.lower()))
    )
    verdict = "No" if negated else "Yes"
    hedge = "Likely " if re.search(r"\b(?:would|could|might|likely)\b", r.question, re.I) else ""
    # A sentence that says little of the question gives no reason: words taken from it
    # would read as one (the line then says the evidence is weak, kbmem.research.direct).
    reason = _said_reason(r, text) if said else ""
    if joint_names(r.question) and not speaks_for_both(text):
        # Asked of two people, one person's sentence is half the answer: its clause is no
        # reason for both (the verdict stands on the sentences that ranked).
        reason = ""
    head = f"{hedge}{verdict.lower()}" if hedge else verdict
    return f"{head}; {reason}" if reason else head, [best]


def _without_replaced(text: str) -> str:
    """``text`` without the "not" that was said of a replaced value, cut from a correction's
    claim ("the launch is 21 April, not [14 April] as stated"): it says the value changed,
    not that the sentence denies what it states."""
    return _REPLACED_NOT.sub(" ", text)


_REPLACED_NOT = re.compile(
    r"\b(?:not|instead\s+of|rather\s+than)\s+(?=[,;.]|as\s+(?:stated|said|planned)\b|$)", re.I
)


def _without_unknowing(text: str) -> str:
    """``text`` without the negation of a speaker's knowing ("I can't say if all of them
    will", "I'm not sure whether") and without the "not" of "… or not": the first denies
    that the speaker knows, not what follows "if"/"whether"; the second offers both
    answers and denies neither. Neither is a "no" to the question."""
    return _OR_NOT.sub(" ", _UNKNOWING.sub(" ", text))


_OR_NOT = re.compile(r"\b(?:or|whether)\s+not\b", re.I)


_UNKNOWING = re.compile(
    r"\b(?:can't|cannot|can\s+not|don't|do\s+not|not)\s+(?=(?:really\s+)?"
    r"(?:say|know|tell|be\s+sure|sure)\s+(?:if|whether)\b)",
    re.I,
)


_LEAD = re.compile(r"^(?:(?:yes|yeah|yep|no|nope|oh|well|and|also|actually)\b[\s,!.]*)+", re.I)


def _said_reason(r: Ranking, text: str) -> str:
    """The reason a yes or no rests on, in the evidence's words: the clause of ``text`` that
    says most the question does not ("I didn't finish, my knee gave out": "my knee gave
    out"), at most REASON_WORDS words."""
    # A picture's caption is what was shown: its words count as said.
    plain = re.sub(r"\\?\[shares an image:\s*(.*?)\\?\]", r": \1", text)
    clauses = [_LEAD.sub("", c.strip(" .")) for c in CLAUSE_CUT.split(plain)]
    clauses = [c for c in clauses if c]
    if not clauses:
        return ""
    best = max(clauses, key=r.news)  # the first of equals
    if not r.news(best):
        # Nothing but the question's words: the clause that says them is the reason.
        best = max(clauses, key=lambda c: len(set(analyze(c)) & r.weigher.terms))
    return " ".join(best.split()[:REASON_WORDS])


def choice(r: Ranking) -> Extracted:
    """Of the two things the question offers ("a beach or the mountains"), the one the
    ranked sentences say more for (each sentence counting by its score); the words both
    share ("park" of "national park or theme park") tell nothing."""
    offered = alternatives(r.question)
    if offered is None:
        return "", [r.best()]
    terms = [set(analyze(o)) for o in offered]
    own = [terms[0] - terms[1], terms[1] - terms[0]]
    # A speaker's name in an option ("John Greene" where John talks) is said in every
    # greeting of theirs: it tells who talks, not which option; the option's other words
    # speak for it.
    own = [o - r.speakers or o for o in own]
    support = [0.0, 0.0]
    sources: list[list[Said]] = [[], []]
    for score, share, s in r.ranked:
        said = set(analyze(s.claim))
        # A sentence counts by what it says itself: one leaning on the sentence before it
        # ("A lake is fine" after "I miss the sea") does not speak for what that one says.
        itself = score * r.weigher.share(s, before=False) / share if share else 0.0
        for n in (0, 1):
            if own[n] & said:
                support[n] += itself
                sources[n].append(s)
    if support[0] == support[1]:
        return "", [r.best()]
    n = 0 if support[0] > support[1] else 1
    return offered[n], sources[n][:3]


def options_said(r: Ranking, n: int = 3) -> list[Said]:
    """Asked to choose for someone ("Would Ilse rather visit a lake or a city?"), the first
    ``n`` sentences that person says with a word of either option, when no sentence answers
    the question as a whole: memory holds nothing that chooses, but what the person says
    of the options is what a reader would weigh, so it is quoted rather than nothing."""
    offered = alternatives(r.question)
    if offered is None or not r.asked_speakers:
        return []
    words = set(analyze(" ".join(offered))) - r.speakers
    return [
        s
        for s in r.all
        if set(analyze(s.speaker)) & r.asked_speakers
        and not s.text.endswith("?")
        and set(analyze(s.text)) & words
    ][:n]
