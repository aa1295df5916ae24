"""Per-document assets: parse, extract typed artifacts, chunk, group occurrences.

Each asset is written for one document: it gets the document's input frames, calls the pure
domain function, attaches metadata and check results, and yields a Polars frame that the
Parquet IO manager stores under ``STORAGE/tables/<asset>/<document key>.parquet``.
``per_document.document_asset`` runs it over every document of a run in one step, reuses the
stored table of an unchanged document, and isolates a document that fails: a file that cannot
be parsed fails with a ``Failure`` naming the file and the problem, and every other document
still indexes.
"""


import json
from collections import Counter
from collections.abc import Iterator

import polars as pl
from dagster import AssetExecutionContext, Failure, Output

from edaqa_pipeline import checks
from edaqa_pipeline.assets.document_state import FAILED_PAGES
from edaqa_pipeline.assets.per_document import document_asset
from edaqa_pipeline.corpus.releases import ReleaseError, document_path
from edaqa_pipeline.corpus.scan import UnsafePathError, file_sha256
from edaqa_pipeline.extraction.artifacts import extract_artifacts
from edaqa_pipeline.extraction.chunks import build_chunks
from edaqa_pipeline.extraction.occurrences import build_occurrences
from edaqa_pipeline.extraction.semantic_llm import LLMSemanticExtractor
from edaqa_pipeline.model import (
    ARTIFACTS_SCHEMA,
    BLOCKS_SCHEMA,
    CHUNKS_SCHEMA,
    OCCURRENCES_SCHEMA,
    frame,
)
from edaqa_pipeline.parsing.documents import parse_file
from edaqa_pipeline.parsing.errors import DocumentError
from edaqa_pipeline.parsing.pdf_limits import PdfLimits
from edaqa_pipeline.resources import LLMResource, PipelineSettings
from edaqa_pipeline.validation import structure

GROUP = "documents"


def _line_bound(df: pl.DataFrame) -> int | None:
    ends = df.filter(pl.col("page").is_null())["end_line"]
    return int(ends.max()) if len(ends) and ends.max() is not None else None  # type: ignore[arg-type]


def source_sha256(settings: PipelineSettings, key: str) -> str:
    """SHA-256 of the document's file ('' when it is missing or outside the root): what
    ``parsed_documents`` is a function of."""
    try:
        path = document_path(settings.settings(), key)
    except (UnsafePathError, ReleaseError):
        return ""
    return file_sha256(path) if path.is_file() else ""


@document_asset(
    code_version="9",  # code in list items is a code block; HTML text is not read as markup
    source=source_sha256,
    group_name=GROUP,
    kinds={"python", "polars", "parquet"},
    check_specs=checks.check_specs("parsed_documents"),
    description="Blocks of one source document (Markdown via markdown-it-py, HTML via lxml, "
    "PDF via pymupdf) with section paths and 1-based line spans (or page + bbox).",
)
def parsed_documents(context: AssetExecutionContext, settings: PipelineSettings) -> Iterator:
    cfg = settings.settings()
    key = context.partition_key
    try:
        path = document_path(cfg, key)
        if not path.is_file():
            raise DocumentError(key, f"file not found: {path}")
        doc, blocks = parse_file(path, key, cfg.max_document_mb,
                                 PdfLimits(cfg.max_pdf_pages, cfg.pdf_page_seconds))
    except (DocumentError, UnsafePathError, ReleaseError) as exc:
        raise Failure(description=str(exc), metadata={"document": key}, allow_retries=False) from None
    failed_pages = json.loads(doc["failed_pages"])
    for failure in failed_pages:
        context.log.warning(f"{key}: page {failure['page']} left out: {failure['error']}")
    df = frame(blocks, BLOCKS_SCHEMA)
    kinds = Counter(df["kind"].to_list())
    yield Output(
        df,
        metadata={
            "document": key,
            "format": doc["format"],
            "source_sha256": doc["source_sha256"],
            "n_lines": doc["n_lines"],
            "n_pages": doc["n_pages"],
            "title": doc["title"],
            **({FAILED_PAGES: failed_pages} if failed_pages else {}),
            "dagster/row_count": df.height,
            **{f"blocks_{k}": v for k, v in sorted(kinds.items())},
            "preview": checks.table_preview(df, ["kind", "start_line", "end_line", "page", "text"]),
        },
    )
    n_lines = doc["n_lines"] if doc["format"] != "pdf" else None
    yield from checks.results("parsed_documents", df, structure.block_problems(df, n_lines))


@document_asset(
    code_version="3",  # an admonition's sentences cite the lines after its opening line
    group_name=GROUP,
    kinds={"python", "polars", "parquet"},
    check_specs=checks.check_specs("typed_artifacts"),
    pool="llm",
    description="Typed artifacts (codeblock, inline_command, table, figure, procedure, text, "
    "constraint, diagnostic, file) with provenance and the rule that extracted them.",
)
def typed_artifacts(
    context: AssetExecutionContext, parsed_documents: pl.DataFrame, llm: LLMResource
) -> Iterator:
    client = llm.get_client()
    rows = extract_artifacts(parsed_documents.to_dicts(), LLMSemanticExtractor(client))
    df = frame(rows, ARTIFACTS_SCHEMA)
    types = Counter(df["artifact_type"].to_list())
    yield Output(
        df,
        metadata={
            "dagster/row_count": df.height,
            "llm_provider": client.provider,
            **{f"artifacts_{t}": n for t, n in sorted(types.items())},
            **client.stats.as_metadata(),
            "preview": checks.table_preview(df, ["artifact_type", "start_line", "rule", "content"]),
        },
    )
    yield from checks.results(
        "typed_artifacts", df, structure.artifact_problems(df, _line_bound(parsed_documents))
    )


@document_asset(
    code_version="4",  # the lines of a paragraph of several images are written once
    group_name=GROUP,
    kinds={"python", "polars", "parquet"},
    check_specs=checks.check_specs("chunks"),
    description="Retrieval chunks: section-aligned, tables never split, sentence boundaries "
    "kept, token-bounded; content-derived ids and exact line spans.",
)
def chunks(parsed_documents: pl.DataFrame, settings: PipelineSettings) -> Iterator:
    cfg = settings.settings()
    df = frame(build_chunks(parsed_documents.to_dicts(), cfg.chunk_max_tokens), CHUNKS_SCHEMA)
    yield Output(
        df,
        metadata={
            "dagster/row_count": df.height,
            "tokens_total": int(df["n_tokens"].sum() or 0),
            "tokens_max": int(df["n_tokens"].max() or 0),  # type: ignore[arg-type]
            "preview": checks.table_preview(df, ["start_line", "end_line", "n_tokens", "text"]),
        },
    )
    yield from checks.results("chunks", df, structure.chunk_problems(df, _line_bound(parsed_documents)))


@document_asset(
    code_version="2",
    group_name=GROUP,
    kinds={"python", "polars", "parquet"},
    check_specs=checks.check_specs("occurrences"),
    description="Occurrences: local usage events (artifacts grouped under one section, code / "
    "procedure / diagnostic as boundaries) with a canonical command or file anchor.",
)
def occurrences(
    parsed_documents: pl.DataFrame,
    typed_artifacts: pl.DataFrame,
    chunks: pl.DataFrame,
    settings: PipelineSettings,
) -> Iterator:
    cfg = settings.settings()
    rows = build_occurrences(
        parsed_documents.to_dicts(), typed_artifacts.to_dicts(), chunks.to_dicts(),
        cfg.occurrence_min_chars,
    )
    df = frame(rows, OCCURRENCES_SCHEMA)
    kinds = Counter(df["anchor_kind"].to_list())
    yield Output(
        df,
        metadata={
            "dagster/row_count": df.height,
            "anchors": df.filter(pl.col("anchor_kind") != "section")["anchor"].n_unique(),
            **{f"anchor_kind_{k}": v for k, v in sorted(kinds.items())},
            "preview": checks.table_preview(df, ["anchor", "anchor_kind", "artifact_types"]),
        },
    )
    yield from checks.results(
        "occurrences", df, structure.occurrence_problems(df, typed_artifacts, chunks)
    )
