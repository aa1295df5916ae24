"""Element tables on disk and in LanceDB: what the assets write and the index reads.

* ``STORAGE/tables/elements/<document>.parquet``: element rows of one document
  (``graph.ELEMENTS_SCHEMA``), written by the per-document ``elements`` asset;
* ``STORAGE/tables/element_graph.parquet``: every edge (``graph.EDGES_SCHEMA``; in-document
  and cross-document), written by ``element_graph``;
* LanceDB table ``elements``: element id, document, type, the identifier view, the summary
  and its vector with the vector's key (``text_hash`` of the summary, ``encoder_id``),
  written by ``element_graph``.

Summary vectors go through the shared ``retrieval.embedder.Embedder``: a vector is reused
exactly when the same element has the same summary under the same encoder (key
``(kind, element id, text hash, encoder id)``), so a rebuild re-encodes only changed
summaries, a changed model re-encodes everything, and the width is the encoder's.

``load_graph`` reads the tables back; when an index has no element tables (built before the
assets were registered) it builds the graph from the stored ``parsed_documents`` instead
(1-2 s for the OpenROAD manuals) and every summary is encoded when the index is loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from edaqa_pipeline.graphs.elements import graph
from edaqa_pipeline.retrieval import lance_store
from edaqa_pipeline.retrieval.embedder import Embedder, text_hash
from edaqa_pipeline.retrieval.encoders import Encoder
from edaqa_pipeline.storage.tables import read_partitions, read_table

ELEMENT_TABLE = "elements"
ELEMENTS_ASSET = "elements"
GRAPH_ASSET = "element_graph"
SUMMARY_KIND = "element_summary"  # the Embedder kind of summary vectors


def lance_schema(dim: int) -> pa.Schema:
    return lance_store.table_schema("element_id", {
        "element_type": pa.string(), "id_view": pa.string(), "summary": pa.string(),
        "text_hash": pa.string(), "encoder_id": pa.string()}, dim)


def lance_rows(nodes: pl.DataFrame, vectors: np.ndarray, encoder_id: str) -> pa.Table:
    """The LanceDB rows of ``nodes`` (row-aligned ``vectors`` made by ``encoder_id``)."""
    rows = [
        {"element_id": r["element_id"], "document": r["document"], "element_type": r["element_type"],
         "id_view": r["id_view"], "summary": r["summary"], "text_hash": text_hash(r["summary"]),
         "encoder_id": encoder_id}
        for r in nodes.select("element_id", "document", "element_type", "id_view", "summary").iter_rows(named=True)
    ]  # fmt: skip
    return lance_store.to_arrow(rows, vectors, lance_schema(vectors.shape[1]))


def stored_vectors(uri: str) -> pl.DataFrame | None:
    """The vectors LanceDB ``elements`` holds now, keyed (``kind``, ``element_id``,
    ``text_hash``, ``encoder_id``) as ``Embedder.from_frames`` reads them; None when absent,
    empty, or written before vectors carried their key."""
    table = lance_store.read_table(uri, ELEMENT_TABLE)
    if table is None or table.num_rows == 0 or "text_hash" not in table.schema.names:
        return None
    frame = pl.from_arrow(table.select(["element_id", "text_hash", "encoder_id", "vector"]))
    assert isinstance(frame, pl.DataFrame)
    return frame.with_columns(pl.lit(SUMMARY_KIND).alias("kind"))


def summary_embedder(encoder: Encoder, uri: str | None = None) -> Embedder:
    """An ``Embedder`` that knows the summary vectors LanceDB ``elements`` holds at ``uri``."""
    previous = stored_vectors(uri) if uri else None
    return Embedder.from_frames(encoder, previous, id_column="element_id")


def embed_summaries(nodes: pl.DataFrame, embedder: Embedder) -> np.ndarray:
    """Summary vectors in node order; the ones ``embedder`` does not know encoded in one batch."""
    return embedder.embed(SUMMARY_KIND, nodes["element_id"].to_list(), nodes["summary"].to_list())


def write_lance(uri: str, nodes: pl.DataFrame, vectors: np.ndarray, encoder_id: str) -> None:
    """Make LanceDB ``elements`` hold exactly ``nodes``."""
    schema = lance_schema(vectors.shape[1])
    table = lance_store.read_table(uri, ELEMENT_TABLE)
    if table is not None and (table.schema.names != schema.names
                              or table.schema.field("vector").type != schema.field("vector").type):
        lance_store.connect(uri).drop_table(ELEMENT_TABLE)  # an older layout or another width
    lance_store.replace_rows(uri, ELEMENT_TABLE, schema, "element_id", lance_rows(nodes, vectors, encoder_id))


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
