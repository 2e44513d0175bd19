"""A real git server on loopback: ``git daemon`` serving one bare repository."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from helpers.kbgit import git


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class GitServer:
    """``git daemon`` serving one bare repository on 127.0.0.1; it can be stopped and
    started again on the same port (a remote that goes down and comes back)."""

    def __init__(self, base: Path):
        self.base = base
        self.port = _free_port()
        self.url = f"git://127.0.0.1:{self.port}/memory.git"
        subprocess.run(
            ["git", "init", "-q", "--bare", "-b", "main", str(base / "memory.git")], check=True
        )
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "git",
                "daemon",
                "--reuseaddr",
                "--enable=receive-pack",
                "--export-all",
                f"--base-path={self.base}",
                "--listen=127.0.0.1",
                f"--port={self.port}",
                str(self.base),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own group: stop() ends the daemon and its children
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("git daemon did not start")

    def stop(self) -> None:
        if self.proc is not None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
            self.proc = None

    def head(self) -> str:
        return git(self.base / "memory.git", "rev-parse", "main").strip()
