"""The cross-document ChipKG asset (ChipMind's circuit-semantic knowledge graph).

``chip_kg`` is one multi-asset with two outputs, ``chip_kg_nodes`` (with the entity and
statement node vectors) and ``chip_kg_triples``. It reads every document's parsed blocks and
chunks (documents whose partition failed are skipped, not fatal) and is incremental: its
previous outputs, read through the IO manager, give back the rows of every document whose
blocks, chunks and extracting model hash as before, and the vector of every node whose text
and encoder are unchanged. Prose sentences go through the LLM task ``chipkg_triples`` when the
``llm`` resource has a real model, else the offline rules (tables, code and headings always use
the rules). Blocking checks: no orphan triple, every node has provenance, every normalisation
target is an entity node, every embedded node has a valid vector.

Domain code is in ``edaqa_pipeline.graphs.chipkg``; this module is the only Dagster wrapper.
"""

from collections.abc import Iterator

import polars as pl
from dagster import (
    AssetCheckSpec,
    AssetExecutionContext,
    AssetIn,
    AssetOut,
    Output,
    ResourceParam,
    multi_asset,
)

from edaqa_pipeline.assets.io_manager import CorpusParquetIOManager
from edaqa_pipeline.assets.units import ALL_PARTITIONS, CORPUS_CONDITION
from edaqa_pipeline.checks import problems_result
from edaqa_pipeline.graphs.chipkg.checks import kg_problems
from edaqa_pipeline.graphs.chipkg.store import NODES_TABLE, TRIPLES_TABLE, build_kg
from edaqa_pipeline.graphs.chipkg.vectors import vector_problems, with_vectors
from edaqa_pipeline.resources import LLMResource, PipelineSettings
from edaqa_pipeline.retrieval.encoders import base_encoder

GROUP = "chip_kg"

CHECKS = (
    ("no_orphan_triple", TRIPLES_TABLE, "orphan_triples",
     "every triple's subject, object and statement exist (nodes, or triples for linking triples)"),
    ("every_node_has_provenance", NODES_TABLE, "nodes_without_provenance",
     "every node names its documents, chunks and line spans (PDF nodes: chunks with pages)"),
    ("normalisation_targets_exist", TRIPLES_TABLE, "missing_normalisation_targets",
     "every normalisation triple points at an entity node"),
)
VECTOR_CHECK = "node_vectors_valid"


def _rows(parts: dict[str, pl.DataFrame]) -> dict[str, list[dict]]:
    return {key: df.to_dicts() for key, df in sorted(parts.items()) if df is not None and df.height}


@multi_asset(
    name="chip_kg",
    group_name=GROUP,
    pool="llm",
    code_version="4",  # PDF table rows read from pipe tables
    outs={
        NODES_TABLE: AssetOut(
            kinds={"python", "polars", "parquet"},
            automation_condition=CORPUS_CONDITION,
            description="ChipKG nodes: entities, surface forms, values, statements (IR + CSA), "
            "passages; provenance on every node; vectors of entity and statement nodes.",
        ),
        TRIPLES_TABLE: AssetOut(
            kinds={"python", "polars", "parquet"},
            automation_condition=CORPUS_CONDITION,
            description="ChipKG triples: backbone, auxiliary, linking, normalisation.",
        ),
    },
    ins={
        "parsed_documents": AssetIn(metadata=ALL_PARTITIONS),
        "chunks": AssetIn(metadata=ALL_PARTITIONS),
    },
    check_specs=[
        *(AssetCheckSpec(name, asset=asset, blocking=True, description=desc) for name, asset, _, desc in CHECKS),
        AssetCheckSpec(VECTOR_CHECK, asset=NODES_TABLE, blocking=True,
                       description="every entity / statement node has a finite vector of the encoder's width"),
    ],
)
def chip_kg(
    context: AssetExecutionContext,
    parsed_documents: dict[str, pl.DataFrame],
    chunks: dict[str, pl.DataFrame],
    settings: PipelineSettings,
    llm: LLMResource,
    io_manager: ResourceParam[CorpusParquetIOManager],
) -> Iterator:
    """Build the ChipKG of all documents, reusing unchanged documents and vectors."""
    cfg = settings.settings()
    client = llm.get_client()
    prev_nodes = io_manager.previous_output(NODES_TABLE)
    prev_triples = io_manager.previous_output(TRIPLES_TABLE)
    previous = (prev_nodes, prev_triples) if prev_nodes is not None and prev_triples is not None else None
    nodes, triples, stats = build_kg(_rows(parsed_documents), _rows(chunks), previous=previous, client=client)
    encoder = base_encoder(cfg.encoder_path)
    nodes, embedder = with_vectors(nodes, encoder, prev_nodes)
    meta = {
        **stats.as_metadata(), "encoded": embedder.encoded, "reused_vectors": embedder.reused,
        "encoder_id": encoder.encoder_id, "dim": encoder.dim,
        "llm_provider": client.provider, "llm_model": client.model, **client.stats.as_metadata(),
    }
    by_kind = {f"nodes:{k}": n for k, n in nodes.group_by("kind").len().sort("kind").iter_rows()}
    tri_kind = {f"triples:{k}": n for k, n in triples.group_by("kind").len().sort("kind").iter_rows()}
    context.log.info("chip_kg: %s", meta)
    yield Output(nodes, output_name=NODES_TABLE, metadata={"dagster/row_count": nodes.height, **meta, **by_kind})
    yield Output(triples, output_name=TRIPLES_TABLE, metadata={"dagster/row_count": triples.height, **tri_kind})
    problems = kg_problems(nodes, triples)
    for (name, asset, key, _), count in zip(CHECKS, problems["_counts"], strict=True):
        # kg_problems lists the first 20 offenders and counts all of them
        yield problems_result(asset, name, problems[key], count=int(count))
    yield problems_result(NODES_TABLE, VECTOR_CHECK, vector_problems(nodes, encoder.dim))
