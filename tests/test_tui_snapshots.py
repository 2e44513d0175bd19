"""Snapshots of the three screens (pytest-textual-snapshot), at 120×40 with the cursor blink
off, after the same reproducible walks that make the README screenshots
(:mod:`tui.scenarios`): a real offline turn on a copy of the example knowledge base, whose
history has fixed dates; no wall-clock time or temporary path is on screen.

Update the baselines after a deliberate change with ``pytest --snapshot-update``."""

from __future__ import annotations

from typing import Any

from test_tui import indexed_kb_master, kb  # noqa: F401  (fixtures)

from kbmem.store import KnowledgeBase
from tui.scenarios import (
    SIZE,
    audit_scenario,
    chat_scenario,
    edit_glossary,
    history_scenario,
    make_app,
)


def test_chat_screen(snap_compare: Any, kb: KnowledgeBase) -> None:  # noqa: F811
    assert snap_compare(make_app(kb), terminal_size=SIZE, run_before=chat_scenario)


def test_history_screen(snap_compare: Any, kb: KnowledgeBase) -> None:  # noqa: F811
    edit_glossary(kb)
    assert snap_compare(make_app(kb), terminal_size=SIZE, run_before=history_scenario)


def test_audit_screen(snap_compare: Any, kb: KnowledgeBase) -> None:  # noqa: F811
    assert snap_compare(make_app(kb), terminal_size=SIZE, run_before=audit_scenario)
