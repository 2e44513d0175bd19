"""A tenant's pages as committed in git: read at any revision, history, diffs, checks."""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
from collections import OrderedDict
from collections.abc import Generator, Iterator
from dataclasses import dataclass

from kbmem.errors import NotFound, PageFormatError, ValidationError
from kbmem.ids import check_tenant, page_id_for, page_relpath
from kbmem.store.pages import Page, parse_page
from kbmem.store.repository import CommitInfo, KnowledgeBase

log = logging.getLogger("kbmem")
LISTINGS_KEPT = 4  # commits whose page listing a store keeps (see PageStore.files)


def tenant_prefix(tenant: str) -> str:
    return f"tenants/{check_tenant(tenant)}/"


def path_at(kb: KnowledgeBase, path: str, commit: str, versions: list[CommitInfo]) -> str:
    """The name a file that is ``path`` now had at ``commit``, given its ``versions`` (its
    history, newest first, following renames): ``path`` when a file by that name was there,
    else the newest of its earlier names that was. One object lookup per name it had, not
    one per version."""
    for version in versions:
        if version.sha == commit and version.path:
            return version.path  # a version names its own path
    if not versions or kb.blob_id(path, commit) is not None:
        return path
    names = dict.fromkeys(v.path for v in versions if v.path and v.path != path)
    return next((name for name in names if kb.blob_id(name, commit) is not None), path)


def tenant_exists(kb: KnowledgeBase, tenant: str) -> bool:
    """Whether anything (a page, a session record, a chat turn) is committed for ``tenant``
    at HEAD: a tenant comes into being with its first commit, not before."""
    return kb.has_path(tenant_prefix(tenant))


def tenant_names(kb: KnowledgeBase) -> list[str]:
    """The tenants that exist at HEAD, sorted; a folder under ``tenants/`` whose name is not
    a tenant id (made by hand) is no tenant, and is skipped with a warning."""
    out = []
    for name in kb.folders("tenants"):
        try:
            out.append(check_tenant(name))
        except ValidationError as exc:
            log.warning("skipping tenants/%s: %s", name, exc)
    return out


@dataclass
class PageRecord:
    """One page as read from one commit."""

    page_id: str
    tenant: str
    path: str  # repository-relative
    blob: str
    commit: str
    text: str
    page: Page


@dataclass(frozen=True)
class StoredPage:
    """A page as stored at a commit: its record, or the error that its header gave."""

    path: str
    commit: str
    text: str
    record: PageRecord | None
    error: PageFormatError | None

    @property
    def problem(self) -> str | None:
        """What is wrong with the header, naming the file; None when it reads."""
        return f"{self.path}: {self.error.problem}" if self.error else None


class PageStore:
    def __init__(self, kb: KnowledgeBase, tenant: str):
        self.kb = kb
        self.tenant = check_tenant(tenant)
        self.prefix = tenant_prefix(tenant)
        self._listings: OrderedDict[str, dict[str, tuple[str, str]]] = OrderedDict()
        self._lock = threading.Lock()

    def path_of(self, page_id: str) -> str:
        return self.prefix + page_relpath(page_id)

    def page_id_of(self, path: str) -> str | None:
        if not path.startswith(self.prefix):
            return None
        return page_id_for(path[len(self.prefix) :])

    def files(self, rev: str = "HEAD") -> dict[str, tuple[str, str]]:
        """``{page_id: (path, blob id)}`` of every page of the tenant at ``rev``. A commit's
        listing never changes, and walking its tree costs more than anything else a research
        request reads from git (every plan looks up the pages of a few sessions): the last
        few listings are kept, by commit id."""
        if self.kb.head() is None:
            return {}
        commit = self.kb.resolve(rev)
        with self._lock:
            found = self._listings.get(commit)
            if found is not None:
                self._listings.move_to_end(commit)
                return dict(found)
        out = {}
        for path, blob in self.kb.list_files(self.prefix, commit).items():
            page_id = self.page_id_of(path)
            if page_id:
                out[page_id] = (path, blob)
        with self._lock:
            self._listings[commit] = out
            while len(self._listings) > LISTINGS_KEPT:
                self._listings.popitem(last=False)
        return dict(out)

    def record(self, page_id: str, path: str, blob: str, commit: str) -> PageRecord:
        """The page ``page_id``, stored at ``path`` as ``blob`` in ``commit`` (as
        :meth:`files` lists it); PageFormatError when its header cannot be read."""
        text = self.kb.read_blob(blob).decode("utf-8", "replace")
        return PageRecord(
            page_id,
            self.tenant,
            path,
            blob,
            commit,
            text,
            parse_page(text, f"{self.tenant}:{page_id}"),
        )

    def locate(self, page_id: str, rev: str = "HEAD", follow: bool = False) -> tuple[str, str, str]:
        """``(path, blob id, commit)`` of the page at ``rev``; with ``follow``, under the name
        it had there when it has been renamed since (as :meth:`history` lists its versions).
        NotFound when this tenant has no such page there."""
        path = self.path_of(page_id)
        commit = self.kb.resolve(rev)
        blob = self.kb.blob_id(path, commit)
        if blob is None and follow:
            path = path_at(self.kb, path, commit, self.kb.log(path))
            blob = self.kb.blob_id(path, commit)
        if blob is None:
            raise NotFound(f"no page {page_id!r} in tenant {self.tenant!r} at {commit[:10]}")
        return path, blob, commit

    def read(self, page_id: str, rev: str = "HEAD", follow: bool = False) -> PageRecord:
        """The page at ``rev`` (see :meth:`locate`); PageFormatError when its header cannot
        be read."""
        return self.record(page_id, *self.locate(page_id, rev, follow))

    def read_stored(self, page_id: str, rev: str = "HEAD", follow: bool = False) -> StoredPage:
        """The page at ``rev`` as stored, its header readable or not (see :meth:`locate`): for
        a person, or a client, that must see a page to repair its header by hand."""
        path, blob, commit = self.locate(page_id, rev, follow)
        try:
            record = self.record(page_id, path, blob, commit)
        except PageFormatError as exc:
            text = self.kb.read_blob(blob).decode("utf-8", "replace")
            return StoredPage(path, commit, text, None, exc)
        return StoredPage(path, commit, record.text, record, None)

    def iter_pages(self, rev: str = "HEAD") -> Iterator[PageRecord]:
        """Every readable page; a page with a broken header is skipped with a warning."""
        if self.kb.head() is None:
            return
        commit = self.kb.resolve(rev)
        for page_id, (path, blob) in sorted(self.files(commit).items()):
            try:
                yield self.record(page_id, path, blob, commit)
            except PageFormatError as exc:
                log.warning("skipping %s: %s", path, exc)

    def check(self, rev: str = "HEAD") -> list[tuple[str, str]]:
        """``(path, problem)`` for every page whose header cannot be read."""
        problems: list[tuple[str, str]] = []
        if self.kb.head() is None:
            return problems
        commit = self.kb.resolve(rev)
        for page_id, (path, blob) in sorted(self.files(commit).items()):
            try:
                self.record(page_id, path, blob, commit)
            except PageFormatError as exc:
                problems.append((path, exc.problem))
        return problems

    def iter_versions(
        self, path: str, start: str | None = None
    ) -> Generator[CommitInfo, None, None]:
        """Commits of the tenant's file ``path``, newest first (from the full commit id
        ``start`` and older when given), following its renames within the tenant: a file
        moved here from another tenant's folder begins its history with the move (what it
        was before is the other tenant's to read). Git reads no further than is taken."""
        with contextlib.closing(self.kb.iter_log(path, start=start)) as walk:
            for commit in walk:
                if commit.path is not None and not commit.path.startswith(self.prefix):
                    return
                yield commit

    def versions(self, path: str) -> list[CommitInfo]:
        """Every commit of the tenant's file ``path`` (see iter_versions)."""
        return list(self.iter_versions(path))

    def history(
        self, page_id: str, max_count: int | None = None, before: str | None = None
    ) -> list[CommitInfo]:
        """The page's commits, newest first, following its renames within the tenant: at
        most ``max_count``, and only those older than ``before`` (the full id of one of them)
        when given; git reads no further back than that. NotFound when the tenant never had
        the page, and a ValidationError naming ``before`` when it is not a commit of the
        page's history."""
        path = self.path_of(page_id)
        if before is None:
            commits = _take(self.iter_versions(path), max_count)
            if not commits:
                raise NotFound(f"no page {page_id!r} in tenant {self.tenant!r}")
            return commits
        # From the cursor on, under the name the page had there: its name now, unless it was
        # renamed since (then the cursor's commit does not come first).
        count = None if max_count is None else max_count + 1
        commits = _take(self.iter_versions(path, start=before), count)
        if commits and commits[0].sha == before:
            return commits[1:]
        # Renamed since: the walk from the top follows the rename down to the cursor, and
        # stops the window after it.
        with contextlib.closing(self.iter_versions(path)) as walk:
            had_versions = False
            for commit in walk:
                if commit.sha == before:
                    return list(itertools.islice(walk, max_count))
                had_versions = True
        if not had_versions:
            raise NotFound(f"no page {page_id!r} in tenant {self.tenant!r}")
        raise ValidationError("is not a commit of this page's history", "before")

    def diff(self, page_id: str, old: str, new: str = "HEAD") -> str:
        """Unified diff of the page between two revisions, following a rename: each side
        read under the name the page had at that revision. NotFound naming the page when it
        did not exist at one of them."""
        versions = self.history(page_id)
        current = self.path_of(page_id)
        old_sha, new_sha = self.kb.resolve(old), self.kb.resolve(new)
        paths = []
        for sha in (old_sha, new_sha):
            path = path_at(self.kb, current, sha, versions)
            if self.kb.blob_id(path, sha) is None:
                raise NotFound(f"no page {page_id!r} in tenant {self.tenant!r} at {sha[:10]}")
            paths.append(path)
        return self.kb.diff(old_sha, new_sha, *paths)


def _take(commits: Generator[CommitInfo, None, None], count: int | None) -> list[CommitInfo]:
    """The first ``count`` of ``commits`` (all with None), and git stopped after them."""
    with contextlib.closing(commits):
        return list(itertools.islice(commits, count))
