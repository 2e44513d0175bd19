"""Pages on disk: YAML front matter (the decorated header) followed by the raw content.

Session pages hold turns in a stable line format, one block per turn::

    ### <turn-id> | <speaker> | <timestamp>
    <the turn's text, verbatim>
    <blank line>

A text line that would read as a turn header (or as an escaped one) gets one extra leading
backslash when written and loses it when read, so any text round-trips byte for byte.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import yaml

from kbmem.errors import PageFormatError

FRONT = "---\n"
TURN_HEADER = re.compile(r"^### (\S+) \| (.*) \| (\S*)$")
_ESCAPED = re.compile(r"^\\*### ")

# The decorated header's fields, in the order they are written.
HEADER_FIELDS = (
    "id",
    "session_id",
    "tenant_id",
    "agent_id",
    "sequence",
    "title",
    "created_at",
    "memo",
    "memo_version",
    "tags",
    "classification",
    "policy_tags",
    "origin_run_id",
    "request_intent",
    "turns",
    "header",
)
_STR_FIELDS = {
    "id",
    "session_id",
    "tenant_id",
    "agent_id",
    "title",
    "created_at",
    "memo",
    "classification",
    "origin_run_id",
    "request_intent",
    "header",
}
_LIST_FIELDS = {"tags", "policy_tags", "turns"}
_INT_FIELDS = {"sequence", "memo_version"}


@dataclass
class Turn:
    id: str
    speaker: str
    timestamp: str
    text: str


@dataclass
class Page:
    """A page: ``meta`` is the front matter, ``body`` the raw content after it."""

    meta: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    has_front_matter: bool = True
    body_line: int = 0  # 1-based line of the file where the body starts; 0 = not yet known

    @property
    def is_session_page(self) -> bool:
        return bool(self.meta.get("session_id")) and bool(self.meta.get("sequence"))

    def turns(self) -> list[Turn]:
        return parse_turns(self.body) if self.is_session_page else []

    def body_start_line(self) -> int:
        """1-based line number, in the file, of the body's first line."""
        if self.body_line:
            return self.body_line
        if not self.has_front_matter:
            return 1
        return render_front_matter(self.meta).count("\n") + 1


def escape_line(line: str) -> str:
    return "\\" + line if _ESCAPED.match(line) else line


def unescape_line(line: str) -> str:
    return line[1:] if line.startswith("\\") and _ESCAPED.match(line[1:]) is not None else line


def render_turn(turn: Turn) -> str:
    for name, value in (("id", turn.id), ("timestamp", turn.timestamp)):
        if re.search(r"\s", value) or (name == "id" and not value):
            raise PageFormatError(f"turn {name} {value!r} must be non-empty text without spaces")
    if "\n" in turn.speaker or "\r" in turn.speaker:
        raise PageFormatError(f"speaker {turn.speaker!r} must be one line")
    text = "\n".join(escape_line(line) for line in turn.text.split("\n"))
    return f"### {turn.id} | {turn.speaker} | {turn.timestamp}\n{text}\n\n"


def render_turns(turns: list[Turn]) -> str:
    return "".join(render_turn(t) for t in turns)


def turn_line_spans(body: str) -> list[tuple[int, int]]:
    """0-based (start, end) line indexes in ``body`` of each turn block, from its header to
    its last text line inclusive; the blank separator line is left out."""
    lines = body.split("\n")
    heads = [i for i, line in enumerate(lines) if TURN_HEADER.match(line)]
    spans = []
    for n, start in enumerate(heads):
        end = heads[n + 1] - 2 if n + 1 < len(heads) else len(lines) - 3
        spans.append((start, max(start, end)))
    return spans


def parse_turns(body: str) -> list[Turn]:
    """Read back the turns written by :func:`render_turns`, exactly."""
    lines = body.split("\n")
    heads = [i for i, line in enumerate(lines) if TURN_HEADER.match(line)]
    turns = []
    for n, start in enumerate(heads):
        m = TURN_HEADER.match(lines[start])
        assert m is not None
        stop = heads[n + 1] if n + 1 < len(heads) else len(lines)
        chunk = "\n".join(lines[start + 1 : stop])
        if n + 1 < len(heads):
            chunk += "\n"
        # render_turn ends every block with "\n\n"; strip exactly that.
        if chunk.endswith("\n\n"):
            chunk = chunk[:-2]
        elif chunk.endswith("\n"):
            chunk = chunk[:-1]
        text = "\n".join(unescape_line(line) for line in chunk.split("\n"))
        turns.append(Turn(id=m.group(1), speaker=m.group(2), timestamp=m.group(3), text=text))
    return turns


# libyaml's C emitter and parser when present: several times faster than pure Python.
_BaseDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Dumper(_BaseDumper):  # type: ignore[misc, valid-type]
    pass


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value and not value.endswith((" ", "\t")) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


def dump_yaml(data: Any) -> str:
    """YAML as kbmem writes it: keys in the given order, multi-line text as blocks."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def render_front_matter(meta: dict[str, Any]) -> str:
    ordered = {k: meta[k] for k in HEADER_FIELDS if k in meta}
    ordered.update({k: v for k, v in meta.items() if k not in ordered})
    return FRONT + dump_yaml(ordered) + FRONT


def render_page(page: Page) -> str:
    if not page.has_front_matter:
        return page.body
    return render_front_matter(page.meta) + page.body


def _check_meta(meta: dict[str, Any], where: str) -> None:
    for key, value in meta.items():
        if value is None:
            continue
        if key in _STR_FIELDS and isinstance(value, date):
            # People write `created_at: 2026-01-05` unquoted; YAML reads that as a date.
            meta[key] = value = value.isoformat()
        if key in _STR_FIELDS and not isinstance(value, str):
            raise PageFormatError(f"field {key!r} must be text, got {value!r}", where)
        if key in _LIST_FIELDS and not isinstance(value, list):
            raise PageFormatError(f"field {key!r} must be a list, got {value!r}", where)
        if key in _INT_FIELDS and (isinstance(value, bool) or not isinstance(value, int)):
            raise PageFormatError(f"field {key!r} must be an integer, got {value!r}", where)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """One line saying what is wrong and where, in the file's own line numbers."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        # The YAML starts on the file's second line, after the opening '---'.
        where = f"line {mark.line + 2}, column {mark.column + 1}"
        return f"{exc.problem or exc.context or 'syntax error'} at {where}"
    return " ".join(str(exc).split())


def parse_page(text: str, where: str = "page") -> Page:
    """Parse a page file. Raises :class:`PageFormatError` naming the problem when the front
    matter is present but broken; a file without front matter is a page with empty meta."""
    if not text.startswith(FRONT):
        return Page(meta={}, body=text, has_front_matter=False, body_line=1)
    end = text.find("\n---\n", len(FRONT) - 1)
    if end < 0 and text.endswith("\n---"):
        text += "\n"  # a page that is all front matter, without a final newline
        end = len(text) - len("\n---\n")
    if end < 0:
        raise PageFormatError("front matter opened with '---' is never closed", where)
    raw = text[len(FRONT) : end + 1]
    try:
        meta = yaml.load(raw, Loader=Loader)
    except yaml.YAMLError as exc:
        raise PageFormatError(
            f"front matter is not valid YAML ({_yaml_problem(exc)})", where
        ) from exc
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise PageFormatError("front matter must be a mapping of fields", where)
    _check_meta(meta, where)
    body = text[end + len("\n---\n") :]
    # Lines: the opening '---', the YAML, the closing '---'; the body starts after them.
    return Page(meta=meta, body=body, has_front_matter=True, body_line=raw.count("\n") + 3)
