"""Ids that may become path segments: validated before they touch the file system."""

from __future__ import annotations

import re

from kbmem.errors import ValidationError

MAX_ID_LENGTH = 128
_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_SEQ = re.compile(r"[1-9][0-9]{0,5}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_segment(value: object, field: str) -> str:
    """Return ``value`` if it is a safe single path segment, else raise naming ``field``."""
    if not isinstance(value, str):
        raise ValidationError(f"must be a string, got {type(value).__name__}", field)
    if not value:
        raise ValidationError("must not be empty", field)
    if "\x00" in value:
        raise ValidationError("must not contain NUL", field)
    if len(value) > MAX_ID_LENGTH:
        raise ValidationError(f"longer than {MAX_ID_LENGTH} characters", field)
    if ".." in value or not _SEGMENT.fullmatch(value):
        raise ValidationError(
            f"{value!r} is not a safe id (letters, digits, '.', '_', '-'; "
            "starting with a letter or digit; no '..' or '/')",
            field,
        )
    return value


def is_segment(value: str) -> bool:
    """Whether ``value`` is a safe single path segment (as :func:`check_segment` takes)."""
    return len(value) <= MAX_ID_LENGTH and ".." not in value and bool(_SEGMENT.fullmatch(value))


def check_tenant(value: object) -> str:
    return check_segment(value, "tenantId")


def check_session_id(value: object) -> str:
    return check_segment(value, "sessionId")


def session_page_id(session_id: str, sequence: int) -> str:
    return f"{session_id}/{sequence}"


def page_relpath(page_id: object) -> str:
    """Map a page id to its path relative to the tenant folder, validating every part.

    Session pages have ids ``<session-id>/<seq>`` and live at ``pages/<session-id>/<seq>.md``;
    pages written by hand keep their tenant-relative path, ``.md`` included, as their id.
    """
    if not isinstance(page_id, str) or not page_id:
        raise ValidationError("must be a non-empty string", "pageId")
    parts = page_id.split("/")
    if page_id.endswith(".md"):
        for part in parts:
            _check_note_part(part)
        if parts[0] in RESERVED_DIRS or page_id == "MEMORY.md":
            raise ValidationError(f"{page_id!r} is not a page", "pageId")
        return page_id
    if len(parts) == 2 and _SEQ.fullmatch(parts[1]):
        check_segment(parts[0], "pageId")
        return f"pages/{parts[0]}/{parts[1]}.md"
    raise ValidationError(f"{page_id!r} is neither '<session-id>/<seq>' nor a '.md' path", "pageId")


def _bad_note_part(part: str) -> bool:
    """Whether a folder or file name cannot be part of the id of a page written by hand.
    People name notes as they like ('Team roster.md', 'Café/menu.md'), and the name is only
    ever a path inside git: any name a file system keeps goes, except what could step out of
    the tenant or break a line."""
    return part in ("", ".", "..") or bool(_CONTROL.search(part)) or len(part.encode()) > 255


def _check_note_part(part: str) -> None:
    if _bad_note_part(part):
        raise ValidationError(
            f"{part!r} is not a file or folder name of a page (empty, '.', '..', a control "
            "character, or over 255 bytes)",
            "pageId",
        )


def page_id_for(relpath: str) -> str | None:
    """The page id of a tenant-relative path, or None when the path is not a page (every id
    it returns is one :func:`page_relpath` maps back to ``relpath``)."""
    if not relpath.endswith(".md") or relpath == "MEMORY.md":
        return None
    parts = relpath.split("/")
    if parts[0] == "pages":
        if len(parts) == 3 and _SEQ.fullmatch(parts[2][:-3]) and is_segment(parts[1]):
            return f"{parts[1]}/{parts[2][:-3]}"
        return None
    if parts[0] in RESERVED_DIRS or any(_bad_note_part(p) for p in parts):
        return None
    return relpath


RESERVED_DIRS = frozenset({"pages", "sessions", "turns"})
