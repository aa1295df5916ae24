"""Hardware knowledge graph assets: datasheet chunks and properties per document, then one
refined hierarchical graph per document plus the instruction log (group ``hardware_kg``).

Thin wrappers around ``edaqa_pipeline.datasheets``: load the input, call the domain
function, attach metadata and blocking checks, return Polars frames stored by the Parquet IO
manager (``STORAGE/tables/datasheet_chunks/<doc>.parquet``,
``STORAGE/tables/datasheet_properties/<doc>.parquet``, ``STORAGE/tables/hardware_kgs.parquet``,
``STORAGE/tables/hardware_kg_instructions.parquet``). Markdown documents give empty frames
(the datasheet path reads PDF pages and tables).
"""

import json
from collections import Counter
from collections.abc import Iterator

import polars as pl
from dagster import (
    AssetCheckSpec,
    AssetExecutionContext,
    AssetIn,
    AssetOut,
    AutomationCondition,
    Config,
    MetadataValue,
    Output,
    multi_asset,
)
from pydantic import Field

from edaqa_pipeline.assets.per_document import document_asset
from edaqa_pipeline.checks import problems_result, table_preview
from edaqa_pipeline.extraction.datasheets.chunks import DATASHEET_CHUNKS_SCHEMA, chunk_frame
from edaqa_pipeline.extraction.datasheets.chunks import datasheet_chunks as build_datasheet_chunks
from edaqa_pipeline.extraction.datasheets.properties import (
    DATASHEET_PROPERTIES_SCHEMA,
    PAPER_TEMPERATURE,
    extract_properties,
    property_frame,
)
from edaqa_pipeline.extraction.datasheets.skeletons import CATEGORIES, classify
from edaqa_pipeline.graphs.hwkg.checks import kg_problems
from edaqa_pipeline.graphs.hwkg.faithfulness import judge, summary
from edaqa_pipeline.graphs.hwkg.kg import KGConfig, build_hardware_kg
from edaqa_pipeline.graphs.hwkg.paper_metrics import evaluate_document, totals
from edaqa_pipeline.graphs.hwkg.schema import HARDWARE_KGS_SCHEMA, INSTRUCTIONS_SCHEMA
from edaqa_pipeline.resources import LLMResource

GROUP = "hardware_kg"
KINDS = {"python", "polars", "parquet"}
ALL_PARTITIONS = {"allow_missing_partitions": True}
# Eager, tolerant of failed document partitions (as the functional-unit assets).
CORPUS_CONDITION = (
    (AutomationCondition.any_deps_updated() | AutomationCondition.missing()).since_last_handled()
    & ~AutomationCondition.any_deps_in_progress()
    & ~AutomationCondition.in_progress()
).with_label("eager_tolerating_failed_documents")
KG_CHECKS = (
    ("every_property_has_source", "every property has a source chunk (that exists) and a page"),
    ("no_property_outside_block", "every active property is attached to a block"),
    ("block_tree_is_a_tree", "blocks form one tree per document: one root, no cycles"),
    ("unique_property_names_per_block", "no two active properties share a name in a block"),
)


class DatasheetChunksConfig(Config):
    max_tokens: int = Field(default=300, description="token bound of prose chunks (chars/4)")


class DatasheetPropertiesConfig(Config):
    categories: dict[str, str] = Field(
        default_factory=dict,
        description="document key -> hardware category (overrides classification); one of "
        + ", ".join(CATEGORIES),
    )
    temperature: float = Field(default=PAPER_TEMPERATURE, description="LLM temperature (paper: 0.2)")
    judge_with_llm: bool = Field(
        default=True, description="faithfulness judged by the configured model (offline lexical "
        "check when none is configured); False: always the offline check")


class HardwareKGConfig(Config):
    iterations: int = Field(default=3, description="refinement iterations (MERGE/RENAME/reroute)")
    route_batch: int = Field(default=20, description="properties per routing query")
    refine_batch: int = Field(default=30, description="properties per refinement query")
    max_chain: int = Field(default=2, description="offline routing: section levels kept as blocks")
    temperature: float = Field(default=PAPER_TEMPERATURE, description="LLM temperature (paper: 0.2)")
    evaluate_with_llm: bool = Field(
        default=False, description="run the paper's evaluation (one-shot baseline, normalisation, "
        "completeness, faithfulness) with the configured model too; offline it always runs")
    llm_sample: int = Field(default=50, description="properties per graph a model judges")


@document_asset(
    code_version="2",  # table chunks are pipe tables
    group_name=GROUP,
    kinds=KINDS,
    check_specs=[
        AssetCheckSpec(
            "chunks_have_page_and_bbox",
            asset="datasheet_chunks",
            blocking=True,
            description="every chunk has a page and a bbox; ids unique",
        ),
    ],
    description="Extraction chunks of a PDF datasheet: Markdown-like text in reading order, "
    "figures excluded, each table one chunk (title + pipe table, header first), prose cut at sentence "
    "boundaries under a token bound; page + bbox provenance. Markdown documents: empty.",
)
def datasheet_chunks(
    context: AssetExecutionContext, parsed_documents: pl.DataFrame, config: DatasheetChunksConfig
) -> Iterator:
    rows = build_datasheet_chunks(parsed_documents.to_dicts(), config.max_tokens)
    df = chunk_frame(rows)
    kinds = Counter(df["kind"].to_list())
    yield Output(
        df,
        metadata={
            "document": context.partition_key,
            "dagster/row_count": df.height,
            **{f"chunks_{k}": v for k, v in sorted(kinds.items())},
            "tokens_max": int(df["n_tokens"].max() or 0) if df.height else 0,  # type: ignore[arg-type]
            "preview": table_preview(df, ["kind", "page", "n_tokens", "text"]),
        },
    )
    problems = [
        f"{r['chunk_id']}: no page or bbox"
        for r in df.select("chunk_id", "page", "bbox").iter_rows(named=True)
        if r["page"] is None or not r["bbox"]
    ]
    if df["chunk_id"].n_unique() != df.height:
        problems.append("chunk ids repeat")
    yield problems_result("datasheet_chunks", "chunks_have_page_and_bbox", problems)


@document_asset(
    code_version="3",  # prose bounds and lengths in clock cycles are read
    group_name=GROUP,
    kinds=KINDS,
    pool="llm",
    check_specs=[
        AssetCheckSpec(
            "every_property_has_source",
            asset="datasheet_properties",
            blocking=True,
            description="source chunk exists in this document's chunks; page set",
        ),
    ],
    description="Engineering properties of a datasheet (name, description with conditions, "
    "value or min/typ/max, unit, source chunk, page): header-aware table rules and "
    "'X is N unit' sentences offline, the datasheet_properties LLM task when configured.",
)
def datasheet_properties(
    context: AssetExecutionContext,
    datasheet_chunks: pl.DataFrame,
    llm: LLMResource,
    config: DatasheetPropertiesConfig,
) -> Iterator:
    key = context.partition_key
    chunks = datasheet_chunks.to_dicts()
    client = llm.get_client()
    category = config.categories.get(key)
    if category not in CATEGORIES:
        category, _ = classify([c["text"] for c in chunks])
    rows, stats = (extract_properties(chunks, category, client, temperature=config.temperature)
                   if chunks else ([], {}))
    df = property_frame(rows)
    verdicts = judge(rows, {c["chunk_id"]: c["text"] for c in chunks},
                     client if config.judge_with_llm else None, temperature=config.temperature)
    faith = summary(verdicts)
    yield Output(
        df,
        metadata={
            "document": key,
            "category": category,
            "dagster/row_count": df.height,
            "llm_provider": client.provider,
            **{f"rule_{k.replace(':', '_')}": v for k, v in Counter(df["rule"].to_list()).items()},
            **{f"extract_{k}": v for k, v in stats.items()},
            "faithfulness": faith["faithfulness"] if faith["faithfulness"] is not None else -1.0,
            "faithfulness_judges": MetadataValue.json(faith["methods"]),
            **client.stats.as_metadata(),
            "preview": table_preview(df, ["name", "value", "unit", "conditions", "page"]),
        },
    )
    ids = {c["chunk_id"] for c in chunks}
    problems = [
        f"{r['property_id']} ({r['name']}): source chunk missing or no page"
        for r in df.select("property_id", "name", "chunk_id", "page").iter_rows(named=True)
        if r["chunk_id"] not in ids or r["page"] is None
    ]
    yield problems_result("datasheet_properties", "every_property_has_source", problems)


@multi_asset(
    name="hardware_kg",
    group_name=GROUP,
    outs={
        "hardware_kgs": AssetOut(
            kinds=KINDS,
            automation_condition=CORPUS_CONDITION,
            description="Refined hierarchical hardware KGs, one per PDF document: block nodes "
            "(parent_id = parent block) and property nodes (parent_id = the block they are "
            "attached to; merged ones keep merged_into), with the property fields.",
        ),
        "hardware_kg_instructions": AssetOut(
            kinds=KINDS,
            automation_condition=CORPUS_CONDITION,
            description="The instruction log: every ATTACH / CREATE_BLOCK / MERGE / RENAME / KEEP "
            "with stage, iteration, source, status (applied / noop / rejected) and reason.",
        ),
    },
    ins={
        "datasheet_properties": AssetIn(metadata=ALL_PARTITIONS),
        "datasheet_chunks": AssetIn(metadata=ALL_PARTITIONS),
    },
    check_specs=[
        *(
            AssetCheckSpec(name, asset="hardware_kgs", blocking=True, description=desc)
            for name, desc in KG_CHECKS
        ),
        AssetCheckSpec(
            "every_instruction_has_a_status", asset="hardware_kg_instructions", blocking=True,
            description="every logged instruction is applied, noop or rejected, and every "
            "rejection carries its reason (the audit trail is complete)",
        ),
    ],
    pool="llm",
)
def hardware_kg(
    context: AssetExecutionContext,
    datasheet_properties: dict[str, pl.DataFrame],
    datasheet_chunks: dict[str, pl.DataFrame],
    llm: LLMResource,
    config: HardwareKGConfig,
) -> Iterator:
    """Route, refine and reroute every document's properties through validated instructions."""
    client = llm.get_client()
    kg_config = KGConfig(
        iterations=config.iterations, route_batch=config.route_batch,
        refine_batch=config.refine_batch, max_chain=config.max_chain,
        temperature=config.temperature,
    )  # fmt: skip
    judge_client = client if config.evaluate_with_llm else None
    evaluations: list[dict[str, object]] = []
    nodes: list[pl.DataFrame] = []
    logs: list[pl.DataFrame] = []
    per_doc: dict[str, dict[str, object]] = {}
    all_chunks: list[pl.DataFrame] = []
    for doc in sorted(datasheet_chunks):
        chunks = datasheet_chunks[doc]
        if chunks is None or chunks.height == 0:
            continue
        all_chunks.append(chunks.select("chunk_id"))
        props = datasheet_properties.get(doc)
        rows = props.to_dicts() if props is not None else []
        category = rows[0]["category"] if rows else classify(chunks["text"].to_list())[0]
        result = build_hardware_kg(doc, rows, category, client=client, config=kg_config)
        doc_nodes = result.nodes()
        nodes.append(doc_nodes)
        logs.append(result.log())
        active = doc_nodes.filter((pl.col("node_type") == "property") & (pl.col("status") == "active"))
        evaluation = evaluate_document(doc, chunks.to_dicts(), active.to_dicts(), category, judge_client,
                                       sample=config.llm_sample, temperature=config.temperature)
        evaluations.append(evaluation)
        per_doc[doc] = {"category": category, **result.stats, "converged": result.converged,
                        "iterations": result.iterations, "evaluation": evaluation}
    nodes_df = (
        pl.concat(nodes, how="vertical_relaxed")
        if nodes
        else pl.DataFrame(schema=HARDWARE_KGS_SCHEMA)
    )
    log_df = (
        pl.concat(logs, how="vertical_relaxed")
        if logs
        else pl.DataFrame(schema=INSTRUCTIONS_SCHEMA)
    )
    iteration_rows = [
        f"| {doc} | {it['iteration']} | {it['merge']} | {it['rename']} | {it['reroute']} | "
        f"{it['name_conflicts']} |"
        for doc, info in per_doc.items()
        for it in info["iterations"]  # type: ignore[attr-defined]
    ]
    paper = totals(evaluations)
    yield Output(
        nodes_df,
        output_name="hardware_kgs",
        metadata={
            "dagster/row_count": nodes_df.height,
            "documents": len(per_doc),
            "blocks": nodes_df.filter(pl.col("node_type") == "block").height,
            "properties_active": nodes_df.filter(
                (pl.col("node_type") == "property") & (pl.col("status") == "active")
            ).height,
            "llm_provider": client.provider,
            "iterations": MetadataValue.md(
                "| document | iteration | MERGE | RENAME | reroute | name conflicts left |\n"
                "|---|---|---|---|---|---|\n" + "\n".join(iteration_rows)
            ),
            "converged": all(bool(info["converged"]) for info in per_doc.values()),
            "paper_evaluation": MetadataValue.json(paper),
            "paper_evaluation_judges": "llm" if judge_client is not None and client.provider != "offline"
            else "offline-lexical",
            "per_document": MetadataValue.json(json.loads(json.dumps(per_doc, default=str))),
            **client.stats.as_metadata(),
        },
    )
    yield Output(
        log_df,
        output_name="hardware_kg_instructions",
        metadata={
            "dagster/row_count": log_df.height,
            "rejected": log_df.filter(pl.col("status") == "rejected").height,
            **{
                f"{op}_{status}": n
                for (op, status), n in Counter(
                    zip(log_df["op"].to_list(), log_df["status"].to_list(), strict=True)
                ).items()
            },
        },
    )
    chunk_ids = (
        pl.concat(all_chunks) if all_chunks else pl.DataFrame(schema={"chunk_id": pl.String()})
    )
    for name, problems in kg_problems(nodes_df, chunk_ids).items():
        yield problems_result("hardware_kgs", name, problems)
    bad_status = log_df.filter(~pl.col("status").is_in(["applied", "noop", "rejected"])).height
    unexplained = log_df.filter(
        (pl.col("status") == "rejected") & (pl.col("reason").is_null() | (pl.col("reason") == ""))
    ).height
    problems = [f"{bad_status} instructions with an unknown status"] if bad_status else []
    if unexplained:
        problems.append(f"{unexplained} rejected instructions without a reason")
    yield problems_result("hardware_kg_instructions", "every_instruction_has_a_status", problems)


__all__ = [
    "DATASHEET_CHUNKS_SCHEMA",
    "DATASHEET_PROPERTIES_SCHEMA",
    "GROUP",
    "HardwareKGConfig",
    "datasheet_chunks",
    "datasheet_properties",
    "hardware_kg",
]
