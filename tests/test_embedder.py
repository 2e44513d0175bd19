"""The embedder runs all-MiniLM-L6-v2 with plain torch: its vectors are the ones
``sentence-transformers`` computes for the same model, and loading it never imports
``sentence-transformers`` or ``transformers`` (whose imports cost seconds on every start)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from kbmem import embedder
from kbmem.store import TEMPLATE_DIR

ROOT = Path(__file__).resolve().parent.parent


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
    for path in sorted((TEMPLATE_DIR / "tenants").rglob("*.md"))[:6]:
        paragraphs = path.read_text(encoding="utf-8").split("\n\n")
        texts += [p for p in paragraphs if p.strip()][:12]
    return texts


def test_vectors_match_sentence_transformers() -> None:
    from sentence_transformers import SentenceTransformer

    texts = _texts()
    assert len(texts) > 40
    ours = embedder.embed(texts, batch_size=16)  # several batches, lengths mixed
    reference = SentenceTransformer(str(embedder.model_path()), device="cpu").encode(
        texts, batch_size=16, normalize_embeddings=True, convert_to_numpy=True
    )
    assert ours.shape == (len(texts), embedder.DIM) and ours.dtype == np.float32
    assert np.abs(ours - reference).max() < 1e-5
    # Unit length, and each row belongs to its own text (the batches are sorted by length).
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(np.argmax(ours @ reference.T, axis=1), np.arange(len(texts)))
    assert embedder.embed([]).shape == (0, embedder.DIM)


def test_loading_needs_neither_sentence_transformers_nor_transformers() -> None:
    probe = (
        "import json, sys\n"
        "from kbmem import embedder\n"
        "vector = embedder.embed(['the offsite city'])\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules}"
        " & {'sentence_transformers', 'transformers', 'sklearn', 'scipy'})\n"
        "print(json.dumps({'shape': list(vector.shape), 'heavy': heavy}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"shape": [1, embedder.DIM], "heavy": []}
