"""Snapshots of the three screens (pytest-textual-snapshot), at 120×40 (and the Chat screen at
80×24, where the screens take their narrow layouts) with the cursor blink off, after the same
reproducible walks that make the README screenshots (:mod:`tui.scenarios`): a real offline
turn on a copy of the example knowledge base, whose history has fixed dates; no wall-clock
time or temporary path is on screen.

Update the baselines after a deliberate change with ``pytest --snapshot-update``.

A mismatch fails with the screen's text, line by line, against the snapshot's: the HTML
report that pytest-textual-snapshot writes stays on the machine that ran the tests, and CI
shows only what the tests print."""

from __future__ import annotations

import difflib
import html
import pickle
import re
from collections.abc import Callable
from typing import Any

import pytest
from kbmem_tui.scenarios import (
    SIZE,
    audit_scenario,
    chat_scenario,
    edit_glossary,
    history_scenario,
    make_app,
)
from pytest_textual_snapshot import node_to_report_path

from kbmem.store.repository import KnowledgeBase

NARROW = (80, 24)  # a terminal's default size
_SVG_TEXT = re.compile(r'<text class="[^"]*" x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>')


def screen_text(svg: str) -> list[str]:
    """The characters of a Textual SVG screenshot, one string per screen row."""
    rows: dict[float, list[tuple[float, str]]] = {}
    for match in _SVG_TEXT.finditer(svg):
        x, y, text = float(match[1]), float(match[2]), html.unescape(match[3])
        rows.setdefault(y, []).append((x, text))
    return ["".join(t for _x, t in sorted(rows[y])).replace("\xa0", " ") for y in sorted(rows)]


def _svg_diff(expected: str, actual: str, most: int = 40) -> list[str]:
    unique = re.compile(r"terminal-\d+-")
    lines = difflib.unified_diff(
        unique.sub("terminal-", expected).splitlines(),
        unique.sub("terminal-", actual).splitlines(),
        lineterm="",
        n=0,
    )
    return [line[:200] for line in lines][:most]


def test_screen_text_reads_rows_in_order() -> None:
    svg = (
        '<text class="r1" x="24.4" y="44.4" textLength="12">b&#160;</text>'
        '<text class="r2" x="0" y="44.4" textLength="12">a</text>'
        '<text class="r1" x="0" y="20" textLength="12">top&amp;</text>'
    )
    assert screen_text(svg) == ["top&", "ab "]


@pytest.fixture
def compare(snap_compare: Any, request: pytest.FixtureRequest) -> Callable[..., None]:
    """snap_compare, failing with a text diff of the two screens."""

    def check(app: Any, **kwargs: Any) -> None:
        if snap_compare(app, **kwargs):
            return
        data = pickle.loads(node_to_report_path(request.node).read_bytes())
        expected, actual = str(data[1]), str(data[2])
        diff = list(
            difflib.unified_diff(
                screen_text(expected), screen_text(actual), "snapshot", "this run", lineterm=""
            )
        )
        if not diff:  # the same characters in other colours or styles
            diff = ["the same characters; the SVG differs in:", *_svg_diff(expected, actual)]
        pytest.fail("the screen differs from its snapshot:\n" + "\n".join(diff), pytrace=False)

    return check


def test_chat_screen(compare: Callable[..., None], kb: KnowledgeBase) -> None:
    compare(make_app(kb), terminal_size=SIZE, run_before=chat_scenario)


def test_history_screen(compare: Callable[..., None], kb: KnowledgeBase) -> None:
    edit_glossary(kb)
    compare(make_app(kb), terminal_size=SIZE, run_before=history_scenario)


def test_audit_screen(compare: Callable[..., None], kb: KnowledgeBase) -> None:
    compare(make_app(kb), terminal_size=SIZE, run_before=audit_scenario)


def test_chat_screen_narrow(compare: Callable[..., None], kb: KnowledgeBase) -> None:
    compare(make_app(kb), terminal_size=NARROW, run_before=chat_scenario)
