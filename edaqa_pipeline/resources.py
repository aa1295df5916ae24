"""Dagster resources: the pipeline settings and the LLM client factory.

Two ``ConfigurableResource`` classes live here; the IO manager that stores every asset's
tables is in ``assets.io_manager``.

``PipelineSettings`` is a thin ``ConfigurableResource`` over ``settings.Settings``; empty fields
fall back to the environment (``EDAQA_CORPUS``, ``EDAQA_STORAGE``, ``EDAQA_LANCEDB_URI``,
``EDAQA_ENCODER``), so ``dagster dev``, the CLI and tests all resolve paths the same way.

``LLMResource`` is the only place the LLM layer meets Dagster. It follows the abstract-client
pattern of Dagster's ``project_fully_featured`` example: assets ask the resource for an
``LLMClient`` and never learn which implementation (real model or offline rules) they got, so
the same asset code runs in CI, locally and against a hosted model. Configuration is plain
data; the API key is read at ``get_client()`` time from the environment variable *named* in
``api_key_env`` and is never part of the resource config, run config or metadata.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from dagster import ConfigurableResource
from pydantic import Field

from edaqa_pipeline.llm import LLMClient, build_client
from edaqa_pipeline.settings import Settings


class PipelineSettings(ConfigurableResource):
    """Corpus, storage, LanceDB and encoder locations; ``settings()`` resolves them."""

    corpus_root: str = Field(default="", description="corpus folder ('' = EDAQA_CORPUS or data/sample)")
    storage_root: str = Field(default="", description="storage root ('' = EDAQA_STORAGE or data/storage)")
    lancedb_uri: str = Field(default="", description="LanceDB URI ('' = STORAGE/lancedb); s3:// works")
    encoder_path: str = Field(default="", description="sentence-transformers model folder ('' = packaged MiniLM)")
    anchor_cap: int = Field(default=0, description="max occurrences per cross-document anchor (0 = default 8)")

    def settings(self) -> Settings:
        base = Settings.from_env()
        storage = Path(self.storage_root).resolve() if self.storage_root else base.storage_root
        return replace(
            base,
            corpus_root=Path(self.corpus_root).resolve() if self.corpus_root else base.corpus_root,
            storage_root=storage,
            lancedb_uri=self.lancedb_uri
            or (base.lancedb_uri if not self.storage_root else str(storage / "lancedb")),
            encoder_path=self.encoder_path or base.encoder_path,
            anchor_cap=self.anchor_cap or base.anchor_cap,
        )


class LLMResource(ConfigurableResource):
    """Hands out LLM clients; call ``get_client()`` once per asset and report its ``stats``.

    ``provider``: ``auto`` (real model if a base URL or key is configured, else offline),
    ``offline`` or ``openai``; empty (the default) means ``EDAQA_LLM_PROVIDER``, else ``auto``,
    so ``EDAQA_LLM_PROVIDER=offline`` keeps a run offline even with an API key in the
    environment. ``base_url`` and ``model`` fall back to ``EDAQA_LLM_BASE_URL`` /
    ``OPENAI_BASE_URL`` and ``EDAQA_LLM_MODEL``. With ``fallback_offline`` a call that still
    fails after all retries is answered by the offline rules (counted in ``llm_errors`` and
    ``llm_fallbacks``) instead of failing the asset.
    """

    provider: str = Field(default="", description="auto | offline | openai; '' = EDAQA_LLM_PROVIDER or auto")
    base_url: str | None = Field(default=None, description="OpenAI-compatible /v1 base URL")
    model: str | None = Field(default=None, description="model name served at base_url")
    api_key_env: str = Field(
        default="EDAQA_LLM_API_KEY",
        description="name of the environment variable holding the API key (not the key)",
    )
    cache_dir: str = Field(default="data/storage/llm_cache", description="response cache")
    fallback_offline: bool = Field(default=True)
    timeout_s: float = Field(default=60.0)
    max_retries: int = Field(default=3)
    max_tokens: int | None = Field(default=None)

    def get_client(self) -> LLMClient:
        """A fresh client (fresh ``stats``) configured from this resource and the environment."""
        env = os.environ
        api_key = env.get(self.api_key_env, "").strip() or env.get("OPENAI_API_KEY", "").strip()
        return build_client(
            provider=self.provider or env.get("EDAQA_LLM_PROVIDER", "").strip() or "auto",
            base_url=self.base_url
            or env.get("EDAQA_LLM_BASE_URL", "").strip()
            or env.get("OPENAI_BASE_URL", "").strip()
            or None,
            api_key=api_key or None,
            model=self.model or env.get("EDAQA_LLM_MODEL", "").strip() or None,
            cache_dir=Path(self.cache_dir) if self.cache_dir else None,
            fallback_offline=self.fallback_offline,
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
            max_tokens=self.max_tokens,
        )
