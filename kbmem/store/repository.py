"""The knowledge base: one git repository, one writer at a time, readers never blocked.

A commit is built from HEAD's tree and exactly the paths kbmem wrote (blobs, trees and the
commit object are written in-process; no index is involved), so a user's own staged or
unstaged changes never enter a kbmem commit, and HEAD moves by one compare-and-swap (``git
update-ref``): a crash leaves the old commit or the new one. Files are written with a temp
file and ``os.replace``, so none is ever half written, and a journal under ``.kbmem/`` lets the
next writer put back the work-tree files of a write that died before its commit.
"""

from __future__ import annotations

import difflib
import errno
import fcntl
import hashlib
import logging
import os
import re
import secrets
import shutil
import stat
import subprocess
import threading
import time
import zlib
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import git
from git.exc import BadName, GitCommandError, InvalidGitRepositoryError, NoSuchPathError
from git.refs.symbolic import SymbolicReference

from kbmem.config import Settings, load_settings
from kbmem.errors import LockTimeout, NotFound, StorageError, UncommittedChanges, ValidationError

log = logging.getLogger("kbmem")

STATE_DIR = ".kbmem"
KBMEM_NAME = "kbmem"
KBMEM_EMAIL = "kbmem@localhost"
TREE_MODE = b"40000"
_SHA_FULL = re.compile(r"[0-9a-f]{40}")
# One commit of git log: a record separator, then its fields (the message may hold newlines).
_LOG_FORMAT = "--format=%x1e%H%x1f%aI%x1f%an%x1f%B%x1f"
GIT = git.Git.GIT_PYTHON_GIT_EXECUTABLE or "git"
_UNKNOWN = object()
RESET_PATHS = [GIT, "--literal-pathspecs", "reset", "-q"]
# A file is written as a temp file beside it, then moved over it: ".<name>.kbmem-<8 hex>.tmp".
# A writer killed on the way leaves its temp files until the next writer removes them (see
# _recover); git is told never to show them (see TEMP_EXCLUDE), and kbmem removes no other.
TEMP_FILE = re.compile(r"\.(?P<target>.+)\.kbmem-[0-9a-f]{8}\.tmp")
TEMP_EXCLUDE = ".*.kbmem-????????.tmp"


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    date: str  # ISO 8601, author date
    author: str
    message: str
    path: str | None = None  # the file's path in that commit (it may have been renamed since)


def flock_until(fd: int, deadline: float, cancel: threading.Event | None = None) -> bool:
    """Lock ``fd`` exclusively, polling until ``deadline`` (or until ``cancel`` is set); False
    when it could not."""
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
        if time.monotonic() >= deadline or (cancel is not None and cancel.is_set()):
            return False
        time.sleep(0.005)


def lock_timeout(root: Path, timeout: float) -> LockTimeout:
    """The error of a writer that waited ``timeout`` seconds for the lock of ``root``, the
    wait written as set (3 s, 0.5 s: never rounded to 0)."""
    return LockTimeout(
        f"another kbmem process has held {root} for over {timeout:g} s; "
        "try again when it has finished"
    )


def _flock(fd: int, deadline: float, timeout: float, root: Path) -> None:
    """Lock ``fd`` exclusively, polling until ``deadline`` (then LockTimeout)."""
    if not flock_until(fd, deadline):
        raise lock_timeout(root, timeout)


def _temp_name(name: str) -> str:
    """The name of a temp file that will replace the file ``name`` (see TEMP_FILE)."""
    return f".{name}.kbmem-{secrets.token_hex(4)}.tmp"


def _remove_temp_files(path: Path) -> None:
    """Delete the temp files that :func:`atomic_write` of ``path`` may have left behind when
    its process was killed: only kbmem's own (see TEMP_FILE), never a file of the user's
    that looks alike (``.notes.md.backup.tmp``)."""
    with suppress(FileNotFoundError, NotADirectoryError):
        for entry in os.scandir(path.parent):
            found = TEMP_FILE.fullmatch(entry.name)
            if found and found["target"] == path.name:
                with suppress(FileNotFoundError):
                    os.unlink(entry.path)


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


def _temp_beside(path: Path, data: bytes) -> tuple[int, str]:
    """A temp file next to ``path`` holding ``data`` with the mode ``path`` has (or a new
    file's): ``(open descriptor, temp path)``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)  # keep an executable bit, for one
    except FileNotFoundError:
        mode = 0o666 & ~_UMASK  # what open() would have given a new file
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    while True:
        tmp = str(path.parent / _temp_name(path.name))
        try:
            fd = os.open(tmp, flags, 0o600)
            break
        except FileExistsError:
            continue
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BaseException:
        os.close(fd)
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return fd, tmp


def atomic_write(path: Path, data: bytes, durable: bool = True) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half
    (``durable`` also flushes it to disk before it replaces the old one)."""
    fd, tmp = _temp_beside(path, data)
    try:
        if durable:
            os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


class _StagedFiles:
    """A commit's files written beside their targets and flushed to disk in parallel; then
    each moved into place (or all thrown away). Deletions happen when they are moved."""

    def __init__(self, root: Path, writes: Mapping[str, bytes | None], pool: ThreadPoolExecutor):
        self._temps: list[tuple[str, Path]] = []
        self._deletes: list[Path] = []
        self._flushes: list[Future[None]] = []
        self._fds: list[int] = []
        try:
            for relpath, data in writes.items():
                path = root / relpath
                if data is None:
                    self._deletes.append(path)
                    continue
                fd, tmp = _temp_beside(path, data)
                self._fds.append(fd)
                self._temps.append((tmp, path))
                self._flushes.append(pool.submit(os.fsync, fd))
        except BaseException:
            self.discard()
            raise

    def _close(self) -> None:
        wait(self._flushes)
        fds, self._fds = self._fds, []  # each descriptor is closed once
        for fd in fds:
            with suppress(OSError):
                os.close(fd)

    def discard(self) -> None:
        self._close()
        for tmp, _path in self._temps:
            with suppress(FileNotFoundError):
                os.unlink(tmp)

    def finish(self) -> None:
        try:
            for flush in self._flushes:
                flush.result()
        except BaseException:
            self.discard()
            raise
        self._close()
        for tmp, path in self._temps:
            os.replace(tmp, path)
        for path in self._deletes:
            with suppress(FileNotFoundError):
                path.unlink()


class KnowledgeBase:
    """A knowledge base rooted at a git work tree."""

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
        self._exclude_temp_files()
        self._local = threading.local()
        self._lock_depth = 0
        self._lock_file: int | None = None
        self._thread_lock = threading.RLock()
        # Objects never change, so what we read or wrote can be kept: trees, the tree of each
        # commit, and the blobs of the last commit (what the memorizer reads back next).
        self._trees: dict[bytes, dict[bytes, tuple[bytes, bytes]]] = {}
        self._commit_trees: dict[str, bytes] = {}
        self._blobs: dict[str, bytes] = {}
        self._flush_pool: ThreadPoolExecutor | None = None
        self._objects_dir = os.path.join(self._main_repo.common_dir, "objects")
        self._object_dirs: set[str] = set()

    def _exclude_temp_files(self) -> None:
        """Make git ignore kbmem's temp files (``.git/info/exclude``, the repository's own
        list, never shared by a push): a writer killed mid-write leaves them until the next
        write, and ``git status`` must not show them meanwhile. The user's lines are kept."""
        exclude = Path(self._main_repo.common_dir) / "info" / "exclude"
        try:
            current = exclude.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            current = ""
        except OSError as exc:
            log.debug("cannot read %s: %s", exclude, exc)
            return
        if TEMP_EXCLUDE in current.splitlines():
            return
        lines = "" if not current or current.endswith("\n") else "\n"
        lines += f"# kbmem: temp files of a write in progress, or cut short\n{TEMP_EXCLUDE}\n"
        try:
            exclude.parent.mkdir(exist_ok=True)
            with exclude.open("a", encoding="utf-8") as handle:
                handle.write(lines)
        except OSError as exc:  # a repository kbmem may only read
            log.debug("cannot write %s: %s", exclude, exc)

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

    def head(self) -> str | None:
        """The commit HEAD points at, or None before the first commit."""
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

    def _object_at(self, relpath: str, commit: str) -> tuple[str, str] | None:
        """``(id, type)`` of the object at ``relpath`` in ``commit``: from the trees already
        known when they cover the path, else one round trip to ``git cat-file``."""
        if not relpath or "\n" in relpath or "\x00" in relpath:
            return None
        known = self._known_object_at(relpath, commit)
        if known is not _UNKNOWN:
            return known  # type: ignore[return-value]
        try:
            sha, kind, _size = self.repo.git.get_object_header(f"{commit}:{relpath}")
        except ValueError:
            return None
        return _text(sha), _text(kind)

    def _known_object_at(self, relpath: str, commit: str) -> object:
        tree = self._commit_trees.get(commit)
        parts = relpath.encode().split(b"/")
        for depth, part in enumerate(parts):
            entries = self._trees.get(tree) if tree is not None else None
            if entries is None:
                return _UNKNOWN
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
        return {item.path: item.hexsha for item in sub.traverse() if item.type == "blob"}

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
        kept = self._blobs.get(blob_id)
        if kept is not None:
            return kept
        return self.repo.odb.stream(bytes.fromhex(blob_id)).read()

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
    ) -> Iterator[CommitInfo]:
        """The commits of :meth:`log`, each as soon as git has written it: a caller that
        stops early stops git too, which then has walked no further back than needed."""
        if self.head() is None:
            return
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
        proc = subprocess.Popen(
            args,
            cwd=self.root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        try:
            rest = b""
            while chunk := proc.stdout.read1(1 << 16):
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

    # -- writing ----------------------------------------------------------------------------

    def _take_write_lock(self, deadline: float, timeout: float) -> int:
        """The write lock's descriptor, locked. Writers queue at a turnstile (a second lock held
        only while waiting for the first): a writer that releases the lock and wants it again
        must wait behind the one already waiting, so two busy writers take turns instead of
        one starving the other."""
        turnstile = os.open(self.state_dir / "write.queue", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fd = os.open(self.state_dir / "write.lock", os.O_RDWR | os.O_CREAT, 0o644)
            try:
                _flock(turnstile, deadline, timeout, self.root)
                _flock(fd, deadline, timeout, self.root)
            except BaseException:
                os.close(fd)
                raise
        finally:
            os.close(turnstile)  # closing releases the turnstile
        return fd

    @contextmanager
    def write_lock(self, timeout: float | None = None) -> Iterator[None]:
        """Hold the knowledge base's single-writer lock (re-entrant within a process)."""
        timeout = float(self.settings.data["git"]["lock_timeout_s"] if timeout is None else timeout)
        with self._thread_lock:
            if self._lock_depth == 0:
                fd = self._take_write_lock(time.monotonic() + timeout, timeout)
                self._lock_file = fd
                try:
                    self._recover()
                except BaseException:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    os.close(fd)
                    self._lock_file = None
                    raise
            self._lock_depth += 1
            try:
                yield
            finally:
                self._lock_depth -= 1
                if self._lock_depth == 0 and self._lock_file is not None:
                    fcntl.flock(self._lock_file, fcntl.LOCK_UN)
                    os.close(self._lock_file)
                    self._lock_file = None

    def commit_files(
        self,
        writes: Mapping[str, bytes | None],
        message: str,
        trailers: Mapping[str, str] | None = None,
        date: str | None = None,
    ) -> str | None:
        """Write ``writes`` (``None`` deletes) into the work tree and commit exactly those
        paths. Returns the new commit id, or None when nothing changed (no empty commits)."""
        for relpath in writes:
            self._check_relpath(relpath)
        when = _git_date(date)
        with self.write_lock():
            self._refuse_uncommitted(writes)
            paths = sorted(writes)
            # The journal names the paths about to change; if we die before HEAD moves, the
            # next writer puts them back as HEAD has them (see _recover).
            atomic_write(self._journal, "\n".join(paths).encode(), durable=False)
            try:
                # Files reach the disk (in parallel) while the commit's objects are built.
                staged = _StagedFiles(self.root, writes, self._flusher())
                try:
                    commit = self._build_commit(writes, message, trailers or {}, when)
                except BaseException:
                    staged.discard()
                    raise
                staged.finish()
                sha = self._swap_head(commit, paths, message) if commit else None
            except BaseException:
                # No commit: put the work tree back as HEAD has it (the journal stays if
                # even that fails, for the next writer to finish).
                with suppress(Exception):
                    self._recover()
                raise
            self._journal.unlink()
            return sha

    def _refuse_uncommitted(self, writes: Mapping[str, bytes | None]) -> None:
        """Raise UncommittedChanges when a work-tree file kbmem is about to replace or delete
        holds something HEAD does not: a user's uncommitted edit, or a file of theirs that was
        never committed. A file that already holds what kbmem writes is no loss."""
        head = self.head()
        suspects = []
        for relpath, data in writes.items():
            try:
                current = (self.root / relpath).read_bytes()
            except (FileNotFoundError, NotADirectoryError):
                continue  # nothing there to lose
            except IsADirectoryError:
                suspects.append((relpath, None))
                continue
            if current == data:
                continue
            found = self._object_at(relpath, head) if head else None  # head: no resolve
            committed = found[0] if found and found[1] == "blob" else None
            if committed is None:
                suspects.append((relpath, None))
            elif hashlib.sha1(b"blob %d\x00%s" % (len(current), current)).hexdigest() != committed:
                suspects.append((relpath, committed))
        # Same bytes as HEAD is the common case and needs no git; a file that differs may
        # still be clean once git's checkout filters (core.autocrlf, ...) are applied.
        tracked = [p for p, blob in suspects if blob is not None]
        if tracked:
            diff = [GIT, "--literal-pathspecs", "diff", "--no-ext-diff", "--name-only", "-z"]
            done = subprocess.run(
                [*diff, "HEAD", "--", *tracked],
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                capture_output=True,
            )
            if done.returncode != 0:
                raise StorageError(f"git diff failed: {done.stderr.decode(errors='replace')}")
            modified = set(done.stdout.decode("utf-8", "surrogateescape").split("\0"))
            suspects = [(p, blob) for p, blob in suspects if blob is None or p in modified]
        if suspects:
            names = ", ".join(sorted(p for p, _blob in suspects))
            raise UncommittedChanges(
                f"{names}: changed in the work tree but not committed, and kbmem would "
                "overwrite it; commit it (git commit) or set it aside (git stash), then try again"
            )

    def _flusher(self) -> ThreadPoolExecutor:
        if self._flush_pool is None:
            self._flush_pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="kbmem-fsync")
        return self._flush_pool

    def _check_relpath(self, relpath: str) -> None:
        parts = relpath.split("/")
        if (
            not relpath
            or relpath.startswith("/")
            or any(p in ("", ".", "..") for p in parts)
            or parts[0] in (".git", STATE_DIR)
            or "\x00" in relpath
            or "\n" in relpath
        ):
            raise ValidationError(f"{relpath!r} is not a path kbmem may write", "path")

    @property
    def _journal(self) -> Path:
        return self.state_dir / "pending-write"

    def _recover(self) -> None:
        """Undo the work-tree half of a write that died before its commit: the journal's
        paths are put back as HEAD has them (deleted when HEAD has none)."""
        try:
            paths = [p for p in self._journal.read_text().split("\n") if p]
        except FileNotFoundError:
            return
        head = self.head()
        for relpath in list(paths):
            try:
                self._check_relpath(relpath)
            except ValidationError:
                log.warning("ignoring %r in %s", relpath, self._journal)
                paths.remove(relpath)
                continue
            _remove_temp_files(self.root / relpath)
            blob = self.blob_id(relpath, head) if head else None
            if blob is None:
                with suppress(FileNotFoundError):
                    (self.root / relpath).unlink()
            else:
                atomic_write(self.root / relpath, self.read_blob(blob))
        if head and paths:
            self._refresh_user_index(paths)
        self._journal.unlink()
        log.warning("recovered from an interrupted write of %d path(s)", len(paths))

    # -- building commits without an index -------------------------------------------------
    # Blobs, trees and the commit are written as loose objects in-process, exactly as git
    # writes them; only the compare-and-swap of HEAD and the refresh of the user's index run
    # git itself. That keeps a commit to two git processes.

    def _write_object(self, kind: bytes, data: bytes, keep: bool = False) -> bytes:
        """Store one object (if new) and return its binary id; ``keep`` remembers a blob's
        bytes until the next commit is built."""
        raw = b"%s %d\x00%s" % (kind, len(data), data)
        binsha = hashlib.sha1(raw).digest()
        hexsha = binsha.hex()
        if keep:
            self._blobs[hexsha] = data
        folder = os.path.join(self._objects_dir, hexsha[:2])
        target = os.path.join(folder, hexsha[2:])
        if os.path.exists(target):
            return binsha
        if folder not in self._object_dirs:
            os.makedirs(folder, exist_ok=True)
            self._object_dirs.add(folder)
        # git's own name for object temp files: fsck and gc know to ignore and clean them.
        tmp = os.path.join(folder, f"tmp_obj_{os.getpid()}_{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(zlib.compress(raw, 1))
            os.replace(tmp, target)
        except BaseException:
            with suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        return binsha

    def _tree_entries(self, binsha: bytes | None) -> dict[bytes, tuple[bytes, bytes]]:
        """``{name: (mode, binsha)}`` of a tree object (empty for None)."""
        if binsha is None:
            return {}
        cached = self._trees.get(binsha)
        if cached is not None:
            return dict(cached)
        data = self.repo.odb.stream(binsha).read()
        entries: dict[bytes, tuple[bytes, bytes]] = {}
        pos = 0
        while pos < len(data):
            space = data.index(b" ", pos)
            nul = data.index(b"\x00", space)
            entries[data[space + 1 : nul]] = (data[pos:space], data[nul + 1 : nul + 21])
            pos = nul + 21
        self._trees[binsha] = entries
        return dict(entries)

    def _write_tree(self, entries: dict[bytes, tuple[bytes, bytes]]) -> bytes:
        # git orders entries by name, comparing a folder's name as if it ended in '/'.
        def key(name: bytes) -> bytes:
            return name + b"/" if entries[name][0] == TREE_MODE else name

        data = b"".join(
            b"%s %s\x00%s" % (entries[n][0], n, entries[n][1]) for n in sorted(entries, key=key)
        )
        binsha = self._write_object(b"tree", data)
        self._trees[binsha] = entries
        return binsha

    def _edit_tree(self, base: bytes | None, changes: dict[bytes, bytes | None]) -> bytes | None:
        """The tree ``base`` with ``changes`` (``{path: blob id or None}``) applied; None when
        the result is empty (git keeps no empty folders)."""
        entries = self._tree_entries(base)
        below: dict[bytes, dict[bytes, bytes | None]] = {}
        for path, blob in changes.items():
            head, sep, rest = path.partition(b"/")
            if sep:
                below.setdefault(head, {})[rest] = blob
            elif blob is None:
                entries.pop(head, None)
            else:
                old = entries.get(head)
                mode = old[0] if old and old[0] in (b"100644", b"100755") else b"100644"
                entries[head] = (mode, blob)
        for name, sub_changes in below.items():
            old = entries.get(name)
            sub = self._edit_tree(old[1] if old and old[0] == TREE_MODE else None, sub_changes)
            if sub is None:
                entries.pop(name, None)
            else:
                entries[name] = (TREE_MODE, sub)
        if not entries and base is not None:
            return None
        return self._write_tree(entries) if entries else None

    def _commit_tree(self, commit: str) -> bytes:
        tree = self._commit_trees.get(commit)
        if tree is None:
            data = self.repo.odb.stream(bytes.fromhex(commit)).read()
            assert data.startswith(b"tree ")
            tree = self._commit_trees[commit] = bytes.fromhex(data[5:45].decode())
        return tree

    def _build_commit(
        self,
        writes: Mapping[str, bytes | None],
        message: str,
        trailers: Mapping[str, str],
        when: str,
    ) -> tuple[str, str | None] | None:
        """Write the objects of a commit of ``writes`` on top of HEAD; ``(commit, parent)``,
        or None when the tree would not change."""
        parent = self.head()
        base = self._commit_tree(parent) if parent else None
        if len(self._trees) > 100_000:  # bound the caches of a long-running process
            self._trees.clear()
            self._commit_trees.clear()
        self._blobs = {}
        changes = {
            path.encode(): None if data is None else self._write_object(b"blob", data, keep=True)
            for path, data in writes.items()
        }
        tree = self._edit_tree(base, changes)
        if tree is None:
            tree = self._write_tree({})
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
        sha = self._write_object(b"commit", "\n".join(lines).encode("utf-8")).hex()
        self._commit_trees[sha] = tree
        return sha, parent

    def _swap_head(self, commit: tuple[str, str | None], paths: list[str], message: str) -> str:
        sha, parent = commit
        # Compare-and-swap of HEAD: fails if anyone moved it since we read it. The user's index
        # is brought to the new commit meanwhile (two short git processes at once rather than
        # one after the other) and put back if the swap fails.
        reflog = f"kbmem: {message.splitlines()[0]}"
        swap = subprocess.Popen(
            [GIT, "update-ref", "-m", reflog, "HEAD", sha, parent or "0" * 40],
            cwd=self.root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            self._refresh_user_index(paths, sha)
        finally:
            _out, err = swap.communicate()
        if swap.returncode != 0:
            self._refresh_user_index(paths)
            raise StorageError(
                f"git failed while committing: {err.decode(errors='replace').strip()}"
            )
        return sha

    def _refresh_user_index(self, paths: list[str], rev: str = "HEAD") -> None:
        """Make the user's index agree with ``rev`` (the new HEAD) for our paths, so that ``git
        status`` stays clean and a later ``git commit`` by hand cannot undo our change."""
        for _attempt in range(100):
            # Paths as literal names ('*' or ':' in a name is no pattern), passed on stdin.
            done = subprocess.run(
                [*RESET_PATHS, rev, "--pathspec-from-file=-", "--pathspec-file-nul"],
                cwd=self.root,
                input="\0".join(paths).encode(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            if done.returncode == 0:
                return
            err = done.stderr.decode(errors="replace").strip()
            if "index.lock" not in err:
                raise StorageError(f"git reset failed: {err}")
            time.sleep(0.05)
        log.warning(
            "the git index stayed locked by another git command; 'git status' may show "
            "kbmem's last commit as staged changes until 'git reset -q HEAD -- %s'",
            " ".join(paths),
        )


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


def _git_date(date: str | None) -> str:
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
