"""The cross-document ChipKG asset (ChipMind's circuit-semantic knowledge graph).

``chip_kg`` is one multi-asset with two outputs, ``chip_kg_nodes`` and ``chip_kg_triples``
(Parquet, ``<tables>/<output>.parquet``); it also writes the entity and statement node vectors
to the LanceDB table ``kg_nodes``. It reads every document's parsed blocks and chunks
(documents whose partition failed are skipped, not fatal) and is incremental per document: a
document whose blocks and chunks hash as before keeps its node and triple rows from the last
materialisation, and a node whose text is unchanged keeps its vector. Prose sentences go
through the LLM task ``chipkg_triples`` when the ``llm`` resource has a real model, else the
offline rules (tables and code always use the rules). Blocking checks: no orphan triple,
every node has provenance, every normalisation target is an entity node.

Domain code is in ``edaqa_pipeline.chipkg``; this module is the only Dagster wrapper.
"""

from collections.abc import Iterator

import polars as pl
from dagster import (
    AssetCheckSpec,
    AssetExecutionContext,
    AssetIn,
    AssetOut,
    Output,
    multi_asset,
)

from edaqa_pipeline.assets.units import ALL_PARTITIONS, CORPUS_CONDITION
from edaqa_pipeline.checks import problems_result
from edaqa_pipeline.graphs.chipkg.graph import (
    NODES_TABLE,
    TRIPLES_TABLE,
    build_kg,
    embed_nodes,
    kg_problems,
    read_vectors,
    write_vectors,
)
from edaqa_pipeline.resources import LLMResource, PipelineSettings
from edaqa_pipeline.retrieval.encoders import base_encoder
from edaqa_pipeline.storage.tables import read_table

GROUP = "chip_kg"

CHECKS = (
    ("no_orphan_triple", TRIPLES_TABLE, "orphan_triples",
     "every triple's subject, object and statement exist (nodes, or triples for linking triples)"),
    ("every_node_has_provenance", NODES_TABLE, "nodes_without_provenance",
     "every node names its documents, chunks and line spans"),
    ("normalisation_targets_exist", TRIPLES_TABLE, "missing_normalisation_targets",
     "every normalisation triple points at an entity node"),
)


def _rows(parts: dict[str, pl.DataFrame]) -> dict[str, list[dict]]:
    return {key: df.to_dicts() for key, df in sorted(parts.items()) if df is not None and df.height}


@multi_asset(
    name="chip_kg",
    group_name=GROUP,
    pool="llm",
    outs={
        NODES_TABLE: AssetOut(
            kinds={"python", "polars", "parquet", "lancedb"},
            automation_condition=CORPUS_CONDITION,
            description="ChipKG nodes: entities, surface forms, values, statements (IR + CSA), "
            "passages; provenance on every node. Vectors in LanceDB `kg_nodes`.",
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
        AssetCheckSpec(name, asset=asset, blocking=True, description=desc)
        for name, asset, _, desc in CHECKS
    ],
)
def chip_kg(
    context: AssetExecutionContext,
    parsed_documents: dict[str, pl.DataFrame],
    chunks: dict[str, pl.DataFrame],
    settings: PipelineSettings,
    llm: LLMResource,
) -> Iterator:
    """Build the ChipKG of all documents, reusing unchanged documents and vectors."""
    cfg = settings.settings()
    client = llm.get_client()
    pn, pt = read_table(cfg.tables_dir, NODES_TABLE), read_table(cfg.tables_dir, TRIPLES_TABLE)
    nodes, triples, stats = build_kg(
        _rows(parsed_documents), _rows(chunks),
        previous=(pn, pt) if pn is not None and pt is not None else None, client=client,
    )
    encoder = base_encoder(cfg.encoder_path)
    ids, vectors, encoded = embed_nodes(
        nodes, lambda texts: encoder.encode(texts, batch_size=64), read_vectors(cfg.lancedb_uri)
    )
    write_vectors(cfg.lancedb_uri, nodes, ids, vectors)
    meta = {
        **stats.as_metadata(), "vectors": len(ids), "encoded": encoded, "reused_vectors": len(ids) - encoded,
        "llm_provider": client.provider, "llm_calls": client.stats.calls,
    }
    by_kind = {f"nodes:{k}": n for k, n in nodes.group_by("kind").len().sort("kind").iter_rows()}
    tri_kind = {f"triples:{k}": n for k, n in triples.group_by("kind").len().sort("kind").iter_rows()}
    context.log.info("chip_kg: %s", meta)
    yield Output(nodes, output_name=NODES_TABLE,
                 metadata={"dagster/row_count": nodes.height, **meta, **by_kind})
    yield Output(triples, output_name=TRIPLES_TABLE,
                 metadata={"dagster/row_count": triples.height, **tri_kind})
    problems = kg_problems(nodes, triples)
    for (name, asset, key, _), count in zip(CHECKS, problems["_counts"], strict=True):
        # kg_problems lists the first 20 offenders and counts all of them
        yield problems_result(asset, name, problems[key], count=int(count))
