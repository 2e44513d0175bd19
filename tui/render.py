"""Turning text that came from pages, tools and models into Rich text, never as markup."""

from __future__ import annotations

import re
from typing import Any

from markdown_it import MarkdownIt
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from kbmem.errors import KbmemError
from kbmem.textutil import printable

# `[page-id:L12-L18]`: what Interval.citation() writes and what answers cite.
CITATION = re.compile(r"\[([A-Za-z0-9][A-Za-z0-9._/-]*):L(\d+)-L(\d+)\]")


def safe(value: object) -> str:
    """``value`` fit for the terminal: the terminal obeys an escape sequence written to it
    (a model's answer or a page could retitle the window or clear the screen), so control
    characters are shown as escapes (ESC as ``\\x1b``), as the command line shows them."""
    return printable(str(value).replace("\r\n", "\n"))


def plain(value: object, style: str = "") -> Text:
    """``value`` as literal text (square brackets stay brackets, control characters shown)."""
    return Text(safe(value), style=style, end="")


def markdown_parser() -> MarkdownIt:
    """Markdown as models and pages write it, HTML shown as the text it is: Textual drops the
    tags it does not render, so an answer's ``tenants/<tenant>/pages`` read
    ``tenants//pages`` and ``<!-- a comment -->`` vanished."""
    return MarkdownIt("gfm-like", {"html": False})


def one_line(value: object, limit: int = 0) -> str:
    """Whitespace collapsed to single spaces, cut to ``limit`` characters with an ellipsis;
    control characters shown as escapes (see :func:`safe`)."""
    text = " ".join(safe(value).split())
    if limit and len(text) > limit:
        return text[: limit - 1] + "…"
    return text


def error_text(exc: BaseException) -> str:
    """What a toast says about a failure: kbmem's own message, or the type and message."""
    if isinstance(exc, KbmemError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def short_sha(sha: str | None) -> str:
    return (sha or "")[:7]


def at_commit(commit: str | None, length: int = 10) -> str:
    """The commit a citation was read at, written as one token (``@e20070406a``, like the
    chat's sources and the status bar); ``@HEAD`` when none is known."""
    return f"@{commit[:length]}" if commit else "@HEAD"


def short_date(iso: str) -> str:
    """``2026-03-20T14:35:00+00:00`` → ``2026-03-20 14:35``."""
    return iso[:16].replace("T", " ") if iso else ""


class DiffText:
    """A unified diff, coloured by line kind. A line too long for the width wraps under its own
    text, and every row it takes keeps its marker and colour: a wrapped row of an added or
    removed line must not read as context."""

    def __init__(self, diff: str):
        self.lines = safe(diff).splitlines()

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not "".join(self.lines).strip():
            yield Text("The two versions are identical.", style="italic", end="")
            return
        width = max(2, options.max_width)
        for line in self.lines:
            style = _diff_style(line)
            if line.startswith(("+++", "---", "@@")):
                yield Text(line, style=style, overflow="fold")
                continue
            marker, body = line[:1], line[1:]
            rows = Text(body, style=style).wrap(console, width - 1, overflow="fold")
            for row in rows:
                yield Text.assemble((marker, style), row)


def _diff_style(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "bold"
    if line.startswith("@@"):
        return "cyan"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    return ""


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` (a final newline ends the last line; it starts no other)."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines = lines[:-1]
    return lines


def numbered(lines: list[str], first: int, width: int) -> Table:
    """``lines`` with right-aligned line numbers starting at ``first``; a long line wraps
    inside its column, under its own text rather than under the numbers."""
    table = Table.grid(padding=(0, 1), expand=True)
    table.add_column(justify="right", width=width, style="dim", no_wrap=True)
    table.add_column(width=1, style="dim")
    table.add_column(ratio=1, overflow="fold")
    for n, line in enumerate(lines, start=first):
        table.add_row(str(n), "│", plain(line))
    return table


def value_text(value: Any) -> str:
    """A front-matter value on one line (lists joined with commas)."""
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    if value is None:
        return ""
    return str(value)


def progress_text(done: int, total: int, elapsed: float) -> str:
    """An index build's progress: ``done/total`` intervals and, once some are done, the time
    left at the rate so far (the rate includes loading the embedding model, so the first
    estimate errs long)."""
    if not total:
        return "reading the pages, loading the embedding model…"
    text = f"{done:,}/{total:,} intervals"
    if 0 < done < total:
        text += f" · about {duration_text(elapsed * (total - done) / done)} left"
    elif done >= total:
        text += " · saving"
    return text


def duration_text(seconds: float) -> str:
    """``seconds`` as a person reads a wait: "7 s", "3 min", "2 h 5 min" (rounded up)."""
    whole = max(1, int(seconds + 0.999))
    if whole < 60:
        return f"{whole} s"
    minutes = (whole + 59) // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"
