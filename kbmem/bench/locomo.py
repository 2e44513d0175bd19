"""LoCoMo data for the benchmarks: questions, evidence, and ingest into a knowledge base.

Only the turns and their dates are ingested; the dataset's summaries, observations and event
annotations are answer keys and are never read."""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbmem.errors import ValidationError
from kbmem.memorize import memo, memorizer, sessions, template
from kbmem.memorize.memorizer import IngestResult, ingest_session
from kbmem.memorize.sessions import Session, is_locomo, load_document, sessions_from_locomo
from kbmem.memorize.template import init_kb
from kbmem.store import pages, pagestore
from kbmem.store.repository import KnowledgeBase
from kbmem.textutil import slug

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_DIA = re.compile(r"^D(\d+):(\d+)$")


@dataclass
class Question:
    tenant: str
    text: str
    answer: str
    category: int
    evidence: list[str]  # turn ids ("D3:7")
    sessions: set[str] = field(default_factory=set)  # kbmem session ids

    @property
    def category_name(self) -> str:
        return CATEGORIES.get(self.category, str(self.category))


def parse_evidence(raw: list[object] | str) -> list[str]:
    """Evidence ids; entries holding several ids are split, malformed ones skipped."""
    out = []
    for entry in [raw] if isinstance(raw, str) else raw or []:
        for part in re.split(r"[;,\s]+", str(entry)):
            if _DIA.match(part.strip()):
                out.append(part.strip())
    return out


def conversation_files(data_dir: Path) -> list[Path]:
    files = sorted(Path(data_dir).glob("*.json"))
    if not files:
        raise ValidationError(f"no LoCoMo .json files in {data_dir}", "--data")
    return files


def tenant_for(path: Path) -> str:
    return slug(path.stem, 60)


def load_conversation(path: Path) -> dict[str, Any]:
    """One LoCoMo file, refused with an error naming it when it is not a conversation."""
    data = load_document(path)
    if not is_locomo(data):
        raise ValidationError(
            "is not a LoCoMo conversation (a JSON object with session_1, session_2, ...)",
            str(path),
        )
    conversation: dict[str, Any] = data
    return conversation


def load_questions(path: Path) -> list[Question]:
    return questions_in(load_conversation(path), path)


def questions_in(data: dict[str, Any], path: Path) -> list[Question]:
    """The scored questions of one conversation read from ``path`` (category 5 and those
    without usable evidence left out); a malformed entry is refused, named by ``qa[N]``."""
    tenant = tenant_for(path)
    qas = data.get("qa", [])
    if not isinstance(qas, list):
        raise ValidationError("must be a list of questions", f"{path}: qa")
    out = []
    for n, qa in enumerate(qas):
        where = f"{path}: qa[{n}]"
        if not isinstance(qa, dict) or not isinstance(qa.get("question"), str):
            raise ValidationError("must be an object with a question", where)
        try:
            category = int(qa.get("category", 0))
        except (TypeError, ValueError) as exc:
            raise ValidationError("category must be a number", where) from exc
        if category == 5:
            continue
        evidence = parse_evidence(qa.get("evidence", []))
        if not evidence:
            continue
        sessions = {f"{tenant}-s{_DIA.match(e).group(1)}" for e in evidence}  # type: ignore[union-attr]
        out.append(
            Question(
                tenant, qa["question"], str(qa.get("answer", "")), category, evidence, sessions
            )
        )
    return out


def locomo_sessions(data_dir: Path) -> list[Session]:
    """The sessions of every LoCoMo file in ``data_dir``, each file read once and checked
    whole (its turns and its questions) before anything is built: a malformed file is refused
    with its name, not after minutes of ingesting the others."""
    sessions: list[Session] = []
    for path in conversation_files(data_dir):
        data = load_conversation(path)
        questions_in(data, path)
        try:
            sessions += sessions_from_locomo(data, tenant_for(path), path.stem)
        except ValidationError as exc:
            raise ValidationError(f"{path}: {exc}") from exc
    return sessions


@dataclass
class IngestRun:
    kb: KnowledgeBase
    results: list[IngestResult]
    seconds: float
    turns: int


def ingest_locomo(data_dir: Path, target: Path, sessions: list[Session] | None = None) -> IngestRun:
    """A fresh knowledge base at ``target`` (settings from kb_template, no example history)
    holding every LoCoMo file in ``data_dir`` (or its ``sessions``, already read), one tenant
    per conversation."""
    sessions = locomo_sessions(data_dir) if sessions is None else sessions
    kb = init_kb(target, with_history=False)
    started = time.perf_counter()
    results = [ingest_session(kb, s) for s in sessions]
    seconds = time.perf_counter() - started
    return IngestRun(kb, results, seconds, sum(len(s.turns) for s in sessions))


STAMP = "locomo-data.sha256"  # beside a kept knowledge base: what it was built from


# The code that turns sessions into pages: a kept knowledge base built by other code is stale.
MEMORIZING = (sessions, memorizer, pages, pagestore, memo, template)


def data_fingerprint(data_dir: Path) -> str:
    """What a kept knowledge base was built from: the LoCoMo files (names and bytes) and the
    source of the code that memorized them."""
    digest = hashlib.sha256()
    for module in MEMORIZING:
        digest.update(Path(str(module.__file__)).read_bytes())
    for path in conversation_files(data_dir):
        digest.update(f"{path.name}\n".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@dataclass
class LocomoKB:
    kb: KnowledgeBase
    ingest_seconds: float | None  # None: an earlier run's knowledge base, reused


@contextmanager
def locomo_kb(data_dir: Path, keep: Path | None = None) -> Iterator[LocomoKB]:
    """A knowledge base holding every LoCoMo file in ``data_dir``. Without ``keep``, built in
    a temporary folder and removed afterwards. With it, built in ``keep/kb`` and kept, and
    reused by later runs on the same files (ingesting and indexing LoCoMo takes minutes; the
    questions, a minute or two). A folder built from other files, by other memorizer code,
    or by a run that was cut short, is refused rather than reused or overwritten."""
    sessions = locomo_sessions(data_dir)  # a malformed file is refused before anything is built
    if keep is None:
        root = Path(tempfile.mkdtemp(prefix="kbmem-bench-"))
        try:
            run = ingest_locomo(data_dir, root / "kb", sessions)
            yield LocomoKB(run.kb, run.seconds)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        return
    fingerprint = data_fingerprint(data_dir)
    stamp = keep / STAMP
    if stamp.is_file() and (keep / "kb").is_dir():
        if stamp.read_text().strip() != fingerprint:
            raise ValidationError(
                f"{keep} holds a knowledge base built from other LoCoMo files or by other "
                "memorizer code; remove it or choose another folder",
                "--dir",
            )
        yield LocomoKB(KnowledgeBase(keep / "kb"), None)
        return
    if keep.exists() and (not keep.is_dir() or any(keep.iterdir())):
        raise ValidationError(
            f"{keep} exists and is not a knowledge base kept by an earlier run (or that run "
            "was cut short); remove it or choose another folder",
            "--dir",
        )
    run = ingest_locomo(data_dir, keep / "kb", sessions)
    stamp.write_text(fingerprint + "\n")  # last: a build cut short is never reused
    yield LocomoKB(run.kb, run.seconds)


def add_keep_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="keep the ingested knowledge base in this folder and reuse it in later runs on "
        "the same files (default: a temporary folder, removed at the end)",
    )
