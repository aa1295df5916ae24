"""Extraction chunks of a PDF datasheet (the paper's section I-A, "context-aware chunks").

The parsed blocks of one PDF become bounded source contexts for property extraction:

* Markdown-like text in reading order (headings as ``#`` lines, list items as ``- `` lines);
  figures are excluded (their content needs image understanding; the paper drops them too),
  and a paragraph that only repeats a table's caption is folded into that table;
* each table is ONE chunk whatever its size: a title line (caption, or "table in <section>"),
  then a pipe table with the resolved header row first (multi-row headers merged, units kept in the
  labels). A table that continues the previous one on the next page repeats that header, so
  every table chunk can be read on its own;
* prose is cut at sentence boundaries (``text.sentences``) under ``max_tokens`` (characters / 4); a sentence is
  never split, a longer one is a chunk of its own; a chunk never crosses a heading or a page;
* every chunk keeps its page and bbox (union of its blocks' boxes) and the ids of its blocks.

Markdown documents (no pages) give no chunks: this path is for PDFs.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import polars as pl

from edaqa_pipeline.extraction.datasheets.tables import (
    TableView,
    inherits_header,
    read_table,
    render_table,
)
from edaqa_pipeline.extraction.datasheets.textutil import decode_symbols, normalise
from edaqa_pipeline.model import BBOX, STRS, frame, normalise_ws, stable_id
from edaqa_pipeline.text.counting import approx_tokens
from edaqa_pipeline.text.markup import pipe_table_rows
from edaqa_pipeline.text.sentences import split_sentences

DEFAULT_MAX_TOKENS = 300
PROSE_KINDS = ("paragraph", "list", "ordered_list", "blockquote", "admonition", "code")

DATASHEET_CHUNKS_SCHEMA: dict[str, pl.DataType] = {
    "chunk_id": pl.String(),
    "document": pl.String(),
    "ordinal": pl.Int64(),
    "kind": pl.String(),  # table | prose
    "section_path": STRS,
    "title": pl.String(),  # table caption (or the continued table's); "" for prose
    "text": pl.String(),  # Markdown text the extractor reads (tables: title + pipe table)
    "table": pl.String(),  # JSON of the TableView for tables (labels, rows, roles, units); ""
    "n_tokens": pl.Int64(),
    "page": pl.Int64(),
    "bbox": BBOX,
    "block_ids": STRS,
}

_LEADER_DOTS = re.compile(r"(?:\.\s?){5,}")


def prose_sentences(text: str) -> list[str]:
    """Sentences of a PDF paragraph block (each text line is split on its own: the parser puts
    one list item per line); table-of-contents leader lines ("2.1 NMOS ......... 7") are
    dropped."""
    out: list[str] = []
    for line in text.split("\n"):
        out.extend(s for s in split_sentences(line) if not _LEADER_DOTS.search(s))
    return out


def _union(boxes: list[list[float]]) -> list[float] | None:
    boxes = [b for b in boxes if b]
    if not boxes:
        return None
    return [
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    ]


def _meta(block: dict[str, Any]) -> dict[str, Any]:
    raw = block.get("meta") or "{}"
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _prose_lines(block: dict[str, Any]) -> list[str]:
    """The block's sentences, list items prefixed with "- " (Markdown)."""
    text = block["text"] or ""
    if block["kind"] in ("list", "ordered_list"):
        items = [ln.strip() for ln in text.split("\n") if ln.strip()]
        return [f"- {item.lstrip('•·-*–▪◦ ').strip()}" for item in items]
    return prose_sentences(text)


def datasheet_chunks(
    blocks: list[dict[str, Any]], max_tokens: int = DEFAULT_MAX_TOKENS
) -> list[dict[str, Any]]:
    """Chunks of one PDF document's blocks (rows of DATASHEET_CHUNKS_SCHEMA), in reading order."""
    blocks = [
        {
            **b,
            "text": decode_symbols(b.get("text") or ""),
            "meta": decode_symbols(b.get("meta") or ""),
        }
        for b in blocks
        if b.get("page") is not None
    ]
    if not blocks:
        return []
    document = blocks[0]["document"]
    captions = {
        (b["page"], normalise(_meta(b).get("caption", "")))
        for b in blocks
        if b["kind"] == "table" and _meta(b).get("caption")
    }
    chunks: list[dict[str, Any]] = []
    seen: Counter[str] = Counter()

    def emit(
        kind: str,
        section: list[str],
        text: str,
        page: int,
        bbox: list[float] | None,
        block_ids: list[str],
        title: str = "",
        table: str = "",
    ) -> None:
        # the duplicate counter must key on what stable_id hashes (whitespace-normalised
        # text): two chunks that differ only in spacing would otherwise share an id
        key = f"{kind}\x1f{normalise_ws(text)}"
        dup = seen[key]
        seen[key] += 1
        chunks.append(
            {
                "chunk_id": stable_id("dsc", document, kind, text, dup),
                "document": document,
                "ordinal": len(chunks),
                "kind": kind,
                "section_path": list(section),
                "title": title,
                "text": text,
                "table": table,
                "n_tokens": approx_tokens(text),
                "page": int(page),
                "bbox": bbox,
                "block_ids": sorted(set(block_ids)),
            }
        )

    # prose accumulator
    heads: list[str] = []  # pending Markdown heading lines for the next prose chunk
    lines: list[str] = []
    boxes: list[list[float]] = []
    ids: list[str] = []
    state: dict[str, Any] = {"section": None, "page": None}

    def flush() -> None:
        if lines:
            text = "\n".join([*heads, *lines]) if heads else "\n".join(lines)
            emit("prose", state["section"] or [], text, state["page"], _union(boxes), ids)
            heads.clear()
        lines.clear()
        boxes.clear()
        ids.clear()

    previous_table: TableView | None = None
    previous_table_page = -10
    for block in blocks:
        kind = block["kind"]
        section = list(block.get("section_path") or [])
        page = int(block["page"])
        if kind == "figure" or kind == "image":
            continue
        if kind == "heading":
            flush()
            heads.clear()
            level = max(1, min(int(block.get("heading_level") or 1), 6))
            heads.append("#" * level + " " + " ".join(block["text"].split()))
            state["section"], state["page"] = section, page
            continue
        if kind == "table":
            flush()
            meta = _meta(block)
            rows = pipe_table_rows(block["text"] or "")
            near = previous_table if page - previous_table_page <= 1 else None
            if meta.get("continued") and inherits_header(rows[1:], meta.get("caption", ""), near):
                rows = rows[1:]  # the header the parser repeated is the one read_table carries on
            view = read_table(rows, meta.get("caption", ""), near)
            if not view.labels and not view.rows:
                continue
            previous_table, previous_table_page = view, page
            text = render_table(view, " > ".join(section))
            emit(
                "table",
                section,
                text,
                page,
                block.get("bbox"),
                [block["block_id"]],
                title=view.title,
                table=json.dumps(view.to_json(), ensure_ascii=False),
            )
            continue
        if kind not in PROSE_KINDS:
            continue
        text = " ".join((block["text"] or "").split())
        if not text or (page, normalise(text)) in captions:
            continue  # a table caption set as its own paragraph: it is in the table chunk
        if lines and (page != state["page"] or section != state["section"]):
            flush()
            heads.clear()
        state["section"], state["page"] = section, page
        for sentence in _prose_lines(block):
            size = approx_tokens("\n".join([*heads, *lines, sentence]))
            if lines and size > max_tokens:
                flush()
            lines.append(sentence)
            if not ids or ids[-1] != block["block_id"]:
                ids.append(block["block_id"])
                boxes.append(block.get("bbox"))
    flush()
    return chunks


def chunk_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return frame(rows, DATASHEET_CHUNKS_SCHEMA)


def table_view(chunk: dict[str, Any]) -> TableView | None:
    """The TableView stored with a table chunk (None for prose)."""
    if chunk.get("kind") != "table" or not chunk.get("table"):
        return None
    return TableView.from_json(json.loads(chunk["table"]))


__all__ = [
    "DATASHEET_CHUNKS_SCHEMA",
    "DEFAULT_MAX_TOKENS",
    "chunk_frame",
    "datasheet_chunks",
    "prose_sentences",
    "table_view",
]
