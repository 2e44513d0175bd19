"""Checkpoints of a build's embedding, so that a build killed half-way resumes where it stopped.

Embedding is nearly all of a build's time (the Whoosh and vector-graph steps that follow take a
small fraction of it), so that is what is kept: the texts to embed are cut into chunks of a
fixed number of intervals, and each finished chunk's vectors and word pieces (quantized, as the
index stores them) are written to ``.kbmem/index/<tenant>/checkpoints/<key>.npz``, the key a
hash of the embedder and the chunk's texts. A build that finds a chunk's file reads it instead
of embedding the chunk again. The same chunks are cut whether a build resumes or not, and each
is embedded in the same calls, so a resumed build stores exactly the vectors a clean build
stores. The folder is emptied once a generation is published."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np

from kbmem.index import embedder
from kbmem.index.build_vectors import Embedded, embed
from kbmem.index.late import CODE_BYTES, QuantizedChunk
from kbmem.store.files import atomic_write

log = logging.getLogger("kbmem")

CHECKPOINT_DIR = "checkpoints"
# Intervals per checkpoint: a few seconds of embedding on a loaded machine, so that a kill loses
# little, and few enough files that a 20,000-interval build writes about fifty.
CHECKPOINT_INTERVALS = 400

Progress = Callable[[int, int], None]
# A chunk's vectors, how many each interval has, and the intervals' word pieces, quantized: as
# float32 a 1,000-interval build step held 38 MB of pieces, and a copy of them to quantize.
Quantized = tuple[np.ndarray, np.ndarray, QuantizedChunk]
# Names the checkpoints' contents: a file of another layout is never read as this one.
CHECKPOINT_LAYOUT = b"vectors, counts, quantized pieces"


def quantized(found: Embedded) -> Quantized:
    vectors, counts, pieces = found
    return vectors, counts, QuantizedChunk.of(pieces)


class EmbedCheckpoints:
    """The finished chunks of the builds of one tenant's index."""

    def __init__(self, index_dir: Path, chunk: int = CHECKPOINT_INTERVALS):
        if chunk <= 0:
            raise ValueError("a checkpoint holds at least one interval")
        self.dir = index_dir / CHECKPOINT_DIR
        self.chunk = chunk
        self.resumed = 0  # intervals read from checkpoints rather than embedded, this process

    def _key(self, texts: list[list[str]]) -> str:
        digest = hashlib.sha256(embedder.embedder_id().encode())
        digest.update(CHECKPOINT_LAYOUT)
        digest.update(json.dumps(texts, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        return digest.hexdigest()[:40]

    def _load(self, path: Path, count: int) -> Quantized | None:
        """A chunk's vectors, counts and word pieces as saved, or None when the file is
        missing or does not read back as a chunk of ``count`` intervals (then it is embedded
        again)."""
        try:
            with np.load(path, allow_pickle=False) as data:
                vectors = data["vectors"].astype(np.float32)
                counts = data["counts"].astype(np.int64)
                sizes = data["sizes"].astype(np.int64)
                codes = data["codes"]
                scales = data["scales"]
        except FileNotFoundError:
            return None
        except Exception as exc:  # a file cut short by a kill between write and rename
            log.warning("checkpoint %s does not read (%s); embedding its chunk again", path, exc)
            return None
        rows = int(sizes.sum())
        if (
            len(counts) != count
            or len(sizes) != count
            or len(vectors) != int(counts.sum())
            or codes.dtype != np.uint8
            or codes.shape != (rows, CODE_BYTES)
            or scales.dtype != np.float32
            or scales.shape != (rows,)
        ):
            return None
        return vectors, counts, QuantizedChunk(sizes, codes, scales)

    def _save(self, path: Path, found: Quantized) -> None:
        vectors, counts, pieces = found
        buf = io.BytesIO()
        np.savez(buf, vectors=vectors, counts=counts, sizes=pieces.sizes, codes=pieces.codes,
                 scales=pieces.scales)  # fmt: skip
        try:
            # Not flushed to disk: a checkpoint lost or cut short is embedded again (_load).
            atomic_write(path, buf.getvalue(), durable=False)
        except OSError as exc:  # a checkpoint is a saving of time, never a reason to fail
            log.warning("cannot write checkpoint %s (%s)", path, exc)

    def embed(
        self, texts: list[list[str]], progress: Progress | None, done: int = 0, total: int = 0
    ) -> Quantized:
        """As :func:`kbmem.index.build_vectors.embed`, chunk by chunk, each chunk read from its
        checkpoint when an earlier build finished it and saved to one when this one does;
        each chunk's word pieces are quantized as soon as it is embedded."""
        total = total or len(texts)
        if len(texts) <= self.chunk:
            # One chunk or less (a sync of a few pages): a kill could lose no more than this,
            # so no checkpoint is written for it.
            return quantized(embed(texts, progress, done, total))
        parts: list[Quantized] = []
        for start in range(0, len(texts), self.chunk):
            chunk = texts[start : start + self.chunk]
            path = self.dir / f"{self._key(chunk)}.npz"
            found = self._load(path, len(chunk))
            if found is None:
                found = quantized(embed(chunk, progress, done + start, total))
                self._save(path, found)
            else:
                self.resumed += len(chunk)
                if progress is not None:
                    progress(done + start + len(chunk), total)
            parts.append(found)
        vectors = np.vstack([p[0] for p in parts])
        counts = np.concatenate([p[1] for p in parts])
        return vectors, counts, QuantizedChunk.joined([p[2] for p in parts])

    def embed_floats(
        self, texts: list[list[str]], progress: Progress | None, done: int = 0, total: int = 0
    ) -> Embedded:
        """As ``embed``, each interval's word pieces as float vectors (an incremental sync
        writes them to a table of its own, which quantizes them to the same codes again)."""
        if len(texts) <= self.chunk:
            return embed(texts, progress, done, total or len(texts))
        vectors, counts, pieces = self.embed(texts, progress, done, total)
        return vectors, counts, pieces.pieces()

    def clear(self) -> None:
        """Forget every checkpoint: the build they served is published."""
        shutil.rmtree(self.dir, ignore_errors=True)
