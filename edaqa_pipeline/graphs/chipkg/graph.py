"""The ChipKG as tables, its embeddings, and Personalized PageRank over it.

Tables (Polars, stored as Parquet ``chip_kg_nodes`` / ``chip_kg_triples``):

* nodes: ``entity`` (global: one node per canonical command / option / variable / file /
  message / tool / concept, provenance = every mention), ``surface`` (a document's surface
  form of an entity; normalisation triples map it to the entity), ``value`` (free-text objects,
  local to a document), ``statement`` (one per sentence unit: its IR JSON, category and
  Circuit Semantic Anchor) and ``passage`` (one per retrieval chunk; ``node_id`` = chunk id).
  Every node has provenance: ``documents``, ``chunk_ids`` and ``line_spans``; a node seen only
  in PDFs has no source lines, its chunks carry the page and bounding box instead.
* triples: ``backbone`` / ``auxiliary`` / ``normalisation`` between nodes, ``linking`` between
  a backbone triple and an auxiliary triple (``subject_kind = object_kind = "triple"``).

The PPR graph is undirected and weighted: every node-node triple links its subject and object
(weight 1) and both to the statement it came from (weight 1); a linking triple links the
backbone's object to the auxiliary's object (weight 0.5); every statement links to its
passage (weight 1). :func:`personalized_pagerank` is networkx's ``pagerank`` with
``personalization`` (dangling mass goes back to the personalization vector) computed by power
iteration over a scipy CSR matrix, which takes a few milliseconds on the 13k-node ORD-QA graph.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import scipy.sparse as sp

from edaqa_pipeline.graphs.chipkg.extract import EXTRACTOR_VERSION, DocumentKG, document_kg
from edaqa_pipeline.model import frame

NODES_TABLE = "chip_kg_nodes"
TRIPLES_TABLE = "chip_kg_triples"
LANCE_TABLE = "kg_nodes"
EMBEDDED_KINDS = ("entity", "statement")

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
    "doc_hash": pl.String(),  # hash of the source document's blocks + chunks ("" for entities)
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
    "rule": pl.String(),
    "doc_hash": pl.String(),
}


def document_hash(blocks: list[dict[str, Any]], chunks: list[dict[str, Any]]) -> str:
    """Content hash of what a document's KG is built from (block and chunk ids are
    content-derived) plus the extractor version: equal hash -> reuse the previous rows."""
    h = hashlib.sha256(EXTRACTOR_VERSION.encode())
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
    rules: dict[str, int] = field(default_factory=dict)

    def as_metadata(self) -> dict[str, Any]:
        return {"documents": self.documents, "reused_documents": self.reused_documents,
                "rebuilt_documents": self.rebuilt_documents,
                **{f"rule:{k}": v for k, v in sorted(self.rules.items())}}


def _local_rows(kg: DocumentKG, doc_hash: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = [dict(n, doc_hash=doc_hash if n["kind"] != "entity" else "") for n in kg.nodes]
    triples = [dict(t, doc_hash=doc_hash) for t in kg.triples]
    return nodes, triples


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
        if row["kind"] == "entity":
            row["documents"] = sorted(row["documents"])
            row["document"] = row["documents"][0] if row["documents"] else ""
            row["section_path"] = []
    out = frame(list(merged.values()), NODES_SCHEMA)
    return out.sort("node_id")


def build_kg(
    blocks_by_doc: dict[str, list[dict[str, Any]]],
    chunks_by_doc: dict[str, list[dict[str, Any]]],
    *,
    previous: tuple[pl.DataFrame, pl.DataFrame] | None = None,
    client: Any = None,
) -> tuple[pl.DataFrame, pl.DataFrame, BuildStats]:
    """(nodes, triples, stats) of the whole corpus; documents whose ``doc_hash`` is unchanged
    since ``previous`` keep their rows (entity nodes are re-merged every time)."""
    stats = BuildStats()
    prev_nodes: dict[str, list[dict[str, Any]]] = {}
    prev_triples: dict[str, list[dict[str, Any]]] = {}
    prev_hash: dict[str, str] = {}
    entity_prov: dict[str, list[dict[str, Any]]] = {}
    if previous is not None:
        pn, pt = previous
        for t in pt.to_dicts():
            prev_triples.setdefault(t["document"], []).append(t)
            prev_hash[t["document"]] = t["doc_hash"]
        for n in pn.to_dicts():
            if n["kind"] != "entity":
                prev_nodes.setdefault(n["document"], []).append(n)
                prev_hash.setdefault(n["document"], n["doc_hash"])
            else:
                entity_prov[n["node_id"]] = [n]
    node_rows: list[dict[str, Any]] = []
    triple_rows: list[dict[str, Any]] = []
    rules: dict[str, int] = {}
    for doc in sorted(set(blocks_by_doc) | set(chunks_by_doc)):
        blocks = blocks_by_doc.get(doc, [])
        chunks = chunks_by_doc.get(doc, [])
        h = document_hash(blocks, chunks)
        stats.documents += 1
        if prev_hash.get(doc) == h and doc in prev_nodes:
            stats.reused_documents += 1
            node_rows.extend(prev_nodes[doc])
            triple_rows.extend(prev_triples.get(doc, []))
            node_rows.extend(_reused_entities(doc, prev_triples.get(doc, []), entity_prov))
            continue
        stats.rebuilt_documents += 1
        kg = document_kg(blocks, chunks, client)
        for k, v in kg.rules.items():
            rules[k] = rules.get(k, 0) + v
        n, t = _local_rows(kg, h)
        node_rows.extend(n)
        triple_rows.extend(t)
    stats.rules = rules
    nodes = merge_nodes(node_rows)
    triples = frame(triple_rows, TRIPLES_SCHEMA).unique("triple_id", keep="first").sort("triple_id")
    return nodes, triples, stats


def _reused_entities(doc: str, triples: list[dict[str, Any]],
                     entity_prov: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The entity rows of a reused document, their provenance rebuilt from its triples (an
    entity's mentions in a document are exactly the units whose triples name it)."""
    out: dict[str, dict[str, Any]] = {}
    for t in triples:
        for end, kind in ((t["subject"], t["subject_kind"]), (t["object"], t["object_kind"])):
            if kind != "node" or end not in entity_prov:
                continue
            row = out.get(end)
            if row is None:
                row = out[end] = {**entity_prov[end][0], "document": doc, "documents": [doc],
                                  "chunk_ids": [], "line_spans": []}
            if t["chunk_id"] and t["chunk_id"] not in row["chunk_ids"]:
                row["chunk_ids"].append(t["chunk_id"])
            span = [t["start_line"], t["end_line"]]
            if t["start_line"] is not None and span not in row["line_spans"]:
                row["line_spans"].append(span)
    return list(out.values())


def _only_pdf(documents: list[str]) -> bool:
    """Whether every document is a PDF: located by page + bbox of its chunks, not by lines."""
    return all(d.lower().endswith(".pdf") for d in documents)


def kg_problems(nodes: pl.DataFrame, triples: pl.DataFrame) -> dict[str, list[str]]:
    """The asset checks: orphan triples, nodes without provenance, missing normalisation
    targets (first 20 offenders each)."""
    node_ids = set(nodes["node_id"].to_list())
    kinds = dict(zip(nodes["node_id"].to_list(), nodes["kind"].to_list(), strict=True))
    triple_ids = set(triples["triple_id"].to_list())
    orphans = []
    for t in triples.iter_rows(named=True):
        for end, kind in ((t["subject"], t["subject_kind"]), (t["object"], t["object_kind"])):
            pool = triple_ids if kind == "triple" else node_ids
            if end not in pool:
                orphans.append(f"{t['triple_id']} -> {end}")
        if t["statement_id"] not in node_ids:
            orphans.append(f"{t['triple_id']} statement {t['statement_id']}")
    no_prov = [
        n["node_id"] for n in nodes.iter_rows(named=True)
        if not n["documents"] or not n["chunk_ids"]
        or (not n["line_spans"] and n["kind"] != "passage" and not _only_pdf(n["documents"]))
    ]
    norm = triples.filter(pl.col("kind") == "normalisation")
    missing = [t["object"] for t in norm.iter_rows(named=True) if kinds.get(t["object"]) != "entity"]
    return {"orphan_triples": orphans[:20], "nodes_without_provenance": no_prov[:20],
            "missing_normalisation_targets": missing[:20],
            "_counts": [str(len(orphans)), str(len(no_prov)), str(len(missing))]}


# --- embeddings ------------------------------------------------------------------------------


def embed_nodes(nodes: pl.DataFrame, encode, previous: dict[str, tuple[str, np.ndarray]] | None = None,  # type: ignore[no-untyped-def]
                ) -> tuple[list[str], np.ndarray, int]:
    """(node ids, L2-normalised vectors, n newly encoded) of the entity and statement nodes;
    vectors of ``previous`` (node id -> (text, vector)) are reused when the text is unchanged."""
    rows = nodes.filter(pl.col("kind").is_in(list(EMBEDDED_KINDS))).select("node_id", "text").to_dicts()
    previous = previous or {}
    ids = [r["node_id"] for r in rows]
    todo = [i for i, r in enumerate(rows) if previous.get(r["node_id"], ("",))[0] != r["text"]]
    fresh = encode([rows[i]["text"] for i in todo]) if todo else np.zeros((0, 0), np.float32)
    dim = fresh.shape[1] if todo else (next(iter(previous.values()))[1].shape[0] if previous else 384)
    vectors = np.zeros((len(rows), dim), np.float32)
    done = set(todo)
    for j, i in enumerate(todo):
        vectors[i] = fresh[j]
    for i, r in enumerate(rows):
        if i not in done:
            vectors[i] = previous[r["node_id"]][1]
    return ids, vectors, len(todo)


def write_vectors(lancedb_uri: str, nodes: pl.DataFrame, ids: list[str], vectors: np.ndarray) -> None:
    """Make the LanceDB table ``kg_nodes`` hold exactly these node vectors."""
    import pyarrow as pa

    from edaqa_pipeline.retrieval import lance_store

    schema = lance_store.table_schema("node_id", {"kind": pa.string(), "text": pa.string()}, vectors.shape[1])
    meta = {r["node_id"]: r for r in nodes.select("node_id", "document", "kind", "text").to_dicts()}
    rows = [meta[i] for i in ids]
    lance_store.replace_rows(lancedb_uri, LANCE_TABLE, schema, "node_id",
                             lance_store.to_arrow(rows, vectors, schema))


def read_vectors(lancedb_uri: str) -> dict[str, tuple[str, np.ndarray]]:
    """node id -> (text, vector) from LanceDB ``kg_nodes`` (empty when it does not exist)."""
    from edaqa_pipeline.retrieval import lance_store

    table = lance_store.read_table(lancedb_uri, LANCE_TABLE)
    if table is None or table.num_rows == 0:
        return {}
    ids = table.column("node_id").to_pylist()
    texts = table.column("text").to_pylist()
    vecs = np.asarray(table.column("vector").to_pylist(), dtype=np.float32)
    return {i: (t, vecs[k]) for k, (i, t) in enumerate(zip(ids, texts, strict=True))}


def write_tables(tables_dir: Path, nodes: pl.DataFrame, triples: pl.DataFrame) -> None:
    """Parquet files at the asset IO manager's layout (``<tables>/<asset>.parquet``)."""
    tables_dir.mkdir(parents=True, exist_ok=True)
    nodes.write_parquet(tables_dir / f"{NODES_TABLE}.parquet")
    triples.write_parquet(tables_dir / f"{TRIPLES_TABLE}.parquet")


def build_from_storage(storage: Path, *, lancedb_uri: str | None = None, encode=None,  # type: ignore[no-untyped-def]
                       client: Any = None, documents: list[str] | None = None) -> dict[str, Any]:
    """Build (incrementally) and store the KG of an indexed storage root outside Dagster:
    reads its parsed_documents / chunks partitions, writes the two Parquet tables and the
    LanceDB ``kg_nodes`` vectors; returns counts and timings."""
    import time

    from edaqa_pipeline.retrieval.snapshot import indexed_documents
    from edaqa_pipeline.storage.tables import read_table

    storage = Path(storage)
    tables = storage / "tables"
    uri = lancedb_uri or str(storage / "lancedb")
    docs = documents if documents is not None else indexed_documents(storage)
    started = time.perf_counter()
    blocks_by_doc, chunks_by_doc = {}, {}
    for doc in docs:
        bp, cp = tables / "parsed_documents" / f"{doc}.parquet", tables / "chunks" / f"{doc}.parquet"
        if bp.is_file() and cp.is_file():
            blocks_by_doc[doc] = pl.read_parquet(bp).to_dicts()
            chunks_by_doc[doc] = pl.read_parquet(cp).to_dicts()
    pn, pt = read_table(tables, NODES_TABLE), read_table(tables, TRIPLES_TABLE)
    previous = (pn, pt) if pn is not None and pt is not None else None
    nodes, triples, stats = build_kg(blocks_by_doc, chunks_by_doc, previous=previous, client=client)
    extracted = time.perf_counter()
    if encode is None:
        from edaqa_pipeline.retrieval.encoders import base_encoder

        encoder = base_encoder()

        def encode(texts: list[str]) -> np.ndarray:
            return encoder.encode(texts, batch_size=64)

    ids, vectors, n_new = embed_nodes(nodes, encode, read_vectors(uri))
    embedded = time.perf_counter()
    write_tables(tables, nodes, triples)
    write_vectors(uri, nodes, ids, vectors)
    return {
        "nodes": nodes.height, "triples": triples.height, "embedded": len(ids), "encoded": n_new,
        "nodes_by_kind": dict(nodes.group_by("kind").len().sort("kind").iter_rows()),
        "triples_by_kind": dict(triples.group_by("kind").len().sort("kind").iter_rows()),
        "extract_s": round(extracted - started, 2), "embed_s": round(embedded - extracted, 2),
        "problems": kg_problems(nodes, triples)["_counts"], **stats.as_metadata(),
    }


# --- the PPR graph ---------------------------------------------------------------------------


def transition(adjacency: sp.csr_matrix) -> tuple[sp.csr_matrix, np.ndarray]:
    """(transposed row-normalised adjacency, dangling mask): the PPR operator of a graph."""
    out = np.asarray(adjacency.sum(axis=1)).ravel()
    inv = np.divide(1.0, out, out=np.zeros_like(out, dtype=np.float64), where=out > 0)
    return (sp.diags(inv) @ adjacency).T.tocsr(), out == 0


def personalized_pagerank(
    adjacency: sp.csr_matrix, personalization: np.ndarray, *, alpha: float = 0.85,
    max_iter: int = 100, tol: float = 1e-8,
    operator: tuple[sp.csr_matrix, np.ndarray] | None = None,
) -> np.ndarray:
    """PageRank with restarts to ``personalization`` (networkx semantics).

    ``adjacency[i, j]`` is the weight of edge i -> j (symmetric for an undirected graph). Each
    step: ``x = alpha * (x M + sum(x[dangling]) p) + (1 - alpha) p`` with ``M`` the
    row-normalised adjacency and ``p`` the normalised personalization; stops when the L1
    change is below ``tol`` or after ``max_iter`` steps. Returns a distribution (sums to 1).
    ``operator`` is :func:`transition` of ``adjacency``, precomputed by callers that run many
    queries on one graph.
    """
    n = adjacency.shape[0]
    p = np.asarray(personalization, dtype=np.float64).ravel()
    if p.shape[0] != n:
        raise ValueError(f"personalization has {p.shape[0]} entries for {n} nodes")
    p = np.full(n, 1.0 / n) if p.sum() <= 0 else p / p.sum()
    transition_t, dangling = operator or transition(adjacency)
    x = p.copy()
    for _ in range(max_iter):
        last = x
        x = alpha * (transition_t @ last + last[dangling].sum() * p) + (1.0 - alpha) * p
        if np.abs(x - last).sum() < tol:
            break
    return x


@dataclass
class KGGraph:
    """The loaded KG: node index, symmetric adjacency, node vectors and the lookups the
    retriever needs (statement -> passage, passage -> statements, entity names)."""

    nodes: pl.DataFrame
    node_ids: list[str]
    index: dict[str, int]
    adjacency: sp.csr_matrix
    kinds: np.ndarray  # kind per node (object array of str)
    embedded_rows: np.ndarray  # node rows that have vectors
    vectors: np.ndarray  # (len(embedded_rows), dim)
    passage_rows: np.ndarray  # node rows of passage nodes
    passage_chunk: list[str]  # chunk id per passage_rows entry
    statement_passage: dict[int, int]  # statement node row -> passage node row
    passage_statements: dict[int, list[int]]  # passage node row -> statement rows
    anchors: dict[int, tuple[str, str]]  # statement row -> (anchor_type, anchor_entity)
    entity_by_name: dict[str, list[int]]  # lower-case canonical / option name -> entity rows
    entity_degree: np.ndarray  # number of passages an entity reaches (for seed specificity)
    statement_mentions: dict[int, set[int]] = field(default_factory=dict)  # stmt -> entity rows

    @classmethod
    def build(cls, nodes: pl.DataFrame, triples: pl.DataFrame,
              vectors: dict[str, np.ndarray] | None = None) -> KGGraph:
        node_ids = nodes["node_id"].to_list()
        index = {n: i for i, n in enumerate(node_ids)}
        kinds = np.asarray(nodes["kind"].to_list(), dtype=object)
        rows, cols, weights = [], [], []

        def edge(a: int | None, b: int | None, w: float) -> None:
            if a is None or b is None or a == b:
                return
            rows.extend((a, b))
            cols.extend((b, a))
            weights.extend((w, w))

        statement_mentions: dict[int, set[int]] = {}
        tri = triples.select("triple_id", "kind", "subject", "object", "subject_kind", "statement_id").to_dicts()
        by_id = {t["triple_id"]: t for t in tri}
        for t in tri:
            st = index.get(t["statement_id"])
            if t["kind"] == "linking":
                b, a = by_id.get(t["subject"]), by_id.get(t["object"])
                if b and a:
                    edge(index.get(b["object"]), index.get(a["object"]), 0.5)
                continue
            s, o = index.get(t["subject"]), index.get(t["object"])
            edge(s, o, 1.0)
            edge(st, s, 1.0)
            edge(st, o, 1.0)
            if st is not None:
                for x in (s, o):
                    if x is not None and kinds[x] == "entity":
                        statement_mentions.setdefault(st, set()).add(x)
        statement_passage: dict[int, int] = {}
        passage_statements: dict[int, list[int]] = {}
        anchors: dict[int, tuple[str, str]] = {}
        recs = nodes.select("kind", "chunk_ids", "anchor_type", "anchor_entity", "canonical", "node_type").to_dicts()
        for i, r in enumerate(recs):
            if r["kind"] == "statement" and r["chunk_ids"]:
                p = index.get(r["chunk_ids"][0])
                if p is not None:
                    edge(i, p, 1.0)
                    statement_passage[i] = p
                    passage_statements.setdefault(p, []).append(i)
                anchors[i] = (r["anchor_type"], r["anchor_entity"])
        n = len(node_ids)
        adjacency = sp.csr_matrix((np.asarray(weights, np.float64), (np.asarray(rows, np.int64),
                                   np.asarray(cols, np.int64))), shape=(n, n))
        adjacency.sum_duplicates()
        entity_by_name: dict[str, list[int]] = {}
        degree = np.zeros(n, np.float64)
        for i, r in enumerate(recs):
            if r["kind"] != "entity":
                continue
            name = r["canonical"].lower()
            entity_by_name.setdefault(name, []).append(i)
            if r["node_type"] == "option" and " " in name:
                entity_by_name.setdefault(name.split(" ", 1)[1], []).append(i)
            degree[i] = max(len(r["chunk_ids"]), 1)
        passage_rows = np.asarray([i for i, k in enumerate(kinds) if k == "passage"], np.int64)
        vec_map = vectors or {}
        embedded = [i for i, nid in enumerate(node_ids) if nid in vec_map]
        dim = next(iter(vec_map.values())).shape[0] if vec_map else 384
        mat = (np.asarray([vec_map[node_ids[i]] for i in embedded], np.float32).reshape(-1, dim))
        return cls(
            nodes=nodes, node_ids=node_ids, index=index, adjacency=adjacency, kinds=kinds,
            embedded_rows=np.asarray(embedded, np.int64), vectors=mat, passage_rows=passage_rows,
            passage_chunk=[node_ids[i] for i in passage_rows], statement_passage=statement_passage,
            passage_statements=passage_statements, anchors=anchors, entity_by_name=entity_by_name,
            entity_degree=degree, statement_mentions=statement_mentions,
        )

    @cached_property
    def operator(self) -> tuple[sp.csr_matrix, np.ndarray]:
        return transition(self.adjacency)

    def ppr(self, personalization: np.ndarray, *, alpha: float = 0.85, tol: float = 1e-8) -> np.ndarray:
        return personalized_pagerank(self.adjacency, personalization, alpha=alpha, tol=tol,
                                     operator=self.operator)


def load_graph(storage: Path, lancedb_uri: str | None = None) -> KGGraph:
    """The KG of a storage root (tables from Parquet, vectors from LanceDB ``kg_nodes``)."""
    from edaqa_pipeline.storage.tables import read_table

    tables = Path(storage) / "tables"
    nodes, triples = read_table(tables, NODES_TABLE), read_table(tables, TRIPLES_TABLE)
    if nodes is None or triples is None:
        raise FileNotFoundError(
            f"{storage} has no ChipKG ({NODES_TABLE}.parquet): materialise the chip_kg asset or "
            "run `python benchmarks/chipmind_eval.py --storage ...` to build it"
        )
    vectors = {k: v for k, (_, v) in read_vectors(lancedb_uri or str(Path(storage) / "lancedb")).items()}
    return KGGraph.build(nodes, triples, vectors)


__all__ = [
    "EMBEDDED_KINDS", "LANCE_TABLE", "NODES_SCHEMA", "NODES_TABLE", "TRIPLES_SCHEMA",
    "TRIPLES_TABLE", "BuildStats", "KGGraph", "build_from_storage", "build_kg", "document_hash",
    "embed_nodes", "kg_problems", "load_graph", "merge_nodes", "personalized_pagerank",
    "read_vectors", "transition", "write_tables", "write_vectors",
]
