"""The TUI as a person runs it: a real process on a pseudo-terminal, typed into, then its
terminal closed under it (a terminal window closed, an ssh connection dropped)."""

from __future__ import annotations

import fcntl
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import threading
import time

import pytest
from helpers.kbgit import ROOT, git

from kbmem.agent.journal import journal_dir, read_journal
from kbmem.store.repository import KnowledgeBase

TENANT = "default"
SIZE = struct.pack("HHHH", 40, 140, 0, 0)
# How Textual takes the terminal over, and gives it back.
ENTER_ALTERNATE_SCREEN, LEAVE_ALTERNATE_SCREEN = b"\x1b[?1049h", b"\x1b[?1049l"


class Terminal:
    """A pseudo-terminal of 40×140 running ``command``, what it shows collected as it comes.

    ``controlling``: the terminal is the process's controlling terminal (it leads a session
    of its own, as a shell in a terminal window does), so closing it sends the process
    SIGHUP; otherwise the process only finds its input ended."""

    def __init__(self, command: list[str], controlling: bool):
        env = {**os.environ, "TERM": "xterm-256color"}
        if controlling:
            pid, self.leader = pty.fork()
            if pid == 0:  # the child: exec at once (the parent has threads)
                os.chdir(ROOT)
                os.execve(command[0], command, env)
            fcntl.ioctl(self.leader, termios.TIOCSWINSZ, SIZE)
            self.pid = pid
            self._proc: subprocess.Popen[bytes] | None = None
        else:
            self.leader, follower = pty.openpty()
            fcntl.ioctl(follower, termios.TIOCSWINSZ, SIZE)
            proc = subprocess.Popen(
                command, stdin=follower, stdout=follower, stderr=follower, cwd=ROOT, env=env
            )
            os.close(follower)
            self.pid = proc.pid
            self._proc = proc
        self.status: int | None = None
        self.shown = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.leader, 65536)
            except OSError:  # closed
                return
            if not chunk:
                return
            self.shown.extend(chunk)

    def running(self) -> bool:
        if self.status is None and self._proc is not None:
            self.status = self._proc.poll()
        elif self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
        return self.status is None

    def wait(self, timeout: float) -> int:
        """The exit code (negative: the signal that ended it); fails after ``timeout``."""
        deadline = time.monotonic() + timeout
        while self.running():
            assert time.monotonic() < deadline, f"still running {timeout:.0f} s later"
            time.sleep(0.1)
        assert self.status is not None
        return self.status

    def wait_for(self, text: bytes, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.shown:
            assert self.running(), f"the app exited: {bytes(self.shown[-2000:])!r}"
            assert time.monotonic() < deadline, f"never showed {text!r}"
            time.sleep(0.1)

    def read_to_the_end(self) -> bytes:
        """All the terminal showed: once the process has ended, its side of the terminal is
        closed and the reading ends (EIO)."""
        self._reader.join(60)
        assert not self._reader.is_alive(), "the terminal's output never ended"
        return bytes(self.shown)

    def type(self, text: str) -> None:
        os.write(self.leader, text.encode())

    def close(self) -> None:
        os.close(self.leader)

    def kill(self) -> None:
        if self.running():
            os.kill(self.pid, signal.SIGKILL)
            self.wait(timeout=60)


@pytest.mark.parametrize(
    ("controlling", "how"),
    [(False, "close"), (True, "close"), (False, "sighup")],
    ids=["input-ends", "sighup", "sighup-by-hand"],
)
def test_a_closed_terminal_commits_the_chat_and_ends_the_app(
    example_kb: KnowledgeBase, controlling: bool, how: str
) -> None:
    """Its terminal gone, the app used to stay behind with one core at 100% (Textual's input
    thread reads the end of input over and over) and its turns uncommitted, where no SIGHUP
    reached it; and where one did, it was killed with its turns uncommitted. A SIGHUP sent by
    hand, the terminal still there, ends the app the same way, and leaves the terminal as it
    found it."""
    root = example_kb.root
    before = int(git(root, "rev-list", "--count", "HEAD"))
    term = Terminal([sys.executable, "-m", "tui", "--kb", str(root)], controlling)
    try:
        term.wait_for(b"embedder ready")
        term.type("Who owns the tide-window scheduler?\r")
        term.wait_for(b"turns pending 1/5")
        if how == "sighup":
            os.kill(term.pid, signal.SIGHUP)
        else:
            term.close()
        # No clock limit: without the fix the app never ends, or ends killed.
        code = term.wait(timeout=120)
        if how == "sighup":
            shown = term.read_to_the_end()
            assert shown.rfind(LEAVE_ALTERNATE_SCREEN) > shown.rfind(ENTER_ALTERNATE_SCREEN)
            term.close()
    finally:
        term.kill()
    assert code == 0
    # The turn was committed on the way out, and nothing is left in the journal.
    assert int(git(root, "rev-list", "--count", "HEAD")) == before + 1
    message = git(root, "log", "-1", "--format=%B")
    assert "Kbmem-Turns: " in message and " 1-1" in message, message
    journals = list((journal_dir(example_kb) / TENANT).glob("*.jsonl"))
    assert not any(read_journal(path).pending for path in journals)


def test_a_terminal_is_gone_only_once_its_other_end_has_closed() -> None:
    from kbmem_tui.shutdown import terminal_gone

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
