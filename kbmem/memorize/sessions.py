"""Sessions as they arrive: the Summit API shape (JSON or YAML) and LoCoMo conversation files.

Everything that crosses this boundary is validated here and rejected with a message that names
the field; the memorizer only ever sees a well-formed :class:`Session`.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from kbmem.errors import ValidationError
from kbmem.ids import MAX_ID_LENGTH, check_segment, check_session_id, check_tenant
from kbmem.memorize import schema
from kbmem.textutil import slug, unstorable_field

MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_SPEAKER_LENGTH = 200
# Chats are memorized as sessions too: their ids start with CHAT_PREFIX (see is_chat), and
# kbmem's own answers in them are spoken by CHAT_AGENT (the researcher weighs those echoes down).
CHAT_PREFIX = "chat-"
DERIVED_PREFIX = "session-"  # put before a derived session id that would start like a chat's
CHAT_AGENT = "kbmem"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_TURN_ID = re.compile(rf"[^\s\x00-\x1f\x7f]{{1,{MAX_ID_LENGTH}}}")


@dataclass
class SessionTurn:
    id: str
    role: str
    speaker: str
    timestamp: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


_TURN_FIELDS = fields(SessionTurn)


@dataclass
class Session:
    tenant_id: str
    session_id: str
    turns: list[SessionTurn]
    agent_id: str = ""
    title: str = ""
    classification: str = "internal"
    policy_tags: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    origin_run_id: str = ""
    request_intent: str = ""

    @property
    def created_at(self) -> str:
        for turn in self.turns:
            if turn.timestamp:
                return turn.timestamp
        return str(self.metadata.get("date", ""))

    def content_hash(self) -> str:
        """Hash of everything the memorizer stores, to make re-ingest idempotent."""
        # Equal to json.dumps(asdict(self), ...), without asdict's deep copy of every turn.
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["turns"] = [{f.name: getattr(t, f.name) for f in _TURN_FIELDS} for t in self.turns]
        canonical = json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    @property
    def size_bytes(self) -> int:
        return sum(len(t.text.encode("utf-8")) for t in self.turns)


def is_chat(session_id: str) -> bool:
    """Whether ``session_id`` is one of kbmem's own chats, memorized as ``chat-<chat-id>``.

    The prefix is the whole rule, so ingest keeps out of it: :func:`session_from_mapping`
    refuses a given ``sessionId`` that starts with it, whatever its letter case (``Chat-c1``
    and ``chat-c1`` are one folder on a file system that ignores case), and an id kbmem
    derives, from a title or a LoCoMo file's name, gets ``session-`` in front when it would
    start so ("Chat with Bob" → ``session-chat-with-bob-…``). So an ingest never replaces a
    chat's pages, a chat's batch commit never replaces an ingested session, and only chats'
    turns are taken for echoes (:func:`is_echo`). kbmem's own chats are built as sessions
    directly (``agent.batch.chat_session``), not through ingest."""
    return session_id.startswith(CHAT_PREFIX)


def _reserved_for_chats(session_id: str) -> bool:
    return session_id.lower().startswith(CHAT_PREFIX)


def derived_session_id(candidate: str) -> str:
    """The session id kbmem makes up (from a title or a file name) out of ``candidate``:
    itself, unless it would start like a chat's (see :func:`is_chat`)."""
    return DERIVED_PREFIX + candidate if _reserved_for_chats(candidate) else candidate


def is_own_answer(session_id: str, speaker: str) -> bool:
    """Whether a turn is kbmem's own earlier answer, memorized with the chat it was given in:
    it quotes its sources and repeats the question, so it counts less than they do."""
    return speaker == CHAT_AGENT and is_chat(session_id)


ECHO_WEIGHT = 0.3  # weight of an echo (see is_echo) against the sources it repeats


# How a request put to kbmem opens when it is typed without its question mark ("Who owns the
# scheduler", "tell me ...", "find a ..."): not "What a day!".
_ASKING = re.compile(
    r"(?:(?:who|whom|whose|what|when|where|which|why|how|do|does|did|is|are|was|were|can"
    r"|could|would|will|should|has|have)\b(?!\s+an?\b)|(?:tell me|list|show me|summari[sz]e"
    r"|explain|find|look up|remind me|give me)\b)",
    re.I,
)


def is_request(text: str) -> bool:
    """Whether a chat message asks rather than states: it ends with a question mark, or it
    opens as a question or an instruction does (a long message's excerpt is cut before its
    question mark)."""
    text = without_cue(text.strip())
    return text.endswith("?") or (bool(_ASKING.match(text)) and not text.endswith("!"))


# Past this many words, a message that does not end as a sentence does is still one (a pasted
# log); up to it, it may be a few search words typed as a query ("april offsite budget").
QUERY_WORDS = 8


def is_statement(text: str) -> bool:
    """Whether a chat message tells memory something rather than asks it: it is no request
    (see is_request) and reads as a sentence, not as search words typed without one."""
    text = text.strip()
    if not text or is_request(text):
        return False
    return text.endswith((".", "!", "…", '"', "”", ")")) or len(text.split()) > QUERY_WORDS


# What a message's opening says about the message, not about what it tells or asks:
# "Correction:", "Remember this:", "FYI -". Searched for, it is one more word that memory
# does not hold near what the message is about.
_CUE = re.compile(
    r"^\s*(?:remember\s+(?:this|that)\b\s*[:,—–]?"
    r"|(?:correction|update|note|reminder|remember|fyi|ps|btw|heads[ -]up|important"
    r"|(?:a\s+)?(?:quick\s+)?question)(?:\s*[:—–]|\s+-\s))\s*",  # not "note-taking"
    re.I,
)


def without_cue(text: str) -> str:
    """``text`` without an opening that only says what kind of message it is ("Correction:
    the flights leave from Edinburgh." is about the flights), or as it is when that is all."""
    rest = _CUE.sub("", text, count=1)
    return rest if rest.strip() else text


def is_echo(session_id: str, speaker: str, text: str) -> bool:
    """Whether a turn only repeats what memory holds elsewhere: kbmem's own earlier answer,
    or a request put to kbmem in a chat (asked again, it matches the request word for word
    and states nothing; see is_request). A person's statement in a chat ("the launch moved to
    28 April") is no echo: it is a fact that memory holds nowhere else. ``text`` may start
    with the speaker's name, as an excerpt does."""
    if not is_chat(session_id):
        return False
    if speaker == CHAT_AGENT:
        return True
    return is_request(text.removeprefix(f"{speaker}: ") if speaker else text)


def normalize_timestamp(value: Any, field_name: str) -> str:
    """An ISO 8601 timestamp without spaces, or '' for none."""
    if value is None or value == "":
        return ""
    if isinstance(value, datetime):
        return value.isoformat()
    if hasattr(value, "isoformat"):  # a date, as YAML reads 2026-01-05
        return str(value.isoformat())
    if not isinstance(value, str):
        raise ValidationError(f"must be an ISO 8601 date/time, got {value!r}", field_name)
    text = value.strip()
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).isoformat()
    except ValueError:
        pass
    parsed = parse_human_date(text)
    if parsed is None:
        raise ValidationError(f"{value!r} is not an ISO 8601 date/time", field_name)
    return parsed.isoformat()


def parse_human_date(text: str) -> datetime | None:
    """Dates as LoCoMo writes them ("1:56 pm on 8 May, 2023")."""
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%d %B, %Y", "%d %B %Y"):
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None


def check_turn_id(value: object, field_name: str) -> str:
    """A turn id as the page line format holds it: 1 to 128 characters, no spaces or control
    characters (LoCoMo's ``D3:7`` is fine)."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValidationError(f"must be text, got {type(value).__name__}", field_name)
    text = str(value)
    if not _TURN_ID.fullmatch(text):
        raise ValidationError(
            f"{text[:40]!r}{'...' if len(text) > 40 else ''} is not a turn id (1 to "
            f"{MAX_ID_LENGTH} characters without spaces or control characters)",
            field_name,
        )
    return text


def session_from_mapping(
    data: Any,
    tenant: str | None = None,
    model: type[schema.Session] | type[schema.FileSession] = schema.FileSession,
) -> Session:
    """Validate one session in the Summit shape with ``model`` (:class:`~kbmem.memorize.
    schema.FileSession`, which leaves fields it does not name be, for files; the API and MCP
    pass :class:`~kbmem.memorize.schema.Session`, which refuses them). ``tenant``, when
    given, must agree with the session's own ``tenantId`` (and stands in for it when the
    file has none)."""
    if not isinstance(data, dict):
        raise ValidationError("a session must be a mapping (JSON object)", "session")
    unstorable = unstorable_field(data, "")
    if unstorable is not None:
        raise ValidationError(
            "holds half of a UTF-16 surrogate pair (\\ud800-\\udfff), which no file or git "
            "commit can hold",
            unstorable or "session",
        )
    file_tenant = data.get("tenantId")
    if file_tenant is None and tenant is None:
        raise ValidationError("missing; every session belongs to a tenant", "tenantId")
    if file_tenant is not None and tenant is not None and file_tenant != tenant:
        raise ValidationError(
            f"the session says {file_tenant!r}, but it is being memorized for tenant {tenant!r}",
            "tenantId",
        )
    tenant_id = check_tenant(file_tenant if file_tenant is not None else tenant)
    given = schema.parse(model, data, whole="session")
    turns: list[SessionTurn] = []
    seen: set[str] = set()
    for n, raw in enumerate(given.turns, start=1):
        where = f"turns[{n - 1}]."
        if not raw.role.strip():
            raise ValidationError("missing", f"{where}role")
        meta = raw.metadata or {}
        id_key = next((k for k in ("id", "dia_id") if meta.get(k)), None)
        id_field = f"{where}metadata.{id_key or 'id'}"
        turn_id = check_turn_id(meta[id_key] if id_key else f"t{n}", id_field)
        if turn_id in seen:
            raise ValidationError(f"turn id {turn_id!r} repeats", id_field)
        seen.add(turn_id)
        speaker_key = next((k for k in ("speaker", "name") if meta.get(k)), None)
        speaker_field = f"{where}metadata.{speaker_key}" if speaker_key else f"{where}role"
        speaker = meta[speaker_key] if speaker_key else raw.role
        if not isinstance(speaker, str):
            raise ValidationError(f"must be text, got {type(speaker).__name__}", speaker_field)
        speaker = " ".join(speaker.split())
        if _CONTROL.search(speaker) or len(speaker) > MAX_SPEAKER_LENGTH:
            raise ValidationError(
                f"must be at most {MAX_SPEAKER_LENGTH} characters, without control characters",
                speaker_field,
            )
        timestamp = normalize_timestamp(raw.timestamp, f"{where}timestamp")
        turns.append(SessionTurn(turn_id, raw.role.strip(), speaker, timestamp, raw.content, meta))
    if not any(t.text.strip() for t in turns):
        raise ValidationError("every turn is empty; nothing to memorize", "turns")
    session = Session(
        tenant_id=tenant_id,
        session_id="",
        turns=turns,
        agent_id=given.agentId or "",
        title=" ".join((given.title or "").split()),
        classification=given.classification or "internal",
        policy_tags=given.policyTags or [],
        tags=given.tags or [],
        metadata=given.metadata or {},
        origin_run_id=given.originRunId or "",
        request_intent=given.requestIntent or "",
    )
    if session.agent_id:
        check_segment(session.agent_id, "agentId")
    session_id = given.sessionId
    if session_id is None:
        # Derived from the content, so that ingesting the same file twice is a no-op.
        stem = slug(session.title, 40) if session.title else "session"
        session_id = derived_session_id(f"{stem}-{session.content_hash()[:10]}")
    elif _reserved_for_chats(check_session_id(session_id)):
        raise ValidationError(
            f"{session_id!r} starts with {CHAT_PREFIX!r}, which is reserved for kbmem's own "
            f"chats (memorized as {CHAT_PREFIX}<chat-id>); give the session another id",
            "sessionId",
        )
    session.session_id = check_session_id(session_id)
    return session


def sessions_from_locomo(data: dict[str, Any], tenant: str, name: str) -> list[Session]:
    """One kbmem session per LoCoMo session; only the turns and their dates are read (the
    dataset's summaries and observations are answer keys and are never ingested)."""
    tenant = check_tenant(tenant)
    numbers = sorted(int(m.group(1)) for key in data if (m := re.fullmatch(r"session_(\d+)", key)))
    if not numbers:
        raise ValidationError("a LoCoMo file needs session_N lists", "session_1")
    stem = slug(name, 60)
    sessions = []
    for number in numbers:
        key = f"session_{number}"
        raw_turns = data[key]
        if not isinstance(raw_turns, list):
            raise ValidationError("must be a list of turns", key)
        if not raw_turns:
            continue
        when = data.get(f"{key}_date_time")
        stamp = normalize_timestamp(when, f"{key}_date_time") if when else ""
        turns = []
        for i, raw in enumerate(raw_turns):
            if not isinstance(raw, dict) or not isinstance(raw.get("text"), str):
                raise ValidationError("must be a turn with text", f"{key}[{i}]")
            text = raw["text"]
            if raw.get("blip_caption"):
                text += f"\n[shares an image: {raw['blip_caption']}]"
            meta = {
                "dia_id": raw.get("dia_id") or f"D{number}:{i + 1}",
                "speaker": raw.get("speaker", "unknown"),
            }
            if raw.get("img_url"):
                meta["img_url"] = raw["img_url"]
            turns.append(
                {"role": "user", "content": text, "timestamp": stamp or None, "metadata": meta}
            )
        speakers = [data.get("speaker_a"), data.get("speaker_b")]
        title = f"{' and '.join(s for s in speakers if s)} — session {number}"
        try:
            session = session_from_mapping(
                {
                    "tenantId": tenant,
                    "sessionId": derived_session_id(f"{stem}-s{number}"),
                    "title": title,
                    "turns": turns,
                    "metadata": {"source": name, "locomo_session": number, "date": when or ""},
                }
            )
        except ValidationError as exc:
            raise ValidationError(f"{key}: {exc}") from exc
        sessions.append(session)
    if not sessions:
        raise ValidationError("every session_N list is empty; nothing to memorize", "session_1")
    return sessions


def load_document(path: Path) -> Any:
    """Read a JSON or YAML file, with errors that name the file and the problem."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ValidationError(f"cannot read: {exc.strerror}", str(path)) from exc
    if path.is_dir():
        raise ValidationError("is a folder; name the files in it", str(path))
    if size > MAX_FILE_BYTES:
        raise ValidationError(f"is {size} bytes; the limit is {MAX_FILE_BYTES}", str(path))
    try:
        # At most one byte past the limit: a pipe or a device (/dev/zero) has no size to
        # check first, and may never end.
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ValidationError(f"cannot read: {exc.strerror}", str(path)) from exc
    if len(raw) > MAX_FILE_BYTES:
        raise ValidationError(f"holds more than {MAX_FILE_BYTES} bytes, the limit", str(path))
    if not raw or raw.isspace():
        raise ValidationError("is empty; it holds no session", str(path))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"is not UTF-8 text ({exc})", str(path)) from exc
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValidationError(
                f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", str(path)
            ) from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValidationError(f"malformed YAML: {exc}", str(path)) from exc


def is_locomo(data: Any) -> bool:
    return isinstance(data, dict) and "session_1" in data and "turns" not in data


def load_sessions(path: Path, tenant: str | None, default_tenant: str = "default") -> list[Session]:
    """The sessions in one input file (a Summit session, a list of them, or LoCoMo). A
    Summit session names its tenant (``tenant`` stands in when it does not); a LoCoMo file has
    none, so its sessions go to ``tenant``, else ``default_tenant``."""
    if tenant is not None:
        check_tenant(tenant)
    data = load_document(path)
    if is_locomo(data):
        try:
            return sessions_from_locomo(data, tenant or default_tenant, path.stem)
        except ValidationError as exc:
            raise ValidationError(f"{path}: {exc}") from exc
    items = data if isinstance(data, list) else [data]
    if not items:
        raise ValidationError("is an empty list; it holds no session", str(path))
    out = []
    for n, item in enumerate(items):
        try:
            out.append(session_from_mapping(item, tenant))
        except ValidationError as exc:
            where = f"{path}" + (f"[{n}]" if isinstance(data, list) else "")
            raise ValidationError(f"{where}: {exc}") from exc
    return out
