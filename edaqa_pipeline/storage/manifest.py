"""What ``edaqa index`` records about a storage root, without Dagster: the per-document state
file (content hash of each indexed document) and the manifest's table and unit summaries.

``indexing.py`` drives the Dagster runs and calls these; tests and benchmarks use them to
compare a build against another (``content_hash`` / ``semantic_hash`` per table).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import polars as pl

from edaqa_pipeline.storage.hashing import content_hash, semantic_hash
from edaqa_pipeline.storage.tables import read_partitions, read_table


def load_state(path: Path) -> dict[str, str]:
    """``{document key: content hash}`` of the last successful index (empty when none)."""
    return json.loads(path.read_text()) if path.is_file() else {}


def save_state(path: Path, state: dict[str, str]) -> None:
    """Write the state atomically (temp file + rename): a kill leaves the old or the new one."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, sort_keys=True, indent=1))
    os.replace(tmp, path)


def _summary(df: pl.DataFrame) -> dict[str, Any]:
    return {"rows": df.height, "content_hash": content_hash(df), "semantic_hash": semantic_hash(df)}


def table_summary(tables_dir: Path, documents: list[str], document_assets: Iterable[str],
                  corpus_assets: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Rows and hashes of each per-document table (over ``documents``) and corpus table."""
    tables: dict[str, dict[str, Any]] = {}
    for asset in document_assets:
        df = read_partitions(tables_dir, asset, documents)
        if df is not None:
            tables[asset] = _summary(df)
    for asset in corpus_assets:
        df = read_table(tables_dir, asset)
        if df is not None:
            tables[asset] = _summary(df)
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
