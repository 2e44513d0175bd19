"""A TCP server that accepts connections and never answers: what a model server looks like
while it hangs (loading a model, stuck on a long prompt, a proxy that lost its upstream). It is
a real peer on loopback, not a stand-in for a model: it only counts the connections made."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class SilentServer:
    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.api_base = f"http://127.0.0.1:{self.port}/v1"
        self.connections = 0
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _addr = self._sock.accept()
            except OSError:
                return  # closed
            self.connections += 1
            self._held.append(conn)  # kept open, never read from nor written to

    def close(self) -> None:
        self._sock.close()
        for conn in self._held:
            conn.close()


@contextmanager
def silent_server() -> Iterator[SilentServer]:
    server = SilentServer()
    try:
        yield server
    finally:
        server.close()
