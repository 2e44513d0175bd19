"""How the toolkit ranks whole pages for a query (``Toolkit.pages``), with real indexes: the
lists it fuses, and the sessions a query's dates point at."""

from __future__ import annotations

import pytest
from helpers.talk import memorize

from kbmem.errors import ValidationError
from kbmem.memorize.template import init_kb
from kbmem.research.toolkit import Toolkit
from kbmem.store.repository import KnowledgeBase


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


def test_the_names_every_page_holds_do_not_rank_whole_pages(tmp_path) -> None:
    """In a conversation of two, both names are on every page (each turn is indexed with its
    speaker). Asked where John travelled, the session where he says it must lead the one
    where Maria travelled and John talked more: a term every page holds says nothing about
    which page is meant. With Whoosh's weight (a floor of 1) the name counted for about a
    quarter of a rare word, and the page that held it most often came first."""
    kb = init_kb(tmp_path / "kb", with_history=False)
    sessions = {
        "s-lisbon": (
            "2026-01-12",
            [("John", "I travelled to Lisbon."), *[("Maria", "Maria here, a busy day.")] * 3],
        ),
        "s-oslo": (
            "2026-02-03",
            [
                ("Maria", "I travelled to Oslo last month with my sister for a music festival."),
                *[("John", "John here, a busy day.")] * 3,
            ],
        ),
    }
    for n in range(10):
        sessions[f"s-hello{n}"] = (f"2026-03-{n + 10}", [("Maria", "Hi John."), ("John", "Hi.")])
    memorize(kb, "pair", sessions)
    toolkit = Toolkit(kb, "pair")
    toolkit.index.sync()
    ranked = [p for p, _s in toolkit.bm25_pages("Where has John travelled?", 3)]
    assert ranked[:2] == ["s-lisbon/1", "s-oslo/1"]
