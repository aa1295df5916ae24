"""The seven Appendix-B tables of functional units: names, Polars schemas, rejection rules,
the linker constants, and the canonical row order that makes outputs byte-identical."""

from __future__ import annotations

import polars as pl

UNIT_TABLE_NAMES = (
    "unit_hyperedges",
    "unit_nodes",
    "unit_provenance",
    "unit_chunk_edges",
    "unit_chunk_contents",
    "unit_type_bags",
    "unit_rejections",
)


SCHEMAS: dict[str, dict[str, pl.DataType]] = {
    "unit_hyperedges": {
        "unit_id": pl.String(),
        "kind": pl.String(),  # occurrence | cross_document
        "anchor": pl.String(),
        "anchor_kind": pl.String(),
        "summary": pl.String(),
        "artifact_ids": pl.List(pl.String()),
        "artifact_types": pl.List(pl.String()),
        "chunk_ids": pl.List(pl.String()),
        "occurrence_ids": pl.List(pl.String()),
        "documents": pl.List(pl.String()),
        "n_artifacts": pl.Int64(),
        "n_chunks": pl.Int64(),
        "content_hash": pl.String(),
    },
    "unit_nodes": {
        "node_id": pl.String(),
        "artifact_type": pl.String(),
        "document": pl.String(),
        "content": pl.String(),
        "section_path": pl.List(pl.String()),
        "start_line": pl.Int64(),
        "end_line": pl.Int64(),
        "page": pl.Int64(),
        "rule": pl.String(),
    },
    "unit_provenance": {
        "unit_id": pl.String(),
        "occurrence_id": pl.String(),
        "document": pl.String(),
        "anchor": pl.String(),
        "line_spans": pl.List(pl.List(pl.Int64())),
        "pages": pl.List(pl.Int64()),
    },
    "unit_chunk_edges": {"unit_id": pl.String(), "chunk_id": pl.String(), "rank": pl.Int64()},
    "unit_chunk_contents": {
        "chunk_id": pl.String(),
        "document": pl.String(),
        "text": pl.String(),
        "start_line": pl.Int64(),
        "end_line": pl.Int64(),
        "page": pl.Int64(),
    },
    "unit_type_bags": {"unit_id": pl.String(), "artifact_type": pl.String(), "count": pl.Int64()},
    "unit_rejections": {
        "subject_kind": pl.String(),  # occurrence | anchor
        "subject_id": pl.String(),
        "anchor": pl.String(),
        "documents": pl.List(pl.String()),
        "rule": pl.String(),
        "detail": pl.String(),
    },
}


REJECTION_RULES = (
    "empty_unit",
    "missing_source_reference",
    "invalid_type_label",
    "insufficient_type_diversity",
    "placeholder_anchor",
    "language_type_alias",
    "cap_exceeded",
)


LINKABLE_ANCHOR_KINDS = frozenset({"command", "file"})


DEFAULT_CAP = 8


SCHEMAS_EMPTY = {name: pl.DataFrame(schema=schema) for name, schema in SCHEMAS.items()}


SORT_KEYS = {
    "unit_hyperedges": ["unit_id"],
    "unit_nodes": ["node_id"],
    "unit_provenance": ["unit_id", "occurrence_id"],
    "unit_chunk_edges": ["unit_id", "rank"],
    "unit_chunk_contents": ["chunk_id"],
    "unit_type_bags": ["unit_id", "artifact_type"],
    "unit_rejections": ["rule", "subject_id"],
}


def canonical_order(frames: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """Sort every table by its key so that the Parquet bytes are reproducible."""
    return {name: df.sort(SORT_KEYS[name]) for name, df in frames.items()}
