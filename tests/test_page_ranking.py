"""How the toolkit ranks whole pages for a query (``Toolkit.pages``), with real indexes: the
lists it fuses, and the sessions a query's dates point at."""

from __future__ import annotations

import pytest
from talk import memorize

from kbmem.errors import ValidationError
from kbmem.store import KnowledgeBase
from kbmem.template import init_kb
from kbmem.toolkit import Toolkit


@pytest.fixture(scope="module")
def harbour(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeBase:
    """Three crane meetings on three days; the one in March says the most about cranes."""
    kb = init_kb(tmp_path_factory.mktemp("ranking") / "kb", with_history=False)
    meetings = {
        "s-jan": ("2026-01-12", [("Ann", "The crane needs a new hose."), ("Bob", "Noted.")]),
        "s-feb": ("2026-02-03", [("Ann", "Crane inspection went fine."), ("Bob", "Good.")]),
        "s-mar": (
            "2026-03-09",
            [
                ("Ann", "The crane, the crane boom and the crane cab all need work."),
                ("Bob", "Crane repairs first, then the crane paint."),
            ],
        ),
    }
    memorize(kb, "acme", meetings)
    return kb


def test_a_query_that_names_a_date_puts_the_sessions_held_then_first(
    harbour: KnowledgeBase,
) -> None:
    toolkit = Toolkit(harbour, "acme")
    assert toolkit.pages("What about the crane?", "bm25", 3)[0] == "s-mar/1"
    for tool in ("bm25", "dense", "hybrid"):
        assert (
            toolkit.pages("What did Ann say about the crane on 3 February, 2026?", tool, 3)[0]
            == "s-feb/1"
        ), tool
        assert toolkit.pages("the crane in January 2026", tool, 3)[0] == "s-jan/1", tool
    assert toolkit.sessions_held("the crane on 2026-02-04") == {"s-feb"}  # a day's slack
    assert toolkit.sessions_held("the crane on 20 May, 2026") == set()
    assert toolkit.sessions_held("What about the crane?") == set()
    # The page lists say why: a dated list only when the query names a date.
    assert "dated" not in toolkit.page_lists("What about the crane?")
    assert toolkit.page_lists("the crane in March 2026")["dated"] == ["s-mar/1"]


def test_page_lists_and_pages_refuse_unknown_tools(harbour: KnowledgeBase) -> None:
    toolkit = Toolkit(harbour, "acme")
    with pytest.raises(ValidationError, match="unknown tool"):
        toolkit.pages("crane", "grep", 3)
    with pytest.raises(ValidationError, match="unknown tool"):
        toolkit.page_lists("crane", "grep")
