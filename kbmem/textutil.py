"""Small text helpers shared by the memorizer, the indexes, the researcher and the CLI."""

from __future__ import annotations

import json
import re
from itertools import pairwise
from typing import IO, Literal, Protocol

_TOKEN = re.compile(r"\w+|[^\w\s]")
# A citation of a page's lines, "[page-id:L3-L4]" (brackets optional, as models write it).
CITATION = re.compile(r"\[?([A-Za-z0-9][A-Za-z0-9._/-]*):L(\d+)-L(\d+)\]?")
# Capital letters of every alphabet (Latin, Greek, Cyrillic, Armenian, Georgian, Coptic,
# Glagolitic, fullwidth…), as a regex character class: names are "Tromsø", "Åsa" and "Ōsaka"
# too, and an ASCII class cut "Tromsø" to "Troms". (The ranges hold every upper- and
# title-case letter of the Basic Multilingual Plane but the circled ones, Ⓐ; scanning all of
# the plane would cost 13 ms at import.)
_CASED_RANGES = ((0, 0x2200), (0x2C00, 0x2D30), (0xA640, 0xA800), (0xFF21, 0xFF3B))
CAPITAL = "[{}]".format(
    "".join(
        re.escape(c)
        for lo, hi in _CASED_RANGES
        for c in map(chr, range(lo, hi))
        if c.isupper() or c.istitle()
    )
)

# -- sentences ------------------------------------------------------------------------------
# The one sentence splitter (split_sentences, sentence_spans) cuts in one of three ways, named
# by SentenceCut; each caller's cut is the one its results were built and measured with.
# "sentences": after a sentence's closing ., ! or ? and the space after it. What a note's
# paragraph is cut at for its vectors, so that the line naming its section stays with the
# first sentence.
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")
# "pieces": at line breaks too, so that an image's caption line or a list item is a piece of
# its own. What turns are embedded, memoed and quoted as key facts by.
PIECE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")
# "prose": what a reader takes for sentences, for the offline agent's quotes: wrapped lines
# joined, each list item a sentence of its own, and a cut only where the next sentence starts
# with a capital, a digit, or an opening quote, bracket or markdown emphasis ("e.g. this" is
# kept whole; "… the dashboard. **Maya Lindqvist**, Head of Engineering." is cut). An initial
# ("George R. R. Martin", "J.K. Rowling") or a title before a name ("Dr. Seuss") ends no
# sentence, though a capital follows it; "I" is a word of its own ("So do I. Then …").
_NOT_AN_INITIAL = r"(?<!\b[A-HJ-Z]\.)(?<!\b(?:Mr|Ms|Dr|St)\.)(?<!\bMrs\.)(?<!\bProf\.)"
_PROSE_BREAK = re.compile(
    rf"(?<=[.!?]){_NOT_AN_INITIAL}\s+(?=(?:[\"“(\[]|\*{{1,2}}|_{{1,2}})?(?:{CAPITAL}|[0-9]))"
)
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
# Between the clauses of a long summary sentence ("Actions: facts page, Priya; offsite details,
# Dara; …").
CLAUSE_BREAK = re.compile(r"(?<=;)\s+")

SentenceCut = Literal["sentences", "pieces", "prose"]
_BREAKS = {"sentences": SENTENCE_BREAK, "pieces": PIECE_BREAK}


def sentence_spans(text: str, *, cut: Literal["sentences", "pieces"]) -> list[tuple[int, int]]:
    """Where the sentences of ``text`` are, as ``(start, end)`` offsets, cut as ``cut`` says
    (see SentenceCut); the text between two breaks exactly, blank ones left out. (Prose
    joins lines, so its sentences are not spans of the text.)"""
    breaks = [(0, 0), *((m.start(), m.end()) for m in _BREAKS[cut].finditer(text))]
    breaks.append((len(text), len(text)))
    return [(a, b) for (_, a), (b, _) in pairwise(breaks) if text[a:b].strip()]


def split_sentences(text: str, *, cut: SentenceCut) -> list[str]:
    """The sentences of ``text``, stripped, blank ones left out, cut as ``cut`` says (see
    SentenceCut)."""
    if cut != "prose":
        return [text[a:b].strip() for a, b in sentence_spans(text, cut=cut)]
    chunks: list[str] = []
    for line in text.split("\n"):
        if not line.strip():
            continue
        if chunks and not _LIST_MARK.match(line):
            chunks[-1] += " " + line.strip()
        else:
            chunks.append(_LIST_MARK.sub("", line).strip())
    return [s.strip() for chunk in chunks for s in _PROSE_BREAK.split(chunk) if s.strip()]


# -- terminals ------------------------------------------------------------------------------
# What a terminal acts on rather than shows: C0 controls but newline and tab (and a CR that
# ends a line, as in a file with Windows line ends: a lone CR lets text overwrite its line),
# DEL, C1 controls (U+009B is CSI to some terminals), and the bidi embeddings, overrides and
# isolates that reorder what is shown after them.
_UNPRINTABLE = re.compile(
    r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]|\r(?!\n)"
)
# The same characters in JSON text: json.dumps escapes C0 controls itself, not the others.
_JSON_UNSAFE = re.compile(r"[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# Half a UTF-16 pair: JSON's escapes ("\\ud800") and bytes that are not UTF-8 (Python keeps
# them as U+DC80-U+DCFF in command-line arguments and file names) arrive as such, and no file,
# git commit or tokenizer can take one.
SURROGATE = re.compile("[\ud800-\udfff]")


def unstorable_field(value: object, field: str) -> str | None:
    """The first place in ``value`` (text, or lists and mappings of it, keys included) that
    holds a lone surrogate (see ``SURROGATE``), named from ``field`` (``turns[0].content``;
    a mapping, for a key); None when every text in it can be stored."""
    stack: list[tuple[object, str]] = [(value, field)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if SURROGATE.search(item):
                return where
        elif isinstance(item, dict):
            keys = [(k, where) for k in item]  # first: a name below must hold no surrogate
            values = [(v, f"{where}.{k}" if where else str(k)) for k, v in item.items()]
            stack.extend(reversed(keys + values))
        elif isinstance(item, list | tuple):
            stack.extend(reversed([(v, f"{where}[{i}]") for i, v in enumerate(item)]))
    return None


def count_tokens(text: str) -> int:
    """A model-free token count (words and punctuation), close to what LLM tokenizers give
    for English prose; one function so that every budget and benchmark counts alike."""
    return len(_TOKEN.findall(text))


def truncate_tokens(text: str, limit: int) -> str:
    """Cut ``text`` after ``limit`` tokens, deterministically, at a token boundary."""
    if limit <= 0:
        return ""
    for count, match in enumerate(_TOKEN.finditer(text), start=1):
        if count > limit:
            return text[: match.start()].rstrip() + " …"
    return text


def slug(text: str, max_len: int = 48) -> str:
    s = re.sub(r"[^A-Za-z0-9]+", "-", text.lower()).strip("-")
    return s[:max_len].strip("-") or "untitled"


def printable(text: str) -> str:
    """``text`` safe to write to a terminal: control characters but newline, tab and CRLF, DEL and
    the bidi embedding, override and isolate characters become visible escapes (ESC is shown
    as the four characters ``\\x1b``, U+202E as ``\\u202e``); all else, accents, CJK and emoji
    among it, is kept as it is."""
    return _UNPRINTABLE.sub(_escape, text)


class PrintableStream:
    """Text that arrives in pieces (a streamed answer), written made printable as it comes,
    so that what is written equals ``printable`` of the pieces joined: a CR that ends a piece
    is held back until the next piece says whether an LF follows it (CRLF, kept) or not (a
    lone CR, escaped). Call :meth:`end` when the text is complete."""

    def __init__(self, out: IO[str]):
        self.out = out
        self._held = ""

    def write(self, piece: str) -> None:
        text = self._held + piece
        self._held = "\r" if text.endswith("\r") else ""
        text = text[: len(text) - len(self._held)]
        if text:
            self.out.write(printable(text))
            self.out.flush()

    def end(self) -> None:
        """The text is complete: a CR still held is a lone one."""
        if self._held:
            self.out.write(printable(self._held))
            self._held = ""
            self.out.flush()


class TextStream(Protocol):
    """Where streamed text goes: written piece by piece, then ended."""

    def write(self, piece: str) -> None: ...

    def end(self) -> None: ...


# What a backslash keeps literal in Markdown (CommonMark: any ASCII punctuation character).
_MARKDOWN_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_FENCE_CLOSE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")


class MarkdownTextStream:
    """Markdown that arrives in pieces (a streamed answer), passed on to ``out`` as the plain
    text a reader of the rendered Markdown sees: a backslash escape (``\\*``, ``\\_``,
    ``\\[``) becomes the character it keeps literal, as in :func:`markdown_text`. Code spans
    (on one line) and fenced code blocks, where a backslash is itself, stay as written, and so
    does all other markup. Text is passed on as soon as it is decided: a backslash that ends
    a piece, a backtick run not closed yet, and a line that may open a fence wait for what
    follows. Call :meth:`end` when the text is complete."""

    def __init__(self, out: TextStream):
        self.out = out
        self._line = ""  # the current line, as far as it has come
        self._done = 0  # how much of it is passed on
        self._fence = ""  # the backticks or tildes that opened the code block we are in

    def write(self, piece: str) -> None:
        self._line += piece
        while (newline := self._line.find("\n", self._done)) >= 0:
            line, self._line = self._line[: newline + 1], self._line[newline + 1 :]
            self._finish(line)
        if self._fence:
            self._pass(self._line[self._done :], len(self._line))
        elif not _may_open_fence(self._line):
            self._pass(*_unescape(self._line, self._done, final=False))

    def end(self) -> None:
        """The text is complete: what waits is decided (a backslash at the end is one).
        The stream may then take another text, from the start of a line outside any block."""
        if self._line:
            self._finish(self._line)
            self._line = ""
        self._fence = ""
        self.out.end()

    def _finish(self, line: str) -> None:
        """Pass on the rest of a whole line (its newline included, if it has one)."""
        body = line.rstrip("\r\n")
        if self._fence:
            self._pass(line[self._done :], len(line))
            closing = _FENCE_CLOSE.fullmatch(body)
            if closing and closing[1][0] == self._fence[0] and len(closing[1]) >= len(self._fence):
                self._fence = ""
        elif opening := _fence_opening(body):
            self._pass(line[self._done :], len(line))
            self._fence = opening
        else:
            self._pass(*_unescape(line, self._done, final=True))
        self._done = 0

    def _pass(self, text: str, done: int) -> None:
        self._done = done
        if text:
            self.out.write(text)


def _fence_opening(line: str) -> str:
    """The backticks or tildes that open a fenced code block on ``line``, or ""."""
    found = _FENCE_OPEN.fullmatch(line)
    if not found or (found[1][0] == "`" and "`" in found[2]):
        return ""
    return found[1]


def _may_open_fence(partial: str) -> bool:
    """Whether a line that has come as far as ``partial`` may turn out to open a fence."""
    rest = partial.lstrip(" ")
    return len(partial) - len(rest) <= 3 and any(f.startswith(rest[:3]) for f in ("```", "~~~"))


def _unescape(line: str, start: int, final: bool) -> tuple[str, int]:
    """``line`` from ``start`` without its backslash escapes, code spans kept as written:
    ``(text, where it stops)``. Unless ``final`` (the line is whole), it stops where what
    follows may still change the reading: at a backslash that ends it, and at a backtick run
    that reaches its end or that no run of the same length closes yet."""
    out = []
    i, n = start, len(line)
    while i < n:
        char = line[i]
        if char == "\\":
            if i + 1 < n:
                escaped = line[i + 1] in _MARKDOWN_PUNCTUATION
                out.append(line[i + 1] if escaped else char)
                i += 2 if escaped else 1
                continue
            if not final:
                break
        elif char == "`":
            end = i
            while end < n and line[end] == "`":
                end += 1
            close = _closing_run(line, end, end - i, final)
            if close < 0 and not final:
                break  # the run may grow, or a closing run may come
            stop = close if close >= 0 else end  # a code span whole, or literal backticks
            out.append(line[i:stop])
            i = stop
            continue
        out.append(char)
        i += 1
    return "".join(out), i


def _closing_run(line: str, start: int, length: int, final: bool) -> int:
    """Where the code span that a run of ``length`` backticks opens before ``start`` ends
    (just after the next run of exactly that many backticks), or -1 when no run closes it
    (unless ``final``: none yet, or only one that reaches the end and may grow)."""
    i, n = start, len(line)
    while i < n:
        if line[i] != "`":
            i += 1
            continue
        end = i
        while end < n and line[end] == "`":
            end += 1
        if end == n and not final:
            return -1
        if end - i == length:
            return end
        i = end
    return -1


class _Collected:
    """A :class:`TextStream` that keeps what it is given."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, piece: str) -> None:
        self.parts.append(piece)

    def end(self) -> None:
        pass


def markdown_text(text: str) -> str:
    """Markdown as plain text: without the backslash escapes that keep characters literal
    (``\\*`` is ``*``); code spans and fenced code blocks as written, all else unchanged.
    For the plain-text outputs of what is stored and rendered as Markdown (an answer)."""
    collected = _Collected()
    stream = MarkdownTextStream(collected)
    stream.write(text)
    stream.end()
    return "".join(collected.parts)


def _escape(match: re.Match[str]) -> str:
    # Python's escape notation, not U+FFFD: an auditor can read which character it was.
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def json_text(value: object, indent: int | None = None) -> str:
    """``value`` as JSON that is safe to write to a terminal and still exact: non-ASCII text
    stays readable, and what a terminal would act on is written as a ``\\uXXXX`` escape (in
    JSON text such characters occur only inside strings, where the escape means the same)."""
    text = json.dumps(value, ensure_ascii=False, indent=indent)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
