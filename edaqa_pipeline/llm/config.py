"""Choosing a provider from the environment, so one pipeline runs offline, local or hosted.

Nothing configured means the offline rules: CI and a fresh checkout never call a network.
The API key is only ever read from the environment and handed to the openai client (the
provider keeps a private copy only to redact it from error messages); it never appears in a
``repr``, config, metadata or the cache.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from edaqa_pipeline.llm.client import LLMClient
from edaqa_pipeline.llm.errors import LLMError
from edaqa_pipeline.llm.offline import OfflineClient

PROVIDERS = ("auto", "offline", "openai")
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"


def _first(env: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return value
    return None


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise LLMError(f"{name} must be a number, got {raw!r}") from None


def build_client(
    *,
    provider: str = "auto",
    base_url: str | None = None,
    api_key: str | None = None,
    model: str | None = None,
    cache_dir: Path | str | None = None,
    fallback_offline: bool = False,
    timeout_s: float = 60,
    max_retries: int = 3,
    max_tokens: int | None = None,
    concurrency: int | None = None,
) -> LLMClient:
    """Resolve an explicit configuration to a client (shared by env and Dagster resource).

    ``auto`` picks the OpenAI-compatible provider when a base URL or an API key is present,
    else offline. A custom base URL needs an explicit model name (servers name models
    differently); plain OpenAI defaults to ``gpt-4o-mini``. ``max_tokens`` caps every task's
    output budget; ``concurrency`` bounds the requests in flight to the server (None:
    ``EDAQA_LLM_CONCURRENCY``, else 1 for a base URL and 4 for api.openai.com).
    """
    choice = (provider or "auto").strip().lower()
    if choice not in PROVIDERS:
        raise LLMError(f"LLM provider must be one of {', '.join(PROVIDERS)}, got {provider!r}")
    if choice == "auto":
        choice = "openai" if (base_url or api_key) else "offline"
    if choice == "offline":
        return OfflineClient()
    if not base_url and not api_key:
        raise LLMError(
            "provider 'openai' needs EDAQA_LLM_API_KEY (or OPENAI_API_KEY) for api.openai.com, "
            "or EDAQA_LLM_BASE_URL for a local OpenAI-compatible server",
            provider="openai",
        )
    if not model:
        if base_url:
            raise LLMError(
                f"set EDAQA_LLM_MODEL: the model name served at {base_url} "
                "(e.g. the llama.cpp --model_alias, the vLLM --served-model-name, an Ollama tag)",
                provider="openai",
            )
        model = DEFAULT_OPENAI_MODEL
    from edaqa_pipeline.llm.openai_client import OpenAICompatibleClient

    return OpenAICompatibleClient(
        base_url=base_url,
        api_key=api_key,
        model=model,
        cache_dir=cache_dir,
        timeout_s=timeout_s,
        max_retries=max_retries,
        fallback=OfflineClient() if fallback_offline else None,
        max_tokens=max_tokens,
        concurrency=concurrency if concurrency else _concurrency_from_env(os.environ),
    )


def _concurrency_from_env(env: Mapping[str, str]) -> int | None:
    value = _number(env, "EDAQA_LLM_CONCURRENCY", 0)
    if value < 0 or value != int(value):
        raise LLMError(f"EDAQA_LLM_CONCURRENCY must be a positive integer, got {value:g}")
    return int(value) or None


def client_from_env(cache_dir: Path | None = None, fallback_offline: bool = False) -> LLMClient:
    """The client the environment asks for.

    Reads ``EDAQA_LLM_PROVIDER`` (auto|offline|openai, default auto), ``EDAQA_LLM_BASE_URL``
    (or ``OPENAI_BASE_URL``), ``EDAQA_LLM_API_KEY`` (or ``OPENAI_API_KEY``),
    ``EDAQA_LLM_MODEL``, and optionally ``EDAQA_LLM_TIMEOUT_S`` (60, idle timeout of a
    request), ``EDAQA_LLM_MAX_RETRIES`` (3), ``EDAQA_LLM_MAX_TOKENS`` (cap on every output
    budget, 1024), ``EDAQA_LLM_CONCURRENCY`` and ``EDAQA_LLM_CACHE_DIR`` (used when
    ``cache_dir`` is None; no cache when neither is set).
    """
    return _client_from(os.environ, cache_dir, fallback_offline)


def judge_from_env(cache_dir: Path | None = None) -> LLMClient:
    """The client that judges answers (LLM-Score, Atomic-ROUGE, citation support).

    ``EDAQA_JUDGE_BASE_URL`` / ``EDAQA_JUDGE_MODEL`` / ``EDAQA_JUDGE_API_KEY`` (and the other
    ``EDAQA_JUDGE_*`` twins of the ``EDAQA_LLM_*`` settings) name a judge that can differ from
    the answerer, as the papers recommend (a model judging its own answers is lenient). Each
    unset judge setting falls back to the answerer's ``EDAQA_LLM_*`` one.
    """
    env = {**os.environ}
    for name in ("PROVIDER", "BASE_URL", "API_KEY", "MODEL", "TIMEOUT_S", "MAX_RETRIES",
                 "MAX_TOKENS", "CONCURRENCY", "CACHE_DIR"):
        judge = env.get(f"EDAQA_JUDGE_{name}", "").strip()
        if judge:
            env[f"EDAQA_LLM_{name}"] = judge
    if env.get("EDAQA_JUDGE_BASE_URL", "").strip() and not env.get("EDAQA_JUDGE_API_KEY", "").strip():
        env.pop("EDAQA_LLM_API_KEY", None)  # a different server: do not send it the answerer's key
        env.pop("OPENAI_API_KEY", None)
    return _client_from(env, cache_dir, False)


def llm_configured(env: Mapping[str, str] | None = None) -> bool:
    """Whether ``client_from_env`` would pick a real model (without building it)."""
    env = os.environ if env is None else env
    provider = (_first(env, "EDAQA_LLM_PROVIDER") or "auto").lower()
    if provider == "offline":
        return False
    return provider == "openai" or bool(
        _first(env, "EDAQA_LLM_BASE_URL", "OPENAI_BASE_URL", "EDAQA_LLM_API_KEY", "OPENAI_API_KEY"))


def _client_from(env: Mapping[str, str], cache_dir: Path | None, fallback_offline: bool) -> LLMClient:
    if cache_dir is None:
        env_cache = _first(env, "EDAQA_LLM_CACHE_DIR")
        cache_dir = Path(env_cache) if env_cache else None
    max_tokens = _number(env, "EDAQA_LLM_MAX_TOKENS", 0)
    return build_client(
        provider=_first(env, "EDAQA_LLM_PROVIDER") or "auto",
        base_url=_first(env, "EDAQA_LLM_BASE_URL", "OPENAI_BASE_URL"),
        api_key=_first(env, "EDAQA_LLM_API_KEY", "OPENAI_API_KEY"),
        model=_first(env, "EDAQA_LLM_MODEL"),
        cache_dir=cache_dir,
        fallback_offline=fallback_offline,
        timeout_s=_number(env, "EDAQA_LLM_TIMEOUT_S", 60),
        max_retries=int(_number(env, "EDAQA_LLM_MAX_RETRIES", 3)),
        max_tokens=int(max_tokens) if max_tokens > 0 else None,
        concurrency=_concurrency_from_env(env),
    )
