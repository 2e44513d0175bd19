"""Helpers for tests that look at knowledge bases with plain git, as a user would."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from kbmem.config import load_settings
from kbmem.store.repository import KnowledgeBase

ROOT = Path(__file__).resolve().parents[2]
LOCOMO = ROOT.parent / "shared" / "data" / "locomo"


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run git in ``root`` and return its output; fail the test on a non-zero exit."""
    done = subprocess.run(
        ["git", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, f"git {' '.join(args)} failed: {done.stderr}"
    return done.stdout


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def commit_count(root: Path) -> int:
    return int(git(root, "rev-list", "--count", "HEAD").strip())


def status(root: Path) -> str:
    """``git status --porcelain`` including untracked files."""
    return git(root, "status", "--porcelain", "--untracked-files=all")


def fsck(root: Path) -> str:
    """``git fsck --strict --full``; the test fails unless it is clean."""
    done = subprocess.run(
        ["git", "fsck", "--strict", "--full", "--no-dangling"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and not done.stderr.strip(), done.stdout + done.stderr
    return done.stdout


def plant_intervals(root: Path, turn_folder: str, intervals: list[dict[str, Any]]) -> None:
    """Replace the intervals of the turn's committed ``context_pack.yaml`` and commit that
    edit with plain git, as anyone who may push to the repository could."""
    pack_path = root / turn_folder / "context_pack.yaml"
    pack = yaml.safe_load(pack_path.read_text(encoding="utf-8"))
    pack["intervals"] = intervals
    pack_path.write_text(yaml.safe_dump(pack, sort_keys=False), encoding="utf-8")
    git(root, "commit", "-q", "-m", "Edit a turn's provenance by hand", "--", str(pack_path))


def commit_edit(root: Path, relpath: str, change: Callable[[bytes], bytes | None]) -> None:
    """Replace a committed file by ``change(its bytes)`` (None deletes it) and commit that
    with plain git, as anyone who may push to the repository could."""
    path = root / relpath
    new = change(path.read_bytes())
    if new is None:
        git(root, "rm", "-q", "--", relpath)
    else:
        path.write_bytes(new)
        git(root, "add", "--", relpath)
    git(root, "commit", "-q", "-m", f"Edit {relpath} by hand")


def session_trailers(root: Path) -> list[str]:
    """The ``Kbmem-Session`` trailer of every commit, newest first ('' when none)."""
    out = git(root, "log", "--format=%(trailers:key=Kbmem-Session,valueonly,separator=)%x1e")
    return [entry.strip() for entry in out.split("\x1e")[:-1]]


def kbmem(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run the real command line (``python -m kbmem.cli``) in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "kbmem.cli", *args],
        cwd=cwd or ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def summit_session(
    session_id: str | None,
    texts: list[str],
    tenant: str | None = "default",
    title: str = "",
    day: str = "2026-04-01",
    **extra: Any,
) -> dict[str, Any]:
    """A session in the Summit API shape, one turn per text, speakers alternating."""
    data: dict[str, Any] = {
        "turns": [
            {
                "role": "user" if n % 2 == 0 else "assistant",
                "content": text,
                "timestamp": f"{day}T10:{n // 60:02d}:{n % 60:02d}",
                "metadata": {"speaker": "Maya" if n % 2 == 0 else "Assistant"},
            }
            for n, text in enumerate(texts)
        ],
        **extra,
    }
    if tenant is not None:
        data["tenantId"] = tenant
    if session_id is not None:
        data["sessionId"] = session_id
    if title:
        data["title"] = title
    return data


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def run_on_terminal(command: list[str], timeout: float) -> tuple[int, str, bytes]:
    """Run ``command`` with its stderr on a pseudo-terminal of 100 columns (as a person at a
    terminal sees progress bars) and its stdout piped: exit code, stdout, what the terminal
    showed."""
    leader, follower = pty.openpty()
    # A new pty has no size, and tqdm would draw a bar of no width.
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=follower, text=True)
        out, _err = proc.communicate(timeout=timeout)
        os.close(follower)
        follower = -1
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: everything has been read
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    return proc.returncode, out, shown


def kb_with_page_tokens(kb: KnowledgeBase, tokens: int) -> KnowledgeBase:
    """The same knowledge base, its memorizer cutting pages at ``tokens`` tokens."""
    settings = load_settings(kb.root)
    settings.data["memorizer"]["page_tokens"] = tokens
    return KnowledgeBase(kb.root, settings)
