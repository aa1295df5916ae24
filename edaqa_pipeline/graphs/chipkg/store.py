"""The ChipKG as two tables, built incrementally per document.

Tables (Polars; the ``chip_kg`` asset stores them as ``chip_kg_nodes`` / ``chip_kg_triples``):

* nodes: ``entity`` (global: one node per canonical entity, provenance = every mention),
  ``surface`` (a document's surface form of an entity; normalisation triples map it to the
  entity), ``value`` (free-text objects, local to a document), ``statement`` (one per sentence
  unit: its IR JSON, category and Circuit Semantic Anchor) and ``passage`` (one per retrieval
  chunk; ``node_id`` = chunk id). Every node has provenance: ``documents``, ``chunk_ids`` and
  ``line_spans``; a node seen only in PDFs has no source lines, its chunks carry the page and
  bounding box instead. Entity and statement nodes also carry their vector (``vectors``).
* triples: ``backbone`` / ``auxiliary`` / ``normalisation`` between nodes, ``linking`` between
  a backbone triple and an auxiliary triple (``subject_kind = object_kind = "triple"``).

Incremental: a document whose blocks, chunks, extractor version and extracting model
(``provider:model``) hash as before keeps its rows from the previous build; entity rows are
re-merged every time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from edaqa_pipeline.graphs.chipkg.document import DocumentKG, document_kg
from edaqa_pipeline.graphs.chipkg.llm_task import extractor_id
from edaqa_pipeline.model import frame

NODES_TABLE = "chip_kg_nodes"
TRIPLES_TABLE = "chip_kg_triples"
EXTRACTOR_VERSION = "chipkg-rules-3"

NODES_SCHEMA: dict[str, pl.DataType] = {
    "node_id": pl.String(),
    "kind": pl.String(),  # entity | surface | value | statement | passage
    "node_type": pl.String(),  # entity type; statement: unit kind (prose, table_row, code, heading)
    "text": pl.String(),  # what the encoder sees (entity, statement) or the surface / value text
    "canonical": pl.String(),  # entity: canonical form; surface: its target; statement: anchor entity
    "category": pl.String(),  # statement: declarative | procedural
    "anchor_type": pl.String(),  # statement: CSA type
    "anchor_entity": pl.String(),  # statement: CSA entity
    "ir": pl.String(),  # statement: the JSON intermediate representation
    "document": pl.String(),  # first document (entities: alphabetically first)
    "documents": pl.List(pl.String()),
    "chunk_ids": pl.List(pl.String()),
    "line_spans": pl.List(pl.List(pl.Int64())),
    "section_path": pl.List(pl.String()),
    "doc_hash": pl.String(),  # hash the document's rows were built for ("" for entities)
}

TRIPLES_SCHEMA: dict[str, pl.DataType] = {
    "triple_id": pl.String(),
    "kind": pl.String(),  # backbone | auxiliary | linking | normalisation
    "subject": pl.String(),
    "relation": pl.String(),
    "object": pl.String(),
    "subject_kind": pl.String(),  # node | triple
    "object_kind": pl.String(),
    "qualifier": pl.String(),  # auxiliary / linking: condition, temporal, default, ...
    "statement_id": pl.String(),
    "document": pl.String(),
    "chunk_id": pl.String(),
    "start_line": pl.Int64(),
    "end_line": pl.Int64(),
    "rule": pl.String(),  # offline:<rule> | llm:chipkg_triples
    "doc_hash": pl.String(),
}


def document_hash(blocks: list[dict[str, Any]], chunks: list[dict[str, Any]], extractor: str = "offline:rules") -> str:
    """Content hash of what a document's KG is built from (block and chunk ids are
    content-derived), the extractor version and ``extractor`` (``provider:model`` of the LLM
    client, ``offline:rules`` without one): equal hash -> reuse the previous rows."""
    h = hashlib.sha256(f"{EXTRACTOR_VERSION}\x1f{extractor}\x1e".encode())
    for b in sorted(blocks, key=lambda b: b["ordinal"]):
        h.update(f"{b['block_id']}|{b['start_line']}|{b['end_line']}\x1f".encode())
    for c in sorted(chunks, key=lambda c: c["chunk_id"]):
        h.update(f"{c['chunk_id']}|{c['start_line']}|{c['end_line']}\x1f".encode())
    return h.hexdigest()[:32]


@dataclass
class BuildStats:
    documents: int = 0
    reused_documents: int = 0
    rebuilt_documents: int = 0
    fallback_documents: int = 0  # a model was configured, the rules answered some prose
    rules: dict[str, int] = field(default_factory=dict)

    def as_metadata(self) -> dict[str, Any]:
        return {"documents": self.documents, "reused_documents": self.reused_documents,
                "rebuilt_documents": self.rebuilt_documents,
                "fallback_documents": self.fallback_documents,
                **{f"rule:{k}": v for k, v in sorted(self.rules.items())}}


def _local_rows(kg: DocumentKG, doc_hash: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = [dict(n, doc_hash=doc_hash if n["kind"] != "entity" else "") for n in kg.nodes]
    return nodes, [dict(t, doc_hash=doc_hash) for t in kg.triples]


def merge_nodes(rows: Iterable[dict[str, Any]]) -> pl.DataFrame:
    """Node rows of all documents, entity rows merged (union of their provenance)."""
    merged: dict[str, dict[str, Any]] = {}
    for row in rows:
        prev = merged.get(row["node_id"])
        if prev is None:
            merged[row["node_id"]] = {**row, "documents": list(row["documents"]),
                                      "chunk_ids": list(row["chunk_ids"]),
                                      "line_spans": [list(s) for s in row["line_spans"]]}
            continue
        for key in ("documents", "chunk_ids"):
            prev[key].extend(v for v in row[key] if v not in prev[key])
        prev["line_spans"].extend(list(s) for s in row["line_spans"])
    for row in merged.values():
        if row["kind"] == "entity":  # sorted: a reused document's rows arrive in another order
            row["documents"] = sorted(row["documents"])
            row["document"] = row["documents"][0] if row["documents"] else ""
            row["chunk_ids"] = sorted(row["chunk_ids"])
            spans = {tuple(s) for s in row["line_spans"]}
            row["line_spans"] = [list(s) for s in sorted(spans, key=lambda s: tuple(-1 if v is None else v for v in s))]
            row["section_path"] = []
    return frame(list(merged.values()), NODES_SCHEMA).sort("node_id")


def _reused_entities(doc: str, triples: list[dict[str, Any]], entities: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The entity rows of a reused document, their provenance rebuilt from its triples (an
    entity's mentions in a document are exactly the units whose triples name it)."""
    out: dict[str, dict[str, Any]] = {}
    for t in triples:
        for end, kind in ((t["subject"], t["subject_kind"]), (t["object"], t["object_kind"])):
            if kind != "node" or end not in entities:
                continue
            row = out.get(end)
            if row is None:
                row = out[end] = {**entities[end], "document": doc, "documents": [doc],
                                  "chunk_ids": [], "line_spans": []}
            if t["chunk_id"] and t["chunk_id"] not in row["chunk_ids"]:
                row["chunk_ids"].append(t["chunk_id"])
            span = [t["start_line"], t["end_line"]]
            if t["start_line"] is not None and span not in row["line_spans"]:
                row["line_spans"].append(span)
    return list(out.values())


def build_kg(
    blocks_by_doc: dict[str, list[dict[str, Any]]],
    chunks_by_doc: dict[str, list[dict[str, Any]]],
    *,
    previous: tuple[pl.DataFrame, pl.DataFrame] | None = None,
    client: Any = None,
) -> tuple[pl.DataFrame, pl.DataFrame, BuildStats]:
    """(nodes, triples, stats) of the whole corpus; documents whose hash is unchanged since
    ``previous`` (the last build's nodes and triples) keep their rows. A document where the
    model failed and the rules answered gets an empty hash, so the next build retries it."""
    stats = BuildStats()
    prev_nodes: dict[str, list[dict[str, Any]]] = {}
    prev_triples: dict[str, list[dict[str, Any]]] = {}
    prev_hash: dict[str, str] = {}
    entities: dict[str, dict[str, Any]] = {}
    if previous is not None:
        pn, pt = previous
        for t in pt.select(list(TRIPLES_SCHEMA)).to_dicts():
            prev_triples.setdefault(t["document"], []).append(t)
            prev_hash[t["document"]] = t["doc_hash"]
        for n in pn.select(list(NODES_SCHEMA)).to_dicts():
            if n["kind"] == "entity":
                entities[n["node_id"]] = n
            else:
                prev_nodes.setdefault(n["document"], []).append(n)
                prev_hash.setdefault(n["document"], n["doc_hash"])
    extractor = extractor_id(client)
    node_rows: list[dict[str, Any]] = []
    triple_rows: list[dict[str, Any]] = []
    for doc in sorted(set(blocks_by_doc) | set(chunks_by_doc)):
        blocks, chunks = blocks_by_doc.get(doc, []), chunks_by_doc.get(doc, [])
        h = document_hash(blocks, chunks, extractor)
        stats.documents += 1
        if prev_hash.get(doc) == h and doc in prev_nodes:
            stats.reused_documents += 1
            node_rows += prev_nodes[doc]
            triple_rows += prev_triples.get(doc, [])
            node_rows += _reused_entities(doc, prev_triples.get(doc, []), entities)
            continue
        stats.rebuilt_documents += 1
        kg = document_kg(blocks, chunks, client)
        stats.fallback_documents += int(kg.fell_back)
        for k, v in kg.rules.items():
            stats.rules[k] = stats.rules.get(k, 0) + v
        n, t = _local_rows(kg, "" if kg.fell_back else h)
        node_rows += n
        triple_rows += t
    nodes = merge_nodes(node_rows)
    triples = frame(triple_rows, TRIPLES_SCHEMA).unique("triple_id", keep="first").sort("triple_id")
    return nodes, triples, stats
