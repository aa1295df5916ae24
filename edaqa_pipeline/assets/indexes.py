"""Embedding and search-index assets (LanceDB).

* ``chunk_embeddings`` (per document): encodes the document's chunks with the base encoder,
  upserts them into the LanceDB ``chunks`` table keyed on chunk id and deletes that
  document's stale rows; returns the vectors as a Parquet table too (what the checks and the
  in-memory rerankers read).
* ``chunk_index`` (cross-document): removes rows of documents that left the corpus and
  rebuilds the full-text index used by the lexical retriever.
* ``unit_embeddings`` (cross-document, incremental): embeds unit summaries with the
  function-aware encoder slot, re-embedding only units whose content hash changed; summaries
  are encoded with fixed-shape padding so the bytes do not depend on which other units changed.
"""


from collections.abc import Iterator

import numpy as np
import polars as pl
from dagster import (
    AssetCheckSpec,
    AssetExecutionContext,
    AssetIn,
    Output,
    asset,
)

from edaqa_pipeline.assets.partitions import documents_partitions
from edaqa_pipeline.assets.units import ALL_PARTITIONS, CORPUS_CONDITION
from edaqa_pipeline.checks import problems_result
from edaqa_pipeline.resources import PipelineSettings
from edaqa_pipeline.retrieval import lance_store
from edaqa_pipeline.retrieval.encoders import DIM, base_encoder, function_encoder
from edaqa_pipeline.storage.tables import read_table

GROUP = "indexes"
EMBEDDINGS_SCHEMA = {
    "chunk_id": pl.String(),
    "document": pl.String(),
    "vector": pl.Array(pl.Float32(), DIM),
}
UNIT_EMBEDDINGS_SCHEMA = {
    "unit_id": pl.String(),
    "content_hash": pl.String(),
    "vector": pl.Array(pl.Float32(), DIM),
}


def vector_problems(vectors: np.ndarray) -> list[str]:
    problems = []
    if vectors.ndim != 2 or (vectors.size and vectors.shape[1] != DIM):
        problems.append(f"vector dimension {vectors.shape} is not (n, {DIM})")
    if vectors.size and not np.isfinite(vectors).all():
        problems.append(f"{int((~np.isfinite(vectors)).any(axis=1).sum())} vectors contain NaN/inf")
    return problems


@asset(
    partitions_def=documents_partitions,
    group_name=GROUP,
    kinds={"python", "lancedb", "parquet"},
    check_specs=[AssetCheckSpec("vectors_valid", asset="chunk_embeddings", blocking=True,
                                description="one vector per chunk, dimension 384, no NaN")],
    description="Base-encoder vectors of one document's chunks, upserted into LanceDB `chunks`.",
)
def chunk_embeddings(context: AssetExecutionContext, chunks: pl.DataFrame,
                     settings: PipelineSettings) -> Iterator:
    cfg = settings.settings()
    encoder = base_encoder(cfg.encoder_path)
    vectors = encoder.encode(chunks["embed_text"].to_list())
    rows = chunks.select("chunk_id", "document", "text").to_dicts()
    data = lance_store.to_arrow(rows, vectors, lance_store.CHUNK_SCHEMA)
    lance_store.upsert_document_rows(cfg.lancedb_uri, lance_store.CHUNK_TABLE, lance_store.CHUNK_SCHEMA,
                                     "chunk_id", context.partition_key, data)
    df = pl.DataFrame(
        {"chunk_id": chunks["chunk_id"], "document": chunks["document"],
         "vector": pl.Series(vectors, dtype=pl.Array(pl.Float32(), DIM)) if len(vectors) else pl.Series([], dtype=pl.Array(pl.Float32(), DIM))},
        schema=EMBEDDINGS_SCHEMA,
    )
    yield Output(df, metadata={"dagster/row_count": df.height, "encoder": encoder.name,
                               "lancedb_uri": cfg.lancedb_uri})
    problems = vector_problems(vectors)
    if df.height != chunks.height:
        problems.append(f"{df.height} vectors for {chunks.height} chunks")
    yield problems_result("chunk_embeddings", "vectors_valid", problems)


@asset(
    group_name=GROUP,
    kinds={"python", "lancedb"},
    ins={"chunk_embeddings": AssetIn(metadata=ALL_PARTITIONS)},
    automation_condition=CORPUS_CONDITION,
    check_specs=[AssetCheckSpec("index_matches_chunks", asset="chunk_index", blocking=True,
                                description="LanceDB rows == chunk rows of indexed documents")],
    description="The LanceDB `chunks` table made to hold exactly the corpus's documents, "
    "with its full-text index rebuilt.",
)
def chunk_index(chunk_embeddings: dict[str, pl.DataFrame], settings: PipelineSettings) -> Iterator:
    cfg = settings.settings()
    documents = set(chunk_embeddings)
    deleted = lance_store.delete_documents_not_in(cfg.lancedb_uri, lance_store.CHUNK_TABLE,
                                                  lance_store.CHUNK_SCHEMA, documents)
    lance_store.ensure_fts(cfg.lancedb_uri, lance_store.CHUNK_TABLE, "text")
    ann = lance_store.ensure_vector_index(cfg.lancedb_uri, lance_store.CHUNK_TABLE)
    table = lance_store.read_table(cfg.lancedb_uri, lance_store.CHUNK_TABLE)
    rows = table.num_rows if table is not None else 0
    expected = sum(df.height for df in chunk_embeddings.values())
    summary = pl.DataFrame(
        {"document": sorted(documents), "rows": [chunk_embeddings[d].height for d in sorted(documents)]},
        schema={"document": pl.String(), "rows": pl.Int64()},
    )
    yield Output(summary, metadata={"dagster/row_count": rows, "rows_deleted": deleted,
                                    "documents": len(documents), "ann_index": ann,
                                    "ann_min_rows": lance_store.ANN_MIN_ROWS})
    problems = [] if rows == expected else [f"LanceDB holds {rows} rows, chunks total {expected}"]
    yield problems_result("chunk_index", "index_matches_chunks", problems)


@asset(
    group_name=GROUP,
    kinds={"python", "lancedb", "parquet"},
    automation_condition=CORPUS_CONDITION,
    check_specs=[AssetCheckSpec("every_unit_has_a_vector", asset="unit_embeddings", blocking=True)],
    description="Function-aware-encoder vectors of unit summaries (re-embeds changed units only); "
    "mirrored into LanceDB `units`.",
)
def unit_embeddings(unit_hyperedges: pl.DataFrame, settings: PipelineSettings) -> Iterator:
    cfg = settings.settings()
    encoder = function_encoder(cfg.encoder_path)
    previous = read_table(cfg.tables_dir, "unit_embeddings")
    known: dict[str, np.ndarray] = {}
    if previous is not None and previous.height:
        for uid, chash, vec in previous.iter_rows():
            known[f"{uid}|{chash}"] = np.asarray(vec, dtype=np.float32)
    keys = [f"{u}|{h}" for u, h in zip(unit_hyperedges["unit_id"], unit_hyperedges["content_hash"], strict=True)]
    todo = [i for i, k in enumerate(keys) if k not in known]
    fresh = encoder.encode([unit_hyperedges["summary"][i] for i in todo], fixed_shape=True)
    for i, vec in zip(todo, fresh, strict=True):
        known[keys[i]] = vec
    vectors = np.stack([known[k] for k in keys]) if keys else np.zeros((0, DIM), np.float32)
    df = pl.DataFrame(
        {"unit_id": unit_hyperedges["unit_id"], "content_hash": unit_hyperedges["content_hash"],
         "vector": pl.Series(vectors, dtype=pl.Array(pl.Float32(), DIM)) if keys else pl.Series([], dtype=pl.Array(pl.Float32(), DIM))},
        schema=UNIT_EMBEDDINGS_SCHEMA,
    )
    rows = [{"unit_id": r["unit_id"], "document": ",".join(r["documents"]), "summary": r["summary"],
             "content_hash": r["content_hash"]} for r in unit_hyperedges.iter_rows(named=True)]
    lance_store.replace_rows(cfg.lancedb_uri, lance_store.UNIT_TABLE, lance_store.UNIT_SCHEMA, "unit_id",
                             lance_store.to_arrow(rows, vectors, lance_store.UNIT_SCHEMA))
    ann = lance_store.ensure_vector_index(cfg.lancedb_uri, lance_store.UNIT_TABLE)
    yield Output(df, metadata={"dagster/row_count": df.height, "embedded": len(todo), "ann_index": ann,
                               "reused": len(keys) - len(todo), "encoder": encoder.name,
                               "encoder_is_base": encoder.is_base})
    problems = vector_problems(vectors)
    if df.height != unit_hyperedges.height:
        problems.append(f"{df.height} vectors for {unit_hyperedges.height} units")
    yield problems_result("unit_embeddings", "every_unit_has_a_vector", problems)
