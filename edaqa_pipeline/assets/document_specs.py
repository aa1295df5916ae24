"""What every per-document asset shares: its spec, its per-document result, and the failure
hook that removes a failed run's stale rows.

``per_document.document_asset`` registers a ``DocumentAssetSpec`` per asset in ``SPECS``; the
CLI reads them (``asset_infos``) to tell stale documents before it launches a run, and the
failure hook walks them (``descendants``) to clear what a failed step left behind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl
from dagster import AssetCheckResult, HookContext, PartitionKeyRange, failure_hook

from edaqa_pipeline.assets import document_state as state
from edaqa_pipeline.assets.partitions import documents_partitions
from edaqa_pipeline.checks import PendingExpectations
from edaqa_pipeline.resources import PipelineSettings

IO_PARAM = "io_manager"
SETTINGS_PARAM = "settings"

# Run tags Dagster itself sets and reads; the public ``dagster`` namespace does not export
# their names, so they are spelled here. ``dagster/partition``: the partition a run targets
# (listed under "System tags" > "Run tags" on
# https://docs.dagster.io/guides/build/assets/metadata-and-tags/tags). The range pair makes
# one run target every asset partition from start to end (set by single-run backfills, by
# hand in the launchpad's "Edit tags", and by ``sensors.range_tags``); that table does not
# list them: they come from "enable launching a run that targets a range of asset partitions"
# (https://github.com/dagster-io/dagster/pull/10441), whose use Dagster's maintainers
# describe in https://github.com/dagster-io/dagster/discussions/11653.
PARTITION_TAG = "dagster/partition"
PARTITION_RANGE_START_TAG = "dagster/asset_partition_range_start"
PARTITION_RANGE_END_TAG = "dagster/asset_partition_range_end"


@dataclass
class DocumentResult:
    """What a function of ``batch=True`` returns per document (the others yield it); such a
    function returns ``{key: DocumentResult}``, or that and a dict of metadata of the step."""

    frame: pl.DataFrame | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    checks: list[AssetCheckResult | PendingExpectations] = field(default_factory=list)
    error: str | None = None  # set: the document failed with this message


@dataclass(frozen=True)
class DocumentAssetSpec:
    name: str
    code_version: str
    fn: Callable[..., Any]
    inputs: dict[str, str]  # parameter -> upstream per-document asset
    passthrough: tuple[str, ...]  # resource / config parameters the function takes
    takes_context: bool
    batch: bool
    uses_llm: bool
    source: Callable[[PipelineSettings, str], str] | None


SPECS: dict[str, DocumentAssetSpec] = {}


def descendants(name: str) -> list[str]:
    """Per-document assets downstream of ``name``, in registration (dependency) order."""
    found: list[str] = []
    for spec in SPECS.values():
        if any(parent == name or parent in found for parent in spec.inputs.values()):
            found.append(spec.name)
    return found


def asset_infos(defs_resources: Mapping[str, Any], code_versions: Mapping[str, str | None],
                names: list[str]) -> list[state.DocumentAssetInfo]:
    """What ``state.stale_documents`` needs to know of each per-document asset of ``names``."""
    settings, llm = defs_resources[SETTINGS_PARAM], defs_resources.get("llm")
    return [state.DocumentAssetInfo(
        name, code_versions.get(name),
        state.environment_fingerprint(settings, llm if SPECS[name].uses_llm else None),
        tuple(p for p in SPECS[name].inputs.values() if p in names)) for name in names if name in SPECS]


def run_document_keys(instance: Any, run_id: str) -> list[str]:
    """The document keys a run targets (one partition, or a range of them)."""
    run = instance.get_run_by_id(run_id)
    tags = run.tags if run is not None else {}
    if tags.get(PARTITION_TAG):
        return [tags[PARTITION_TAG]]
    start, end = tags.get(PARTITION_RANGE_START_TAG), tags.get(PARTITION_RANGE_END_TAG)
    if start and end:
        return list(documents_partitions.get_partition_keys_in_range(
            PartitionKeyRange(start, end), dynamic_partitions_store=instance))
    return []


@failure_hook(required_resource_keys={IO_PARAM}, name="drop_stale_document_rows")
def drop_stale_document_rows(context: HookContext) -> None:
    """A failed per-document step: its documents' stored tables of this asset and of every
    per-document asset downstream (skipped) must not keep serving an older version."""
    io = getattr(context.resources, IO_PARAM, None)
    if io is None or not hasattr(io, "remove_partitions"):
        return
    keys = run_document_keys(context.instance, context.run_id)
    for name in [context.op.name, *descendants(context.op.name)]:
        io.remove_partitions(name, keys)
