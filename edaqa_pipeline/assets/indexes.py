"""Embedding and vector-index assets (LanceDB).

* ``chunk_embeddings`` (per document): the document's chunks encoded with the configured
  encoder (``EDAQA_ENCODER``; width read from the model), upserted into the LanceDB
  ``chunks`` table keyed on chunk id (stale rows of the document deleted); returned as a
  Parquet table too (what the checks and the in-memory retrievers read). Vectors are keyed by
  (chunk id, text hash, encoder id) (``retrieval.embedder``).
* ``chunk_index`` (cross-document): removes rows of documents that left the corpus and keeps
  the ANN index of large tables current.
* ``unit_embeddings`` (cross-document, incremental): unit summaries encoded with the
  function-aware encoder slot; vectors whose (unit, summary hash, encoder) are unchanged are
  reused from the asset's previous output, read through the IO manager.
"""


from collections.abc import Iterator

import numpy as np
import polars as pl
from dagster import (
    AssetCheckSpec,
    AssetExecutionContext,
    AssetIn,
    Output,
    ResourceParam,
    asset,
)

from edaqa_pipeline.assets.partitions import documents_partitions
from edaqa_pipeline.assets.units import ALL_PARTITIONS, CORPUS_CONDITION
from edaqa_pipeline.checks import problems_result
from edaqa_pipeline.resources import CorpusParquetIOManager, PipelineSettings
from edaqa_pipeline.retrieval import lance_store
from edaqa_pipeline.retrieval.embedder import Embedder, vectors_of
from edaqa_pipeline.retrieval.encoders import base_encoder, function_encoder

GROUP = "indexes"


def vector_problems(vectors: np.ndarray, dim: int) -> list[str]:
    problems = []
    if vectors.ndim != 2 or (vectors.size and vectors.shape[1] != dim):
        problems.append(f"vector dimension {vectors.shape} is not (n, {dim}) (the encoder's width)")
    if vectors.size and not np.isfinite(vectors).all():
        problems.append(f"{int((~np.isfinite(vectors)).any(axis=1).sum())} vectors contain NaN/inf")
    return problems


@asset(
    partitions_def=documents_partitions,
    group_name=GROUP,
    kinds={"python", "lancedb", "parquet"},
    code_version="2",
    check_specs=[AssetCheckSpec("vectors_valid", asset="chunk_embeddings", blocking=True,
                                description="one vector per chunk, the encoder's width, no NaN")],
    description="Encoder vectors of one document's chunks, upserted into LanceDB `chunks`.",
)
def chunk_embeddings(context: AssetExecutionContext, chunks: pl.DataFrame,
                     settings: PipelineSettings) -> Iterator:
    cfg = settings.settings()
    encoder = base_encoder(cfg.encoder_path)
    embedder = Embedder(encoder)
    ids, texts = chunks["chunk_id"].to_list(), chunks["embed_text"].to_list()
    frame = embedder.frame("chunk", ids, texts, extra={"document": chunks["document"].to_list()})
    df = frame.rename({"item_id": "chunk_id"}).select(
        "chunk_id", "document", "text_hash", "encoder_id", "vector")
    vectors = vectors_of(df)
    rows = chunks.select("chunk_id", "document", "text").to_dicts()
    schema = lance_store.chunk_schema(encoder.dim)
    data = lance_store.to_arrow(rows, vectors.reshape(-1, encoder.dim), schema)
    lance_store.upsert_document_rows(cfg.lancedb_uri, lance_store.CHUNK_TABLE, schema,
                                     "chunk_id", context.partition_key, data)
    yield Output(df, metadata={"dagster/row_count": df.height, "encoder_id": encoder.encoder_id,
                               "dim": encoder.dim, "encoded": embedder.encoded,
                               "lancedb_uri": cfg.lancedb_uri})
    problems = vector_problems(vectors.reshape(-1, encoder.dim), encoder.dim)
    if df.height != chunks.height:
        problems.append(f"{df.height} vectors for {chunks.height} chunks")
    yield problems_result("chunk_embeddings", "vectors_valid", problems)


@asset(
    group_name=GROUP,
    kinds={"python", "lancedb"},
    code_version="2",
    ins={"chunk_embeddings": AssetIn(metadata=ALL_PARTITIONS)},
    automation_condition=CORPUS_CONDITION,
    check_specs=[AssetCheckSpec("index_matches_chunks", asset="chunk_index", blocking=True,
                                description="LanceDB rows == chunk rows of indexed documents")],
    description="The LanceDB `chunks` table made to hold exactly the corpus's documents "
    "(and an ANN index once it is large).",
)
def chunk_index(chunk_embeddings: dict[str, pl.DataFrame], settings: PipelineSettings) -> Iterator:
    cfg = settings.settings()
    documents = set(chunk_embeddings)
    dim = base_encoder(cfg.encoder_path).dim
    deleted = lance_store.delete_documents_not_in(cfg.lancedb_uri, lance_store.CHUNK_TABLE,
                                                  lance_store.chunk_schema(dim), documents)
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
    code_version="2",
    automation_condition=CORPUS_CONDITION,
    check_specs=[AssetCheckSpec("every_unit_has_a_vector", asset="unit_embeddings", blocking=True)],
    description="Function-aware-encoder vectors of unit summaries (re-embeds changed units only); "
    "mirrored into LanceDB `units`.",
)
def unit_embeddings(unit_hyperedges: pl.DataFrame, settings: PipelineSettings,
                    io_manager: ResourceParam[CorpusParquetIOManager]) -> Iterator:
    cfg = settings.settings()
    encoder = function_encoder(cfg.encoder_path)
    previous = io_manager.previous_output("unit_embeddings")
    embedder = Embedder.from_frames(encoder, previous, kind="unit", id_column="unit_id")
    ids, summaries = unit_hyperedges["unit_id"].to_list(), unit_hyperedges["summary"].to_list()
    frame = embedder.frame("unit", ids, summaries,
                           extra={"content_hash": unit_hyperedges["content_hash"].to_list()})
    df = frame.rename({"item_id": "unit_id"}).select(
        "unit_id", "content_hash", "text_hash", "encoder_id", "vector")
    vectors = vectors_of(df).reshape(-1, encoder.dim)
    rows = [{"unit_id": r["unit_id"], "document": ",".join(r["documents"]), "summary": r["summary"],
             "content_hash": r["content_hash"]} for r in unit_hyperedges.iter_rows(named=True)]
    schema = lance_store.unit_schema(encoder.dim)
    lance_store.replace_rows(cfg.lancedb_uri, lance_store.UNIT_TABLE, schema, "unit_id",
                             lance_store.to_arrow(rows, vectors, schema))
    ann = lance_store.ensure_vector_index(cfg.lancedb_uri, lance_store.UNIT_TABLE)
    yield Output(df, metadata={"dagster/row_count": df.height, "embedded": embedder.encoded,
                               "ann_index": ann, "reused": embedder.reused,
                               "encoder_id": encoder.encoder_id, "encoder_is_base": encoder.is_base})
    problems = vector_problems(vectors, encoder.dim)
    if df.height != unit_hyperedges.height:
        problems.append(f"{df.height} vectors for {unit_hyperedges.height} units")
    yield problems_result("unit_embeddings", "every_unit_has_a_vector", problems)
