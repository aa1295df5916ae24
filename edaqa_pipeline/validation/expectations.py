"""Great Expectations suites for the tabular outputs (GE 1.x, ephemeral context).

Declarative, data-level expectations that complement the structural rules in
``structure.py``: non-null ids, unique ids, labels in the schema, positive spans. GE is
imported lazily (its import costs seconds) and run on a pandas view of the Polars frame;
the context, data sources and suites are built once per process (one per table).
The dagster-ge integration is stuck on GE < 1.0, so the asset check calls GE directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

import polars as pl

from edaqa_pipeline.model import ARTIFACT_TYPES, BLOCK_KINDS


@dataclass(frozen=True)
class ExpectationReport:
    success: bool
    evaluated: int
    failed: list[str]


def _suite_spec(table: str) -> list[tuple[str, dict[str, Any]]]:
    """(expectation class name, kwargs) per table."""
    specs: dict[str, list[tuple[str, dict[str, Any]]]] = {
        "parsed_documents": [
            ("ExpectColumnValuesToNotBeNull", {"column": "block_id"}),
            ("ExpectColumnValuesToBeUnique", {"column": "block_id"}),
            ("ExpectColumnValuesToBeInSet", {"column": "kind", "value_set": list(BLOCK_KINDS)}),
            ("ExpectColumnValuesToBeBetween", {"column": "start_line", "min_value": 1, "mostly": 1.0}),
        ],
        "typed_artifacts": [
            ("ExpectColumnValuesToNotBeNull", {"column": "artifact_id"}),
            ("ExpectColumnValuesToBeUnique", {"column": "artifact_id"}),
            ("ExpectColumnValuesToBeInSet", {"column": "artifact_type", "value_set": list(ARTIFACT_TYPES)}),
            ("ExpectColumnValuesToNotBeNull", {"column": "rule"}),
        ],
        "chunks": [
            ("ExpectColumnValuesToNotBeNull", {"column": "chunk_id"}),
            ("ExpectColumnValuesToBeUnique", {"column": "chunk_id"}),
            ("ExpectColumnValuesToBeBetween", {"column": "n_tokens", "min_value": 1}),
        ],
        "occurrences": [
            ("ExpectColumnValuesToNotBeNull", {"column": "occurrence_id"}),
            ("ExpectColumnValuesToBeUnique", {"column": "occurrence_id"}),
            ("ExpectColumnValuesToNotBeNull", {"column": "anchor"}),
        ],
        "unit_hyperedges": [
            ("ExpectColumnValuesToBeUnique", {"column": "unit_id"}),
            ("ExpectColumnValuesToBeInSet", {"column": "kind", "value_set": ["occurrence", "cross_document"]}),
            ("ExpectColumnValuesToBeBetween", {"column": "n_artifacts", "min_value": 1}),
            ("ExpectColumnValuesToBeBetween", {"column": "n_chunks", "min_value": 1}),
        ],
        "unit_nodes": [
            ("ExpectColumnValuesToBeUnique", {"column": "node_id"}),
            ("ExpectColumnValuesToBeInSet", {"column": "artifact_type", "value_set": list(ARTIFACT_TYPES)}),
        ],
        "unit_chunk_edges": [("ExpectColumnValuesToNotBeNull", {"column": "chunk_id"})],
    }
    return specs.get(table, [])


@lru_cache(maxsize=1)
def _context():  # type: ignore[no-untyped-def]
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    ctx = gx.get_context(mode="ephemeral")
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    return ctx


@cache
def _suite(table: str):  # type: ignore[no-untyped-def]
    """(batch definition, suite) of ``table``, built once per process: building a data
    source and a suite costs far more than validating a frame against them."""
    import great_expectations as gx

    ctx = _context()
    source = ctx.data_sources.add_pandas(f"src_{table}")
    batch_def = source.add_dataframe_asset(f"asset_{table}").add_batch_definition_whole_dataframe("all")
    suite = ctx.suites.add(gx.ExpectationSuite(name=f"suite_{table}"))
    for cls_name, kwargs in _suite_spec(table):
        suite.add_expectation(getattr(gx.expectations, cls_name)(**kwargs))
    return batch_def, suite


def run_suite(table: str, df: pl.DataFrame) -> ExpectationReport:
    """Validate ``df`` against the suite of ``table``; an empty frame passes vacuously."""
    if not _suite_spec(table) or df.is_empty():
        return ExpectationReport(True, 0, [])
    batch_def, suite = _suite(table)
    # only the columns the suite reads go to pandas: a frame's text columns as Python strings
    # were most of a step's memory (a 16x corpus: every block's text and raw source)
    wanted = {kwargs["column"] for _, kwargs in _suite_spec(table) if "column" in kwargs}
    columns = [c for c in df.columns if c in wanted and not isinstance(df[c].dtype, pl.List | pl.Array)]
    pdf = df.select(columns).to_pandas()
    result = batch_def.get_batch(batch_parameters={"dataframe": pdf}).validate(suite)
    failed = [
        f"{r.expectation_config.type}({r.expectation_config.kwargs.get('column')})"
        for r in result.results
        if not r.success
    ]
    return ExpectationReport(bool(result.success), len(result.results), failed)
