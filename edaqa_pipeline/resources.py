"""Dagster resources: the pipeline settings and the LLM client factory.

``PipelineSettings`` is a thin ``ConfigurableResource`` over ``settings.Settings``; empty fields
fall back to the environment (``EDAQA_CORPUS``, ``EDAQA_STORAGE``, ``EDAQA_LANCEDB_URI``,
``EDAQA_ENCODER``), so ``dagster dev``, the CLI and tests all resolve paths the same way.

``LLMResource`` is the only place the LLM layer meets Dagster. It follows the abstract-client pattern of Dagster's ``project_fully_featured`` example: assets
ask the resource for an ``LLMClient`` and never learn which implementation (real model or
offline rules) they got, so the same asset code runs in CI, locally and against a hosted
model. Configuration is plain data; the API key is read at ``get_client()`` time from the
environment variable *named* in ``api_key_env`` and is never part of the resource config,
run config or metadata.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
from dagster import ConfigurableResource, InputContext, OutputContext
from dagster_polars import PolarsParquetIOManager
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


class _KeepStored:
    """Marker value of a per-document output: keep the partition's stored table as it is."""

    def __repr__(self) -> str:
        return "KEEP_STORED"


KEEP_STORED = _KeepStored()
# AssetIn metadata of a per-document asset's per-document inputs (``per_document``): the input
# is a lazy {document key: frame} of the partitions that are stored.
PER_DOCUMENT_INPUT = "edaqa/per_document_input"


class StoredPartitions(Mapping[str, pl.DataFrame]):
    """The stored partitions of one input, read on access: a step over many documents reads
    only the documents it recomputes (unchanged ones keep their stored output)."""

    def __init__(self, paths: Mapping[str, Any]) -> None:
        self._paths = {key: path for key, path in paths.items() if path.exists()}

    def __getitem__(self, key: str) -> pl.DataFrame:
        return pl.read_parquet(str(self._paths[key]))

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


def _is_local(path: Any) -> bool:
    return getattr(path, "protocol", "") in ("", "file", "local")


class UnsafePartitionKeyError(ValueError):
    """A partition key that would resolve outside its asset's folder."""


def unsafe_key(key: str) -> bool:
    """True for a key that is not a plain relative path (empty, absolute, ``.`` or ``..``)."""
    parts = key.replace("\\", "/").split("/")
    return not key or key.startswith("/") or any(part in ("", ".", "..") for part in parts)


def _release(outputs: Mapping[str, Any], key: str) -> None:
    """Let go of a per-document frame once it is written: the stored table is now the table.

    Why: ``execute_in_process`` (what ``edaqa index`` runs) keeps every step's output value
    until the run ends, for ``output_for_node``; a 16x corpus's per-document outputs held
    that way grew the build by ~400 MiB. Downstream steps read the stored tables, never the
    value, so the dict (ours, built by ``assets.per_document``) drops the frame here."""
    if isinstance(outputs, dict):
        outputs[key] = KEEP_STORED


class CorpusParquetIOManager(PolarsParquetIOManager):
    """Parquet tables under ``STORAGE/tables``: ``<asset>.parquet`` and, per document,
    ``<asset>/<document key>.parquet``.

    On top of dagster-polars' manager:

    * a per-document output is ``{document key: frame | KEEP_STORED}`` for every partition of
      the step (one step may cover many documents, ``BackfillPolicy.single_run``): a frame is
      written, ``KEEP_STORED`` leaves the stored table, and a key left out (a document that
      failed) loses its stored table, so that no stale rows of it are served; a written
      frame is then replaced by ``KEEP_STORED`` in that dict (``_release``);
    * every write goes to a temporary file renamed into place, so a killed run leaves the old
      table or the new one, never half a file;
    * an unpartitioned asset reading a per-document asset always gets
      ``dict[document key, DataFrame]`` (the UPath manager returns a bare frame for exactly
      one partition and ``None`` for none, which fails the cross-document assets' type check);
    * many partitions are read in one pass with one log line (``load_partitions``);
    * ``previous_output``, ``stored_keys``, ``read_partition``, ``remove_partitions``: how
      assets and the ``edaqa index`` driver read and prune what this manager wrote, rather
      than building paths by hand.
    """

    @property
    def _root(self) -> Any:
        """The base path, also on the configured (not yet set up) resource the driver holds."""
        try:
            return self._base_path
        except AttributeError:
            from upath import UPath

            return UPath(self.base_dir or ".")

    def previous_output(self, asset: str) -> pl.DataFrame | None:
        """The last stored output of unpartitioned ``asset`` (None before its first run):
        how an incremental asset reads what it reuses, through the IO manager rather than
        behind it."""
        path = self._root / f"{asset}.parquet"
        return pl.read_parquet(str(path)) if path.exists() else None

    def has_table(self, asset: str) -> bool:
        """Whether unpartitioned ``asset`` has a stored table."""
        return bool((self._root / f"{asset}.parquet").exists())

    def partition_path(self, asset: str, key: str) -> Any:
        """``<asset>/<key>.parquet``; ``UnsafePartitionKeyError`` for a key that would leave
        the asset's folder (``../chunk_index``, an absolute path): a partition key is data."""
        if unsafe_key(key):
            raise UnsafePartitionKeyError(f"partition key {key!r} of {asset} is not a relative "
                                          "document path inside the corpus")
        return self._with_extension(self.make_safe_partition_path(self._root / asset, key))

    def has_partition(self, asset: str, key: str) -> bool:
        return bool(self.partition_path(asset, key).exists())

    def read_partition(self, asset: str, key: str) -> pl.DataFrame | None:
        """The stored table of one document of a per-document asset (None when absent)."""
        path = self.partition_path(asset, key)
        return pl.read_parquet(str(path)) if path.exists() else None

    def stored_keys(self, asset: str) -> set[str]:
        """Document keys with a stored table of per-document ``asset``."""
        folder = self._root / asset
        if not folder.exists():
            return set()
        suffix = self.extension or ""
        return {p.relative_to(folder).as_posix().removesuffix(suffix)
                for p in folder.rglob(f"*{suffix}") if p.is_file()}

    def remove_partitions(self, asset: str, keys: Iterable[str]) -> int:
        """Delete the stored tables of ``keys`` of per-document ``asset``; returns how many."""
        removed = 0
        for key in keys:
            try:
                path = self.partition_path(asset, key)
            except UnsafePartitionKeyError:
                continue  # never a file of ours: nothing to remove
            if path.exists():
                path.unlink()
                removed += 1
        return removed

    def dump_to_path(self, context: OutputContext, obj: Any, path: Any) -> None:
        if not _is_local(path):
            super().dump_to_path(context, obj, path)
            return
        tmp = path.with_name(path.name + ".tmp")
        super().dump_to_path(context, obj, tmp)
        os.replace(str(tmp), str(path))

    def _write_frame(self, context: OutputContext, df: pl.DataFrame, path: Any) -> None:
        self.make_directory(path.parent)
        if not _is_local(path):
            self.write_df_to_path(context, df, path)
            return
        tmp = path.with_name(path.name + ".tmp")
        self.write_df_to_path(context, df, tmp)
        os.replace(str(tmp), str(path))

    def handle_output(self, context: OutputContext, obj: Any) -> None:
        if not (context.has_asset_partitions and isinstance(obj, Mapping)):
            super().handle_output(context, obj)
            return
        written = kept = removed = 0
        for key, path in self._get_paths_for_partitions(context).items():
            if unsafe_key(key):  # never write or delete outside the asset's folder
                raise UnsafePartitionKeyError(f"partition key {key!r} of {context.asset_key.to_user_string()} "
                                              "is not a relative document path inside the corpus")
            value = obj.get(key)
            if value is KEEP_STORED:
                kept += 1
            elif value is None:
                if path.exists():
                    path.unlink()
                    removed += 1
            else:
                self._write_frame(context, value, path)
                written += 1
                _release(obj, key)
        context.add_output_metadata({"tables_written": written, "tables_kept": kept,
                                     "tables_removed": removed})

    def load_partitions(self, context: InputContext) -> Any:
        """Every requested partition, with one debug line rather than one per partition.

        The UPath manager logs each partition it loads, and each log line is an event written
        to the run's event log (SQLite: 10-15 ms each on the project machine): the corpus
        assets read every document's tables, so a one-document re-index of openroad-2024
        stored about 320 such lines. Missing partitions follow the UPath manager's rule
        (``allow_missing_partitions`` metadata, else the file's error)."""
        keys = context.asset_partition_keys
        if len(keys) <= 1:
            return super().load_partitions(context)
        allow_missing = bool((context.definition_metadata or {}).get("allow_missing_partitions", False))
        paths = self._get_paths_for_partitions(context)
        loaded: dict[str, Any] = {}
        missing: list[str] = []
        for key in keys:
            try:
                value = self.load_from_path(context=context, path=paths[key])
            except FileNotFoundError:
                if not allow_missing:
                    raise
                missing.append(key)
                continue
            if value is not None:  # an Optional input's absent partition, as upstream skips it
                loaded[key] = value
        asset = context.asset_key.to_user_string()
        context.log.debug(f"Loaded {len(loaded)} partitions of {asset} from {self._root / asset}")
        if missing:
            context.log.warning(f"{len(missing)} partitions of {asset} not found: {', '.join(missing[:10])}")
        return loaded

    def load_input(self, context: InputContext) -> Any:
        metadata = context.definition_metadata or {}
        if context.has_asset_partitions and metadata.get(PER_DOCUMENT_INPUT):
            return StoredPartitions(self._get_paths_for_partitions(context))
        value = super().load_input(context)
        if context.has_asset_partitions and not context.has_partition_key:
            if value is None:
                return {}
            if not isinstance(value, dict):
                (key,) = context.asset_partition_keys
                return {key: value}
        return value
