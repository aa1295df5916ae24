"""Embedding and vector-index assets (LanceDB).

* ``chunk_embeddings`` (per document, ``batch=True``): the chunks of every document of the
  run encoded with the configured encoder (``EDAQA_ENCODER``; width read from the model) in
  one batched call, reusing the vectors of texts the document's previous table already had;
  upserted into the LanceDB ``chunks`` table in one write (stale rows of those documents
  deleted); returned as a Parquet table per document too (what the checks and the in-memory
  retrievers read). Vectors are keyed by (chunk id, text hash, encoder id)
  (``retrieval.embedder``).
* ``chunk_index`` (cross-document): removes rows of documents that left the corpus and keeps
  the ANN index of large tables current; also removes, through the IO manager, the stored
  per-document tables of documents whose partition was deleted (by ``edaqa index`` or the
  corpus sensor), so a deleted file leaves nothing behind.
* ``unit_embeddings`` (cross-document, incremental): unit summaries encoded with the
  function-aware encoder slot; vectors whose (unit, summary hash, encoder) are unchanged are
  reused from the asset's previous output, read through the IO manager.
"""


import time
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

from edaqa_pipeline.assets import document_state
from edaqa_pipeline.assets.document_specs import DocumentResult
from edaqa_pipeline.assets.io_manager import CorpusParquetIOManager
from edaqa_pipeline.assets.partitions import DOCUMENT_ASSETS, DOCUMENTS
from edaqa_pipeline.assets.per_document import document_asset
from edaqa_pipeline.assets.units import ALL_PARTITIONS, CORPUS_CONDITION
from edaqa_pipeline.checks import problems_result
from edaqa_pipeline.corpus.releases import Releases
from edaqa_pipeline.resources import PipelineSettings
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


@document_asset(
    code_version="3",
    batch=True,
    group_name=GROUP,
    kinds={"python", "lancedb", "parquet"},
    check_specs=[AssetCheckSpec("vectors_valid", asset="chunk_embeddings", blocking=True,
                                description="one vector per chunk, the encoder's width, no NaN")],
    description="Encoder vectors of each document's chunks (every changed text of the run "
    "encoded in one batch; unchanged texts keep their vectors), upserted into LanceDB `chunks`.",
)
def chunk_embeddings(context: AssetExecutionContext, chunks: dict[str, pl.DataFrame],
                     settings: PipelineSettings,
                     io_manager: ResourceParam[CorpusParquetIOManager]
                     ) -> tuple[dict[str, DocumentResult], dict[str, int]]:
    cfg = settings.settings()
    encoder = base_encoder(cfg.encoder_path)
    keys = sorted(chunks)
    # the same document in the other releases: its unchanged texts keep their vectors
    elsewhere = Releases.load(cfg.storage_root).counterparts(keys)
    previous = [io_manager.read_partition("chunk_embeddings", key) for key in [*keys, *elsewhere]]
    embedder = Embedder.from_frames(encoder, *previous, kind="chunk", id_column="chunk_id")
    everything = pl.concat([chunks[k] for k in keys], how="vertical_relaxed") if keys else None
    if everything is None or everything.is_empty():
        frame = embedder.frame("chunk", [], [], extra={"document": []})
    else:
        frame = embedder.frame("chunk", everything["chunk_id"].to_list(), everything["embed_text"].to_list(),
                               extra={"document": everything["document"].to_list()})
    frame = frame.rename({"item_id": "chunk_id"}).select(
        "chunk_id", "document", "text_hash", "encoder_id", "vector")
    schema = lance_store.chunk_schema(encoder.dim)
    if everything is not None:
        rows = everything.select("chunk_id", "document", "text")
        lance_store.upsert_documents_rows(cfg.lancedb_uri, lance_store.CHUNK_TABLE, schema, "chunk_id",
                                          keys, lance_store.to_arrow(rows, vectors_of(frame), schema))
    results: dict[str, DocumentResult] = {}
    by_document = frame.partition_by("document", as_dict=True, maintain_order=True)
    document_of = dict(zip(frame["chunk_id"].to_list(), frame["document"].to_list(), strict=True))
    stale = embedder.recheck_shared()  # vectors taken from other releases, re-encoded (a sample)
    for key in keys:
        df = by_document.get((key,), frame.clear())
        vectors = vectors_of(df).reshape(-1, encoder.dim)
        problems = vector_problems(vectors, encoder.dim)
        problems += [p for p in stale if document_of.get(p.split(":", 1)[0]) == key]
        if df.height != chunks[key].height:
            problems.append(f"{df.height} vectors for {chunks[key].height} chunks")
        results[key] = DocumentResult(
            df, {"dagster/row_count": df.height, "encoder_id": encoder.encoder_id, "dim": encoder.dim,
                 "lancedb_uri": cfg.lancedb_uri},
            [problems_result("chunk_embeddings", "vectors_valid", problems)])
    context.log.info(f"chunk_embeddings: {embedder.encoded} texts encoded in one batch, "
                     f"{embedder.reused} vectors reused ({embedder.shared} from other releases' "
                     f"identical texts), {len(keys)} documents")
    return results, {"encoded": embedder.encoded, "reused_vectors": embedder.reused,
                     "shared_vectors": embedder.shared}


@asset(
    group_name=GROUP,
    kinds={"python", "lancedb"},
    code_version="3",
    ins={"chunk_embeddings": AssetIn(metadata=ALL_PARTITIONS)},
    automation_condition=CORPUS_CONDITION,
    check_specs=[AssetCheckSpec("index_matches_chunks", asset="chunk_index", blocking=True,
                                description="LanceDB rows == chunk rows of indexed documents")],
    description="The LanceDB `chunks` table made to hold exactly the corpus's documents "
    "(and an ANN index once it is large); stored tables of deleted documents removed.",
)
def chunk_index(context: AssetExecutionContext, chunk_embeddings: dict[str, pl.DataFrame],
                settings: PipelineSettings, io_manager: ResourceParam[CorpusParquetIOManager]) -> Iterator:
    started = time.perf_counter()
    cfg = settings.settings()
    documents = set(chunk_embeddings)
    current = set(context.instance.get_dynamic_partitions(DOCUMENTS))
    pruned = {asset: io_manager.remove_partitions(asset, io_manager.stored_keys(asset) - current)
              for asset in DOCUMENT_ASSETS}
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
                                    "ann_min_rows": lance_store.ANN_MIN_ROWS,
                                    "stale_tables_removed": sum(pruned.values()),
                                    document_state.DOCUMENTS_SHA: document_state.documents_sha(documents),
                                    "seconds": round(time.perf_counter() - started, 3)})
    problems = [] if rows == expected else [f"LanceDB holds {rows} rows, chunks total {expected}"]
    yield problems_result("chunk_index", "index_matches_chunks", problems)


@asset(
    group_name=GROUP,
    kinds={"python", "lancedb", "parquet"},
    code_version="3",
    automation_condition=CORPUS_CONDITION,
    check_specs=[AssetCheckSpec("every_unit_has_a_vector", asset="unit_embeddings", blocking=True)],
    description="Function-aware-encoder vectors of unit summaries (re-embeds changed units only); "
    "mirrored into LanceDB `units`.",
)
def unit_embeddings(unit_hyperedges: pl.DataFrame, settings: PipelineSettings,
                    io_manager: ResourceParam[CorpusParquetIOManager]) -> Iterator:
    started = time.perf_counter()
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
    rows = unit_hyperedges.select("unit_id", pl.col("documents").list.join(",").alias("document"),
                                  "summary", "content_hash")
    schema = lance_store.unit_schema(encoder.dim)
    lance_store.replace_rows(cfg.lancedb_uri, lance_store.UNIT_TABLE, schema, "unit_id",
                             lance_store.to_arrow(rows, vectors, schema))
    ann = lance_store.ensure_vector_index(cfg.lancedb_uri, lance_store.UNIT_TABLE)
    yield Output(df, metadata={"dagster/row_count": df.height, "embedded": embedder.encoded,
                               "seconds": round(time.perf_counter() - started, 3),
                               "ann_index": ann, "reused": embedder.reused,
                               "encoder_id": encoder.encoder_id, "encoder_is_base": encoder.is_base})
    problems = vector_problems(vectors, encoder.dim)
    if df.height != unit_hyperedges.height:
        problems.append(f"{df.height} vectors for {unit_hyperedges.height} units")
    yield problems_result("unit_embeddings", "every_unit_has_a_vector", problems)
