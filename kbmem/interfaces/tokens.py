"""API tokens: who may use the HTTP API, and as which tenant.

A token is shown once, when it is created; the knowledge base keeps only its SHA-256, in
``.kbmem/api-tokens.json`` (mode 0600, outside git), with the tenant it acts for. A request
that presents a token acts for that tenant and no other, so a client cannot reach another
tenant's pages by naming it. The file is re-read when it changes, so a revoked token stops
working without restarting the server.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import threading
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from kbmem.errors import NotFound, StorageError, ValidationError
from kbmem.ids import check_tenant
from kbmem.store.files import atomic_write

TOKENS_FILE = "api-tokens.json"
PREFIX = "kbm_"
MAX_NAME = 80


@dataclass(frozen=True)
class TokenInfo:
    """What is kept of a token: never the token itself."""

    id: str
    tenant: str
    name: str
    created_at: str
    sha256: str

    def public(self) -> dict[str, str]:
        return {
            "id": self.id,
            "tenant": self.tenant,
            "name": self.name,
            "created_at": self.created_at,
        }


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class TokenStore:
    """The tokens of one knowledge base (``state_dir`` is its ``.kbmem`` folder)."""

    def __init__(self, state_dir: Path):
        self.path = state_dir / TOKENS_FILE
        self._lock = threading.Lock()
        self._seen: bytes | None = None  # the SHA-256 of the file last parsed
        self._tokens: list[TokenInfo] = []

    def _read(self) -> list[TokenInfo]:
        """The tokens on disk; a file that cannot be read is an error that names it, never
        an empty list (which would be overwritten by the next ``create``)."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            self._seen, self._tokens = None, []
            return []
        except OSError as exc:
            raise StorageError(f"{self.path}: not a readable token file ({exc})") from exc
        # Keyed on the content: a revoke and a create of the same length within the file
        # system's timestamp resolution leave (mtime, size) as they were.
        stamp = hashlib.sha256(raw).digest()
        if stamp == self._seen:
            return self._tokens
        try:
            data = json.loads(raw.decode("utf-8"))
            tokens = [TokenInfo(**entry) for entry in data["tokens"]]
            for info in tokens:
                if not all(isinstance(v, str) for v in vars(info).values()):
                    raise TypeError(f"token {info.id!r} has a field that is not text")
                check_tenant(info.tenant)
        except (OSError, ValueError, KeyError, TypeError, ValidationError) as exc:
            raise StorageError(f"{self.path}: not a readable token file ({exc})") from exc
        self._seen, self._tokens = stamp, tokens
        return tokens

    def _write(self, tokens: list[TokenInfo]) -> None:
        body = {"version": 1, "tokens": [asdict(t) for t in tokens]}
        # The replacement file takes the mode of the file it replaces: make that 0600 first,
        # so that no version of the file is ever readable by others, not even briefly.
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError as exc:
            raise StorageError(f"{self.path}: cannot write the token file ({exc})") from exc
        try:
            os.fchmod(fd, 0o600)
        finally:
            os.close(fd)
        atomic_write(self.path, (json.dumps(body, indent=1) + "\n").encode("utf-8"))

    def list(self, tenant: str | None = None) -> list[TokenInfo]:
        with self._lock:
            tokens = self._read()
        return [t for t in tokens if tenant is None or t.tenant == tenant]

    def create(self, tenant: str, name: str = "") -> tuple[str, TokenInfo]:
        """A new token for ``tenant``: returns the token (shown once) and what is kept."""
        tenant = check_tenant(tenant)
        if not isinstance(name, str) or len(name) > MAX_NAME or not name.isprintable():
            raise ValidationError(
                f"must be printable text of at most {MAX_NAME} characters", "name"
            )
        token = PREFIX + secrets.token_urlsafe(32)
        info = TokenInfo(
            id=secrets.token_hex(4),
            tenant=tenant,
            name=name,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            sha256=_digest(token),
        )
        with self._lock:
            self._write([*self._read(), info])
        return token, info

    def revoke(self, token_id: str) -> TokenInfo:
        with self._lock:
            tokens = self._read()
            kept = [t for t in tokens if t.id != token_id]
            if len(kept) == len(tokens):
                raise NotFound(f"no API token with id {token_id!r}")
            self._write(kept)
        return next(t for t in tokens if t.id == token_id)

    def tenant_of(self, token: str) -> str | None:
        """The tenant ``token`` acts for, or None for a token that is not (or no longer)
        valid. Compared in constant time."""
        if not token.startswith(PREFIX):
            return None
        digest = _digest(token)
        with self._lock:
            tokens = self._read()
        found = None
        for info in tokens:
            if hmac.compare_digest(info.sha256, digest):
                found = info.tenant
        return found
