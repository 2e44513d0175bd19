"""Git objects written and read in-process: blobs, trees and commits, exactly as git would.

A kbmem commit is built from HEAD's tree and exactly the paths kbmem wrote, with no index
involved, so that a user's own staged or unstaged changes never enter it; only the
compare-and-swap of HEAD and the refresh of the user's index run git itself (see
:mod:`kbmem.store.transaction`). Objects never change, so what was read or written is kept.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import zlib
from collections.abc import Callable, Mapping
from contextlib import suppress
from datetime import datetime, timedelta

from kbmem.errors import ValidationError

KBMEM_NAME = "kbmem"
KBMEM_EMAIL = "kbmem@localhost"
TREE_MODE = b"40000"
FILE_MODES = (b"100644", b"100755")
# Trees kept in memory before the caches are dropped: bounds a long-running process.
TREE_CACHE_LIMIT = 100_000
# zlib level of loose objects: the fastest; they are packed soon (see LOOSE_OBJECT_LIMIT).
LOOSE_COMPRESSION = 1
# Loose objects (estimated as git does, from one of its 256 folders) above which kbmem packs
# them: well below git's own auto-gc threshold (gc.auto, 6700), so a user's commit rarely
# starts a gc because of kbmem's objects.
LOOSE_OBJECT_LIMIT = 2000
# The folder git samples to estimate its loose objects.
_SAMPLE_FOLDER = "17"
SYMLINK_MODE = b"120000"

TreeEntries = dict[bytes, tuple[bytes, bytes]]  # {name: (mode, binary id)}
UNKNOWN = object()  # "the kept trees do not cover this path" (see ObjectStore.known_object_at)


class ObjectStore:
    """The objects of one repository: writes loose objects under ``objects_dir``; reads
    through ``read_raw`` (binary id → object data) what it does not keep."""

    def __init__(self, objects_dir: str, read_raw: Callable[[bytes], bytes]):
        self.objects_dir = objects_dir
        self._read_raw = read_raw
        self._trees: dict[bytes, TreeEntries] = {}
        self._commit_trees: dict[str, bytes] = {}
        # The blobs of the last commit built: what the memorizer reads back next.
        self._blobs: dict[str, bytes] = {}

    def kept_blob(self, blob_id: str) -> bytes | None:
        return self._blobs.get(blob_id)

    def write(self, kind: bytes, data: bytes, keep: bool = False) -> bytes:
        """Store one object (if new) and return its binary id; ``keep`` remembers a blob's
        bytes until the next commit is built."""
        raw = b"%s %d\x00%s" % (kind, len(data), data)
        binsha = hashlib.sha1(raw).digest()
        hexsha = binsha.hex()
        if keep:
            self._blobs[hexsha] = data
        folder = os.path.join(self.objects_dir, hexsha[:2])
        target = os.path.join(folder, hexsha[2:])
        if os.path.exists(target):
            return binsha
        # git's own name for object temp files: fsck and gc know to ignore and clean them.
        tmp = os.path.join(folder, f"tmp_obj_{os.getpid()}_{secrets.token_hex(4)}")
        fd = _create_in(folder, tmp)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(zlib.compress(raw, LOOSE_COMPRESSION))
            os.replace(tmp, target)
        except BaseException:
            with suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        return binsha

    def needs_packing(self) -> bool:
        """Whether the loose objects (estimated as ``git gc --auto`` does) pass
        :data:`LOOSE_OBJECT_LIMIT`."""
        try:
            sample = os.listdir(os.path.join(self.objects_dir, _SAMPLE_FOLDER))
        except FileNotFoundError:
            return False
        loose = sum(1 for name in sample if len(name) == 38)
        return loose * 256 > LOOSE_OBJECT_LIMIT

    def tree_entries(self, binsha: bytes | None) -> TreeEntries:
        """``{name: (mode, binsha)}`` of a tree object (empty for None)."""
        if binsha is None:
            return {}
        cached = self._trees.get(binsha)
        if cached is not None:
            return dict(cached)
        data = self._read_raw(binsha)
        entries: TreeEntries = {}
        pos = 0
        while pos < len(data):
            space = data.index(b" ", pos)
            nul = data.index(b"\x00", space)
            entries[data[space + 1 : nul]] = (data[pos:space], data[nul + 1 : nul + 21])
            pos = nul + 21
        self._trees[binsha] = entries
        return dict(entries)

    def write_tree(self, entries: TreeEntries) -> bytes:
        # git orders entries by name, comparing a folder's name as if it ended in '/'.
        def key(name: bytes) -> bytes:
            return name + b"/" if entries[name][0] == TREE_MODE else name

        data = b"".join(
            b"%s %s\x00%s" % (entries[n][0], n, entries[n][1]) for n in sorted(entries, key=key)
        )
        binsha = self.write(b"tree", data)
        self._trees[binsha] = entries
        return binsha

    def edit_tree(self, base: bytes | None, changes: dict[bytes, bytes | None]) -> bytes | None:
        """The tree ``base`` with ``changes`` (``{path: blob id or None}``) applied; None when
        the result is empty (git keeps no empty folders)."""
        entries = self.tree_entries(base)
        below: dict[bytes, dict[bytes, bytes | None]] = {}
        for path, blob in changes.items():
            head, sep, rest = path.partition(b"/")
            if sep:
                below.setdefault(head, {})[rest] = blob
            elif blob is None:
                entries.pop(head, None)
            else:
                old = entries.get(head)
                mode = old[0] if old and old[0] in FILE_MODES else FILE_MODES[0]
                entries[head] = (mode, blob)
        for name, sub_changes in below.items():
            old = entries.get(name)
            sub = self.edit_tree(old[1] if old and old[0] == TREE_MODE else None, sub_changes)
            if sub is None:
                entries.pop(name, None)
            else:
                entries[name] = (TREE_MODE, sub)
        if not entries and base is not None:
            return None
        return self.write_tree(entries) if entries else None

    def commit_tree(self, commit: str) -> bytes:
        """The binary id of the tree of ``commit`` (a full id)."""
        tree = self._commit_trees.get(commit)
        if tree is None:
            data = self._read_raw(bytes.fromhex(commit))
            assert data.startswith(b"tree ")
            tree = self._commit_trees[commit] = bytes.fromhex(data[5:45].decode())
        return tree

    def known_object_at(self, relpath: str, commit: str) -> object:
        """``(id, type)`` of the object at ``relpath`` in ``commit`` from the kept trees
        alone, None when it does not exist, or :data:`UNKNOWN` when they do not tell."""
        tree = self._commit_trees.get(commit)
        parts = relpath.encode().split(b"/")
        for depth, part in enumerate(parts):
            entries = self._trees.get(tree) if tree is not None else None
            if entries is None:
                return UNKNOWN
            entry = entries.get(part)
            if entry is None:
                return None
            mode, tree = entry
            if depth == len(parts) - 1:
                kind = {TREE_MODE: "tree", b"160000": "commit"}.get(mode, "blob")
                return tree.hex(), kind
            if mode != TREE_MODE:
                return None
        return None

    def symlink_in(self, commit: str, relpath: str) -> str | None:
        """The first part of ``relpath`` (``tenants/c``, or the whole path) that ``commit``
        holds as a symbolic link, or None."""
        tree: bytes | None = self.commit_tree(commit)
        parts = relpath.encode().split(b"/")
        for depth, part in enumerate(parts):
            entry = self.tree_entries(tree).get(part)
            if entry is None:
                return None
            if entry[0] == SYMLINK_MODE:
                return b"/".join(parts[: depth + 1]).decode()
            if entry[0] != TREE_MODE:
                return None
            tree = entry[1]
        return None

    def build_commit(
        self,
        parent: str | None,
        writes: Mapping[str, bytes | None],
        message: str,
        trailers: Mapping[str, str],
        when: str,
    ) -> str | None:
        """Write the objects of a commit of ``writes`` on top of ``parent``; the commit's
        id, or None when the tree would not change."""
        base = self.commit_tree(parent) if parent else None
        if len(self._trees) > TREE_CACHE_LIMIT:
            self._trees.clear()
            self._commit_trees.clear()
        self._blobs = {}
        changes = {
            path.encode(): None if data is None else self.write(b"blob", data, keep=True)
            for path, data in writes.items()
        }
        tree = self.edit_tree(base, changes)
        if tree is None:
            tree = self.write_tree({})
        if tree == base:
            return None
        body = message.rstrip() + "\n"
        if trailers:
            body += "\n" + "".join(f"{k}: {v}\n" for k, v in trailers.items())
        ident = f"{KBMEM_NAME} <{KBMEM_EMAIL}> {when}"
        lines = [f"tree {tree.hex()}"]
        if parent:
            lines.append(f"parent {parent}")
        lines += [f"author {ident}", f"committer {ident}", "", body]
        sha = self.write(b"commit", "\n".join(lines).encode("utf-8")).hex()
        self._commit_trees[sha] = tree
        return sha


def _create_in(folder: str, path: str) -> int:
    """Create the new read-only file ``path`` in the object folder ``folder``, making the
    folder when it is missing: ``git gc`` and ``prune`` remove the folders they empty, also
    under a process that wrote into them before."""
    for _attempt in range(3):
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        except FileNotFoundError:
            os.makedirs(folder, exist_ok=True)
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)


def blob_id_of(data: bytes) -> str:
    """The id git gives a file holding ``data``."""
    return hashlib.sha1(b"blob %d\x00%s" % (len(data), data)).hexdigest()


def git_date(date: str | None) -> str:
    """A date as git stores it in a commit (``<unix seconds> <+hhmm>``); now when None.
    Takes ISO 8601 (a time without a zone is local time) or git's own form."""
    if date is None:
        moment = datetime.now().astimezone()
    elif re.fullmatch(r"@?\d+ [+-]\d{4}", date.strip()):
        return date.strip().lstrip("@")
    else:
        try:
            moment = datetime.fromisoformat(date.strip().replace("Z", "+00:00"))
        except ValueError as exc:
            raise ValidationError(f"{date!r} is not an ISO 8601 date", "date") from exc
        if moment.tzinfo is None:
            moment = moment.astimezone()
    offset = moment.utcoffset() or timedelta(0)
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    return f"{int(moment.timestamp())} {sign}{abs(minutes) // 60:02d}{abs(minutes) % 60:02d}"
