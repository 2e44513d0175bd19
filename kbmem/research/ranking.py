"""The sentences of the evidence ranked for one question, for the direct answer
(kbmem.research.direct): each is weighed by the question's rare words it says (who said it
counts for a sentence in the first person; the sentence before counts for one that answers
what was just asked or named), by whether it gives an answer of the kind asked
(kbmem.research.answer_types.question_kind), by whether it was said in a time the question
names, and by whether a later correction replaced what it states."""

from __future__ import annotations

import itertools
import math
import re

from kbmem.dates import date_windows, time_words, year_windows
from kbmem.index.tenant import analyze
from kbmem.memorize.sessions import is_own_answer
from kbmem.research.answer_types import question_kind
from kbmem.research.kin import kin
from kbmem.research.offline import (
    CORRECTION_WEIGHT,
    changed_claim,
    changed_in,
    replaced_in,
    stated_values,
    states_correction,
)
from kbmem.research.said import known_names, points_back, says_nothing
from kbmem.research.spans import (
    CAPS,
    DURATION,
    FRAMING,
    FREQUENCY,
    NUMBER,
    PLACE,
    SINCE,
    is_novel,
    novel_phrase,
    people,
)
from kbmem.research.types import Said

# A sentence must say this share of the question's weight to answer it at all.
MIN_SHARE = 0.25
# A sentence weighing this share of the best one's score is near it (Ranking.near).
NEAR = 0.5
TYPE_MISS = 0.4  # a sentence that gives no answer of the kind asked counts this much
OUT_OF_WINDOW = 0.5  # said outside the time the question names
# A sentence that speaks of the day or week the question names in its own words ("last
# night", said the day after) says it as one of the question's words of average weight.
TIME_TERM = 1.0
NARROW_DAYS = 10  # a day named (with its slack) or a week before one
RANK_PRIOR = 0.2
SUPERSEDED = 0.3  # a sentence stating a value that a correction replaced
CORRECTED_SHARE = 0.5  # a correction counts more only when it says this share of the question
ECHO_FLOOR = 0.4  # a sentence saying nothing new counts this much of its coverage
NEWS = 3  # new words for a sentence to count fully
# Asked about a person who speaks in memory, a sentence another speaker said that does not
# name them counts this much: "What did A research?" is answered by A, or by B about A.
OTHER_SPEAKER = 0.7
# A sentence that opens a turn replying to a question ("What made you pick it?") says what
# was asked for: it counts this much more.
REPLY = 1.2
OWN_ANSWER = 0.5  # kbmem's own earlier answer (memorized with its chat), against its sources
BEFORE_SHARE = 0.7  # of the question's terms the sentence before says, the share counted
BEFORE_POINTER = 0.8  # the same, for a sentence that only points back
# The same, for a reply to a question: the question's words are what it answers.
ANSWERED = 1.0
# The same, for a reply whose question points back with a pronoun, of the terms of the turn
# before it that the pronoun stands for (see told_before): a step further away, and it may
# stand for only some of them.
POINTED_SHARE = 0.5
# Who said a sentence not in the first person counts this much of their name's weight.
SPEAKER_SHARE = 0.7
QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how is are was were do does did has have had "
    "can could would will should shall may might the a an of to in on at for with by from "
    "about and or any some there that this these those it its"
    # A singular pronoun stands for the one person the question names ("Mel and her kids"),
    # who is asked by name already; read as a term, "his" is the greeting "hi". A plural one
    # may stand for a group the question does not name, and stays.
    " he him his she her hers".split()
)
# Words that shape the answer's kind without saying what it is about.
SHAPE_WORDS = frozenset(
    "many much long often far old kind kinds type types sort sorts name names time times "
    "date day year month week likely place happen both".split()
)


# A place said by description with its name set beside it: "in my home country, Sweden".
_PLACE_BESIDE = re.compile(
    r"\b(?:in|at|from|to|near)\s+(?:the|my|our|his|her|their)\s+[a-z][\w'’-]*"
    r"(?:\s+[a-z][\w'’-]*)?\s*,\s*[A-Z][a-z]"
)


# Endings that derive one word from another without changing what it names, each with the
# shortest stem it is taken to extend: the stemmer leaves "reaction" whole beside "react",
# and cuts "focus" to "focu" but "focusing" to "focus". A listener asks "How did they react?"
# of what memory is asked as "their reaction". Shorter stems are left alone: "pass" is no
# form of "passion", "mill" none of "million".
DERIVATIONS = {"s": 4, "ion": 5}


def same_word(a: str, b: str) -> bool:
    """Whether stems ``a`` and ``b`` are forms of one word: equal, or one the other with an
    ending of DERIVATIONS."""
    short, long = sorted((a, b), key=len)
    shortest = DERIVATIONS.get(long[len(short) :])
    return a == b or (shortest is not None and len(short) >= shortest and long.startswith(short))


def _terms(text: str) -> set[str]:
    return set(analyze(text))


def _compounds(words: list[str], terms: set[str]) -> dict[str, set[str]]:
    """Two words of the question side by side, written as one word ("work out": "workout",
    "road trip": "roadtrip"), each with the terms of its parts: English writes a compound
    apart, hyphened or whole, and the question and memory need not agree."""
    out: dict[str, set[str]] = {}
    for a, b in itertools.pairwise(words):
        if not (a.islower() and b.islower()):
            continue  # a name is no part of a compound
        whole = set(analyze(a + b))
        parts = set(analyze(a)) | set(analyze(b))
        if len(whole) == 1 and parts and parts <= terms:
            out[next(iter(whole))] = parts
    return out


def _names(question: str) -> list[str]:
    """Capitalised names the question gives (its first word aside)."""
    words = question.split()
    rest = " ".join(words[1:]) if words else ""
    return [m.group(1).rstrip("'’s") for m in CAPS.finditer(rest)]


class Weigher:
    """The question's terms, each weighing by its rarity among the sentences read."""

    def __init__(self, question: str, sentences: list[Said]):
        asked = [
            w
            for w in re.findall(r"[\w'’-]+", re.sub(r"\btake\s+place\b", "", question, flags=re.I))
            if w.lower() not in QUESTION_WORDS and w.lower() not in SHAPE_WORDS
        ]
        dated = time_words(question)
        self.terms = set(analyze(" ".join(w for w in asked if w.lower() not in dated)))
        self.names = {t for n in _names(question) for t in analyze(n)}
        self.compounds = _compounds(asked, self.terms)
        df: dict[str, int] = {}
        for s in sentences:
            for t in _terms(s.text) & self.terms:
                df[t] = df.get(t, 0) + 1
        total = max(1, len(sentences))
        self.weight = {t: math.log(1 + total / (1 + df.get(t, 0))) for t in self.terms}
        # Summed exactly (math.fsum): a sum over a set in its iteration order differs in the
        # last bit from run to run (string hashes are salted), and a share that lands on a
        # threshold (FIRM_SHARE) would make the same question firm in one run, weak in another.
        self.whole = math.fsum(self.weight.values()) or 1.0
        self.mean = self.whole / max(1, len(self.weight))

    def _said(self, text: str) -> set[str]:
        """The terms ``text`` says, a compound the question writes apart counting when
        written whole ("workout" says the question's "work out"), and a question's word
        when ``text`` says another form of it ("react" says "reaction", see same_word)."""
        said = _terms(text)
        for whole, parts in self.compounds.items():
            if whole in said:
                said |= parts
        return said | {t for t in self.terms - said if any(same_word(t, u) for u in said)}

    def share(self, s: Said, before: bool = True) -> float:
        """The question's weight ``s`` says; who said it counts as said, fully in the first
        person (asked what Caroline did, her "I went" is about her) and at a share otherwise
        (her "The new one is blue" is most likely hers too), and a sentence that points back
        takes the terms of the sentence before it at a share (unless ``before`` is False:
        what the sentence itself says)."""
        said = self._said(s.text)
        speaker = _terms(s.speaker) - said
        if re.search(r"\b(?:I|[Mm]y|[Mm]e|I'm|I've|[Ww]e|[Oo]ur)\b", s.text):
            said |= speaker
            speaker = set()
        covered = math.fsum(self.weight[t] for t in said & self.terms)
        covered += SPEAKER_SHARE * math.fsum(self.weight[t] for t in speaker & self.terms)
        if s.before and before:
            # What a sentence answers is often asked or named just before it: "What did
            # you paint?" — "A sunset!". A sentence that only points back leans on it more.
            share = BEFORE_POINTER if points_back(s.text) else BEFORE_SHARE
            if s.replies:
                share = ANSWERED  # "What games did you play?" — "Charades!": played games
            covered += share * math.fsum(
                self.weight[t] for t in (self._said(s.before) - said) & self.terms
            )
        return covered / self.whole

    def lent(self, s: Said, text: str) -> float:
        """The question's weight ``text`` says and neither ``s``, its speaker nor the
        sentence before it do."""
        own = self._said(s.text) | self._said(s.before) | _terms(s.speaker)
        return math.fsum(self.weight[t] for t in (self._said(text) - own) & self.terms) / (
            self.whole
        )


# A personal pronoun of the third person, which stands for something told before ("that" is
# as often a conjunction, or a determiner pointing at what its noun names).
_POINTS = re.compile(r"\b(?:they|them|their|it|its|he|him|his|she|her)\b", re.I)


def told_before(sentences: list[Said]) -> dict[int, str]:
    """For each reply (by its id) that points back with a pronoun to a question that points
    back too, the replier's own turn before that question: "Last week we visited the
    memorial. It moved my kids." — "How did they react?" — "They were awestruck." Both
    "they" stand for what the replier told, which the question asked of memory may name
    ("his kids' reaction at the memorial"); the listener's question only points at it."""
    out: dict[int, str] = {}
    for n, s in enumerate(sentences):
        if not (s.replies and s.speaker) or not all(
            _POINTS.search(text.split("[shares", 1)[0]) for text in (s.before, s.text)
        ):
            continue
        k = n - 1
        while k >= 0 and sentences[k].item is s.item and sentences[k].speaker != s.speaker:
            k -= 1  # the listener's turn, with the question
        turn: list[str] = []
        while k >= 0 and sentences[k].item is s.item and sentences[k].speaker == s.speaker:
            turn.insert(0, sentences[k].text)
            k -= 1
        if turn:
            out[id(s)] = " ".join(turn)
    return out


def gives(kind: str, s: Said) -> bool:
    """Whether sentence ``s`` gives an answer of ``kind`` (any sentence may give a thing, a
    list or a yes or no)."""
    text = s.claim or s.text
    if kind == "date":
        return bool(s.dates())
    if kind == "duration":
        return bool(DURATION.search(text) or SINCE.search(text))
    if kind == "number":
        return bool(NUMBER.search(text) or FREQUENCY.search(text))
    if kind == "count":
        return bool(NUMBER.search(text))
    if kind in ("person", "names"):
        # A person named, or told of by relation ("my mom").
        return bool(people(text, set(), frozenset(s.speaker.split()[:1])) or kin(text, "")[1])
    if kind == "place":
        return bool(PLACE.search(text) or _PLACE_BESIDE.search(text))
    return True


class Ranking:
    """The sentences that answer ``question`` at all (MIN_SHARE of its weight), best first,
    each as (score, share of the question's weight, sentence)."""

    def __init__(self, question: str, sentences: list[Said]):
        self.question = question
        self.kind = question_kind(question)
        self.weigher = Weigher(question, sentences)
        self.windows = date_windows(question) or year_windows(question)
        # A day or a week the question names is said as a word is ("last night" of a day);
        # a month holds too many days told of to be said by any one of them.
        self.spans = [
            w for w in self.windows if w.start and w.end and (w.end - w.start).days <= NARROW_DAYS
        ]
        self.speakers = {t for s in sentences for t in analyze(s.speaker)}
        self.known = known_names(sentences)
        self.asked_speakers = self.weigher.names & self.speakers
        self.all = sentences
        self.told_before = told_before(sentences)
        self.first_names = {s.speaker.split()[0].lower() for s in sentences if s.speaker}
        order: dict[int, int] = {}
        for s in sentences:
            order.setdefault(id(s.item), len(order))
        ranked = []
        for n, s in enumerate(sentences):
            scored = None if self._answers_nothing(s) else self._score(s, order[id(s.item)])
            if scored is not None:
                ranked.append((scored[0], -n, scored[1], s))
        ranked = _stale_values_down(ranked, sentences)
        if not _ASKS_BEFORE.search(question):
            named = re.findall(r"(?<!^)(?<![.?!] )\b[A-Z][\w'’-]*", question)
            ranked = _changes_told(ranked, sentences, set(analyze(" ".join(named))))
        ranked.sort(key=lambda r: (r[0], r[1]), reverse=True)
        self.ranked = [(score, share, s) for score, _n, share, s in ranked]

    def _answers_nothing(self, s: Said) -> bool:
        """Whether ``s`` cannot answer the question: a question, or (asked anything but yes
        or no) a sentence of thanks or assent alone ("Awesome, John!"), which takes the
        words of the question it replies to but says nothing of its own."""
        if s.text.endswith("?"):
            return True
        return self.kind != "yesno" and says_nothing(s.text, self.first_names)

    def _score(self, s: Said, rank: int) -> tuple[float, float] | None:
        """The score and share of sentence ``s`` (of the ``rank``-th evidence item), None when
        it says too little of the question."""
        corrects = states_correction([s.text])
        s.claim = replaced_in(s.text)[0] if corrects else s.text
        share = self.weigher.share(s)
        if id(s) in self.told_before:
            share += POINTED_SHARE * self.weigher.lent(s, self.told_before[id(s)])
        if self._tells_asked_time(s):
            share = min(1.0, share + TIME_TERM * self.weigher.mean / self.weigher.whole)
        if share < MIN_SHARE:
            return None
        score = share * (1.0 if self._gives(s) else TYPE_MISS)
        if self.kind in ("thing", "list"):
            # A sentence that only says the question back ("I went to a council
            # meeting for adoption.") introduces the answer; the next one gives it.
            score *= ECHO_FLOOR + (1 - ECHO_FLOOR) * min(1.0, self.news(s.claim) / NEWS)
        if self._other_speaker(s):
            score *= OTHER_SPEAKER
        if s.replies:
            score *= REPLY
        if is_own_answer(s.session, s.speaker):
            score *= OWN_ANSWER
        if corrects and share >= CORRECTED_SHARE:
            # What memory holds now, over what it replaced; a correction of something else
            # (the cloud budget, asked the offsite's) says too little of the question.
            score *= CORRECTION_WEIGHT
        # The researcher's order of the evidence breaks near ties.
        score *= 1 + RANK_PRIOR / (1 + rank)
        if self.windows and s.day and not self._in_window(s):
            score *= OUT_OF_WINDOW
        return score, share

    def _tells_asked_time(self, s: Said) -> bool:
        """Whether ``s`` speaks of the day or stretch the question names, in its own words
        ("last week", said on 3 August, of "the week before 3 August"; "last night", said
        on 4 May, of "on 3 May"): it says the question's time as it says its words."""
        return any(
            w.meets(d.first, d.last)
            for d in s.dates()
            if d.first and d.last and (s.day is None or d.first <= s.day)
            for w in self.spans
        )

    def _in_window(self, s: Said) -> bool:
        """Whether ``s`` was said in a time the question names, or tells of one gone by: an
        event is often told after it happened ("we went to a convention last month"); a
        time ahead of the day said is a plan, which may not have happened."""
        if s.day and any(w.contains(s.day) for w in self.windows):
            return True
        return any(
            w.meets(d.first, d.last)
            for d in s.dates()
            if d.first and d.last and (s.day is None or d.first <= s.day)
            for w in self.windows
        )

    def _gives(self, s: Said) -> bool:
        """Whether ``s`` gives an answer of the kind asked; asked who, a person other than
        those the question names ("Thanks, Maria!" gives no one asked "Who did Maria …?")."""
        if self.kind in ("person", "names"):
            text = s.claim or s.text
            return bool(people(text, self.weigher.names, frozenset(s.speaker.split()[:1])))
        return gives(self.kind, s)

    def _other_speaker(self, s: Said) -> bool:
        """Whether the question asks about a speaker and ``s`` is another's and does not
        name them."""
        return bool(
            self.asked_speakers
            and s.speaker
            and not _terms(s.speaker) & self.asked_speakers
            and not _terms(s.text) & self.asked_speakers
        )

    def news(self, text: str) -> int:
        """How many words of ``text`` say what the question does not."""
        return sum(
            is_novel(t, self.weigher.terms, self.speakers) and t.lower() not in FRAMING
            for t in re.findall(r"[\w'’-]+", text.split("[shares", 1)[0])
        )

    def top(self, kind: str) -> list[Said]:
        """The ranked sentences that give an answer of ``kind``."""
        return [s for _score, _share, s in self.ranked if gives(kind, s)]

    def best(self) -> Said:
        return self.ranked[0][2]

    def at_least(self, share: float) -> list[Said]:
        """The ranked sentences scoring at least ``share`` of the best one's score, in order."""
        top = self.ranked[0][0]
        return [s for score, _share, s in self.ranked if score >= share * top]

    def near(self, n: int = 3) -> list[Said]:
        """The first ``n`` sentences among those near the best score (NEAR of it): one
        weighing less for the question says little of what was asked, whatever else it
        has that an extractor looks for."""
        return self.at_least(NEAR)[:n]

    def close_to_best(self, kind: str, n: int = 3) -> list[Said]:
        """The first ``n`` sentences giving ``kind`` among those near the best score."""
        top = self.ranked[0][0]
        return [s for score, _share, s in self.ranked if gives(kind, s) and score >= NEAR * top][:n]

    def asked_at(self, text: str) -> list[int]:
        """Where in ``text`` (character offsets) the question's words are said."""
        return [
            m.start()
            for m in re.finditer(r"[\w'’-]+", text)
            if set(analyze(m.group(0))) & self.weigher.terms
        ]

    def nearest(self, text: str, options: list[str]) -> str:
        """Of ``options`` found in ``text``, the one said nearest the question's words."""
        hits = self.asked_at(text)
        if not hits:
            return options[0]

        def distance(option: str) -> int:
            at = text.find(option)
            return min(abs(at - h) for h in hits)

        return min(options, key=distance)

    def novel(self, text: str, words: int = 5, whole_list: bool = True) -> str:
        """The phrase of ``text`` that says most that the question does not (with the whole
        list it is an item of, unless ``whole_list`` is False)."""
        return novel_phrase(text, self.weigher.terms, self.speakers, words, whole_list)


def _stale_values_down(
    ranked: list[tuple[float, int, float, Said]], sentences: list[Said]
) -> list[tuple[float, int, float, Said]]:
    """``ranked`` with a value that a correction replaced ("not 14 April as stated") counted
    down wherever else it is said: it is stale."""
    corrections = [s for s in sentences if s.claim and s.claim != s.text]
    # A value the correction states as well ("21 April 2026, not 14 April 2026": the year)
    # is no value it replaced.
    replaced = {v for s in corrections for v in replaced_in(s.text)[1] - stated_values(s.claim)}
    if not replaced:
        return ranked
    return [
        (score * SUPERSEDED if stated_values(s.claim) & replaced else score, n, sh, s)
        for score, n, sh, s in ranked
    ]


# A question that asks what held before a change ("Where did she move from?", "What did
# they use before?", "What was first chosen?") is answered by the earlier statement.
_ASKS_BEFORE = re.compile(
    r"\b(?:from|before|first|originally|initially|used to|previous(?:ly)?|earlier|old|former"
    r"|at first|replaced|switch(?:ed)?|mov(?:e|ed)|chang(?:e|ed)|revers(?:e|ed))\b",
    re.I,
)


def _changes_told(
    ranked: list[tuple[float, int, float, Said]], sentences: list[Said], asked: set[str]
) -> list[tuple[float, int, float, Said]]:
    """``ranked`` with a statement that a later change superseded ("the team chose DynamoDB"
    ... "that decision was reversed in favour of PostgreSQL", "the store moves from DynamoDB
    to PostgreSQL") counted down, and the change raised to its score: asked in the past
    ("What did the team choose?"), memory answers with what holds now. A change supersedes
    what it names as replaced (X of "from X to Y") when that was said before it (earlier in
    the same item, or on an earlier day), and, when it names nothing ("that decision was
    reversed"), the sentence just before it. A question that names what was replaced ("When
    did the team choose DynamoDB?") asks of that, not of what holds now (``asked``: the
    terms of the names it says)."""
    order = {id(s): n for n, s in enumerate(sentences)}
    scores = {id(s): (score, sh) for score, _n, sh, s in ranked}
    down: set[int] = set()
    up: dict[int, tuple[float, float]] = {}
    # Each sentence read once for the change it tells (None: it tells none).
    changes = {id(s): changed_in(s.text) for s in sentences}
    for c in sentences:
        told = changes[id(c)]
        if told is None or not told[1]:
            continue
        old, new, back = told
        old_terms = set(analyze(old)) - set(analyze(new))
        if old_terms & asked:
            continue
        for _score, _n, _sh, s in ranked:
            if s is c or changes.get(id(s)) is not None:
                continue
            earlier = (s.item is c.item and order[id(s)] < order[id(c)]) or (
                s.day is not None and c.day is not None and s.day < c.day
            )
            if not earlier:
                continue
            just_before = s.item is c.item and order[id(s)] == order[id(c)] - 1
            if asked & set(analyze(s.text)) - set(analyze(f"{c.speaker} {c.text}")):
                continue  # asked of a name only the earlier statement says
            # X said of the same thing: by the same speaker, or with other words in common
            # ("Tom lives in Glasgow" is not superseded by Nora's "I moved from Glasgow").
            terms = set(analyze(s.text))
            shared = terms & set(analyze(c.text)) - old_terms - set(analyze(new))
            said_old = (
                bool(old_terms)
                and old_terms <= terms
                and (bool(shared) or (bool(s.speaker) and s.speaker == c.speaker))
            )
            if (back and just_before) or said_old:
                down.add(id(s))
                up[id(c)] = max(up.get(id(c), (0.0, 0.0)), scores[id(s)])
    if not down:
        return ranked
    # A change that said too little of the question itself is ranked all the same.
    unranked = [
        (0.0, -order[id(c)], 0.0, c) for c in sentences if id(c) in up and id(c) not in scores
    ]
    out = []
    for score, n, sh, s in ranked + unranked:
        if id(s) in down:
            score *= SUPERSEDED
        if id(s) in up:
            # It tells what the superseded statement told, as it holds now: it answers the
            # question as well as that did.
            score, sh = max(score, up[id(s)][0]), max(sh, up[id(s)][1])
            # It answers with what holds now: what it replaced no longer holds, and the
            # rest of the sentence (why) is not the answer.
            # "That decision was reversed in favour of Y" speaks of the decision: of what
            # was decided it says Y alone.
            told = changes[id(s)]
            s.claim = told[1] if told and told[2] else changed_claim(s.text)
        out.append((score, n, sh, s))
    return out
