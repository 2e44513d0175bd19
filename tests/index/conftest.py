"""Fixtures of the index tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.precision import float32_for_the_test


@pytest.fixture
def float32_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The float32 forward pass: a text's reading in bfloat16 moves with the batch it is
    read in (tests/index/test_embedder.py bounds it), float32's by rounding only."""
    yield from float32_for_the_test(monkeypatch)
