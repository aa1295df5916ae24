"""The real-model provider: any OpenAI-compatible chat-completions server.

Works against OpenAI, vLLM, Ollama and llama.cpp's servers. One structured call is:

1. a cache lookup (``cache.py``), then, for a miss,
2. one request slot of the server (``slots.py``: at most ``concurrency`` requests in flight
   per server, across threads and processes; 1 by default for a self-hosted base URL);
3. a streamed request with a forced tool call (``streaming.py``), bounded by the task's output
   budget (``budget.py``, sent as ``max_tokens``), an idle timeout and a deadline; a request
   that passes either is cancelled by closing its connection, so a single-slot server is
   never left generating an answer nobody waits for while its retry queues behind it;
4. parsing and validation (``structured.py``) with up to ``validation_retries`` re-asks;
5. transport retries: HTTP 408/409/429/5xx, connection errors and cancelled requests are
   retried up to ``max_retries`` times with exponential backoff (at least the server's
   ``Retry-After``); then ``LLMError``, or the ``fallback`` client's answer.

Measured decode speed feeds ``progress.py`` (listeners get per-request progress with an
estimate of the time left). instructor is not used here: its calls cannot be streamed with a
plain response model, and its retries hide how many requests were sent.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from edaqa_pipeline.llm.budget import DEFAULT_CAP_TOKENS
from edaqa_pipeline.llm.cache import ResponseCache, cache_key
from edaqa_pipeline.llm.client import LLMClient, T, TextAnswer, check_output, freeze_inputs
from edaqa_pipeline.llm.errors import LLMError, redact
from edaqa_pipeline.llm.progress import ProgressListener, Throughput
from edaqa_pipeline.llm.redaction import REDACT_SECRETS
from edaqa_pipeline.llm.retries import is_transient, retry_after_s
from edaqa_pipeline.llm.scope import DeadlinePassed, RequestScope, current_scope
from edaqa_pipeline.llm.slots import ServerSlots, SlotTimeout
from edaqa_pipeline.llm.stats import LLMStats, record_usage
from edaqa_pipeline.llm.streaming import Completion, RequestCancelled, stream_tool_call
from edaqa_pipeline.llm.structured import (
    OutputInvalid,
    parse_output,
    reask_messages,
    tool_definition,
)
from edaqa_pipeline.llm.tasks import LLMTask, get_task

log = logging.getLogger(__name__)

OPENAI_URL = "https://api.openai.com/v1"
HOSTED_CONCURRENCY = 4
UNMEASURED_TOKENS_PER_S = 2.0  # deadline before any rate is measured: a slow CPU model


def default_concurrency(base_url: str | None) -> int:
    """1 for a self-hosted server (llama.cpp, Ollama serve one request at a time by default),
    ``HOSTED_CONCURRENCY`` for api.openai.com."""
    return 1 if base_url else HOSTED_CONCURRENCY


class _Failure(Exception):
    """Internal: the last cause and how many requests one logical call used."""

    def __init__(self, cause: BaseException, requests: int) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.requests = requests


class OpenAICompatibleClient(LLMClient):
    """Structured calls against an OpenAI-compatible server, with cache, retries and fallback.

    ``max_retries`` counts transport retries after the first try (so up to ``max_retries + 1``
    tries); ``validation_retries`` counts re-asks after invalid output. ``max_tokens`` is the
    global cap on every task's output budget; ``timeout_s`` the idle timeout of a request;
    ``request_timeout_s`` its total limit (default: ``timeout_s`` plus twice the time the
    budget takes at the measured decode rate).
    """

    provider = "openai"

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        model: str,
        cache_dir: Path | str | None = None,
        timeout_s: float = 60,
        max_retries: int = 3,
        validation_retries: int = 2,
        backoff_s: float = 0.5,
        fallback: LLMClient | None = None,
        *,
        max_tokens: int | None = None,
        concurrency: int | None = None,
        request_timeout_s: float | None = None,
    ) -> None:
        import openai

        if not model:
            raise LLMError("an OpenAI-compatible client needs a model name", provider="openai")
        self.model = model
        self.base_url = base_url
        self.timeout_s = float(timeout_s)
        self.max_retries = max(int(max_retries), 0)
        self.validation_retries = max(int(validation_retries), 0)
        self.backoff_s = max(float(backoff_s), 0.0)
        self.max_tokens = int(max_tokens) if max_tokens else DEFAULT_CAP_TOKENS
        self.concurrency = int(concurrency) if concurrency else default_concurrency(base_url)
        self.request_timeout_s = float(request_timeout_s) if request_timeout_s else None
        self.slots = ServerSlots(base_url or OPENAI_URL, self.concurrency)
        self.fallback = fallback
        self.cache = ResponseCache(cache_dir) if cache_dir is not None else None
        self.stats = LLMStats()
        self.throughput = Throughput()
        self.listeners: list[ProgressListener] = []
        self._lock = threading.Lock()
        # Local servers (llama.cpp, vLLM, Ollama) accept any key; openai requires a non-empty one.
        self._api_key = api_key or "sk-no-key-required"
        self._raw = openai.OpenAI(
            base_url=base_url, api_key=self._api_key, timeout=self.timeout_s, max_retries=0
        )
        if api_key:
            REDACT_SECRETS.install(api_key)

    def __repr__(self) -> str:
        return (
            f"OpenAICompatibleClient(base_url={self.base_url!r}, model={self.model!r}, "
            f"cache={self.cache!r}, fallback={self.fallback!r}, concurrency={self.concurrency})"
        )

    # -- public -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def listening(self, listener: ProgressListener) -> Iterator[None]:
        """Send per-request progress events to ``listener`` for the ``with`` body."""
        self.listeners.append(listener)
        try:
            yield
        finally:
            self.listeners.remove(listener)

    def budget(self, task: str, response_model: type[BaseModel], inputs: Mapping[str, Any]) -> int:
        """The ``max_tokens`` a call of ``task`` with ``inputs`` will send."""
        return get_task(task).budget(response_model, inputs, self.max_tokens)

    def close(self) -> None:
        self._raw.close()

    def complete_structured(
        self,
        task: str,
        inputs: Mapping[str, Any],
        response_model: type[T],
        *,
        temperature: float = 0.0,
    ) -> T:
        spec = get_task(task)
        frozen = freeze_inputs(inputs)
        user_prompt = spec.render_user(frozen)
        key = cache_key(
            provider=self.provider,
            model=self.model,
            task=spec.name,
            system_prompt=spec.system_prompt,
            user_prompt=user_prompt,
            schema=response_model.model_json_schema(),
            temperature=temperature,
        )
        capped = self._capped(spec, response_model, frozen)  # a shorter answer is not cached
        cached = None if capped else self._from_cache(key, spec, frozen, response_model)
        if cached is not None:
            return cached

        started = time.monotonic()
        try:
            output = self._call(spec, frozen, user_prompt, response_model, temperature)
        except _Failure as failure:
            with self._lock:
                self.stats.errors += 1
                self.stats.seconds += time.monotonic() - started
            error = self._error(spec.name, failure)
            if self.fallback is None:
                raise error from (None if self._leaks_key(failure.cause) else failure.cause)
            log.warning("%s; answering with fallback provider %s", error, self.fallback.provider)
            with self._lock:
                self.stats.fallbacks += 1
            record_usage(fallbacks=1)
            return self.fallback.complete_structured(
                task, inputs, response_model, temperature=temperature
            )
        with self._lock:
            self.stats.seconds += time.monotonic() - started
        if self.cache is not None and not capped:
            self.cache.put(key, json.loads(output.model_dump_json()), task=spec.name,
                           provider=self.provider, model=self.model)
        return output

    # -- internals ----------------------------------------------------------------------------

    def _from_cache(
        self, key: str, spec: LLMTask, inputs: Mapping[str, Any], response_model: type[T]
    ) -> T | None:
        if self.cache is None:
            return None
        stored = self.cache.get(key)
        if stored is None:
            return None
        try:
            output = response_model.model_validate(stored)
            check_output(spec, output, inputs)
        except ValueError:  # pydantic's ValidationError is a ValueError
            log.warning("ignoring cache entry %s that no longer validates", key)
            return None
        with self._lock:
            self.stats.cache_hits += 1
        record_usage(cache_hits=1)
        return output

    def _capped(self, spec: LLMTask, response_model: type[BaseModel], inputs: Mapping[str, Any]) -> bool:
        """Whether the request's ``max_tokens`` cuts this task's output budget."""
        budget = spec.budget(response_model, inputs, self.max_tokens)
        return current_scope().budget(spec.name, budget) < budget

    def _deadline_s(self, budget: int) -> float:
        if self.request_timeout_s is not None:
            return self.request_timeout_s
        rate = self.throughput.tokens_per_s or UNMEASURED_TOKENS_PER_S
        return self.timeout_s + 2.0 * budget / rate

    def _send(
        self, task: str, messages: list[dict[str, Any]], tool: dict[str, Any] | None, budget: int,
        temperature: float,
    ) -> Completion:
        """One request in one slot; counts it (and its tokens) in ``stats``."""
        scope = current_scope()
        if scope.expired:
            raise DeadlinePassed(f"LLM task {task!r} not sent: the request's deadline has passed")
        with self._lock:
            self.stats.calls += 1
        try:
            with self._slot(scope):
                remaining = scope.remaining_s()
                deadline_s = self._deadline_s(budget)
                completion = stream_tool_call(
                    self._raw, task=task, model=self.model, messages=messages, tool=tool,
                    max_tokens=budget, temperature=temperature,
                    idle_timeout_s=self.timeout_s if remaining is None else min(self.timeout_s, remaining),
                    deadline_s=deadline_s if remaining is None else min(deadline_s, remaining),
                    throughput=self.throughput, listeners=tuple(self.listeners),
                    on_text=scope.on_text if tool is None else None,
                )
        except RequestCancelled as exc:
            with self._lock:
                self.stats.cancelled += 1
                self.stats.completion_tokens += exc.completion_tokens
            record_usage(requests=1, completion_tokens=exc.completion_tokens)
            raise
        except Exception:
            record_usage(requests=1)
            raise
        with self._lock:
            self.stats.prompt_tokens += completion.prompt_tokens
            self.stats.completion_tokens += completion.completion_tokens
            self.stats.estimated_usage += 0 if completion.usage_reported else 1
            self.stats.max_completion_tokens = max(self.stats.max_completion_tokens,
                                                   completion.completion_tokens)
        record_usage(requests=1, prompt_tokens=completion.prompt_tokens,
                     completion_tokens=completion.completion_tokens)
        return completion

    @contextlib.contextmanager
    def _slot(self, scope: RequestScope) -> Iterator[None]:
        """A request slot, waited for no longer than the request's deadline allows."""
        try:
            with self.slots.hold(wait_s=scope.remaining_s()):
                yield
        except SlotTimeout as exc:
            raise DeadlinePassed(f"no free model slot before the request's deadline ({exc})") from None

    def _call(
        self,
        spec: LLMTask,
        inputs: Mapping[str, Any],
        user_prompt: str,
        response_model: type[T],
        temperature: float,
    ) -> T:
        budget = current_scope().budget(spec.name, spec.budget(response_model, inputs, self.max_tokens))
        tool = tool_definition(response_model)
        name = tool["function"]["name"]
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": spec.system_prompt},
            {"role": "user", "content": user_prompt},
        ]
        requests = reasks = 0
        while True:
            completion, tries = self._transport(spec.name, messages, tool, budget, temperature, requests)
            requests += tries
            try:
                output = parse_output(completion, response_model, spec, inputs, budget)
            except OutputInvalid as invalid:
                if reasks >= self.validation_retries:
                    self._count_retries(requests)
                    cause = invalid.__cause__ if invalid.kind in ("json", "schema") else invalid
                    raise _Failure(cause or invalid, requests) from invalid
                reasks += 1
                messages = [*messages, *reask_messages(completion, invalid, name)]
                continue
            self._count_retries(requests)
            return response_model.model_validate_json(output.model_dump_json())

    def _transport(self, task: str, messages: list[dict[str, Any]], tool: dict[str, Any] | None,
                   budget: int, temperature: float, before: int) -> tuple[Completion, int]:
        """One answer from the server, transient failures retried (``max_retries``); returns
        it and the requests it took. ``before``: requests this call already made."""
        tries = 0
        while True:
            tries += 1
            try:
                return self._send(task, messages, tool, budget, temperature), tries
            except Exception as exc:
                if not is_transient(exc) or tries > self.max_retries or current_scope().expired:
                    self._count_retries(before + tries)
                    raise _Failure(exc, before + tries) from exc
                delay = self._delay(tries, exc)
                log.info("LLM task %s: transient %s on try %d/%d, retrying in %.2fs", task,
                         type(exc).__name__, tries, self.max_retries + 1, delay)
                time.sleep(delay)

    def complete_text(self, task: str, inputs: Mapping[str, Any], *, temperature: float = 0.0) -> str:
        """A prose answer to ``task`` (no tool: the model writes text), cached like the rest."""
        spec, frozen = get_task(task), freeze_inputs(inputs)
        user_prompt = spec.render_user(frozen)
        key = cache_key(provider=self.provider, model=self.model, task=spec.name,
                        system_prompt=spec.system_prompt, user_prompt=user_prompt,
                        schema={"format": "text"}, temperature=temperature)
        capped = self._capped(spec, TextAnswer, frozen)
        stored = self.cache.get(key) if self.cache is not None and not capped else None
        if stored is not None and isinstance(stored.get("text"), str):
            record_usage(cache_hits=1)
            return str(stored["text"])
        messages = [{"role": "system", "content": spec.system_prompt}, {"role": "user", "content": user_prompt}]
        started = time.monotonic()
        try:
            budget = current_scope().budget(spec.name, spec.budget(TextAnswer, frozen, self.max_tokens))
            completion, requests = self._transport(spec.name, messages, None, budget, temperature, 0)
        except _Failure as failure:
            with self._lock:
                self.stats.errors += 1
            if self.fallback is None:
                raise self._error(spec.name, failure) from None
            record_usage(fallbacks=1)
            return self.fallback.complete_text(task, inputs, temperature=temperature)
        finally:
            with self._lock:
                self.stats.seconds += time.monotonic() - started
        self._count_retries(requests)
        if self.cache is not None and not capped:
            self.cache.put(key, {"text": completion.arguments}, task=spec.name, provider=self.provider,
                           model=self.model)
        return completion.arguments

    def _count_retries(self, requests: int) -> None:
        with self._lock:
            self.stats.retries += max(requests - 1, 0)

    def _delay(self, attempt: int, cause: BaseException) -> float:
        """Exponential backoff, at least the server's Retry-After, plus up to 10 % jitter."""
        delay = self.backoff_s * 2 ** (attempt - 1)
        retry_after = retry_after_s(cause)
        if retry_after is not None:
            delay = max(delay, retry_after)
        return delay + random.uniform(0, delay * 0.1)

    def _leaks_key(self, cause: BaseException) -> bool:
        return bool(self._api_key) and self._api_key in str(cause)

    def _error(self, task: str, failure: _Failure) -> LLMError:
        cause = failure.cause
        message = redact(str(cause), self._api_key)
        if len(message) > 800:
            message = message[:800] + " ..."
        attempts = failure.requests
        text = (
            f"LLM task {task!r} failed after {attempts} request(s) "
            f"(provider={self.provider}, model={self.model}, "
            f"transport retries<={self.max_retries}, validation retries<={self.validation_retries}); "
            f"last cause: {type(cause).__name__}: {message}"
        )
        return LLMError(text, task=task, provider=self.provider, model=self.model,
                        attempts=attempts, cause=type(cause).__name__)
