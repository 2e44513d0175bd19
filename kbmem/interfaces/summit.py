"""The Summit note's routes (``POST /memory/ingest_session``, ``POST /memory/build_context``)
over one tenant's :class:`~kbmem.interfaces.service.Memory`, and their rollout flag.

The flag ``MEMORY_GAM_ENABLED`` (the environment, else ``server.memory_gam_enabled`` in
``kbmem.yaml``) is off by default, as the note says: while it is off these routes answer 503
so that callers fall back, and nothing else changes.
"""

from __future__ import annotations

import os
import time
from typing import Any

from kbmem.errors import TenantError, ValidationError
from kbmem.interfaces.schema import (
    BuildContextRequest,
    IngestSessionResponse,
    SummitSession,
    parse,
)
from kbmem.interfaces.service import Memory
from kbmem.store.repository import KnowledgeBase
from kbmem.telemetry import BUILD_CONTEXT_LATENCY

FLAG = "MEMORY_GAM_ENABLED"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def gam_enabled(kb: KnowledgeBase, environ: dict[str, str] | None = None) -> bool:
    """The flag: ``MEMORY_GAM_ENABLED`` in the environment when set, else the knowledge
    base's ``server.memory_gam_enabled``; off by default. A value that is no yes-or-no is an
    error naming it, not silently off."""
    env = os.environ if environ is None else environ
    if FLAG in env:
        text = env[FLAG].strip().lower()
        if text not in _TRUE | _FALSE:
            raise ValidationError(f"must be true or false, got {env[FLAG][:20]!r}", FLAG)
        return text in _TRUE
    value = kb.settings.section("server").get("memory_gam_enabled", False)
    if not isinstance(value, bool):
        raise ValidationError("must be true or false", "server.memory_gam_enabled")
    return value


def ingest_session(memory: Memory, body: dict[str, Any]) -> dict[str, Any]:
    """Memorize a session in the note's shape; ``{sessionId, memo, pages: [{id, sequence,
    header}]}``. ``description`` is kept in the session's metadata (the note has it; the
    memorizer's record has no field of its own for it)."""
    parse(SummitSession, body)
    session = dict(body)
    description = session.pop("description", None)
    if description:
        session["metadata"] = {"description": description, **(session.get("metadata") or {})}
    result = memory.ingest(session)
    pages = []
    for n, page_id in enumerate(result["pages"], start=1):
        header = memory.page(page_id, result["commit"] or None)["header"] or {}
        pages.append({"id": page_id, "sequence": n, "header": header})
    answer = {"sessionId": result["sessionId"], "memo": result["memo"], "pages": pages}
    checked: dict[str, Any] = IngestSessionResponse.model_validate(answer).model_dump()
    return checked


def build_context(memory: Memory, body: dict[str, Any]) -> dict[str, Any]:
    """The ``BriefingContext`` for the note's request. The token decides the tenant: a body
    naming another is refused (403) without saying whether that tenant exists."""
    request = parse(BuildContextRequest, body)
    if request.tenantId != memory.tenant:
        raise TenantError("this token does not grant the tenant this body names")
    limits = (request.budgets.clamped() if request.budgets else {}) | (
        {"depth": 0} if request.mode == "fast" else {}
    )
    started = time.perf_counter()
    briefing = memory.research_call(request.request, **limits)(None)
    BUILD_CONTEXT_LATENCY.labels(mode=request.mode).observe((time.perf_counter() - started) * 1000)
    answer: dict[str, Any] = briefing.to_dict()
    answer["mode"] = request.mode
    return answer
