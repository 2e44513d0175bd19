"""The knowledge base: one git repository, one writer at a time, readers never blocked.

This module opens a knowledge base and reads it at any revision (files, folders, history,
diffs). Writing is :mod:`kbmem.store.transaction` (the write lock, ``commit_files``), which
builds commits from exactly the paths kbmem wrote (:mod:`kbmem.store.objects`) and moves HEAD
by one compare-and-swap; :mod:`kbmem.store.recovery` repairs a write that died before its
commit, :mod:`kbmem.store.files` writes files whole and :mod:`kbmem.store.locks` holds locks.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Generator
from contextvars import ContextVar
from dataclasses import dataclass
from io import BufferedReader
from pathlib import Path
from typing import cast

import git
from git.exc import BadName, GitCommandError, InvalidGitRepositoryError, NoSuchPathError
from git.refs.symbolic import SymbolicReference

from kbmem.config import Settings, load_settings
from kbmem.errors import NotFound, StorageError, ValidationError
from kbmem.store.files import exclude_temp_files
from kbmem.store.objects import UNKNOWN, ObjectStore
from kbmem.store.transaction import GIT, STATE_DIR, WriteTransactions

__all__ = ["STATE_DIR", "CommitInfo", "KnowledgeBase"]

_SHA_FULL = re.compile(r"[0-9a-f]{40}")
# A revision a tenant may name: HEAD or a commit id, then steps back (~N, ^, ^1).
_TENANT_REV = re.compile(r"(HEAD|[0-9a-f]{4,40})((?:[~^][0-9]{0,6}){0,20})")
_STEP = re.compile(r"([~^])([0-9]*)")
# One commit of git log: a record separator, then its fields (the message may hold newlines).
_LOG_FORMAT = "--format=%x1e%H%x1f%aI%x1f%an%x1f%B%x1f"
# The bytes git log's output is read in.
_LOG_CHUNK = 1 << 16
# HEAD as first read in a KnowledgeBase.one_head block, by knowledge base (its root).
_ONE_HEAD: ContextVar[dict[Path, str | None] | None] = ContextVar("kbmem_one_head", default=None)


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    date: str  # ISO 8601, author date
    author: str
    message: str
    path: str | None = None  # the file's path in that commit (it may have been renamed since)


class KnowledgeBase(WriteTransactions):
    """A knowledge base rooted at a git work tree: reads here, writes in its base class."""

    def __init__(self, root: Path, settings: Settings | None = None):
        self.root = Path(root).resolve()
        try:
            self._main_repo = git.Repo(self.root)
        except (InvalidGitRepositoryError, NoSuchPathError) as exc:
            raise NotFound(
                f"{self.root} is not a kbmem knowledge base (no git repository); "
                "create one with 'kbmem init DIR'"
            ) from exc
        if Path(self._main_repo.working_tree_dir or "").resolve() != self.root:
            raise ValidationError(
                f"{self.root} is inside the repository {self._main_repo.working_tree_dir}; "
                "point --kb at the repository's top folder",
                "kb",
            )
        self.settings = settings or load_settings(self.root)
        self.state_dir = self.root / STATE_DIR
        self.state_dir.mkdir(exist_ok=True)
        self.git_dir = Path(self._main_repo.git_dir)
        exclude_temp_files(Path(self._main_repo.common_dir))
        self._local = threading.local()
        self.objects = ObjectStore(
            os.path.join(self._main_repo.common_dir, "objects"),
            lambda binsha: bytes(self.repo.odb.stream(binsha).read()),
        )
        self._init_writes()

    # -- creation ---------------------------------------------------------------------------

    @classmethod
    def create(cls, target: Path, template: Path) -> KnowledgeBase:
        """Make a new, empty knowledge base at ``target`` with the template's settings files
        (the example history is added by :func:`kbmem.memorize.template.seed`)."""
        target = Path(target)
        if target.exists() and not target.is_dir():
            raise ValidationError(f"{target} exists and is not a folder", "DIR")
        if target.exists() and any(target.iterdir()):
            raise ValidationError(f"{target} exists and is not empty", "DIR")
        try:
            target.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValidationError(f"cannot create {target}: {exc.strerror}", "DIR") from exc
        git.Repo.init(target, initial_branch="main")
        for name in ("kbmem.yaml", ".gitignore", "README.md"):
            if (template / name).exists():
                shutil.copyfile(template / name, target / name)
        return cls(target)

    # -- reading ----------------------------------------------------------------------------

    @property
    def repo(self) -> git.Repo:
        """A Repo object for this thread (GitPython objects are not thread-safe)."""
        repo = getattr(self._local, "repo", None)
        if repo is None:
            repo = git.Repo(self.root)
            self._local.repo = repo
        return repo

    @contextlib.contextmanager
    def one_head(self) -> Generator[None]:
        """A block of reads that sees one HEAD: the first :meth:`head` in it (in this thread,
        or task, and those it starts with a copy of its context) reads HEAD, the others get
        the same commit. One read is about 0.1 ms (GitPython resolves the ref's path); a
        search read it two or three times. While a write holds the lock (in this process),
        HEAD is read afresh, and read again at the next read after it."""
        if _ONE_HEAD.get() is not None:
            yield
            return
        token = _ONE_HEAD.set({})
        try:
            yield
        finally:
            _ONE_HEAD.reset(token)

    def head(self) -> str | None:
        """The commit HEAD points at, or None before the first commit (inside
        :meth:`one_head`, as first read there)."""
        seen = _ONE_HEAD.get()
        if seen is None:
            return self._read_head()
        if self._lock_depth:  # a write may move HEAD: read it, and again after the write
            seen.pop(self.root, None)
            return self._read_head()
        if self.root not in seen:
            seen[self.root] = self._read_head()
        return seen[self.root]

    def _read_head(self) -> str | None:
        try:
            # Reads the ref files directly, without asking git what type the object has.
            return SymbolicReference.dereference_recursive(self.repo, "HEAD")
        except ValueError:  # unborn branch: no commit yet
            return None

    def resolve(self, rev: str) -> str:
        """The full commit id of ``rev``, or NotFound."""
        if not rev or rev.startswith("-") or "\x00" in rev or "\n" in rev:
            raise ValidationError(f"{rev!r} is not a revision", "rev")
        if rev == "HEAD":
            head = self.head()
            if head is None:
                raise NotFound("no such revision: HEAD (the knowledge base has no commit yet)")
            return head
        try:
            return self.repo.commit(rev).hexsha
        except (BadName, ValueError, GitCommandError) as exc:
            raise NotFound(f"no such revision: {rev}") from exc

    def resolve_in(self, rev: str, prefix: str) -> str | None:
        """The full id of ``rev`` as seen by whoever owns the folder ``prefix`` (a tenant):
        only commits that touched ``prefix`` exist for it. ``HEAD`` is the newest of them
        (None when there is none), a commit id names one of them, and ``~N`` steps back N of
        them. Any other commit is NotFound with the message an unknown one gets, so that a
        tenant can neither resolve another tenant's ids nor count the repository's commits."""
        match = _TENANT_REV.fullmatch(rev) if isinstance(rev, str) else None
        if match is None:
            raise ValidationError(f"{rev!r} is not a revision", "rev")
        base, steps = match.groups()
        back = 0
        for op, digits in _STEP.findall(steps):
            n = int(digits) if digits else 1
            if op == "^" and n > 1:  # a second parent is another line of the repository's
                raise NotFound(f"no such revision: {rev}")
            back += n
        head = self.head()
        if head is None:
            if base == "HEAD" and not back:
                return None
            raise NotFound(f"no such revision: {rev}")
        start = head
        if base != "HEAD":
            try:
                start = self.repo.commit(base).hexsha
            except (BadName, ValueError, GitCommandError) as exc:
                raise NotFound(f"no such revision: {rev}") from exc
        try:
            out = self.repo.git.rev_list(f"--max-count={back + 1}", start, "--", prefix.rstrip("/"))
        except GitCommandError as exc:  # a whole id of no object: commit() took it unchecked
            raise NotFound(f"no such revision: {rev}") from exc
        found = _text(out).split()
        if base != "HEAD" and (not found or found[0] != start):
            raise NotFound(f"no such revision: {rev}")  # a commit of someone else's
        if len(found) <= back:
            if base == "HEAD" and not back:
                return None
            raise NotFound(f"no such revision: {rev}")
        return found[back]

    def _object_at(self, relpath: str, commit: str) -> tuple[str, str] | None:
        """``(id, type)`` of the object at ``relpath`` in ``commit``: from the trees already
        known when they cover the path, else one round trip to ``git cat-file``."""
        if not relpath or "\n" in relpath or "\x00" in relpath:
            return None
        known = self.objects.known_object_at(relpath, commit)
        if known is not UNKNOWN:
            return known  # type: ignore[return-value]
        try:
            sha, kind, _size = self.repo.git.get_object_header(f"{commit}:{relpath}")
        except ValueError:
            return None
        return _text(sha), _text(kind)

    def read_bytes(self, relpath: str, rev: str = "HEAD") -> bytes:
        """The file at ``relpath`` as committed in ``rev``."""
        sha = self.resolve(rev)
        found = self._object_at(relpath, sha)
        if found is None:
            raise NotFound(f"{relpath} does not exist at {sha[:10]}")
        if found[1] != "blob":
            raise NotFound(f"{relpath} is not a file at {sha[:10]}")
        return self.read_blob(found[0])

    def blob_id(self, relpath: str, rev: str = "HEAD") -> str | None:
        try:
            found = self._object_at(relpath, self.resolve(rev))
        except NotFound:
            return None
        return found[0] if found and found[1] == "blob" else None

    def has_path(self, relpath: str, rev: str = "HEAD") -> bool:
        """Whether a file or a folder ``relpath`` exists at ``rev`` (False before the first
        commit). Git keeps no empty folders: a folder that exists holds a file."""
        try:
            return self._object_at(relpath.rstrip("/"), self.resolve(rev)) is not None
        except NotFound:
            return False

    def list_files(self, prefix: str, rev: str = "HEAD") -> dict[str, str]:
        """``{path: blob id}`` of every file below ``prefix`` at ``rev`` (empty if none)."""
        if self.head() is None:
            return {}
        tree = self.repo.commit(self.resolve(rev)).tree
        try:
            sub = tree / prefix.rstrip("/") if prefix else tree
        except KeyError:
            return {}
        return {
            str(item.path): item.hexsha
            for item in sub.traverse()
            if isinstance(item, git.Blob)  # (traverse also yields trees)
        }

    def folders(self, prefix: str, rev: str = "HEAD") -> list[str]:
        """The names of the folders directly below ``prefix`` at ``rev``, sorted (empty if
        none): one tree read, not a walk over every file below."""
        if self.head() is None:
            return []
        try:
            sub = self.repo.commit(self.resolve(rev)).tree / prefix.rstrip("/")
        except KeyError:
            return []
        return sorted(t.name for t in sub.trees)

    def read_blob(self, blob_id: str) -> bytes:
        kept = self.objects.kept_blob(blob_id)
        if kept is not None:
            return kept
        return bytes(self.repo.odb.stream(bytes.fromhex(blob_id)).read())

    def log(
        self,
        relpath: str | None = None,
        max_count: int | None = None,
        follow: bool = True,
        start: str | None = None,
    ) -> list[CommitInfo]:
        """Commits touching ``relpath`` (a file, following its renames unless ``follow`` is
        False; a folder needs False) or all commits, newest first; from the full commit id
        ``start`` and older, or from HEAD. A file that began as a copy of another (the same
        or nearly the same text: an answer given twice, a note copied into another tenant)
        has its history begin there: the other file's commits are not its own."""
        return list(self.iter_log(relpath, max_count, follow, start))

    def iter_log(
        self,
        relpath: str | None = None,
        max_count: int | None = None,
        follow: bool = True,
        start: str | None = None,
    ) -> Generator[CommitInfo, None, None]:
        """The commits of :meth:`log`, each as soon as git has written it: a caller that
        stops early stops git too, which then has walked no further back than needed."""
        if self.head() is None:
            return
        proc = subprocess.Popen(
            _log_args(relpath, max_count, follow, start),
            cwd=self.root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        try:
            rest = b""
            while chunk := cast(BufferedReader, proc.stdout).read1(_LOG_CHUNK):
                *records, rest = (rest + chunk).split(b"\x1e")
                for record in records:
                    if record:
                        info, status = _commit_info(record, relpath)
                        yield info
                        # git's --follow takes copies for renames: where this file was made
                        # as a copy of another that stays, its own history begins.
                        if relpath and follow and status.startswith("C"):
                            return
            if rest:
                yield _commit_info(rest, relpath)[0]
            err = proc.stderr.read()
            if proc.wait() != 0:
                raise StorageError(f"git log failed: {err.decode(errors='replace').strip()}")
        finally:
            if proc.poll() is None:  # the caller stopped early: git need not go on
                proc.kill()
                proc.wait()
            proc.stdout.close()
            proc.stderr.close()

    def diff(self, old: str, new: str, relpath_old: str, relpath_new: str | None = None) -> str:
        """Unified diff of a file between two revisions (paths may differ after a rename)."""
        relpath_new = relpath_new or relpath_old
        a = self.read_bytes(relpath_old, old).decode("utf-8", "replace").splitlines(True)
        b = self.read_bytes(relpath_new, new).decode("utf-8", "replace").splitlines(True)
        return "".join(
            difflib.unified_diff(a, b, f"{old[:10]}:{relpath_old}", f"{new[:10]}:{relpath_new}")
        )

    def changed_paths(self, old: str, new: str, prefix: str) -> list[tuple[str, str, str | None]]:
        """``(status, path, new_path)`` between two commits below ``prefix``; renames are
        reported as ``("R", old_path, new_path)``."""
        # -z: NUL-separated fields and names as they are (git quotes non-ASCII names otherwise).
        out = self.repo.git.diff("--name-status", "-z", "-M", "--no-color", old, new, "--", prefix)
        fields = out.split("\0")
        changes: list[tuple[str, str, str | None]] = []
        pos = 0
        while pos < len(fields) and fields[pos]:
            status = fields[pos][0]
            if status in ("R", "C"):
                changes.append((status, fields[pos + 1], fields[pos + 2]))
                pos += 3
            else:
                changes.append((status, fields[pos + 1], None))
                pos += 2
        return changes


def _log_args(
    relpath: str | None, max_count: int | None, follow: bool, start: str | None
) -> list[str]:
    """The ``git log`` command of :meth:`KnowledgeBase.iter_log`."""
    # Literal pathspecs: a note named 'notes/[ab].md' is that file, not a pattern that
    # matches 'notes/a.md' too. -z: file names as they are (not quoted, as git quotes
    # non-ASCII names otherwise).
    args = [GIT, "--literal-pathspecs", "log", _LOG_FORMAT, "--name-status", "-z"]
    if max_count:
        args.append(f"-n{max_count}")
    if start is not None:
        if not _SHA_FULL.fullmatch(start):
            raise ValidationError(f"{start!r} is not a full commit id", "start")
        args.append(start)
    if relpath:
        args += ["--follow", "--", relpath] if follow else ["--", relpath]
    return args


def _commit_info(record: bytes, relpath: str | None) -> tuple[CommitInfo, str]:
    """One commit of ``git log`` in :data:`_LOG_FORMAT` with its changes (``--name-status
    -z``), and the status of the first change (``M``, ``A``, ``R100``, ``C075``...): the
    commit's path is that change's (the new path of a rename or copy), given for a ``relpath``."""
    sha, date, author, message, names = record.decode("utf-8", "replace").split("\x1f")
    fields = names.removeprefix("\0").removeprefix("\n").split("\0")
    status, path = "", None
    if len(fields) >= 2 and fields[0]:
        status = fields[0]
        path = fields[2] if status[:1] in ("R", "C") and len(fields) >= 3 else fields[1]
    return CommitInfo(sha, date, author, message.strip(), path if relpath else None), status


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value
