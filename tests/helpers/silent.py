"""Model servers that are slow on purpose, as real peers on loopback: a TCP server that
accepts connections and never answers (what a model server looks like while it hangs: loading
a model, stuck on a long prompt, a proxy that lost its upstream), and an OpenAI-compatible
endpoint that takes its time over every answer (a large model on a small machine). Neither
stands in for a model's judgement: the one counts connections, the other says a fixed line."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


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


class SlowModel:
    """``POST /v1/chat/completions`` answered with ``answer`` after ``delay`` seconds. Keeps the
    messages of every request; ``asked`` is set when a request arrives, ``answered`` when an
    answer has gone out."""

    def __init__(self, answer: str, delay: float) -> None:
        self.answer = answer
        self.delay = delay
        self.prompts: list[list[dict[str, Any]]] = []
        self.asked = threading.Event()
        self.answered = threading.Event()
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                model.prompts.append(body["messages"])
                model.asked.set()
                time.sleep(model.delay)
                reply = json.dumps(model.completion(body.get("model", "slow"))).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)
                model.answered.set()

            def log_message(self, *args: object) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.api_base = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def completion(self, model: str) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{len(self.prompts)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": self.answer},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def slow_model(answer: str, delay: float) -> Iterator[SlowModel]:
    server = SlowModel(answer, delay)
    try:
        yield server
    finally:
        server.close()
