"""The real-model provider: any OpenAI-compatible chat-completions server via instructor.

Works against OpenAI, vLLM, Ollama and llama.cpp's server. Structured output uses instructor's
``Mode.TOOLS`` (the only mode that validates against llama.cpp's server). Two retry layers:

* validation: instructor re-asks (up to ``validation_retries`` times) when the tool-call
  arguments are not JSON, violate the response schema, or fail the task's ``validate`` hook
  (run inside a pydantic validator, so its message goes back to the model);
* transport: this module retries HTTP 408/409/429/5xx, timeouts and connection errors up to
  ``max_retries`` times with exponential backoff (openai's own retries are switched off so the
  count is ours), then raises ``LLMError`` or returns the ``fallback`` client's answer.

instructor's ``context=`` is deliberately not used: it renders every message as a Jinja
template, which would execute template syntax found in document text.
"""

from __future__ import annotations

import contextvars
import json
import logging
import random
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError, model_validator

from edaqa_pipeline.llm.cache import ResponseCache, cache_key
from edaqa_pipeline.llm.client import LLMClient, T, check_output, freeze_inputs
from edaqa_pipeline.llm.errors import LLMError, redact
from edaqa_pipeline.llm.stats import LLMStats
from edaqa_pipeline.llm.tasks import LLMTask, get_task

log = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 409, 429})
MAX_RETRY_AFTER_S = 60.0

# The inputs of the call in progress, read by the task-validation model validator.
_CURRENT_INPUTS: contextvars.ContextVar[Mapping[str, Any] | None] = contextvars.ContextVar(
    "edaqa_llm_current_inputs", default=None
)
_CHECKED_MODELS: dict[tuple[type[BaseModel], str, Any], type[BaseModel]] = {}
_CHECKED_LOCK = threading.Lock()


# Libraries that log failed calls verbatim: instructor ("API call failed on attempt 1: Error code:
# 401 - {...}"), openai and httpx. A server may quote the API key back in such an error.
_CHATTY_LOGGERS = ("instructor", "openai", "httpx", "httpcore")


class RedactSecretsFilter(logging.Filter):
    """Rewrites log records so that no registered secret (API key) reaches any handler.

    A filter on a logger only sees records logged *on that logger*, not its children's, so
    ``install`` attaches the one process-wide instance to every existing logger under
    ``_CHATTY_LOGGERS`` (they are created at import time, before any call is made)."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        message = record.getMessage()
        clean = redact(message, *self.secrets)
        if clean != message:
            record.msg, record.args = clean, ()
        if record.exc_info:
            text = record.exc_text or logging.Formatter().formatException(record.exc_info)
            record.exc_text = redact(text, *self.secrets)
        if record.stack_info:
            record.stack_info = redact(record.stack_info, *self.secrets)
        return True

    def install(self, secret: str) -> None:
        with _CHECKED_LOCK:
            self.secrets.add(secret)
            names = [n for n in list(logging.Logger.manager.loggerDict)
                     if n.split(".")[0] in _CHATTY_LOGGERS]
            for name in (*_CHATTY_LOGGERS, *names):
                logger = logging.getLogger(name)
                if self not in logger.filters:
                    logger.addFilter(self)


REDACT_SECRETS = RedactSecretsFilter()


def _checked_model(response_model: type[BaseModel], task: LLMTask) -> type[BaseModel]:
    """A same-named subclass whose validation also runs ``task.validate`` against the inputs.

    The subclass has the same JSON schema (same name and docstring), so the tool definition the
    model sees is unchanged; a ``ValueError`` from the hook becomes a pydantic
    ``ValidationError`` that instructor feeds back to the model as a re-ask.
    """
    if task.validate is None:
        return response_model
    key = (response_model, task.name, task.validate)
    with _CHECKED_LOCK:
        cached = _CHECKED_MODELS.get(key)
        if cached is not None:
            return cached
        validate = task.validate

        def _edaqa_task_validate(self: BaseModel) -> BaseModel:
            inputs = _CURRENT_INPUTS.get()
            if inputs is not None:
                validate(self, inputs)
            return self

        namespace = {
            "__doc__": response_model.__doc__,
            "__module__": response_model.__module__,
            "__qualname__": response_model.__qualname__,
            "_edaqa_task_validate": model_validator(mode="after")(_edaqa_task_validate),
        }
        checked = type(response_model.__name__, (response_model,), namespace)
        _CHECKED_MODELS[key] = checked
        return checked


class _CallLog:
    """Per-call counters fed by instructor hooks: one entry per request actually sent."""

    def __init__(self) -> None:
        self.requests = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def on_request(self, *_args: Any, **_kwargs: Any) -> None:
        self.requests += 1

    def on_response(self, response: Any) -> None:
        usage = getattr(response, "usage", None)
        self.prompt_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
        self.completion_tokens += int(getattr(usage, "completion_tokens", 0) or 0)


class _Failure(Exception):
    """Internal: the last cause and how many requests one logical call used."""

    def __init__(self, cause: BaseException, requests: int) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.requests = requests


def _root_cause(exc: BaseException) -> BaseException:
    """The first openai/validation error in the chain instructor wrapped ``exc`` around."""
    import openai
    from instructor.core import IncompleteOutputException

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(
            current,
            openai.APIError | ValidationError | json.JSONDecodeError | IncompleteOutputException,
        ):
            return current
        current = current.__cause__ or current.__context__
    return exc


def _is_transient(cause: BaseException) -> bool:
    import openai

    if isinstance(cause, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(cause, openai.APIStatusError):
        return cause.status_code in RETRYABLE_STATUS or cause.status_code >= 500
    return False


def _retry_after_s(cause: BaseException) -> float | None:
    response = getattr(cause, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        value = float(headers.get("retry-after", ""))
    except ValueError:
        return None
    return min(max(value, 0.0), MAX_RETRY_AFTER_S)


class OpenAICompatibleClient(LLMClient):
    """Structured calls against an OpenAI-compatible server, with cache, retries and fallback.

    ``max_retries`` counts transport retries after the first try (so up to ``max_retries + 1``
    tries); ``validation_retries`` counts instructor re-asks within one try.
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
    ) -> None:
        import instructor
        import openai

        if not model:
            raise LLMError("an OpenAI-compatible client needs a model name", provider="openai")
        self.model = model
        self.base_url = base_url
        self.timeout_s = float(timeout_s)
        self.max_retries = max(int(max_retries), 0)
        self.validation_retries = max(int(validation_retries), 0)
        self.backoff_s = max(float(backoff_s), 0.0)
        self.max_tokens = max_tokens
        self.fallback = fallback
        self.cache = ResponseCache(cache_dir) if cache_dir is not None else None
        self.stats = LLMStats()
        self._lock = threading.Lock()
        # Local servers (llama.cpp, vLLM, Ollama) accept any key; openai requires a non-empty one.
        self._api_key = api_key or "sk-no-key-required"
        raw = openai.OpenAI(
            base_url=base_url, api_key=self._api_key, timeout=self.timeout_s, max_retries=0
        )
        self._client = instructor.from_openai(raw, mode=instructor.Mode.TOOLS)
        if api_key:
            REDACT_SECRETS.install(api_key)

    def __repr__(self) -> str:
        return (
            f"OpenAICompatibleClient(base_url={self.base_url!r}, model={self.model!r}, "
            f"cache={self.cache!r}, fallback={self.fallback!r})"
        )

    # -- public -------------------------------------------------------------------------------

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
        cached = self._from_cache(key, spec, frozen, response_model)
        if cached is not None:
            return cached

        started = time.monotonic()
        try:
            output = self._call_with_retries(spec, frozen, user_prompt, response_model, temperature)
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
            return self.fallback.complete_structured(
                task, inputs, response_model, temperature=temperature
            )
        with self._lock:
            self.stats.seconds += time.monotonic() - started
        if self.cache is not None:
            self.cache.put(
                key,
                json.loads(output.model_dump_json()),
                task=spec.name,
                provider=self.provider,
                model=self.model,
            )
        return output

    # -- internals ----------------------------------------------------------------------------

    def _from_cache(
        self,
        key: str,
        spec: LLMTask,
        inputs: Mapping[str, Any],
        response_model: type[T],
    ) -> T | None:
        if self.cache is None:
            return None
        stored = self.cache.get(key)
        if stored is None:
            return None
        try:
            output = response_model.model_validate(stored)
            check_output(spec, output, inputs)
        except (ValidationError, ValueError):
            log.warning("ignoring cache entry %s that no longer validates", key)
            return None
        with self._lock:
            self.stats.cache_hits += 1
        return output

    def _call_with_retries(
        self,
        spec: LLMTask,
        inputs: Mapping[str, Any],
        user_prompt: str,
        response_model: type[T],
        temperature: float,
    ) -> T:
        from instructor.core.hooks import HookName, Hooks

        checked = _checked_model(response_model, spec)
        extra: dict[str, Any] = {"temperature": temperature}
        if self.max_tokens is not None:
            extra["max_tokens"] = self.max_tokens
        calls = _CallLog()
        hooks = Hooks()
        hooks.on(HookName.COMPLETION_KWARGS, calls.on_request)
        hooks.on(HookName.COMPLETION_RESPONSE, calls.on_response)
        tries = self.max_retries + 1
        try:
            for attempt in range(1, tries + 1):
                token = _CURRENT_INPUTS.set(inputs)
                try:
                    parsed, _completion = self._client.create_with_completion(
                        model=self.model,
                        messages=[
                            {"role": "system", "content": spec.system_prompt},
                            {"role": "user", "content": user_prompt},
                        ],
                        response_model=checked,
                        max_retries=self.validation_retries,
                        strict=False,
                        hooks=hooks,
                        **extra,
                    )
                    # Back to the caller's exact class, via the same JSON the cache stores.
                    return response_model.model_validate_json(parsed.model_dump_json())
                except Exception as exc:
                    cause = _root_cause(exc)
                    transient = _is_transient(cause)
                    if not transient or attempt == tries:
                        raise _Failure(cause, calls.requests) from exc
                    delay = self._delay(attempt, cause)
                    log.info(
                        "LLM task %s: transient %s on try %d/%d, retrying in %.2fs",
                        spec.name,
                        type(cause).__name__,
                        attempt,
                        tries,
                        delay,
                    )
                    time.sleep(delay)
                finally:
                    _CURRENT_INPUTS.reset(token)
            raise AssertionError("unreachable")  # pragma: no cover
        finally:
            with self._lock:
                self.stats.calls += calls.requests
                self.stats.retries += max(calls.requests - 1, 0)
                self.stats.prompt_tokens += calls.prompt_tokens
                self.stats.completion_tokens += calls.completion_tokens

    def _delay(self, attempt: int, cause: BaseException) -> float:
        """Exponential backoff, at least the server's Retry-After, plus up to 10 % jitter."""
        delay = self.backoff_s * 2 ** (attempt - 1)
        retry_after = _retry_after_s(cause)
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
        return LLMError(
            text,
            task=task,
            provider=self.provider,
            model=self.model,
            attempts=attempts,
            cause=type(cause).__name__,
        )
