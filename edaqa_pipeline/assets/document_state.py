"""What the Dagster instance knows about each document, and what still has to be built.

Every per-document materialisation carries, per partition (``per_document``):

* ``edaqa/fingerprint``: hash of the asset name, its ``code_version``, the environment
  (``environment_fingerprint``), the step's op config, and the fingerprints of the
  document's per-document inputs (for ``parsed_documents``: the SHA-256 of the source file);
* ``edaqa/source_sha256``: the source file the partition was built from;
* ``edaqa/environment``: the settings (and LLM, for assets that call it) it was built with;
* ``edaqa/failed``: why the document was left out, when it was.

``stale_documents`` (what ``edaqa index`` runs) and ``corpus_is_stale`` read them from the
event log (latest materialisation per partition) together with the stored tables of the IO
manager. There is no state file beside the instance: the instance is the record of what was
built from what. Dagster's own data versions cannot answer this per document, because a
multi-partition step records one data and input version for all of its partitions.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dagster import (
    AssetCheckKey,
    AssetCheckSeverity,
    AssetKey,
    AssetRecordsFilter,
    DagsterEventType,
    DagsterInstance,
    EventLogRecord,
)

from edaqa_pipeline.settings import DEFAULT_MAX_PDF_PAGES, DEFAULT_PDF_PAGE_SECONDS

FINGERPRINT = "edaqa/fingerprint"
SOURCE = "edaqa/source_sha256"
ENVIRONMENT = "edaqa/environment"
FAILED = "edaqa/failed"
FAILED_PAGES = "edaqa/failed_pages"  # parsed_documents metadata: PDF pages left out [{page, error}]
DOCUMENTS_SHA = "edaqa/documents_sha256"  # corpus assets: the document set they were built from
CODE_VERSION_TAG = "dagster/code_version"


@dataclass(frozen=True)
class PartitionRecord:
    """The latest materialisation of one partition: storage id, metadata values, tags."""

    storage_id: int
    metadata: Mapping[str, Any]  # raw MetadataValue objects (to repeat them on reuse)
    tags: Mapping[str, str]

    def value(self, name: str) -> Any:
        entry = self.metadata.get(name)
        return getattr(entry, "value", entry)

    @property
    def failed(self) -> bool:
        return FAILED in self.metadata


def _record(record: EventLogRecord) -> PartitionRecord:
    materialization = record.asset_materialization
    assert materialization is not None
    return PartitionRecord(record.storage_id, dict(materialization.metadata),
                           dict(materialization.tags or {}))


def latest_records(instance: DagsterInstance, asset: str,
                   keys: Iterable[str] | None = None) -> dict[str, PartitionRecord]:
    """{partition key: its latest materialisation} of per-document ``asset`` (two queries)."""
    wanted = set(keys) if keys is not None else None
    if wanted is not None and not wanted:
        return {}
    ids = instance.event_log_storage.get_latest_storage_id_by_partition(
        AssetKey(asset), DagsterEventType.ASSET_MATERIALIZATION, partitions=wanted)
    if not ids:
        return {}
    found: dict[str, PartitionRecord] = {}
    storage_ids = sorted(ids.values())
    for start in range(0, len(storage_ids), 1000):
        batch = storage_ids[start:start + 1000]
        result = instance.fetch_materializations(
            AssetRecordsFilter(asset_key=AssetKey(asset), storage_ids=batch), limit=len(batch))
        for record in result.records:
            if record.partition_key is not None:
                found[record.partition_key] = _record(record)
    return found


def latest_record(instance: DagsterInstance, asset: str) -> PartitionRecord | None:
    """The latest materialisation of unpartitioned ``asset``."""
    result = instance.fetch_materializations(AssetKey(asset), limit=1)
    return _record(result.records[0]) if result.records else None


def digest(*parts: Any) -> str:
    payload = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def fingerprint(asset: str, code_version: str | None, environment: str, op_config: Any,
                source: str, inputs: Mapping[str, str | None]) -> str:
    return digest(asset, code_version, environment, op_config, source, dict(sorted(inputs.items())))


def environment_fingerprint(settings: Any, llm: Any = None) -> str:
    """What, besides the document and the code, decides a per-document table: the parsing,
    chunking and grouping settings and the encoder (``settings``, a ``PipelineSettings``),
    and for assets that call a model the LLM it resolves to (``llm``, an ``LLMResource``;
    never its key)."""
    from edaqa_pipeline.retrieval.encoders import model_id

    cfg = settings.settings()
    parts: list[Any] = [cfg.max_document_mb, cfg.chunk_max_tokens, cfg.occurrence_min_chars,
                        model_id(cfg.encoder_path)]
    if (cfg.max_pdf_pages, cfg.pdf_page_seconds) != (DEFAULT_MAX_PDF_PAGES, DEFAULT_PDF_PAGE_SECONDS):
        parts.append([cfg.max_pdf_pages, cfg.pdf_page_seconds])  # defaults: fingerprints unchanged
    if llm is not None:
        env = os.environ
        parts.append([
            llm.provider or env.get("EDAQA_LLM_PROVIDER", "").strip() or "auto",
            llm.base_url or env.get("EDAQA_LLM_BASE_URL", "").strip()
            or env.get("OPENAI_BASE_URL", "").strip(),
            llm.model or env.get("EDAQA_LLM_MODEL", "").strip(),
            bool(env.get(llm.api_key_env, "").strip() or env.get("OPENAI_API_KEY", "").strip()),
        ])
    return digest(*parts)[:16]


def documents_sha(keys: Iterable[str]) -> str:
    return digest(sorted(keys))


@dataclass(frozen=True)
class DocumentAssetInfo:
    """What the driver needs to know of one per-document asset to judge staleness."""

    name: str
    code_version: str | None
    environment: str
    parents: tuple[str, ...]


@dataclass
class Staleness:
    """What ``stale_documents`` found: documents to build (with why), and documents whose file
    failed to parse last time and is unchanged (same file, code and settings: parsing is a
    function of those, so it fails again; reported from the record, not re-run)."""

    stale: dict[str, str]
    known_failures: dict[str, str]


def stale_documents(instance: DagsterInstance, io_manager: Any, sources: Mapping[str, str],
                    assets: Iterable[DocumentAssetInfo]) -> Staleness:
    """Which documents of ``sources`` ({key: SHA-256 of the file}) must be built: no
    materialisation, a failed one, another source file, code version or environment, an asset
    materialised before its input was, or no stored table."""
    keys = list(sources)
    infos = list(assets)
    records = {info.name: latest_records(instance, info.name, keys) for info in infos}
    found = Staleness({}, {})
    for key in keys:
        for number, info in enumerate(infos):
            record = records[info.name].get(key)
            reason = None
            if record is None:
                reason = f"{info.name}: never materialised"
            elif record.value(SOURCE) != sources[key]:
                reason = f"{info.name}: the file changed"
            elif info.code_version is not None and record.tags.get(CODE_VERSION_TAG) != info.code_version:
                reason = f"{info.name}: code version {info.code_version}"
            elif record.value(ENVIRONMENT) != info.environment:
                reason = f"{info.name}: settings changed"
            elif record.failed:
                if number == 0 and not info.parents:
                    found.known_failures[key] = str(record.value(FAILED))
                    break
                reason = f"{info.name}: failed last time"
            elif any((parent := records[p].get(key)) is not None and parent.storage_id > record.storage_id
                     for p in info.parents if p in records):
                reason = f"{info.name}: older than its input"
            elif not io_manager.has_partition(info.name, key):
                reason = f"{info.name}: no stored table"
            if reason:
                found.stale[key] = reason
                break
    return found


def failed_check(instance: DagsterInstance, check_keys: Iterable[AssetCheckKey]) -> str | None:
    """``asset: check name`` of the first check whose latest evaluation failed with ERROR
    severity (a blocking check: the table it guards was written, then the run failed)."""
    for key in sorted(check_keys, key=lambda k: (k.asset_key.to_user_string(), k.name)):
        history = instance.event_log_storage.get_asset_check_execution_history(key, limit=1)
        evaluation = history[0].evaluation if history else None
        if evaluation is not None and not evaluation.passed and evaluation.severity == AssetCheckSeverity.ERROR:
            return f"{key.asset_key.to_user_string()}: check {key.name} failed"
    return None


def corpus_is_stale(instance: DagsterInstance, io_manager: Any, corpus_assets: Iterable[str],
                    code_versions: Mapping[str, str | None], documents: Iterable[str],
                    document_assets: Iterable[str],
                    check_keys: Iterable[AssetCheckKey] = ()) -> str | None:
    """Why the cross-document assets must run again, or None: one is missing or of another
    code version, was built from another set of documents, failed a blocking check, or is
    older than a per-document materialisation of an indexed document (a build interrupted
    between the two)."""
    documents = sorted(documents)
    oldest: int | None = None
    failed = failed_check(instance, check_keys)
    if failed:
        return failed
    for asset in corpus_assets:
        record = latest_record(instance, asset)
        if record is None or not io_manager.has_table(asset):
            return f"{asset}: never materialised"
        version = code_versions.get(asset)
        if version is not None and record.tags.get(CODE_VERSION_TAG) != version:
            return f"{asset}: code version {version}"
        built_for = record.value(DOCUMENTS_SHA)
        if built_for is not None and built_for != documents_sha(documents):
            return f"{asset}: built for other documents"
        oldest = record.storage_id if oldest is None else min(oldest, record.storage_id)
    for asset in document_assets:
        ids = instance.event_log_storage.get_latest_storage_id_by_partition(
            AssetKey(asset), DagsterEventType.ASSET_MATERIALIZATION, partitions=set(documents))
        if ids and oldest is not None and max(ids.values()) > oldest:
            return f"{asset}: materialised after the corpus assets"
    return None
