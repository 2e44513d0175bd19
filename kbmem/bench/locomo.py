"""LoCoMo data for the benchmarks: questions, evidence, and ingest into a knowledge base.

Only the turns and their dates are ingested; the dataset's summaries, observations and event
annotations are answer keys and are never read."""

from __future__ import annotations

import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ValidationError
from ..memorizer import IngestResult, ingest_session
from ..sessions import load_document, sessions_from_locomo
from ..store import KnowledgeBase
from ..template import init_kb
from ..textutil import slug

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


def parse_evidence(raw: list[object]) -> list[str]:
    """Evidence ids; entries holding several ids are split, malformed ones skipped."""
    out = []
    for entry in raw or []:
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


def load_questions(path: Path) -> list[Question]:
    data = load_document(path)
    tenant = tenant_for(path)
    out = []
    for qa in data.get("qa", []):
        category = int(qa.get("category", 0))
        if category == 5:
            continue
        evidence = parse_evidence(qa.get("evidence", []))
        if not evidence:
            continue
        sessions = {f"{tenant}-s{_DIA.match(e).group(1)}" for e in evidence}  # type: ignore[union-attr]
        out.append(
            Question(
                tenant, str(qa["question"]), str(qa.get("answer", "")), category, evidence, sessions
            )
        )
    return out


@dataclass
class IngestRun:
    kb: KnowledgeBase
    results: list[IngestResult]
    seconds: float
    turns: int


def ingest_locomo(data_dir: Path, target: Path | None = None) -> IngestRun:
    """A fresh knowledge base (settings from kb_template, no example history) holding every
    LoCoMo file in ``data_dir``, one tenant per conversation."""
    target = target or Path(tempfile.mkdtemp(prefix="kbmem-bench-")) / "kb"
    kb = init_kb(target, with_history=False)
    sessions = []
    for path in conversation_files(data_dir):
        sessions += sessions_from_locomo(load_document(path), tenant_for(path), path.stem)
    started = time.perf_counter()
    results = [ingest_session(kb, s) for s in sessions]
    seconds = time.perf_counter() - started
    return IngestRun(kb, results, seconds, sum(len(s.turns) for s in sessions))
