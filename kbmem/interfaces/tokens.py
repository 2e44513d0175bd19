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
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from kbmem.errors import NotFound, StorageError, ValidationError
from kbmem.ids import check_tenant
from kbmem.store.files import atomic_write

RACY_S = 2  # a token file written this recently is read again, whatever its stat says
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
        # The stat key and SHA-256 of the file last parsed.
        self._seen: tuple[tuple[int, int, int, int], bytes] | None = None
        self._tokens: list[TokenInfo] = []

    def _read(self) -> list[TokenInfo]:
        """The tokens on disk; a file that cannot be read is an error that names it, never
        an empty list (which would be overwritten by the next ``create``)."""
        # A stat is enough while the file is old: a write within RACY_S of now may share the
        # last one's timestamps, size and (a freed inode used again) inode, so such a file is
        # read and its content compared, as git treats its "racily clean" entries.
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._seen, self._tokens = None, []
            return []
        except OSError as exc:
            raise StorageError(f"{self.path}: not a readable token file ({exc})") from exc
        stat_key = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)
        racy = time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) < RACY_S * 1e9
        if self._seen is not None and stat_key == self._seen[0] and not racy:
            return self._tokens
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            self._seen, self._tokens = None, []
            return []
        except OSError as exc:
            raise StorageError(f"{self.path}: not a readable token file ({exc})") from exc
        digest = hashlib.sha256(raw).digest()
        stamp = (stat_key, digest)
        if self._seen is not None and digest == self._seen[1]:
            self._seen = stamp
            return self._tokens
        try:
            data = json.loads(raw.decode("utf-8"))
            tokens = [TokenInfo(**entry) for entry in data["tokens"]]
            for info in tokens:
                if not all(isinstance(v, str) for v in vars(info).values()):
                    raise TypeError(f"token {info.id!r} has a field that is not text")
                check_tenant(info.tenant)
        except (ValueError, KeyError, TypeError, ValidationError) as exc:
            raise StorageError(f"{self.path}: not a readable token file ({exc})") from exc
        self._seen, self._tokens = stamp, tokens
        return tokens

    def _write(self, tokens: list[TokenInfo]) -> None:
        body = {"version": 1, "tokens": [asdict(t) for t in tokens]}
        # 0600 from the temp file's creation: no version of the file is readable by others,
        # and no empty one is ever in place (a reader would take it for a broken file).
        data = (json.dumps(body, indent=1) + "\n").encode("utf-8")
        try:
            atomic_write(self.path, data, mode=0o600)
        except OSError as exc:
            raise StorageError(f"{self.path}: cannot write the token file ({exc})") from exc

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
