"""The TUI as a person runs it: a real process on a pseudo-terminal, typed into, then its
terminal closed under it (a terminal window closed, an ssh connection dropped)."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import threading
import time

from kbgit import ROOT, git

from kbmem.agent.journal import journal_dir, read_journal
from kbmem.store import KnowledgeBase

TENANT = "default"


class Terminal:
    """A pseudo-terminal of 40×140 running ``command``, what it shows collected as it comes."""

    def __init__(self, command: list[str]):
        self.leader, follower = pty.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
        env = {**os.environ, "TERM": "xterm-256color"}
        self.proc = subprocess.Popen(
            command, stdin=follower, stdout=follower, stderr=follower, cwd=ROOT, env=env
        )
        os.close(follower)
        self.shown = bytearray()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.leader, 65536)
            except OSError:  # closed
                return
            if not chunk:
                return
            self.shown.extend(chunk)

    def wait_for(self, text: bytes, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.shown:
            assert self.proc.poll() is None, f"the app exited: {bytes(self.shown[-2000:])!r}"
            assert time.monotonic() < deadline, f"never showed {text!r}"
            time.sleep(0.1)

    def type(self, text: str) -> None:
        os.write(self.leader, text.encode())

    def close(self) -> None:
        os.close(self.leader)


def test_a_closed_terminal_commits_the_chat_and_ends_the_app(example_kb: KnowledgeBase) -> None:
    """Its terminal gone, the app used to stay behind with one core at 100% (Textual's input
    thread reads the end of input over and over) and its turns uncommitted, wherever no
    SIGHUP reached it; here the process is not in the terminal's session, so none does."""
    root = example_kb.root
    before = git(root, "rev-list", "--count", "HEAD")
    term = Terminal([sys.executable, "-m", "tui", "--kb", str(root)])
    try:
        term.wait_for(b"embedder ready")
        term.type("Who owns the tide-window scheduler?\r")
        term.wait_for(b"turns pending 1/5")
        term.close()
        # No clock limit: without the fix the app never ends.
        code = term.proc.wait(timeout=120)
    finally:
        if term.proc.poll() is None:
            term.proc.kill()
            term.proc.wait()
    assert code == 0
    # The turn was committed on the way out, and nothing is left in the journal.
    assert int(git(root, "rev-list", "--count", "HEAD")) == int(before) + 1
    message = git(root, "log", "-1", "--format=%B")
    assert "Kbmem-Turns: " in message and " 1-1" in message, message
    journals = list((journal_dir(example_kb) / TENANT).glob("*.jsonl"))
    assert not any(read_journal(path).pending for path in journals)


def test_a_terminal_is_gone_only_once_its_other_end_has_closed() -> None:
    from tui.app import terminal_gone

    leader, follower = pty.openpty()
    try:
        assert not terminal_gone(follower)
        os.close(leader)
        leader = -1
        assert terminal_gone(follower)
    finally:
        os.close(follower)
        if leader >= 0:
            os.close(leader)
