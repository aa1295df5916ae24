"""Cross-document assets of the functional-unit hypergraph (the paper's seven outputs).

``functional_units`` is one multi-asset with seven outputs (``unit_hyperedges``,
``unit_nodes``, ``unit_provenance``, ``unit_chunk_edges``, ``unit_chunk_contents``,
``unit_type_bags``, ``unit_rejections``). It reads every document's occurrences, artifacts and
chunks (documents whose partition failed are skipped, not fatal), reuses the units of its
previous materialisation (read through the IO manager) whose content hash is unchanged, and reports reused / rebuilt /
deleted counts. Blocking checks re-verify every linker rule on what was kept.
"""


import time
from collections.abc import Iterator

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetIn,
    AssetKey,
    AssetOut,
    AutomationCondition,
    MetadataValue,
    Output,
    ResourceParam,
    multi_asset,
)

from edaqa_pipeline.assets.document_state import DOCUMENTS_SHA, documents_sha
from edaqa_pipeline.assets.io_manager import CorpusParquetIOManager
from edaqa_pipeline.graphs.functional_units import UNIT_TABLE_NAMES, assemble_units
from edaqa_pipeline.model import ARTIFACTS_SCHEMA, CHUNKS_SCHEMA, OCCURRENCES_SCHEMA
from edaqa_pipeline.resources import PipelineSettings
from edaqa_pipeline.validation import structure
from edaqa_pipeline.validation.expectations import run_suite

GROUP = "functional_units"

# Eager, but tolerant of failed document partitions (plain eager() waits for every partition
# to exist, so one corrupt file would block the whole corpus forever).
CORPUS_CONDITION = (
    (AutomationCondition.any_deps_updated() | AutomationCondition.missing()).since_last_handled()
    & ~AutomationCondition.any_deps_in_progress()
    & ~AutomationCondition.in_progress()
).with_label("eager_tolerating_failed_documents")

ALL_PARTITIONS = {"allow_missing_partitions": True}


def concat(parts: dict[str, pl.DataFrame], schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """All partitions of a per-document table as one frame (document key order)."""
    frames = [parts[k] for k in sorted(parts) if parts[k] is not None]
    if not frames:
        return pl.DataFrame(schema=schema)
    return pl.concat([f.select(list(schema)) for f in frames], how="vertical_relaxed")


def _check(name: str, asset: str, passed: bool, **metadata: object) -> AssetCheckResult:
    return AssetCheckResult(
        check_name=name, asset_key=AssetKey(asset), passed=passed,
        severity=AssetCheckSeverity.ERROR, metadata=metadata,  # type: ignore[arg-type]
    )


@multi_asset(
    name="functional_units",
    group_name=GROUP,
    outs={
        name: AssetOut(
            kinds={"python", "polars", "parquet"},
            code_version="2",
            automation_condition=CORPUS_CONDITION,
            description=f"Functional-unit hypergraph output `{name}` (paper Appendix B).",
        )
        for name in UNIT_TABLE_NAMES
    },
    ins={
        "occurrences": AssetIn(metadata=ALL_PARTITIONS),
        "typed_artifacts": AssetIn(metadata=ALL_PARTITIONS),
        "chunks": AssetIn(metadata=ALL_PARTITIONS),
    },
    check_specs=[
        AssetCheckSpec("no_invalid_retained_units", asset="unit_hyperedges", blocking=True,
                       description="empty units, missing sources, bad labels, low type diversity, "
                       "placeholder anchors and cap overflow: zero among retained units"),
        AssetCheckSpec("great_expectations_suite", asset="unit_hyperedges", blocking=True),
        AssetCheckSpec("great_expectations_suite", asset="unit_nodes", blocking=True),
        AssetCheckSpec("every_rejection_has_a_rule", asset="unit_rejections", blocking=True),
        AssetCheckSpec("great_expectations_suite", asset="unit_chunk_edges", blocking=True),
        *[
            AssetCheckSpec("references_retained_units", asset=name, blocking=True,
                           description="every unit_id is a retained unit of unit_hyperedges")
            for name in ("unit_provenance", "unit_chunk_edges", "unit_type_bags")
        ],
        AssetCheckSpec("every_linked_chunk_has_contents", asset="unit_chunk_contents", blocking=True,
                       description="every chunk_id of unit_chunk_edges has exactly one contents row"),
    ],
)
def functional_units(
    context: AssetExecutionContext,
    occurrences: dict[str, pl.DataFrame],
    typed_artifacts: dict[str, pl.DataFrame],
    chunks: dict[str, pl.DataFrame],
    settings: PipelineSettings,
    io_manager: ResourceParam[CorpusParquetIOManager],
) -> Iterator:
    """Assemble units within sources and across documents, incrementally."""
    started = time.perf_counter()
    cfg = settings.settings()
    previous = {
        name: df for name in UNIT_TABLE_NAMES
        if (df := io_manager.previous_output(name)) is not None
    }
    # Only documents with all three tables: one whose occurrences failed is not half-used.
    documents = sorted(set(occurrences) & set(typed_artifacts) & set(chunks))
    tables, stats = assemble_units(
        concat({k: occurrences[k] for k in documents}, OCCURRENCES_SCHEMA),
        concat({k: typed_artifacts[k] for k in documents}, ARTIFACTS_SCHEMA),
        concat({k: chunks[k] for k in documents}, CHUNKS_SCHEMA),
        cap=cfg.anchor_cap,
        previous=previous or None,
    )
    meta = stats.as_metadata()
    meta["documents"] = len(documents)
    meta[DOCUMENTS_SHA] = documents_sha(documents)
    meta["seconds"] = round(time.perf_counter() - started, 3)
    for name in UNIT_TABLE_NAMES:
        extra = dict(meta) if name == "unit_hyperedges" else {}
        yield Output(tables[name], output_name=name,
                     metadata={"dagster/row_count": tables[name].height, **extra})
    problems = structure.unit_problems(tables, cfg.anchor_cap)
    yield _check("no_invalid_retained_units", "unit_hyperedges", not problems,
                 problems=MetadataValue.md("\n".join(f"- {p}" for p in problems) or "none"))
    for asset in ("unit_hyperedges", "unit_nodes"):
        report = run_suite(asset, tables[asset])
        yield _check("great_expectations_suite", asset, report.success,
                     evaluated=report.evaluated, failed=", ".join(report.failed) or "none")
    rejections = tables["unit_rejections"]
    from edaqa_pipeline.graphs.unit_schema import REJECTION_RULES

    bad = rejections.filter(~pl.col("rule").is_in(list(REJECTION_RULES))).height
    yield _check("every_rejection_has_a_rule", "unit_rejections", bad == 0, unknown_rules=bad)
    report = run_suite("unit_chunk_edges", tables["unit_chunk_edges"])
    yield _check("great_expectations_suite", "unit_chunk_edges", report.success,
                 evaluated=report.evaluated, failed=", ".join(report.failed) or "none")
    retained = tables["unit_hyperedges"]["unit_id"].to_list()
    for name in ("unit_provenance", "unit_chunk_edges", "unit_type_bags"):
        unknown = tables[name].filter(~pl.col("unit_id").is_in(retained)).height
        yield _check("references_retained_units", name, unknown == 0, unknown_units=unknown)
    contents = tables["unit_chunk_contents"]["chunk_id"]
    linked = set(tables["unit_chunk_edges"]["chunk_id"].to_list())
    missing = len(linked - set(contents.to_list()))
    duplicated = contents.len() - contents.n_unique()
    yield _check("every_linked_chunk_has_contents", "unit_chunk_contents",
                 missing == 0 and duplicated == 0, missing=missing, duplicated=duplicated)
