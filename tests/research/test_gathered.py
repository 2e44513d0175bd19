"""A question whose answer is gathered across sessions (a list, names) draws its
evidence from more pages than one that asks one thing: each item was said once, in a
session of its own. On a real knowledge base, with the real indexes and model."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.talk import memorize

from kbmem.memorize.template import init_kb
from kbmem.research.researcher import GATHERED_PAGES, Researcher
from kbmem.store.repository import KnowledgeBase

TENANT = "acme"
DISHES = [
    "a lentil stew",
    "a plum tart",
    "a mushroom risotto",
    "a fish pie",
    "a pumpkin soup",
    "a cheese souffle",
    "a lamb curry",
    "a rhubarb crumble",
    "a bean chili",
    "a walnut bread",
    "a pea risotto",
    "a cherry pie",
]


@pytest.fixture(scope="module")
def researcher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Researcher]:
    kb: KnowledgeBase = init_kb(tmp_path_factory.mktemp("gathered") / "kb", with_history=False)
    memorize(
        kb,
        TENANT,
        {
            f"s-{n:02d}": (
                f"2026-{n + 1:02d}-03" if n < 11 else "2026-12-20",
                [
                    ("Ines", "What did you do this weekend?"),
                    ("Omar", f"I cooked {dish} for my neighbours."),
                    ("Ines", "Lucky neighbours!"),
                ],
            )
            for n, dish in enumerate(DISHES)
        },
    )
    found = Researcher(kb, TENANT)
    yield found
    found.close()


def test_a_list_question_draws_on_more_pages(researcher: Researcher) -> None:
    pages = int(researcher.kb.settings.section("research")["max_pages"])
    listed = researcher.research("What dishes has Omar cooked for his neighbours?")
    assert pages < len(listed.pages_used) <= pages * GATHERED_PAGES, listed.pages_used
    # Each page a session where one dish was said: more of them reach the briefing.
    said = [d for d in DISHES if any(d in e.excerpt for e in listed.evidence)]
    assert len(said) > pages, said


def test_a_question_of_one_thing_and_a_caller_s_limit_keep_the_page_budget(
    researcher: Researcher,
) -> None:
    pages = int(researcher.kb.settings.section("research")["max_pages"])
    one = researcher.research("Did Omar cook the lentil stew for his neighbours?")
    assert len(one.pages_used) <= pages, one.pages_used
    capped = researcher.research("What dishes has Omar cooked for his neighbours?", max_pages=3)
    assert len(capped.pages_used) <= 3, capped.pages_used
