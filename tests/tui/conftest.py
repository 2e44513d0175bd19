"""Fixtures of the terminal UI's tests."""

from __future__ import annotations

import pytest

from kbmem.store.repository import KnowledgeBase


@pytest.fixture
def kb(example_kb: KnowledgeBase) -> KnowledgeBase:
    """A private copy of the example knowledge base, indexed (see tests/conftest.py)."""
    return example_kb
