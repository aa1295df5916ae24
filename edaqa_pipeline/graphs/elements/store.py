"""Element tables on disk and in LanceDB: what the assets write and the retriever reads.

* ``STORAGE/tables/elements/<document>.parquet``: element rows of one document
  (``graph.ELEMENTS_SCHEMA``), written by the per-document ``elements`` asset;
* ``STORAGE/tables/element_graph.parquet``: every edge (``graph.EDGES_SCHEMA``; in-document
  and cross-document), written by ``element_graph``;
* LanceDB table ``elements``: element id, document, the identifier view (full-text index),
  the summary and its vector (all-MiniLM-L6-v2), written by ``element_graph``.

``load_graph`` reads them back; when an index has no element tables (built before the assets
were registered) it builds the graph from the stored ``parsed_documents`` instead (1-2 s for
the OpenROAD manuals) and leaves the summary vectors to the caller to encode.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from edaqa_pipeline.graphs.elements import graph
from edaqa_pipeline.retrieval import lance_store
from edaqa_pipeline.storage.tables import read_partitions, read_table

ELEMENT_TABLE = "elements"
ELEMENTS_ASSET = "elements"
GRAPH_ASSET = "element_graph"


def lance_schema(dim: int) -> pa.Schema:
    return lance_store.table_schema("element_id", {"element_type": pa.string(), "id_view": pa.string(),
                                    "summary": pa.string(), "summary_hash": pa.string()}, dim)


def _matrix(table: pa.Table) -> np.ndarray:
    width = table.schema.field("vector").type.list_size
    flat = table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
    return np.asarray(flat, dtype=np.float32).reshape(-1, width)


def summary_hash(summary: str) -> str:
    return hashlib.sha256(summary.encode("utf-8")).hexdigest()[:16]


def lance_rows(nodes: pl.DataFrame, vectors: np.ndarray) -> pa.Table:
    rows = [
        {"element_id": r["element_id"], "document": r["document"], "element_type": r["element_type"],
         "id_view": r["id_view"], "summary": r["summary"], "summary_hash": summary_hash(r["summary"])}
        for r in nodes.select("element_id", "document", "element_type", "id_view", "summary").iter_rows(named=True)
    ]  # fmt: skip
    return lance_store.to_arrow(rows, vectors, lance_schema(vectors.shape[1]))


def known_vectors(uri: str) -> dict[str, np.ndarray]:
    """``element_id|summary_hash`` -> vector of what LanceDB holds now (for incremental
    re-embedding: only elements whose summary changed are encoded again)."""
    table = lance_store.read_table(uri, ELEMENT_TABLE)
    if table is None or table.num_rows == 0:
        return {}
    ids = table.column("element_id").to_pylist()
    hashes = table.column("summary_hash").to_pylist()
    vecs = _matrix(table)
    return {f"{i}|{h}": vecs[n] for n, (i, h) in enumerate(zip(ids, hashes, strict=True))}


def embed_summaries(nodes: pl.DataFrame, encoder: Any, known: dict[str, np.ndarray] | None = None) -> tuple[np.ndarray, int]:
    """Summary vectors in node order, reusing ``known`` ones; returns (vectors, n_encoded)."""
    known = known or {}
    keys = [f"{i}|{summary_hash(s)}" for i, s in zip(nodes["element_id"], nodes["summary"], strict=True)]
    todo = [n for n, key in enumerate(keys) if key not in known]
    fresh = encoder.encode([nodes["summary"][n] for n in todo]) if todo else np.zeros((0, encoder.dim), np.float32)
    out = np.zeros((len(keys), encoder.dim), dtype=np.float32)
    for n, key in enumerate(keys):
        if key in known:
            out[n] = known[key]
    for n, vec in zip(todo, fresh, strict=True):
        out[n] = vec
    return out, len(todo)


def write_lance(uri: str, nodes: pl.DataFrame, vectors: np.ndarray) -> None:
    """Make LanceDB ``elements`` hold exactly ``nodes``."""
    lance_store.replace_rows(uri, ELEMENT_TABLE, lance_schema(vectors.shape[1]), "element_id",
                             lance_rows(nodes, vectors))


def lance_vectors(uri: str, element_ids: list[str]) -> np.ndarray | None:
    """Summary vectors for ``element_ids`` from LanceDB, or None if any is missing."""
    table = lance_store.read_table(uri, ELEMENT_TABLE)
    if table is None:
        return None
    ids = table.column("element_id").to_pylist()
    vecs = _matrix(table)
    row = {e: n for n, e in enumerate(ids)}
    if any(e not in row for e in element_ids):
        return None
    return vecs[[row[e] for e in element_ids]] if element_ids else np.zeros((0, vecs.shape[1]), np.float32)


def load_graph(storage: Path, documents: list[str]) -> tuple[pl.DataFrame, pl.DataFrame, bool]:
    """(nodes, edges, from_assets): the element tables of an index, or the graph rebuilt from
    its ``parsed_documents`` when the element assets were never materialised."""
    tables = Path(storage) / "tables"
    nodes = read_partitions(tables, ELEMENTS_ASSET, documents)
    edges = read_table(tables, GRAPH_ASSET)
    if nodes is not None and edges is not None:
        nodes = nodes.sort(["document", "ordinal"])
        labels = graph.version_roots(documents)
        if labels:
            nodes = nodes.with_columns(
                pl.col("document").replace_strict(labels, default=pl.col("version")).alias("version")
            )
        return nodes, edges, True
    blocks = read_partitions(tables, "parsed_documents", documents)
    if blocks is None:
        raise FileNotFoundError(f"{storage} has neither element tables nor parsed_documents")
    by_doc: dict[str, list[dict[str, Any]]] = {}
    for row in blocks.iter_rows(named=True):
        by_doc.setdefault(row["document"], []).append(row)
    rows, all_edges = graph.build_corpus(by_doc)
    nodes_df, edges_df = graph.frames(rows, all_edges)
    return nodes_df, edges_df, False
