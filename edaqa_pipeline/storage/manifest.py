"""The manifest's table and unit summaries of a storage root (rows, ``content_hash`` and
``semantic_hash`` per table; unit counts).

``cli/index_build.py`` writes them into ``manifest.json`` after its Dagster runs; tests and
benchmarks use them to compare a build against another. (There is no per-document state file:
what was built from what is read from the Dagster instance, ``assets/document_state.py``.)
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import polars as pl

from edaqa_pipeline.storage.hashing import summary_of_parts
from edaqa_pipeline.storage.tables import read_partitions, read_table

PARTITIONS_AT_ONCE = 64  # a multi-file read each; the table's rows are never held at once


def table_summary(tables_dir: Path, documents: list[str], document_assets: Iterable[str],
                  corpus_assets: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Rows and hashes of each per-document table (over ``documents``, read a group of
    partitions at a time) and corpus table."""
    tables: dict[str, dict[str, Any]] = {}
    keys = sorted(documents)
    for asset in document_assets:
        groups = (read_partitions(tables_dir, asset, keys[i : i + PARTITIONS_AT_ONCE])
                  for i in range(0, len(keys), PARTITIONS_AT_ONCE))
        summary = summary_of_parts(df for df in groups if df is not None)
        if summary is not None:
            tables[asset] = summary
    for asset in corpus_assets:
        df = read_table(tables_dir, asset)
        if df is not None and (summary := summary_of_parts([df])):
            tables[asset] = summary
    return tables


def unit_counts(tables_dir: Path) -> dict[str, Any]:
    """Functional units within / across documents, unit nodes and rejections by rule."""
    edges = read_table(tables_dir, "unit_hyperedges")
    rejections = read_table(tables_dir, "unit_rejections")
    nodes = read_table(tables_dir, "unit_nodes")
    if edges is None:
        return {}
    by_rule = {}
    if rejections is not None and rejections.height:
        by_rule = {r: n for r, n in rejections.group_by("rule").len().sort("rule").iter_rows()}
    return {
        "units": edges.height,
        "units_within_source": edges.filter(pl.col("kind") == "occurrence").height,
        "units_cross_document": edges.filter(pl.col("kind") == "cross_document").height,
        "nodes": nodes.height if nodes is not None else 0,
        "rejections": by_rule,
    }
