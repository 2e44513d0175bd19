"""Turning text that came from pages, tools and models into Rich text, never as markup."""

from __future__ import annotations

import re
from typing import Any

from rich.table import Table
from rich.text import Text

from kbmem.errors import KbmemError

# `[page-id:L12-L18]`: what Interval.citation() writes and what answers cite.
CITATION = re.compile(r"\[([A-Za-z0-9][A-Za-z0-9._/-]*):L(\d+)-L(\d+)\]")


def plain(value: object, style: str = "") -> Text:
    """``value`` as literal text (square brackets stay brackets)."""
    return Text(str(value), style=style, end="")


def one_line(value: object, limit: int = 0) -> str:
    """Whitespace collapsed to single spaces, cut to ``limit`` characters with an ellipsis."""
    text = " ".join(str(value).split())
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


def short_date(iso: str) -> str:
    """``2026-03-20T14:35:00+00:00`` → ``2026-03-20 14:35``."""
    return iso[:16].replace("T", " ") if iso else ""


def diff_text(diff: str) -> Text:
    """A unified diff, coloured by line kind."""
    out = Text(end="")
    if not diff.strip():
        return Text("The two versions are identical.", style="italic", end="")
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("@@"):
            style = "cyan"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        else:
            style = ""
        out.append(line + "\n", style=style)
    out.rstrip()
    return out


def numbered(lines: list[str], first: int, width: int) -> Table:
    """``lines`` with right-aligned line numbers starting at ``first``; a long line wraps
    inside its column, under its own text rather than under the numbers."""
    table = Table.grid(padding=(0, 1), expand=True)
    table.add_column(justify="right", width=width, style="dim", no_wrap=True)
    table.add_column(width=1, style="dim")
    table.add_column(ratio=1, overflow="fold")
    for n, line in enumerate(lines, start=first):
        table.add_row(str(n), "│", Text(line, end=""))
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
