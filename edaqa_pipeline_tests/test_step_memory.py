"""What a per-document step holds in memory and what it writes to LanceDB.

``storage.tables.compact`` re-allocates a frame's buffers exactly: it must change nothing a
table hash or a reader can see (values, dtypes, nulls, nested and fixed-width columns, row
order). ``lance_store.upsert_documents_rows`` appends when the table is empty (a fresh build:
a merge cost 2.5x the memory) and merges otherwise: both must leave the same rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from edaqa_pipeline.retrieval import lance_store
from edaqa_pipeline.storage.hashing import content_hash
from edaqa_pipeline.storage.tables import compact

DIM = 8


def _rows_built_one_by_one() -> pl.DataFrame:
    """A frame as the builders make them: from Python rows, with every kind of column."""
    rows = [{"id": f"el_{i:04d}", "text": "x" * (i % 97) + "é" * (i % 5), "n": i if i % 7 else None,
             "score": i / 3, "tags": [f"t{j}" for j in range(i % 4)], "ok": i % 2 == 0}
            for i in range(500)]
    frame = pl.DataFrame(rows)
    vectors = np.random.default_rng(0).standard_normal((500, DIM)).astype(np.float32)
    return frame.with_columns(pl.Series("vector", vectors, dtype=pl.Array(pl.Float32, DIM)))


def test_a_compacted_frame_is_the_same_table() -> None:
    frame = _rows_built_one_by_one()
    small = compact(frame)
    assert small.schema == frame.schema
    assert small.equals(frame, null_equal=True)
    assert content_hash(small) == content_hash(frame)
    assert compact(frame.clear()).schema == frame.schema and compact(frame.clear()).height == 0


def _table(uri: str) -> pl.DataFrame:
    return pl.from_arrow(lance_store.read_table(uri, lance_store.CHUNK_TABLE)).sort("chunk_id")  # type: ignore[return-value]


def test_upsert_into_an_empty_table_equals_a_merge(tmp_path: Path) -> None:
    schema = lance_store.chunk_schema(DIM)
    vectors = np.random.default_rng(1).standard_normal((6, DIM)).astype(np.float32)
    rows = [{"chunk_id": f"c{i}", "document": f"d{i % 2}.md", "text": f"text {i}"} for i in range(6)]
    fresh, merged = str(tmp_path / "fresh"), str(tmp_path / "merged")
    lance_store.upsert_documents_rows(fresh, lance_store.CHUNK_TABLE, schema, "chunk_id", ["d0.md", "d1.md"],
                                      lance_store.to_arrow(rows, vectors, schema))  # empty table: an append
    other = [{"chunk_id": "old", "document": "d0.md", "text": "stale"}]  # a row the upsert must remove
    lance_store.upsert_documents_rows(merged, lance_store.CHUNK_TABLE, schema, "chunk_id", ["d0.md"],
                                      lance_store.to_arrow(other, vectors[:1] * 0, schema))
    lance_store.upsert_documents_rows(merged, lance_store.CHUNK_TABLE, schema, "chunk_id", ["d0.md", "d1.md"],
                                      lance_store.to_arrow(rows, vectors, schema))  # a merge
    assert _table(fresh).equals(_table(merged))
    assert _table(fresh)["chunk_id"].to_list() == [f"c{i}" for i in range(6)]
    again = [{**r, "text": r["text"] + "!"} for r in rows[:3]]  # a re-run of d0/d1 with new text
    lance_store.upsert_documents_rows(fresh, lance_store.CHUNK_TABLE, schema, "chunk_id", ["d0.md", "d1.md"],
                                      lance_store.to_arrow(again, vectors[:3], schema))
    assert _table(fresh)["text"].to_list() == ["text 0!", "text 1!", "text 2!"]


def test_lance_rows_from_a_frame_equal_rows_from_python() -> None:
    """The embedding steps hand LanceDB their Polars columns (no Python string per row): the
    Arrow table must be the one the Python rows made, nulls and non-ASCII text included."""
    schema = lance_store.chunk_schema(DIM)
    vectors = np.random.default_rng(2).standard_normal((4, DIM)).astype(np.float32)
    rows = [{"chunk_id": f"c{i}", "document": "d.md", "text": ["a", "é ü", "", None][i]} for i in range(4)]
    from_frame = lance_store.to_arrow(pl.DataFrame(rows, schema={k: pl.String() for k in rows[0]}), vectors, schema)
    assert from_frame.schema == schema
    assert from_frame.equals(lance_store.to_arrow(rows, vectors, schema))
