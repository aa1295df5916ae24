"""LanceDB tables: the store of record for vectors.

One table per view (``chunks``, ``units``, ``elements``, ``kg_nodes``); the vector width is
that of the rows written (the encoder's, ``Encoder.dim``), never a constant. Embedded by default (a local folder), and any
LanceDB URI (``s3://bucket/path``) works unchanged. Writes are idempotent: rows are upserted
with ``merge_insert`` keyed on the id, and rows that a partition no longer produces are
deleted, so re-running a partition never duplicates rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

CHUNK_TABLE = "chunks"
UNIT_TABLE = "units"


def connect(uri: str):  # type: ignore[no-untyped-def]
    import lancedb

    return lancedb.connect(uri)


def table_schema(id_column: str, extra: dict[str, pa.DataType], dim: int,
                 document: bool = True) -> pa.Schema:
    """``id_column``, ``document`` (when ``document``), the ``extra`` columns and a
    ``vector`` of width ``dim``."""
    fields = [pa.field(id_column, pa.string())]
    if document:
        fields.append(pa.field("document", pa.string()))
    fields += [pa.field(name, dtype) for name, dtype in extra.items()]
    fields.append(pa.field("vector", pa.list_(pa.float32(), dim)))
    return pa.schema(fields)


def chunk_schema(dim: int) -> pa.Schema:
    return table_schema("chunk_id", {"text": pa.string()}, dim)


def unit_schema(dim: int) -> pa.Schema:
    return table_schema("unit_id", {"summary": pa.string(), "content_hash": pa.string()}, dim)


def _table(db, name: str, schema: pa.Schema):  # type: ignore[no-untyped-def]
    """Open ``name``, creating it empty first if needed. ``exist_ok`` makes the creation safe
    when two writers (e.g. multiprocess steps) race to create the same table: the loser opens
    the winner's table instead of failing with "already exists"."""
    return db.create_table(name, schema=schema, exist_ok=True)


def to_arrow(rows: list[dict[str, Any]] | pl.DataFrame, vectors: np.ndarray, schema: pa.Schema) -> pa.Table:
    """The LanceDB table of ``rows`` (Python rows, or a frame whose columns are converted
    without passing through Python objects) with row-aligned ``vectors``."""
    columns: dict[str, Any] = {}
    for field in schema:
        if field.name == "vector":
            width = field.type.list_size
            flat = pa.array(vectors.astype(np.float32).reshape(-1), type=pa.float32())
            columns["vector"] = pa.FixedSizeListArray.from_arrays(flat, width)
        elif isinstance(rows, pl.DataFrame):
            columns[field.name] = rows[field.name].to_arrow().cast(field.type)
        else:
            columns[field.name] = pa.array([r[field.name] for r in rows], type=field.type)
    return pa.table(columns, schema=schema)


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def upsert_document_rows(
    uri: str, name: str, schema: pa.Schema, id_column: str, document: str, data: pa.Table
) -> None:
    """Make the rows of ``document`` in table ``name`` exactly ``data`` (idempotent)."""
    upsert_documents_rows(uri, name, schema, id_column, [document], data)


def upsert_documents_rows(
    uri: str, name: str, schema: pa.Schema, id_column: str, documents: list[str], data: pa.Table
) -> None:
    """Make the rows of ``documents`` in table ``name`` exactly ``data``, in one delete and one
    merge whatever the number of documents (a build of many documents writes once)."""
    if not documents:
        return
    db = connect(uri)
    table = _table(db, name, schema)
    keep = set(data.column(id_column).to_pylist())
    stale: list[str] = []
    for start in range(0, len(documents), 500):
        where = ", ".join(_quote(d) for d in documents[start : start + 500])
        existing = table.search().where(f"document IN ({where})").select([id_column]).limit(None).to_arrow()
        stale += [i for i in existing.column(id_column).to_pylist() if i not in keep]
    for start in range(0, len(stale), 500):
        table.delete(f"{id_column} IN ({', '.join(_quote(s) for s in stale[start : start + 500])})")
    if not data.num_rows:
        return
    if table.count_rows() == 0:  # a fresh build: nothing to match (a merge cost 2.5x the memory)
        table.add(data)
        return
    table.merge_insert(id_column).when_matched_update_all().when_not_matched_insert_all().execute(data)


def delete_documents_not_in(uri: str, name: str, schema: pa.Schema, documents: set[str]) -> int:
    """Delete the rows of documents that are no longer in the corpus; returns rows deleted."""
    db = connect(uri)
    table = _table(db, name, schema)
    present = set(table.search().select(["document"]).limit(None).to_arrow().column("document").to_pylist())
    gone = sorted(present - documents)
    if not gone:
        return 0
    before = table.count_rows()
    table.delete(f"document IN ({', '.join(_quote(d) for d in gone)})")
    return before - table.count_rows()


def replace_rows(uri: str, name: str, schema: pa.Schema, id_column: str, data: pa.Table) -> None:
    """Make table ``name`` hold exactly ``data``: upsert present ids, delete the others."""
    db = connect(uri)
    table = _table(db, name, schema)
    keep = set(data.column(id_column).to_pylist())
    existing = table.search().select([id_column]).limit(None).to_arrow().column(id_column).to_pylist()
    stale = [i for i in existing if i not in keep]
    for start in range(0, len(stale), 500):
        batch = stale[start : start + 500]
        table.delete(f"{id_column} IN ({', '.join(_quote(s) for s in batch)})")
    if data.num_rows:
        table.merge_insert(id_column).when_matched_update_all().when_not_matched_insert_all().execute(data)


def read_table(uri: str, name: str) -> pa.Table | None:
    db = connect(uri)
    listed = db.list_tables()
    names = listed.tables if hasattr(listed, "tables") else listed
    if name not in names:
        return None
    return db.open_table(name).to_arrow()


# Below this many rows a flat (exact) scan answers in milliseconds and an ANN index only costs
# build time and recall; LanceDB's own guidance puts the switch around 100K rows.
ANN_MIN_ROWS = 100_000


def ensure_vector_index(uri: str, name: str, min_rows: int = ANN_MIN_ROWS, *,
                        column: str = "vector", metric: str = "cosine",
                        max_unindexed_fraction: float = 0.1) -> bool:
    """Give table ``name`` an IVF_PQ ANN index on ``column`` once it holds ``min_rows`` rows.

    Below the threshold nothing happens and searches stay exact (flat). At or above it: with no
    vector index yet, one is trained (``num_partitions`` ~ sqrt(rows), width / 8 PQ
    sub-vectors); with one already there, rows added since are folded in by ``optimize()``
    once they exceed ``max_unindexed_fraction`` of the table (until then LanceDB searches
    them flat alongside the index, so results stay complete). Returns whether the table has a
    vector index afterwards. Called by the ``chunk_index`` asset and by
    ``unit_embeddings`` (metadata ``ann_index``); benchmarks/scale.py measures both sides.
    The in-process retrievers search the snapshot's vectors exactly (one matrix product, about
    a millisecond at 16x openroad-2024); the index serves clients that query LanceDB itself.
    """
    from lancedb.index import IvfPq

    table = connect(uri).open_table(name)
    rows = table.count_rows()
    existing = [ix for ix in table.list_indices() if column in ix.columns and ix.index_type.startswith("Ivf")]
    if rows < min_rows and not existing:
        return False
    if existing:
        stats = table.index_stats(existing[0].name)
        if stats is not None and stats.num_unindexed_rows > max_unindexed_fraction * max(rows, 1):
            table.optimize()
        return True
    partitions = max(1, min(int(rows**0.5), rows // 256 or 1))
    width = table.schema.field(column).type.list_size
    table.create_index(column, config=IvfPq(distance_type=metric, num_partitions=partitions,
                                            num_sub_vectors=max(1, width // 8)))
    return True
