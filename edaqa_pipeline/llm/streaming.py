"""One streamed chat-completion request with a forced tool call, that can be cancelled.

Why streamed: a request that is abandoned must stop costing the server. llama.cpp's servers,
vLLM and Ollama notice a closed connection between two streamed tokens and stop generating;
a non-streamed request keeps its slot until the model is done, whatever the client does. So
every request streams, and leaving this function by any path (deadline, budget guard, error)
closes the HTTP response.

Limits applied here, per request:

* ``idle_timeout_s``: no byte from the server for that long (connect, queue, prompt
  processing, or between tokens) -> httpx raises, the request is cancelled.
* ``deadline_s``: total wall time; checked at every chunk.
* budget guard: a server that ignores ``max_tokens`` is cut off after ``budget + GUARD_TOKENS``
  streamed tokens (reported as ``finish_reason == "length"``).

Token counts come from the server's ``usage`` chunk when it sends one (OpenAI, vLLM with
``stream_options.include_usage``); otherwise completion tokens are the streamed text deltas
(llama.cpp sends one per token) and prompt tokens are estimated at four characters per token
(``usage_reported`` is then False).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from edaqa_pipeline.llm.progress import EMIT_EVERY_S, RequestProgress, Throughput
from edaqa_pipeline.text.counting import approx_tokens

GUARD_TOKENS = 16
# Sent with every request: a sampled request (temperature > 0, ChipMind's synthesis) repeats on
# servers that honour a seed (llama.cpp exactly, OpenAI best-effort), so a cached or re-run
# answer is the same answer.
SAMPLING_SEED = 0


class RequestCancelled(TimeoutError):
    """The request ran past its deadline or went idle; its connection was closed.

    ``completion_tokens`` / ``prompt_tokens`` are what it had cost when it was cancelled."""

    def __init__(self, message: str, *, completion_tokens: int = 0, prompt_tokens: int = 0) -> None:
        super().__init__(message)
        self.completion_tokens = completion_tokens
        self.prompt_tokens = prompt_tokens


@dataclass(frozen=True)
class Completion:
    """What one request produced: the tool-call arguments (or plain content) and its cost."""

    arguments: str
    tool_call_id: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    usage_reported: bool
    first_token_s: float
    seconds: float


@dataclass
class _Accumulator:
    arguments: str = ""
    content: str = ""
    tool_call_id: str = ""
    finish_reason: str | None = None
    tokens: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    def add(self, chunk: Any) -> bool:
        """Fold one chunk in; True when it carried generated text (one token)."""
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
            self.completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        produced = False
        for choice in getattr(chunk, "choices", None) or []:
            if getattr(choice, "index", 0) != 0:
                continue
            delta = choice.delta
            for call in getattr(delta, "tool_calls", None) or []:
                if (call.index or 0) != 0:
                    continue
                self.tool_call_id = self.tool_call_id or (call.id or "")
                piece = (call.function.arguments or "") if call.function is not None else ""
                self.arguments += piece
                produced = produced or bool(piece)
            text = getattr(delta, "content", None)
            if text:
                self.content += text
                produced = True
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
        if produced:
            self.tokens += 1
        return produced


@lru_cache(maxsize=1)
def timeout_errors() -> tuple[type[BaseException], ...]:
    """What a stalled stream raises: openai's timeout and its HTTP library's (httpx, or the
    httpx2 fork that newer openai releases use)."""
    import openai

    found: list[type[BaseException]] = [openai.APITimeoutError, TimeoutError]
    for module in ("httpx2", "httpx"):
        with contextlib.suppress(ImportError):
            found.append(importlib.import_module(module).TimeoutException)
    return tuple(found)


def prompt_estimate(messages: Sequence[dict[str, Any]], tool: dict[str, Any] | None) -> int:
    """Prompt tokens at four characters per token (messages + tool schema + framing)."""
    text = json.dumps(list(messages), ensure_ascii=False) + json.dumps(tool, ensure_ascii=False)
    return approx_tokens(text) + 4 * len(messages)


def stream_tool_call(
    raw_client: Any,
    *,
    task: str,
    model: str,
    messages: Sequence[dict[str, Any]],
    tool: dict[str, Any] | None,
    max_tokens: int,
    temperature: float,
    idle_timeout_s: float,
    deadline_s: float,
    throughput: Throughput,
    listeners: Sequence[Callable[[RequestProgress], None]] = (),
    on_text: Callable[[str], None] | None = None,
) -> Completion:
    """Send one request, stream it to the end or cancel it; see the module docstring. With
    ``tool`` None the model answers in plain text (``Completion.arguments`` holds it), and
    ``on_text`` is called with the text so far each time a piece of it arrives."""
    name = tool["function"]["name"] if tool is not None else "text"
    forced = {"tools": [tool], "tool_choice": {"type": "function", "function": {"name": name}}} if tool else {}
    started = time.monotonic()
    acc = _Accumulator()
    first_token_at: float | None = None
    last_token_at = started
    last_emit = 0.0

    def emit(done: bool = False) -> None:
        event = RequestProgress(task=task, tokens=acc.tokens, budget=max_tokens,
                                elapsed_s=time.monotonic() - started,
                                tokens_per_s=throughput.tokens_per_s, done=done)
        for listener in listeners:
            listener(event)

    stream = raw_client.chat.completions.create(
        model=model,
        messages=list(messages),
        **forced,
        max_tokens=max_tokens,
        temperature=temperature,
        seed=SAMPLING_SEED,
        stream=True,
        stream_options={"include_usage": True},
        timeout=idle_timeout_s,
    )
    try:
        for chunk in stream:
            now = time.monotonic()
            if acc.add(chunk):
                first_token_at = first_token_at or now
                last_token_at = now
                if on_text is not None and acc.content:
                    on_text(acc.content)
            if now - started > deadline_s:
                raise RequestCancelled(f"request ran past its {deadline_s:.0f}s deadline "
                                       f"after {acc.tokens} tokens; cancelled",
                                       completion_tokens=acc.tokens,
                                       prompt_tokens=prompt_estimate(messages, tool))
            if acc.tokens > max_tokens + GUARD_TOKENS:
                acc.finish_reason = "length"  # the server ignored max_tokens: stop reading
                break
            if listeners and now - last_emit >= EMIT_EVERY_S:
                last_emit = now
                emit()
    except RequestCancelled:
        raise
    except timeout_errors() as exc:
        raise RequestCancelled(f"no data from the server for {idle_timeout_s:.0f}s "
                               f"after {acc.tokens} tokens; cancelled",
                               completion_tokens=acc.tokens,
                               prompt_tokens=prompt_estimate(messages, tool)) from exc
    finally:
        stream.close()  # a streaming server stops generating when the connection closes
    seconds = time.monotonic() - started
    first_token_s = (first_token_at or last_token_at) - started
    usage_reported = acc.completion_tokens is not None
    completion_tokens = acc.completion_tokens if usage_reported else acc.tokens
    prompt_tokens = acc.prompt_tokens if acc.prompt_tokens else prompt_estimate(messages, tool)
    throughput.record(completion_tokens=int(completion_tokens or 0), first_token_s=first_token_s,
                      decode_s=last_token_at - (first_token_at or last_token_at))
    if listeners:
        emit(done=True)
    return Completion(
        arguments=acc.arguments if acc.arguments.strip() else acc.content,
        tool_call_id=acc.tool_call_id or f"call_{name}",
        finish_reason=acc.finish_reason,
        prompt_tokens=int(prompt_tokens),
        completion_tokens=int(completion_tokens or 0),
        usage_reported=usage_reported and bool(acc.prompt_tokens),
        first_token_s=first_token_s,
        seconds=seconds,
    )
