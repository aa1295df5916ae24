"""Element-graph assets (TechDocRAG): typed document elements and their relation edges.

* ``elements`` (per document): the document's element nodes with their three views and their
  in-document edges (``out_edges``), from ``parsed_documents``
  (``edaqa_pipeline.graphs.elements.graph.build_document``); summaries come from the LLM layer when a
  provider is configured, else from the offline rule.
* ``element_graph`` (cross-document): every edge of the corpus (in-document edges plus links
  between manuals, cross-document ``same_identifier``, ``version_of`` / ``supersedes`` when two
  versions of a document are indexed together); writes the LanceDB table ``elements``
  (identifier view, summaries and their vectors; the shared ``Embedder`` reuses the vector of
  every element whose summary and encoder are unchanged and encodes the rest in one batch).
  Stored as ``STORAGE/tables/element_graph.parquet``.

Blocking checks on both: no dangling edge, every node has provenance, ``step_next`` forms
chains; and the LanceDB table must hold exactly one row per element.
"""


from collections import Counter
from collections.abc import Iterator

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetIn,
    AssetKey,
    MetadataValue,
    Output,
    asset,
)

from edaqa_pipeline.assets.per_document import document_asset
from edaqa_pipeline.assets.units import ALL_PARTITIONS, CORPUS_CONDITION, concat
from edaqa_pipeline.checks import problems_result
from edaqa_pipeline.graphs.elements import graph, store, summaries
from edaqa_pipeline.resources import LLMResource, PipelineSettings
from edaqa_pipeline.retrieval import lance_store
from edaqa_pipeline.retrieval.encoders import base_encoder

GROUP = "element_graph"
CHECKS = {
    "no_dangling_edge": "both ends of every edge are elements; ids unique; known types/relations",
    "every_node_has_provenance": "document + line span (Markdown) or page (PDF); raw not empty",
    "step_next_chains": "step_next links steps only, one successor/predecessor each, no cycle",
}


def _specs(asset_name: str) -> list[AssetCheckSpec]:
    return [AssetCheckSpec(name, asset=asset_name, blocking=True, description=desc)
            for name, desc in CHECKS.items()]


def _results(asset_name: str, nodes: pl.DataFrame, edges: pl.DataFrame) -> Iterator[AssetCheckResult]:
    found = {
        "no_dangling_edge": graph.dangling_edge_problems(nodes, edges),
        "every_node_has_provenance": graph.provenance_problems(nodes),
        "step_next_chains": graph.step_chain_problems(nodes, edges),
    }
    for name, problems in found.items():
        yield problems_result(asset_name, name, problems)


def _counts(prefix: str, values: list[str]) -> dict[str, int]:
    return {f"{prefix}_{k}": v for k, v in sorted(Counter(values).items())}


@document_asset(
    code_version="2",  # PDF table rows read from pipe tables
    group_name=GROUP,
    kinds={"python", "polars", "parquet"},
    check_specs=_specs("elements"),
    pool="llm",
    description="Element nodes of one document (clause, section, paragraph, table + rows, "
    "figure, caption, procedure step, code) with identifiers, summary, raw evidence, "
    "provenance, and their in-document edges.",
)
def elements(context: AssetExecutionContext, parsed_documents: pl.DataFrame, llm: LLMResource) -> Iterator:
    client = llm.get_client()
    rows, edges = graph.build_document(parsed_documents.to_dicts())
    calls = summaries.llm_summaries(rows, client)
    nodes, edge_df = graph.frames(rows, edges)
    yield Output(
        nodes,
        metadata={
            "dagster/row_count": nodes.height,
            "edges": edge_df.height,
            "llm_provider": client.provider,
            "llm_summaries": calls,
            **_counts("type", nodes["element_type"].to_list()),
            **_counts("relation", edge_df["relation"].to_list()),
        },
    )
    yield from _results("elements", nodes, edge_df)


@asset(
    group_name=GROUP,
    kinds={"python", "polars", "parquet", "lancedb"},
    ins={"elements": AssetIn(metadata=ALL_PARTITIONS)},
    automation_condition=CORPUS_CONDITION,
    check_specs=[*_specs("element_graph"),
                 AssetCheckSpec("index_matches_elements", asset="element_graph", blocking=True,
                                description="LanceDB `elements` holds one row per element")],
    description="Every edge of the element graph (in-document + cross-document: links between "
    "manuals, shared identifiers, versions); LanceDB `elements` (identifier view, summaries "
    "and their vectors, keyed by summary hash and encoder).",
)
def element_graph(elements: dict[str, pl.DataFrame], settings: PipelineSettings) -> Iterator:
    cfg = settings.settings()
    nodes = concat(elements, graph.ELEMENTS_SCHEMA)
    rows = nodes.to_dicts()
    cross, labels = graph.corpus_edges(rows)
    graph.apply_versions(rows, labels)
    nodes = graph.frames(rows, [])[0]
    edges = graph.frames([], graph.document_edges(rows) + cross)[1]
    encoder = base_encoder(cfg.encoder_path)
    embedder = store.summary_embedder(encoder, cfg.lancedb_uri)
    vectors = store.embed_summaries(nodes, embedder)
    store.write_lance(cfg.lancedb_uri, nodes, vectors.reshape(-1, encoder.dim), encoder.encoder_id)
    table = lance_store.read_table(cfg.lancedb_uri, store.ELEMENT_TABLE)
    lance_rows = table.num_rows if table is not None else 0
    yield Output(
        edges,
        metadata={
            "dagster/row_count": edges.height,
            "elements": nodes.height,
            "documents": len(elements),
            "versioned_documents": len(labels),
            "summaries_embedded": embedder.encoded,
            "summaries_reused": embedder.reused,
            "encoder_id": encoder.encoder_id,
            **_counts("relation", edges["relation"].to_list()),
            "cross_document_rules": MetadataValue.json(
                dict(Counter(edges.filter(pl.col("scope") == "corpus")["rule"].to_list()))),
        },
    )
    yield from _results("element_graph", nodes, edges)
    problems = [] if lance_rows == nodes.height else [f"LanceDB holds {lance_rows} rows, {nodes.height} elements"]
    yield AssetCheckResult(
        asset_key=AssetKey("element_graph"), check_name="index_matches_elements",
        passed=not problems, severity=AssetCheckSeverity.ERROR,
        metadata={"problems": "\n".join(problems) or "none"},
    )
