"""Running the embedding model in a given precision within a test (float32 or bfloat16,
``kbmem.index.embedder.precision``)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator

import pytest

from kbmem.index import embedder


def use_precision(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """Run the model in ``value`` from now on (loaded again; the query cache emptied)."""
    monkeypatch.setenv("KBMEM_EMBED_PRECISION", value)
    embedder.precision.cache_clear()
    embedder.embedder_id.cache_clear()
    monkeypatch.setattr(embedder, "_model", None)
    monkeypatch.setattr(embedder, "_queries", OrderedDict())


def float32_for_the_test(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The float32 pass for one test, whatever this processor would choose; chosen again
    after it (once the environment is restored)."""
    use_precision(monkeypatch, "float32")
    yield
    embedder.precision.cache_clear()
    embedder.embedder_id.cache_clear()
