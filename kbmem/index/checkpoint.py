"""Checkpoints of a build's embedding, so that a build killed half-way resumes where it stopped.

Embedding is nearly all of a build's time (the Whoosh and vector-graph steps that follow take a
small fraction of it), so that is what is kept: the texts to embed are cut into chunks of a
fixed number of intervals, and each finished chunk's vectors and word pieces are written to
``.kbmem/index/<tenant>/checkpoints/<key>.npz``, the key a hash of the embedder and the chunk's
texts. A build that finds a chunk's file reads it instead of embedding the chunk again. The
same chunks are cut whether a build resumes or not, and each is embedded in the same calls, so
a resumed build stores exactly the vectors a clean build stores. The folder is emptied once a
generation is published."""

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
from kbmem.store.files import atomic_write

log = logging.getLogger("kbmem")

CHECKPOINT_DIR = "checkpoints"
# Intervals per checkpoint: a few seconds of embedding on a loaded machine, so that a kill loses
# little, and few enough files that a 20,000-interval build writes about fifty.
CHECKPOINT_INTERVALS = 400

Progress = Callable[[int, int], None]


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
        digest.update(json.dumps(texts, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        return digest.hexdigest()[:40]

    def _load(self, path: Path, count: int) -> Embedded | None:
        """A chunk's vectors, counts and word pieces as saved, or None when the file is
        missing or does not read back as a chunk of ``count`` intervals (then it is embedded
        again)."""
        try:
            with np.load(path, allow_pickle=False) as data:
                vectors = data["vectors"].astype(np.float32)
                counts = data["counts"].astype(np.int64)
                flat = data["pieces"]
                lengths = data["lengths"].astype(np.int64)
        except FileNotFoundError:
            return None
        except Exception as exc:  # a file cut short by a kill between write and rename
            log.warning("checkpoint %s does not read (%s); embedding its chunk again", path, exc)
            return None
        if len(counts) != count or len(lengths) != count or len(vectors) != int(counts.sum()):
            return None
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        pieces = [flat[bounds[n] : bounds[n + 1]] for n in range(count)]
        return vectors, counts, pieces

    def _save(self, path: Path, found: Embedded) -> None:
        vectors, counts, pieces = found
        lengths = np.array([len(p) for p in pieces], dtype=np.int64)
        flat = np.concatenate(pieces) if pieces else np.zeros((0, embedder.DIM), np.float16)
        buf = io.BytesIO()
        np.savez(buf, vectors=vectors, counts=counts, pieces=flat, lengths=lengths)
        try:
            # Not flushed to disk: a checkpoint lost or cut short is embedded again (_load).
            atomic_write(path, buf.getvalue(), durable=False)
        except OSError as exc:  # a checkpoint is a saving of time, never a reason to fail
            log.warning("cannot write checkpoint %s (%s)", path, exc)

    def embed(
        self, texts: list[list[str]], progress: Progress | None, done: int = 0, total: int = 0
    ) -> Embedded:
        """As :func:`kbmem.index.build_vectors.embed`, chunk by chunk, each chunk read from its
        checkpoint when an earlier build finished it and saved to one when this one does."""
        total = total or len(texts)
        if len(texts) <= self.chunk:
            # One chunk or less (a sync of a few pages): a kill could lose no more than this,
            # so no checkpoint is written for it.
            return embed(texts, progress, done, total)
        parts: list[Embedded] = []
        for start in range(0, len(texts), self.chunk):
            chunk = texts[start : start + self.chunk]
            path = self.dir / f"{self._key(chunk)}.npz"
            found = self._load(path, len(chunk))
            if found is None:
                found = embed(chunk, progress, done + start, total)
                self._save(path, found)
            else:
                self.resumed += len(chunk)
                if progress is not None:
                    progress(done + start + len(chunk), total)
            parts.append(found)
        if not parts:
            return embed([], progress, done, total)
        vectors = np.vstack([p[0] for p in parts])
        counts = np.concatenate([p[1] for p in parts])
        pieces = [piece for p in parts for piece in p[2]]
        return vectors, counts, pieces

    def clear(self) -> None:
        """Forget every checkpoint: the build they served is published."""
        shutil.rmtree(self.dir, ignore_errors=True)
