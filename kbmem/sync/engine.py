"""One sync with a git remote: fetch, integrate, push; and the remote's settings.

Credentials are git's business: the remote's URL lives in the repository's git config and git
asks its credential helpers or ssh for the rest. kbmem refuses a URL that carries a password,
never prompts (``GIT_TERMINAL_PROMPT=0``: a sync in the background must not hang on a prompt),
and names a remote by its URL with any user part cut off.

Integrating never rewrites history and never force-pushes. A remote ahead is fast-forwarded
to; two histories that met are joined by a merge commit built in-process by the rules of
:mod:`kbmem.sync.merge`; HEAD moves by compare-and-swap (``git update-ref <new> <old>``) under
the knowledge base's write lock, with the work tree following through the same journal a
commit uses, so a kill -9 at any moment leaves the old HEAD or the new one and the next writer
puts the work tree right. A push the remote refuses because another writer got there first
is fetched again and merged again. Local commits no rule can join are kept under
``refs/kbmem/rescue/`` and reported.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import subprocess
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from kbmem.errors import KbmemError, NotFound, StorageError, ValidationError
from kbmem.ids import page_id_for
from kbmem.store.files import atomic_write
from kbmem.store.objects import KBMEM_EMAIL, KBMEM_NAME
from kbmem.store.repository import KnowledgeBase
from kbmem.store.transaction import GIT
from kbmem.sync.merge import CONFLICT_COPY, MergePlan, Unmergeable, changed_blobs, plan_merge

log = logging.getLogger("kbmem")

RESCUE_PREFIX = "refs/kbmem/rescue/"
STATE_FILE = "sync-state.json"
NETWORK_TIMEOUT_S = 120
MAX_ROUNDS = 8  # fetch-merge-push rounds lost to other writers before giving up for now
_ZERO = "0" * 40


class SyncOffline(StorageError):
    """The remote could not be reached: work goes on locally; a later sync catches up."""


def _git_env() -> dict[str, str]:
    # A copy for the child only (os.environ is never changed): no prompt may block a sync.
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": ""}


def git_run(
    kb: KnowledgeBase, *args: str, timeout: float = NETWORK_TIMEOUT_S, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run git in the knowledge base (never through a shell); StorageError when ``check``
    and it fails, SyncOffline when it runs out of time."""
    try:
        done = subprocess.run(
            [GIT, *args],
            cwd=kb.root,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=_git_env(),
        )
    except subprocess.TimeoutExpired as exc:
        raise SyncOffline(f"git {args[0]} gave no answer within {timeout:g} s") from exc
    if check and done.returncode != 0:
        raise StorageError(f"git {args[0]} failed: {redact_text(done.stderr.strip())}")
    return done


def redact(url: str) -> str:
    """``url`` without a user name or password (what kbmem shows and logs of a remote)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    if parts.scheme and "@" in parts.netloc:
        return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    return url


_URL_IN_TEXT = re.compile(r"([a-z][a-z0-9+.-]*://)[^/@\s]*@", re.IGNORECASE)


def redact_text(text: str) -> str:
    """Git's messages with any ``user:password@`` of a URL cut out."""
    return _URL_IN_TEXT.sub(r"\1", text)


def check_url(url: str) -> str:
    """A remote URL kbmem accepts: no password in it (git's credential helpers and ssh keep
    those), no option-like or multi-line text."""
    if not url or url.startswith("-") or any(c in url for c in "\n\r\0"):
        raise ValidationError(f"{redact(url)!r} is not a git URL", "URL")
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise ValidationError(f"{redact(url)!r} is not a git URL ({exc})", "URL") from exc
    if parts.scheme and ":" in parts.netloc.rpartition("@")[0]:
        raise ValidationError(
            "holds a password; kbmem keeps none in its files: give the URL without it and let "
            "git's credential helper (git config credential.helper) or ssh supply it",
            "URL",
        )
    return url


# -- the remote -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Remote:
    name: str
    branch: str
    url: str | None  # redacted; None when git knows no such remote

    @property
    def tracking_ref(self) -> str:
        """The remote-tracking ref a fetch of this remote's branch updates."""
        return f"refs/remotes/{self.name}/{self.branch}"


def sync_settings(kb: KnowledgeBase) -> dict[str, Any]:
    return dict(kb.settings.section("sync"))


def current_branch(kb: KnowledgeBase) -> str:
    done = git_run(kb, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
    if done.returncode != 0:
        raise ValidationError(
            "HEAD is detached; check out a branch, or name one in kbmem.yaml (sync.branch)",
            "sync.branch",
        )
    return done.stdout.strip()


def remote_of(kb: KnowledgeBase) -> Remote:
    """The remote the settings name, with its URL as git knows it (redacted)."""
    settings = sync_settings(kb)
    name = settings["remote"]
    branch = settings["branch"] or current_branch(kb)
    done = git_run(kb, "config", "--get", f"remote.{name}.url", check=False)
    url = redact(done.stdout.strip()) if done.returncode == 0 else None
    return Remote(name, branch, url)


def add_remote(kb: KnowledgeBase, url: str, name: str = "origin") -> Remote:
    """Add a git remote (``git remote add``): its URL goes to the repository's git config."""
    from kbmem.ids import check_segment

    check_segment(name, "--name")
    check_url(url)
    done = git_run(kb, "remote", "add", name, url, check=False)
    if done.returncode != 0:
        if "already exists" in done.stderr:
            raise ValidationError(
                f"a remote named {name!r} exists already (git remote set-url to change it)",
                "--name",
            )
        raise StorageError(f"git remote add failed: {redact_text(done.stderr.strip())}")
    wanted = sync_settings(kb)["remote"]
    if wanted != name:
        log.warning("kbmem.yaml syncs with remote %r, not %r (set sync.remote)", wanted, name)
    branch = sync_settings(kb)["branch"] or current_branch(kb)
    return Remote(name, branch, redact(url))


# -- what moved -----------------------------------------------------------------------------


@dataclass
class Moved:
    """What one direction of a sync carried: sessions, notes, chat turns (and other files)."""

    sessions: int = 0
    notes: int = 0
    turns: int = 0
    files: int = 0

    def __bool__(self) -> bool:
        return bool(self.files)


_SESSION_RECORD = re.compile(r"tenants/[^/]+/sessions/[^/]+\.yaml")
_TURN = re.compile(r"(tenants/[^/]+/turns/[^/]+/[0-9]+)/")


def moved_between(kb: KnowledgeBase, old: str | None, new: str | None) -> Moved:
    """What changed from ``old`` to ``new``, counted as a person counts it."""
    if new is None or old == new:
        return Moved()
    paths = changed_blobs(kb, old, new)
    turns = set()
    moved = Moved(files=len(paths))
    for path in paths:
        if _SESSION_RECORD.fullmatch(path):
            moved.sessions += 1
        elif m := _TURN.match(path):
            turns.add(m[1])
        elif path.startswith("tenants/"):
            relpath = path.split("/", 2)[2] if path.count("/") >= 2 else ""
            page = page_id_for(relpath)
            if page is not None and page.endswith(".md"):
                moved.notes += 1
    moved.turns = len(turns)
    return moved


# -- a sync ---------------------------------------------------------------------------------


@dataclass
class SyncResult:
    """What a sync did: ``action`` is up-to-date, pushed, fast-forward, merged or rescued
    (with pushed saying whether our commits reached the remote)."""

    remote: str
    branch: str
    action: str = "up-to-date"
    head: str | None = None
    pushed: bool = False
    moved_in: Moved = field(default_factory=Moved)
    moved_out: Moved = field(default_factory=Moved)
    sessions: list[dict[str, str]] = field(default_factory=list)  # sessions decided by rule
    conflicts: list[str] = field(default_factory=list)  # paths kept in two versions
    kept_edits: list[str] = field(default_factory=list)
    rescued: list[str] = field(default_factory=list)  # refs/kbmem/rescue/... made
    rounds: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _rev(kb: KnowledgeBase, ref: str) -> str | None:
    done = git_run(kb, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def _is_ancestor(kb: KnowledgeBase, old: str, new: str) -> bool:
    done = git_run(kb, "merge-base", "--is-ancestor", old, new, check=False)
    if done.returncode not in (0, 1):
        raise StorageError(f"git merge-base failed: {done.stderr.strip()}")
    return done.returncode == 0


def _merge_base(kb: KnowledgeBase, a: str, b: str) -> str | None:
    done = git_run(kb, "merge-base", a, b, check=False)
    return done.stdout.strip() or None if done.returncode == 0 else None


def _offline_or_failed(what: str, stderr: str) -> StorageError:
    text = redact_text(stderr.strip())
    return SyncOffline(f"git {what}: the remote cannot be reached now ({text})")


def fetch(kb: KnowledgeBase, remote: Remote) -> str | None:
    """Fetch the remote's branch into ``refs/remotes/<remote>/<branch>``; its commit, or None
    when the remote has no such branch yet."""
    if remote.url is None:
        raise NotFound(
            f"git knows no remote {remote.name!r}; add one with 'kbmem remote add URL'"
            + ("" if remote.name == "origin" else f" --name {remote.name}")
        )
    tracking = remote.tracking_ref
    done = git_run(
        kb,
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        remote.name,
        f"+refs/heads/{remote.branch}:{tracking}",
        check=False,
    )
    if done.returncode != 0:
        if "couldn't find remote ref" in done.stderr:
            return None
        raise _offline_or_failed("fetch", done.stderr)
    return _rev(kb, tracking)


def _push(kb: KnowledgeBase, remote: Remote, sha: str) -> bool:
    """Push ``sha`` to the remote branch, never forced: True when it landed, False when the
    remote moved on meanwhile (fetch and merge again)."""
    done = git_run(
        kb,
        "push",
        "--porcelain",
        "--no-verify",
        remote.name,
        f"{sha}:refs/heads/{remote.branch}",
        check=False,
    )
    if done.returncode == 0:
        git_run(kb, "update-ref", remote.tracking_ref, sha)
        return True
    text = done.stdout + done.stderr
    if "[rejected]" in text or "non-fast-forward" in text or "fetch first" in text:
        return False
    # The server's own compare-and-swap lost to a push that landed a moment earlier.
    if "cannot lock ref" in text or "(failed to update ref)" in text:
        return False
    if "[remote rejected]" in text:
        raise StorageError(f"the remote refused the push: {redact_text(text.strip())}")
    raise _offline_or_failed("push", done.stderr)


def _move_head(kb: KnowledgeBase, old: str | None, new: str, reflog: str) -> bool:
    """Move HEAD from ``old`` to ``new``, the work tree following; False (nothing done) when
    HEAD is no longer ``old`` (a local writer committed meanwhile)."""
    changes = changed_blobs(kb, old, new)
    files = {p: None if b is None else kb.read_blob(b) for p, b in changes.items()}
    return kb.advance_head(old, new, files, reflog)


def _merge_commit(
    kb: KnowledgeBase, ours: str, theirs: str, remote: Remote
) -> tuple[str, MergePlan]:
    base = _merge_base(kb, ours, theirs)
    plan = plan_merge(kb, base, ours, theirs)
    changes = {p.encode(): None if b is None else bytes.fromhex(b) for p, b in plan.changes.items()}
    tree = kb.objects.edit_tree(kb.objects.commit_tree(ours), changes) or kb.objects.write_tree({})
    incoming = moved_between(kb, base, theirs)
    body = (
        f"Sync: join {remote.name}/{remote.branch} ({incoming.sessions} sessions, "
        f"{incoming.notes} notes, {incoming.turns} turns in)\n\n"
        "Joined by kbmem's deterministic rules (docs/sync.md); nothing was merged by hand.\n"
    )
    trailers = [f"Kbmem-Sync-Session: {s.tenant}/{s.session_id} {s.winner}" for s in plan.sessions]
    trailers += [f"Kbmem-Sync-Conflict: {p}" for p in plan.conflicts]
    if trailers:
        body += "\n" + "\n".join(trailers) + "\n"
    now = datetime.now().astimezone()
    offset = now.strftime("%z")
    ident = f"{KBMEM_NAME} <{KBMEM_EMAIL}> {int(now.timestamp())} {offset}"
    lines = [f"tree {tree.hex()}", f"parent {ours}", f"parent {theirs}"]
    lines += [f"author {ident}", f"committer {ident}", "", body]
    sha = kb.objects.write(b"commit", "\n".join(lines).encode("utf-8")).hex()
    return sha, plan


def _rescue(kb: KnowledgeBase, sha: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    ref = f"{RESCUE_PREFIX}{stamp}-{sha[:12]}"
    git_run(kb, "update-ref", ref, sha, _ZERO)
    return ref


def sync(kb: KnowledgeBase) -> SyncResult:
    """Fetch, integrate and push once (see the module's docstring); the state file records
    the outcome for :func:`kbmem.sync.background.sync_status`. Raises SyncOffline when the
    remote cannot be reached (nothing local changes)."""
    started = time.perf_counter()
    remote = remote_of(kb)
    result = SyncResult(remote.name, remote.branch)
    try:
        _sync(kb, remote, result)
    except KbmemError as exc:
        record_state(kb, error=str(exc))
        raise
    result.seconds = round(time.perf_counter() - started, 3)
    record_state(kb, error=None, result=result)
    return result


def _sync(kb: KnowledgeBase, remote: Remote, result: SyncResult) -> None:
    first_ours = kb.head()
    first_theirs: str | None = None
    for round_ in range(1, MAX_ROUNDS + 1):
        result.rounds = round_
        if round_ > 1:
            # Writers that keep losing pushes to each other step apart at random.
            time.sleep(random.uniform(0, 0.1 * round_))
        theirs = fetch(kb, remote)
        if round_ == 1:
            first_theirs = theirs
        ours = kb.head()
        if ours is None and theirs is None:
            return
        if ours == theirs:
            break
        joined = _join(kb, remote, ours, theirs, result)
        if joined is None:
            continue  # a local commit landed meanwhile: the round again
        ours, to_push = joined
        if not to_push:
            break
        if _push(kb, remote, ours):
            result.pushed = True
            if result.action == "up-to-date":
                result.action = "pushed"
            break
    else:
        raise SyncOffline(
            f"{remote.name} kept moving: {MAX_ROUNDS} pushes in a row lost to other writers; "
            "the next sync tries again"
        )
    result.head = kb.head()
    result.moved_in = moved_between(kb, first_ours, result.head)
    result.moved_out = moved_between(kb, first_theirs, result.head) if result.pushed else Moved()


def _join(
    kb: KnowledgeBase, remote: Remote, ours: str | None, theirs: str | None, result: SyncResult
) -> tuple[str, bool] | None:
    """Bring ``theirs`` into HEAD (``ours``): a fast-forward, a merge by the rules, or a
    rescue. The new HEAD and whether it holds commits the remote has not; None, with nothing
    done, when a local commit moved HEAD meanwhile."""
    if theirs is not None and (ours is None or _is_ancestor(kb, ours, theirs)):
        if not _move_head(kb, ours, theirs, f"sync: fast-forward to {remote.name}"):
            return None
        result.action = "fast-forward" if result.action == "up-to-date" else result.action
        return theirs, False
    assert ours is not None
    if theirs is None or _is_ancestor(kb, theirs, ours):
        return ours, True
    try:
        merged, plan = _merge_commit(kb, ours, theirs, remote)
    except Unmergeable as exc:
        ref = _rescue(kb, ours)
        log.warning("sync: %s; local commits kept under %s", exc, ref)
        result.rescued.append(ref)
        if not _move_head(kb, ours, theirs, f"sync: take {remote.name}, rescue {ref}"):
            return None
        result.action = "rescued"
        return theirs, False
    if not _move_head(kb, ours, merged, f"sync: join {remote.name}/{remote.branch}"):
        return None
    result.action = "merged"
    result.sessions += [
        {"tenant": s.tenant, "session": s.session_id, "kept": s.winner, "why": s.reason}
        for s in plan.sessions
    ]
    result.conflicts += plan.conflicts
    result.kept_edits += plan.kept_edits
    return merged, True


def integrate_fetched(kb: KnowledgeBase, remote: Remote | None = None) -> SyncResult:
    """Join what the last fetch brought (the remote-tracking ref) into HEAD, with no network:
    what a writer does before it writes when the remote is known to be ahead, so that its
    commit lands on the newest memory. The push waits for the next sync."""
    started = time.perf_counter()
    remote = remote or remote_of(kb)
    result = SyncResult(remote.name, remote.branch)
    first_ours = kb.head()
    theirs = tracking_commit(kb, remote)
    for _attempt in range(3):
        ours = kb.head()
        if theirs is None or ours == theirs or (ours and _is_ancestor(kb, theirs, ours)):
            break
        if _join(kb, remote, ours, theirs, result) is not None:
            break
    result.head = kb.head()
    result.moved_in = moved_between(kb, first_ours, result.head)
    result.seconds = round(time.perf_counter() - started, 3)
    return result


def tracking_commit(kb: KnowledgeBase, remote: Remote) -> str | None:
    """The commit the last fetch saw on the remote (``refs/remotes/<remote>/<branch>``)."""
    return _rev(kb, remote.tracking_ref)


# -- the state file (shared by every process of this knowledge base) ------------------------


def state_path(kb: KnowledgeBase) -> Path:
    return kb.state_dir / STATE_FILE


def read_state(kb: KnowledgeBase) -> dict[str, Any]:
    try:
        data = json.loads(state_path(kb).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record_state(kb: KnowledgeBase, error: str | None, result: SyncResult | None = None) -> None:
    state = read_state(kb)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    state["last_attempt"] = now
    state["last_error"] = error
    if error is None:
        state["last_sync"] = now
        state["failures"] = 0
    else:
        state["failures"] = int(state.get("failures") or 0) + 1
    if result is not None:
        state["last_result"] = result.to_dict()
        if result.rescued:
            state["rescued"] = sorted({*state.get("rescued", []), *result.rescued})
    try:
        atomic_write(state_path(kb), json.dumps(state, indent=1).encode(), durable=False)
    except OSError as exc:
        log.debug("cannot write %s: %s", state_path(kb), exc)


def conflict_copies(kb: KnowledgeBase) -> list[str]:
    """The files kept beside a page edited on two machines (``*.sync-conflict-*``) at HEAD:
    each marks a page to look at."""
    if kb.head() is None:
        return []
    done = git_run(kb, "ls-tree", "-r", "-z", "--name-only", "HEAD", "--", "tenants")
    return sorted(p for p in done.stdout.split("\0") if p and CONFLICT_COPY.search(p))
