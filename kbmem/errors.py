"""One small error hierarchy; the CLI, the API and the TUI each render it in their own form."""

from __future__ import annotations


class KbmemError(Exception):
    """Base of every error kbmem raises on purpose."""

    exit_code = 1
    http_status = 500
    #: What the caller can do about it, in the terms of the interface it came through (an
    #: HTTP query flag, an MCP argument); set by that interface, shown beside the message.
    hint: str | None = None


class ValidationError(KbmemError):
    """Input that does not fit the expected shape; the message names the field."""

    exit_code = 2
    http_status = 400

    def __init__(self, message: str, field: str | None = None):
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.problem = message


class InUse(ValidationError):
    """Something another process holds right now (a chat open elsewhere): asking again
    later may work."""

    http_status = 409


class TooMany(KbmemError):
    """A limit on things held open at once (chats, connections) is reached."""

    exit_code = 2
    http_status = 429


class Cancelled(KbmemError):
    """Work stopped because its caller asked it to (a program that is closing). Nothing is
    half-written: a sync that stops leaves the live index as it was."""


class NotFound(KbmemError):
    """A page, session, turn or revision that does not exist."""

    exit_code = 3
    http_status = 404


class TenantError(KbmemError):
    """An operation crossed a tenant boundary."""

    exit_code = 4
    http_status = 403


class StorageError(KbmemError):
    """Git or the file system failed underneath us."""

    exit_code = 5
    http_status = 500


class LockTimeout(StorageError):
    """Another writer held the knowledge base for too long."""

    http_status = 409


class ConflictError(StorageError):
    """Someone else's commits kept moving HEAD while kbmem committed (or changed a file kbmem
    was about to write): nothing of theirs is overwritten, and trying again may work."""

    http_status = 409


class UncommittedChanges(KbmemError):
    """A file kbmem is about to write holds changes the user has not committed: kbmem refuses
    rather than overwrite them (not a StorageError: trying again cannot help)."""

    exit_code = 5
    http_status = 409


class PageFormatError(ValidationError):
    """A page file whose front matter cannot be read: stored data, not the request, is at
    fault (so not a 400 in the API)."""

    http_status = 422


class LLMError(KbmemError):
    """The language model failed or answered with nothing usable."""

    exit_code = 6
    http_status = 502


class ModelUnreachable(LLMError):
    """The model could not be reached, or did not answer in time: asking it again at once
    would only wait again (a bad answer, by contrast, may be followed by a good one)."""
