"""The loaded ChipKG: the PPR graph over its nodes plus the lookups ChipMind's retriever needs.

The PPR graph is undirected and weighted: every node-node triple links its subject and object
(weight 1) and both to the statement it came from (weight 1); a linking triple links the
backbone's object to the auxiliary's object (weight 0.5); every statement links to its passage
(weight 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import scipy.sparse as sp

from edaqa_pipeline.graphs.chipkg.ppr import personalized_pagerank, transition
from edaqa_pipeline.graphs.chipkg.store import NODES_TABLE, TRIPLES_TABLE
from edaqa_pipeline.graphs.chipkg.vectors import node_vectors
from edaqa_pipeline.storage.tables import read_table


class ChipKGNotBuiltError(FileNotFoundError):
    """The storage root has no ChipKG tables."""


@dataclass
class KGGraph:
    """Node index, symmetric adjacency, node vectors, statement <-> passage maps, anchors."""

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
    def build(cls, nodes: pl.DataFrame, triples: pl.DataFrame, dim: int = 0) -> KGGraph:
        """The graph of two ChipKG tables; vectors from the nodes' ``vector`` column (``dim``
        is the width of the empty matrix when there are none)."""
        node_ids = nodes["node_id"].to_list()
        index = {n: i for i, n in enumerate(node_ids)}
        kinds = np.asarray(nodes["kind"].to_list(), dtype=object)
        edges: tuple[list[int], list[int], list[float]] = ([], [], [])

        def edge(a: int | None, b: int | None, w: float) -> None:
            if a is not None and b is not None and a != b:
                edges[0].extend((a, b))
                edges[1].extend((b, a))
                edges[2].extend((w, w))

        mentions: dict[int, set[int]] = {}
        tri = triples.select("triple_id", "kind", "subject", "object", "statement_id").to_dicts()
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
                mentions.setdefault(st, set()).update(x for x in (s, o) if x is not None and kinds[x] == "entity")
        statement_passage: dict[int, int] = {}
        passage_statements: dict[int, list[int]] = {}
        anchors: dict[int, tuple[str, str]] = {}
        entity_by_name: dict[str, list[int]] = {}
        degree = np.zeros(len(node_ids), np.float64)
        recs = nodes.select("kind", "chunk_ids", "anchor_type", "anchor_entity", "canonical", "node_type").to_dicts()
        for i, r in enumerate(recs):
            if r["kind"] == "statement" and r["chunk_ids"]:
                p = index.get(r["chunk_ids"][0])
                if p is not None:
                    edge(i, p, 1.0)
                    statement_passage[i] = p
                    passage_statements.setdefault(p, []).append(i)
                anchors[i] = (r["anchor_type"], r["anchor_entity"])
            elif r["kind"] == "entity":
                name = r["canonical"].lower()
                entity_by_name.setdefault(name, []).append(i)
                if r["node_type"] == "option" and " " in name:
                    entity_by_name.setdefault(name.split(" ", 1)[1], []).append(i)
                degree[i] = max(len(r["chunk_ids"]), 1)
        n = len(node_ids)
        adjacency = sp.csr_matrix((np.asarray(edges[2], np.float64),
                                   (np.asarray(edges[0], np.int64), np.asarray(edges[1], np.int64))), shape=(n, n))
        adjacency.sum_duplicates()
        ids, vectors = node_vectors(nodes)
        embedded = np.asarray([index[i] for i in ids], np.int64)
        if not len(ids):
            vectors = np.zeros((0, dim), np.float32)
        passage_rows = np.asarray([i for i, k in enumerate(kinds) if k == "passage"], np.int64)
        return cls(
            nodes=nodes, node_ids=node_ids, index=index, adjacency=adjacency, kinds=kinds,
            embedded_rows=embedded, vectors=vectors, passage_rows=passage_rows,
            passage_chunk=[node_ids[i] for i in passage_rows], statement_passage=statement_passage,
            passage_statements=passage_statements, anchors=anchors, entity_by_name=entity_by_name,
            entity_degree=degree, statement_mentions=mentions,
        )

    @cached_property
    def operator(self) -> tuple[sp.csr_matrix, Any]:
        return transition(self.adjacency)

    def ppr(self, personalization: np.ndarray, *, alpha: float = 0.85, tol: float = 1e-8) -> np.ndarray:
        return personalized_pagerank(self.adjacency, personalization, alpha=alpha, tol=tol,
                                     operator=self.operator)


def load_graph(storage: Path, dim: int = 0) -> KGGraph:
    """The ChipKG of a storage root, as the ``chip_kg`` asset stored it."""
    tables = Path(storage) / "tables"
    nodes, triples = read_table(tables, NODES_TABLE), read_table(tables, TRIPLES_TABLE)
    if nodes is None or triples is None:
        raise ChipKGNotBuiltError(
            f"{storage} has no ChipKG ({NODES_TABLE}.parquet): build it with "
            f"`edaqa index --storage {storage} --corpus DIR --with chipkg`")
    return KGGraph.build(nodes, triples, dim)
