"""The knowledge base: one git repository, one writer at a time, readers never blocked.

Commits are built in a private index (``GIT_INDEX_FILE`` under ``.kbmem/``) from exactly the
paths kbmem wrote, so a user's own staged or unstaged changes never enter a kbmem commit, and
HEAD moves by one compare-and-swap (``git update-ref``): a crash leaves the old commit or the
new one. Files are written with a temp file and ``os.replace``, so none is ever half written.
"""

from __future__ import annotations

import difflib
import errno
import fcntl
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import git
from git.exc import BadName, GitCommandError, InvalidGitRepositoryError, NoSuchPathError

from .config import Settings, load_settings
from .errors import LockTimeout, NotFound, StorageError, ValidationError

STATE_DIR = ".kbmem"
KBMEM_AUTHOR = {
    "GIT_AUTHOR_NAME": "kbmem",
    "GIT_AUTHOR_EMAIL": "kbmem@localhost",
    "GIT_COMMITTER_NAME": "kbmem",
    "GIT_COMMITTER_EMAIL": "kbmem@localhost",
}
TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "kb_template"


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    date: str  # ISO 8601, author date
    author: str
    message: str
    path: str | None = None  # the file's path in that commit (it may have been renamed since)


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _read_text(path: Path) -> str:
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return ""


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
        self._local = threading.local()
        self._lock_depth = 0
        self._lock_file: int | None = None
        self._thread_lock = threading.RLock()

    # -- creation ---------------------------------------------------------------------------

    @classmethod
    def create(cls, target: Path, template: Path = TEMPLATE_DIR) -> KnowledgeBase:
        """Make a new, empty knowledge base at ``target`` with the template's settings files
        (the example history is added by :func:`kbmem.template.seed`)."""
        target = Path(target)
        if target.exists() and any(target.iterdir()):
            raise ValidationError(f"{target} exists and is not empty", "DIR")
        target.mkdir(parents=True, exist_ok=True)
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
        try:
            return self.repo.head.commit.hexsha
        except ValueError:  # unborn branch: no commit yet
            return None

    def resolve(self, rev: str) -> str:
        """The full commit id of ``rev``, or NotFound."""
        if not rev or rev.startswith("-") or "\x00" in rev:
            raise ValidationError(f"{rev!r} is not a revision", "rev")
        try:
            return self.repo.commit(rev).hexsha
        except (BadName, ValueError, GitCommandError) as exc:
            raise NotFound(f"no such revision: {rev}") from exc

    def read_bytes(self, relpath: str, rev: str = "HEAD") -> bytes:
        """The file at ``relpath`` as committed in ``rev``."""
        sha = self.resolve(rev)
        try:
            blob = self.repo.commit(sha).tree / relpath
        except KeyError as exc:
            raise NotFound(f"{relpath} does not exist at {sha[:10]}") from exc
        if blob.type != "blob":
            raise NotFound(f"{relpath} is not a file at {sha[:10]}")
        return blob.data_stream.read()

    def blob_id(self, relpath: str, rev: str = "HEAD") -> str | None:
        try:
            return (self.repo.commit(self.resolve(rev)).tree / relpath).hexsha
        except (KeyError, NotFound):
            return None

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

    def read_blob(self, blob_id: str) -> bytes:
        return self.repo.odb.stream(bytes.fromhex(blob_id)).read()

    def log(self, relpath: str | None = None, max_count: int | None = None) -> list[CommitInfo]:
        """Commits touching ``relpath`` (following renames) or all commits, newest first."""
        if self.head() is None:
            return []
        args = ["--format=%x1e%H%x1f%aI%x1f%an%x1f%B%x1f", "--name-only"]
        if max_count:
            args.append(f"-n{max_count}")
        if relpath:
            args += ["--follow", "--", relpath]
        out = self.repo.git.log(*args)
        entries = []
        for record in out.split("\x1e")[1:]:
            sha, date, author, message, names = record.split("\x1f")
            files = [n for n in names.strip().splitlines() if n]
            entries.append(
                CommitInfo(
                    sha, date, author, message.strip(), files[0] if relpath and files else None
                )
            )
        return entries

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
        out = self.repo.git.diff("--name-status", "-M", "--no-color", old, new, "--", prefix)
        changes: list[tuple[str, str, str | None]] = []
        for line in out.splitlines():
            parts = line.split("\t")
            status = parts[0][0]
            changes.append((status, parts[1], parts[2] if len(parts) > 2 else None))
        return changes

    # -- writing ----------------------------------------------------------------------------

    @contextmanager
    def write_lock(self, timeout: float | None = None) -> Iterator[None]:
        """Hold the knowledge base's single-writer lock (re-entrant within a process)."""
        timeout = float(self.settings.data["git"]["lock_timeout_s"] if timeout is None else timeout)
        with self._thread_lock:
            if self._lock_depth == 0:
                fd = os.open(self.state_dir / "write.lock", os.O_RDWR | os.O_CREAT, 0o644)
                deadline = time.monotonic() + timeout
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except OSError as exc:
                        if exc.errno not in (errno.EAGAIN, errno.EACCES):
                            os.close(fd)
                            raise
                        if time.monotonic() >= deadline:
                            os.close(fd)
                            raise LockTimeout(
                                f"another kbmem process has held {self.root} for over "
                                f"{timeout:.0f} s; try again when it has finished"
                            ) from None
                        time.sleep(0.02)
                self._lock_file = fd
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
        with self.write_lock():
            for relpath, data in writes.items():
                path = self.root / relpath
                if data is None:
                    with suppress(FileNotFoundError):
                        path.unlink()
                else:
                    atomic_write(path, data)
            return self._commit_paths(sorted(writes), message, trailers or {}, date)

    def _check_relpath(self, relpath: str) -> None:
        parts = relpath.split("/")
        if (
            not relpath
            or relpath.startswith("/")
            or any(p in ("", ".", "..") for p in parts)
            or parts[0] in (".git", STATE_DIR)
            or "\x00" in relpath
        ):
            raise ValidationError(f"{relpath!r} is not a path kbmem may write", "path")

    def _git_env(self, index: Path, date: str | None) -> dict[str, str]:
        env = {"GIT_INDEX_FILE": str(index), **KBMEM_AUTHOR}
        if date:
            env["GIT_AUTHOR_DATE"] = date
            env["GIT_COMMITTER_DATE"] = date
        return env

    def _commit_paths(
        self, paths: list[str], message: str, trailers: Mapping[str, str], date: str | None
    ) -> str | None:
        g = self.repo.git
        parent = self.head()
        # A private index, kept between commits: while HEAD has not moved under us it already
        # matches HEAD, and re-reading the whole tree into it can be skipped.
        index = self.state_dir / "commit-index"
        marker = self.state_dir / "commit-index.head"
        env = self._git_env(index, date)
        try:
            if not parent:
                g.read_tree("--empty", env=env)
            elif not index.exists() or _read_text(marker) != parent:
                g.read_tree(parent, env=env)
            # Adds the paths that exist, drops the ones that do not: exactly our writes.
            g.update_index("--add", "--remove", "--", *paths, env=env)
            tree = g.write_tree(env=env)
            if parent and tree == self.repo.commit(parent).tree.hexsha:
                return None
            body = message.rstrip() + "\n"
            if trailers:
                body += "\n" + "".join(f"{k}: {v}\n" for k, v in trailers.items())
            args = [tree, "-m", body] + (["-p", parent] if parent else [])
            sha = g.commit_tree(*args, env=env)
            # Compare-and-swap: fails if someone moved HEAD since we read it.
            g.update_ref("-m", f"kbmem: {message.splitlines()[0]}", "HEAD", sha, parent or "0" * 40)
            atomic_write(marker, sha.encode())
        except GitCommandError as exc:
            for stale in (index, marker):
                with suppress(FileNotFoundError):
                    stale.unlink()
            raise StorageError(f"git failed while committing: {exc.stderr.strip() or exc}") from exc
        self._refresh_user_index(paths)
        return sha

    def _refresh_user_index(self, paths: list[str]) -> None:
        """Make the user's index agree with the new HEAD for our paths, so that ``git status``
        stays clean and a later ``git commit`` by hand cannot undo our change."""
        for _attempt in range(50):
            try:
                self.repo.git.reset("-q", "HEAD", "--", *paths)
                return
            except GitCommandError as exc:
                if "index.lock" not in str(exc):
                    raise StorageError(f"git reset failed: {exc.stderr.strip()}") from exc
                time.sleep(0.05)
