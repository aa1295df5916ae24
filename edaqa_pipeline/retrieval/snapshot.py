"""A read-only view of an indexed storage root, loaded once for querying.

Reads what ``edaqa index`` wrote: ``manifest.json`` (which documents are indexed), the chunk
tables and their vectors (Parquet), the unit hyperedges, their chunk edges and vectors, and
opens the LanceDB ``chunks`` table for full-text search. Dense similarity is exact
(a matrix product over L2-normalised vectors, the same ranking as LanceDB's flat cosine
search) and stays in memory because the reranker needs each candidate's vector in both
encoder spaces; for corpora past ~1M chunks, switch dense search to a LanceDB ANN index.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from edaqa_pipeline.retrieval import lance_store
from edaqa_pipeline.retrieval.encoders import DIM, Encoder, base_encoder, function_encoder
from edaqa_pipeline.storage.tables import read_partitions, read_table


class NotIndexedError(RuntimeError):
    """The storage root has no index (run ``edaqa index`` first)."""


def indexed_documents(storage: Path) -> list[str]:
    """Documents in the index: those of the last ``chunk_index`` materialisation (whether it
    ran from ``edaqa index``, the UI or the sensor), else ``manifest.json``."""
    index = read_table(storage / "tables", "chunk_index")
    if index is not None:
        return sorted(index["document"].to_list())
    manifest_path = storage / "manifest.json"
    if manifest_path.is_file():
        return list(json.loads(manifest_path.read_text())["documents"])
    raise NotIndexedError(f"{storage} holds no index: run `edaqa index --corpus DIR --storage {storage}` first")


@dataclass
class IndexSnapshot:
    storage: Path
    documents: list[str]
    chunks: pl.DataFrame
    chunk_vectors: np.ndarray
    units: pl.DataFrame
    unit_vectors: np.ndarray
    unit_chunk_rows: list[list[int]]  # unit row -> chunk row indexes (chunks(e), in order)
    lancedb_uri: str
    adapter: str = ""
    _chunk_row: dict[str, int] = field(default_factory=dict)

    @classmethod
    def load(cls, storage: Path, lancedb_uri: str | None = None, adapter: str = "") -> IndexSnapshot:
        storage = Path(storage).resolve()
        tables = storage / "tables"
        documents = indexed_documents(storage)
        chunks = read_partitions(tables, "chunks", documents)
        vectors = read_partitions(tables, "chunk_embeddings", documents)
        if chunks is None or vectors is None:
            raise NotIndexedError(f"{storage} holds no chunks")
        vec_by_id = dict(zip(vectors["chunk_id"].to_list(), vectors["vector"].to_list(), strict=True))
        chunk_vectors = np.asarray([vec_by_id[c] for c in chunks["chunk_id"]], dtype=np.float32)
        units = read_table(tables, "unit_hyperedges")
        unit_vecs = read_table(tables, "unit_embeddings")
        if units is None or unit_vecs is None:
            units = pl.DataFrame(schema={"unit_id": pl.String(), "chunk_ids": pl.List(pl.String())})
            unit_vectors = np.zeros((0, DIM), np.float32)
        else:
            uv = dict(zip(unit_vecs["unit_id"].to_list(), unit_vecs["vector"].to_list(), strict=True))
            unit_vectors = np.asarray([uv[u] for u in units["unit_id"]], dtype=np.float32).reshape(-1, DIM)
        row_of = {c: i for i, c in enumerate(chunks["chunk_id"].to_list())}
        unit_chunk_rows = [[row_of[c] for c in ids if c in row_of] for ids in units["chunk_ids"].to_list()]
        return cls(
            storage=storage,
            documents=documents,
            chunks=chunks,
            chunk_vectors=chunk_vectors,
            units=units,
            unit_vectors=unit_vectors,
            unit_chunk_rows=unit_chunk_rows,
            lancedb_uri=lancedb_uri or str(storage / "lancedb"),
            adapter=adapter,
            _chunk_row=row_of,
        )

    @cached_property
    def chunk_records(self) -> list[dict[str, Any]]:
        return self.chunks.select("chunk_id", "document", "text", "start_line", "end_line", "page").to_dicts()

    @cached_property
    def base(self) -> Encoder:
        return base_encoder()

    @cached_property
    def function(self) -> Encoder:
        return function_encoder(adapter=self.adapter)

    @cached_property
    def function_chunk_vectors(self) -> np.ndarray:
        """Chunk vectors in the function-aware space (the base vectors until an adapter exists)."""
        if self.function.is_base:
            return self.chunk_vectors
        return self.function.encode(self.chunks["embed_text"].to_list())

    @cached_property
    def lance_chunks(self):  # type: ignore[no-untyped-def]
        return lance_store.connect(self.lancedb_uri).open_table(lance_store.CHUNK_TABLE)

    def chunk_row(self, chunk_id: str) -> int:
        return self._chunk_row[chunk_id]
