"""The one door to language models: litellm, with its network look-ups, telemetry and
callbacks off. Any litellm model string works (hosted APIs, Ollama, vLLM, a llama.cpp server
through ``openai/<name>`` and an ``api_base``)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import threading
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from kbmem.errors import LLMError, ModelUnreachable

_import_lock = threading.Lock()
_litellm: Any = None


def litellm_module() -> Any:
    """Import litellm lazily (it is slow to import) with its network look-ups switched off."""
    global _litellm
    with _import_lock:
        if _litellm is None:
            # Must be set before the import, or litellm fetches its cost map over the network.
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            os.environ.setdefault("LITELLM_TELEMETRY", "False")
            import litellm

            litellm.telemetry = False
            litellm.success_callback = []
            litellm.failure_callback = []
            litellm.callbacks = []
            litellm.suppress_debug_info = True
            litellm.drop_params = True
            _litellm = litellm
    return _litellm


@dataclass
class LLMConfig:
    model: str
    api_base: str | None = None
    timeout_s: float = 60
    retries: int = 2
    max_prompt_tokens: int = 6000

    @classmethod
    def from_settings(cls, settings: Any, model: str | None = None) -> LLMConfig | None:
        llm = settings.section("llm")
        chosen = model or llm["model"]
        if not chosen:
            return None
        return cls(
            chosen,
            llm["api_base"],
            float(llm["timeout_s"]),
            int(llm["retries"]),
            int(llm["max_prompt_tokens"]),
        )


def _call_kwargs(config: LLMConfig) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"model": config.model, "timeout": config.timeout_s}
    if config.api_base:
        kwargs["api_base"] = config.api_base
        if config.model.startswith("openai/"):
            # A local OpenAI-compatible server wants some key; never a real one from us.
            kwargs.setdefault("api_key", os.environ.get("OPENAI_API_KEY") or "sk-local")
    return kwargs


def complete(
    config: LLMConfig,
    messages: list[dict[str, Any]],
    *,
    max_tokens: int = 512,
    temperature: float = 0.0,
    json_mode: bool = False,
) -> str:
    """One chat completion; the text of the first choice. Raises LLMError on any failure."""
    litellm = litellm_module()
    kwargs = _call_kwargs(config)
    if json_mode:
        kwargs["response_format"] = {"type": "json_object"}
    try:
        response = litellm.completion(
            messages=messages,
            max_tokens=max_tokens,
            temperature=temperature,
            num_retries=0,
            **kwargs,
        )
    except Exception as exc:  # litellm raises many provider-specific types
        raise _failure(config, exc) from exc
    try:
        content = response.choices[0].message.content
    except (AttributeError, IndexError) as exc:
        raise LLMError(f"{config.model}: response without a message") from exc
    return content or ""


def stream_chat(
    config: LLMConfig,
    messages: list[dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None = None,
    tool_choice: str | dict[str, Any] | None = None,
    max_tokens: int = 1024,
    temperature: float = 0.0,
) -> ChatStream:
    """Stream a chat completion (with tools, when given; ``tool_choice`` as OpenAI takes it,
    e.g. ``{"type": "function", "function": {"name": "research"}}``): iterate the returned
    :class:`ChatStream` for litellm's chunks; its ``close()`` stops it from any thread. The
    request is sent when the first chunk is asked for."""
    kwargs = _call_kwargs(config)
    if tools:
        kwargs["tools"] = tools
        # litellm's MCP bridge would import the optional 'mcp' package for any call with
        # tools; our tools are plain functions.
        kwargs["_skip_mcp_handler"] = True
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
    request = dict(
        messages=messages,
        max_tokens=max_tokens,
        temperature=temperature,
        stream=True,
        num_retries=0,
        **kwargs,
    )
    return ChatStream(config, request)


class ChatStream:
    """A streamed chat completion: an iterator of litellm chunks (LLMError on failure) that
    ``close()`` ends from any thread.

    Closing shuts the connection down rather than just dropping it: a thread blocked reading
    the stream wakes at once (a socket's plain close does not wake it, on Linux), and the
    server sees the client leave and stops generating, instead of answering a stopped turn
    while the next request waits behind it. The connection is reached through the OpenAI
    client's stream under litellm's wrapper, which is what ``openai/<name>`` models (llama.cpp,
    vLLM, hosted OpenAI) stream through; for other providers, and before the server has sent
    its response headers, a close takes effect at the stream's next chunk.
    """

    def __init__(self, config: LLMConfig, request: dict[str, Any]):
        self._config = config
        self._request = request
        self._lock = threading.Lock()
        self._closed = False
        self._response: Any = None  # litellm's stream wrapper while the answer streams
        self._chunks = self._read()

    def __iter__(self) -> ChatStream:
        return self

    def __next__(self) -> Any:
        return next(self._chunks)

    def close(self) -> None:
        """Stop the stream (safe from any thread, and more than once)."""
        with self._lock:
            self._closed = True
            if self._response is not None:
                _hang_up(self._response)
        # A generator another thread is reading cannot be closed from here (ValueError); the
        # hang-up has woken that thread, and it ends the stream itself.
        with contextlib.suppress(ValueError):
            self._chunks.close()

    def _read(self) -> Generator[Any, None, None]:
        litellm = litellm_module()
        try:
            response = litellm.completion(**self._request)
        except Exception as exc:  # litellm raises many provider-specific types
            if self._closed:
                return
            raise _failure(self._config, exc) from exc
        with self._lock:
            self._response = response
            if self._closed:  # closed while the request was on its way
                _hang_up(response)
        try:
            for chunk in response:
                if self._closed:
                    return
                yield chunk
        except Exception as exc:
            if self._closed:
                return  # the hang-up's own error
            raise _failure(self._config, exc) from exc
        finally:
            with self._lock:
                self._response = None
            _release(response)


def _http_response(stream: Any) -> Any:
    """The httpx response under litellm's stream wrapper (the OpenAI client's stream keeps
    it), or None for providers that stream another way."""
    import httpx  # litellm's own dependency, imported with it

    response = getattr(getattr(stream, "completion_stream", None), "response", None)
    return response if isinstance(response, httpx.Response) else None


def _hang_up(stream: Any) -> None:
    """Shut down the connection a stream is still reading from (both ways: the reader wakes
    to an end of stream, and the server reads the client's end)."""
    response = _http_response(stream)
    if response is None or response.is_closed:
        return  # read to its end: the connection may be serving another request now
    network = response.extensions.get("network_stream")
    sock = network.get_extra_info("socket") if network is not None else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):  # already gone
            sock.shutdown(socket.SHUT_RDWR)


def _release(stream: Any) -> None:
    """Close the response (in the thread that read it: httpx responses are not thread-safe);
    a response that was not read to its end closes its connection."""
    close = getattr(getattr(stream, "completion_stream", None), "close", None)
    if callable(close):
        with contextlib.suppress(Exception):  # a broken connection may fail to close
            close()


def _failure(config: LLMConfig, exc: Exception) -> LLMError:
    """``exc`` as an LLMError naming the model; ModelUnreachable when it was the connection
    that failed or timed out rather than the model's answer."""
    kind = ModelUnreachable if unreachable(exc) else LLMError
    return kind(f"{config.model}: {type(exc).__name__}: {_short(exc)}")


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is a failed or timed-out connection. litellm wraps
    these in many ways (a refused connection to an OpenAI-compatible server arrives as an
    InternalServerError), so the chain of causes is read, down to httpx's and the socket's."""
    import httpx  # litellm's own dependency, imported with it

    litellm = litellm_module()
    transport = (
        litellm.Timeout,
        litellm.APIConnectionError,
        httpx.TransportError,
        ConnectionError,
        TimeoutError,
        socket.gaierror,
    )
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, transport):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _short(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    # Never echo credentials that a provider error might quote back.
    text = re.sub(r"(sk|key|token)[-_][A-Za-z0-9_\-]{8,}", r"\1-***", text, flags=re.I)
    return text[:300]


def extract_json(text: str) -> Any:
    """The first JSON object or array in a model's answer (models wrap JSON in prose or
    code fences). Raises LLMError when there is none."""
    text = text.strip()
    fence = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    if fence:
        text = fence.group(1).strip()
    decoder = json.JSONDecoder()
    for start, char in enumerate(text):
        if char in "{[":
            try:
                value, _end = decoder.raw_decode(text[start:])
                return value
            except json.JSONDecodeError:
                continue
    raise LLMError(f"no JSON in the model's answer: {text[:120]!r}")
