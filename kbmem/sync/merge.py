"""Joining two histories by rules, never by hand: the tree of a merge commit.

Both sides' changes since their merge base are taken; a path changed on one side only takes
that change. Where both sides changed a path differently:

* a session (its record ``sessions/<sid>.yaml`` and its pages ``pages/<sid>/``) is taken whole
  from the winning side: the higher ``memo_version``, then the greater ``content_sha256``, then
  the greater record blob id. The losing version stays in history (a parent of the merge);
* ``MEMORY.md`` is rebuilt from both sides' memo lines, one per session (the winner's line
  for a session both sides changed), rendered as the memorizer renders it;
* any other file (a note edited on both sides) keeps both versions: the greater blob id stays
  at the path, the other is written beside it as ``<name>.sync-conflict-<8 hex>.md``; a file
  edited on one side and deleted on the other stays, edited.

Every rule depends only on the contents of the two sides, never on which machine merges, so
two machines that merge the same histories build the same tree.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field

import yaml

from kbmem.errors import StorageError
from kbmem.memorize.memorizer import MEMORY_LINE, render_memory
from kbmem.store.pages import Loader
from kbmem.store.repository import KnowledgeBase
from kbmem.store.transaction import GIT

_SESSION_FILE = re.compile(
    r"tenants/(?P<t>[^/]+)/(?:sessions/(?P<rec>[^/]+)\.yaml|pages/(?P<pg>[^/]+)/[0-9]+\.md)"
)
_MEMORY = re.compile(r"tenants/(?P<t>[^/]+)/MEMORY\.md")
CONFLICT_COPY = re.compile(r"\.sync-conflict-[0-9a-f]{8}(?:\.md)?$")

# git knows the empty tree by this id without storing it: the "before" of a first commit.
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
# A path's content on one side: a blob id, or None when the side has no such file.
Blob = str | None


class Unmergeable(StorageError):
    """Two histories that no rule joins (a file on one side is a folder on the other)."""


@dataclass
class SessionWin:
    """A session both sides changed: whose version is kept."""

    tenant: str
    session_id: str
    winner: str  # "ours" | "theirs"
    reason: str


@dataclass
class MergePlan:
    """What a merge changes in our tree (``{path: blob id or None}``), and what it decided."""

    changes: dict[str, Blob] = field(default_factory=dict)
    sessions: list[SessionWin] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)  # paths kept in two versions
    kept_edits: list[str] = field(default_factory=list)  # edited on one side, deleted on other


def changed_blobs(kb: KnowledgeBase, old: str | None, new: str) -> dict[str, Blob]:
    """``{path: blob id at new, or None}`` of every file that differs between two commits
    (``old`` None: every file of ``new``)."""
    args = [GIT, "diff-tree", "-r", "-z", "--no-renames", "--no-commit-id"]
    args += [old or EMPTY_TREE, new]
    done = subprocess.run(args, cwd=kb.root, stdin=subprocess.DEVNULL, capture_output=True)
    if done.returncode != 0:
        raise StorageError(f"git diff-tree failed: {done.stderr.decode(errors='replace').strip()}")
    fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    out: dict[str, Blob] = {}
    for pos in range(0, len(fields) - 1, 2):
        meta, path = fields[pos], fields[pos + 1]
        if not meta.startswith(":"):
            break
        _mode_a, mode_b, _sha_a, sha_b, _status = meta[1:].split(" ")
        if mode_b == "160000":
            raise Unmergeable(f"{path} is a submodule; kbmem does not sync submodules")
        out[path] = None if set(sha_b) == {"0"} else sha_b
    return out


def _blob_at(kb: KnowledgeBase, path: str, commit: str | None) -> Blob:
    return kb.blob_id(path, commit) if commit else None


def _record(kb: KnowledgeBase, blob: Blob) -> dict[str, object]:
    if blob is None:
        return {}
    try:
        data = yaml.load(kb.read_blob(blob), Loader=Loader)
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def _session_key(kb: KnowledgeBase, blob: Blob) -> tuple[int, str, str]:
    record = _record(kb, blob)
    version = record.get("memo_version")
    number = version if isinstance(version, int) and not isinstance(version, bool) else 0
    return number, str(record.get("content_sha256") or ""), blob or ""


def _memory_entries(kb: KnowledgeBase, blob: Blob) -> dict[str, tuple[str, str, str]]:
    if blob is None:
        return {}
    text = kb.read_blob(blob).decode("utf-8", "replace")
    entries = {}
    for line in text.splitlines():
        if m := MEMORY_LINE.match(line):
            entries[m["sid"]] = (m["date"], m["sid"], m["memo"])
    return entries


def conflict_copy_path(path: str, blob: str) -> str:
    """Where the losing version of a file edited on both sides is kept: beside it."""
    stem, dot, ext = path.rpartition(".")
    if dot and "/" not in ext and ext == "md":
        return f"{stem}.sync-conflict-{blob[:8]}.md"
    return f"{path}.sync-conflict-{blob[:8]}"


def plan_merge(kb: KnowledgeBase, base: str | None, ours: str, theirs: str) -> MergePlan:
    """The changes that turn ``ours`` into the merge of ``ours`` and ``theirs``."""
    mine = changed_blobs(kb, base, ours)
    other = changed_blobs(kb, base, theirs)
    plan = MergePlan()
    both = {p for p in mine.keys() & other.keys() if mine[p] != other[p]}
    for path, blob in other.items():
        if path not in mine:
            plan.changes[path] = blob
    winners = _session_winners(kb, plan, both, mine, other, ours, theirs)
    _take_winners_files(kb, plan, winners, mine, other, base)
    _join_both_changed(kb, plan, winners, both, mine, other, base)
    _check_shapes(kb, ours, plan.changes)
    return plan


def _session_of(path: str) -> tuple[str, str] | None:
    m = _SESSION_FILE.fullmatch(path)
    return (m["t"], m["rec"] or m["pg"]) if m else None


def _session_winners(
    kb: KnowledgeBase,
    plan: MergePlan,
    both: set[str],
    mine: dict[str, Blob],
    other: dict[str, Blob],
    ours: str,
    theirs: str,
) -> dict[tuple[str, str], str]:
    """For each session both sides changed, the side whose version wins ("ours" or
    "theirs"), each decision recorded in ``plan.sessions``."""
    contested = {key for key in map(_session_of, both) if key is not None}
    winners: dict[tuple[str, str], str] = {}
    for tenant, sid in sorted(contested):
        record = f"tenants/{tenant}/sessions/{sid}.yaml"
        ours_key = _session_key(kb, mine.get(record, _blob_at(kb, record, ours)))
        theirs_key = _session_key(kb, other.get(record, _blob_at(kb, record, theirs)))
        side = "ours" if ours_key >= theirs_key else "theirs"
        winners[(tenant, sid)] = side
        won, lost = (ours_key, theirs_key) if side == "ours" else (theirs_key, ours_key)
        reason = (
            f"memo_version {won[0]} over {lost[0]}"
            if won[0] != lost[0]
            else "same memo_version; the greater content hash wins"
        )
        plan.sessions.append(SessionWin(tenant, sid, side, reason))
    return winners


def _take_winners_files(
    kb: KnowledgeBase,
    plan: MergePlan,
    winners: dict[tuple[str, str], str],
    mine: dict[str, Blob],
    other: dict[str, Blob],
    base: str | None,
) -> None:
    """Every file of a contested session as its winning side has it."""
    for path in sorted(mine.keys() | other.keys()):
        key = _session_of(path)
        if key not in winners:
            continue
        if winners[key] == "theirs":
            plan.changes[path] = other[path] if path in other else _blob_at(kb, path, base)
        elif path in other and path not in mine:
            plan.changes.pop(path, None)  # ours won: keep our file (the base's)


def _join_both_changed(
    kb: KnowledgeBase,
    plan: MergePlan,
    winners: dict[tuple[str, str], str],
    both: set[str],
    mine: dict[str, Blob],
    other: dict[str, Blob],
    base: str | None,
) -> None:
    """The other files both sides changed: MEMORY.md rebuilt, an edit kept over a deletion,
    and a note edited on both sides kept twice (the loser beside it, reported)."""
    for path in sorted(both):
        if _session_of(path) in winners:
            continue
        memory = _MEMORY.fullmatch(path)
        if memory:
            plan.changes[path] = _merged_memory(
                kb, memory["t"], _blob_at(kb, path, base), mine[path], other[path], winners
            )
            continue
        a, b = mine[path], other[path]
        if a is None or b is None:
            kept = a or b
            plan.kept_edits.append(path)
            if kept != a:
                plan.changes[path] = kept
            continue
        keep, copy = max(a, b), min(a, b)
        plan.conflicts.append(path)
        if keep != a:
            plan.changes[path] = keep
        plan.changes[conflict_copy_path(path, copy)] = copy


def _merged_memory(
    kb: KnowledgeBase,
    tenant: str,
    base: Blob,
    mine: Blob,
    other: Blob,
    winners: dict[tuple[str, str], str],
) -> str:
    """``MEMORY.md`` rebuilt from both sides: per session, the side that changed its line (the
    session's winner where both did; the greater line where no session record decides)."""
    b, o, t = (_memory_entries(kb, x) for x in (base, mine, other))
    entries = []
    for sid in sorted(b.keys() | o.keys() | t.keys()):
        ours_line, theirs_line, base_line = o.get(sid), t.get(sid), b.get(sid)
        if ours_line == theirs_line or theirs_line == base_line:
            chosen = ours_line
        elif ours_line == base_line:
            chosen = theirs_line
        elif (tenant, sid) in winners:
            chosen = ours_line if winners[(tenant, sid)] == "ours" else theirs_line
        else:
            chosen = max(x for x in (ours_line, theirs_line) if x is not None)
        if chosen is not None:
            entries.append(chosen)
    data = render_memory(tenant, entries).encode("utf-8")
    return kb.objects.write(b"blob", data).hex()


def _check_shapes(kb: KnowledgeBase, ours: str, changes: dict[str, Blob]) -> None:
    """Refuse a merge where a file of one side is a folder of the other."""
    added = {p for p, blob in changes.items() if blob is not None}
    folders = {p.rsplit("/", 1)[0] for p in added if "/" in p}
    for folder in folders:
        parts = folder.split("/")
        for depth in range(1, len(parts) + 1):
            prefix = "/".join(parts[:depth])
            if prefix in added or (prefix not in changes and kb.blob_id(prefix, ours)):
                raise Unmergeable(f"{prefix} is a file on one side and a folder on the other")
    for path in added:
        if kb.has_path(path, ours) and kb.blob_id(path, ours) is None:
            raise Unmergeable(f"{path} is a file on one side and a folder on the other")
