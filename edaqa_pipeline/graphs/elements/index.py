"""The element index TechDocRAG searches: per-element BM25 over the identifier view, summary
vectors, the typed adjacency of the element graph, and each element's coverage and scope.

Built once per storage snapshot by ``make_techdoc_retriever``; ``Weights`` holds every
number the ranking depends on (the retriever module says how they were chosen).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import sparse

from edaqa_pipeline.graphs.elements import graph
from edaqa_pipeline.text import identifiers
from edaqa_pipeline.text import tokens as text_tokens


@dataclass(frozen=True)
class Weights:
    """Every number the ranking depends on (module docstring)."""

    lam_bm25: float = 1.0
    lam_id: float = 0.5
    lam_meta: float = 0.3
    alpha: float = 0.5
    beta: float = 0.35
    gamma: float = 0.15
    hop_decay: float = 0.5
    top_k: int = 10  # identifier recall
    top_l: int = 5  # summary rerank
    bm25_depth: int = 50
    fanout: int = 8
    max_expanded: int = 300
    bm25_k1: float = 1.2
    bm25_b: float = 0.75


@dataclass
class Member:
    node: int
    role: str
    relation: str
    header_only: bool = False


class BM25:
    """Okapi BM25 over token lists as one sparse matrix (query = a sum of columns)."""

    def __init__(self, docs: Sequence[Sequence[str]], k1: float, b: float) -> None:
        self.vocab: dict[str, int] = {}
        rows, cols, vals = [], [], []
        lengths = np.array([len(d) for d in docs], dtype=np.float64)
        avg = float(lengths.mean()) if len(docs) else 1.0
        df: Counter[int] = Counter()
        counts = []
        for d in docs:
            c = Counter(self.vocab.setdefault(t, len(self.vocab)) for t in d)
            counts.append(c)
            df.update(c.keys())
        n = len(docs)
        for i, c in enumerate(counts):
            norm = k1 * (1 - b + b * lengths[i] / (avg or 1.0))
            for col, tf in c.items():
                idf = math.log(1 + (n - df[col] + 0.5) / (df[col] + 0.5))
                rows.append(i)
                cols.append(col)
                vals.append(idf * tf * (k1 + 1) / (tf + norm))
        self.matrix = sparse.csc_matrix((vals, (rows, cols)), shape=(n, max(len(self.vocab), 1)))

    def scores(self, query_tokens: Sequence[str]) -> np.ndarray:
        cols = sorted({self.vocab[t] for t in query_tokens if t in self.vocab})
        if not cols:
            return np.zeros(self.matrix.shape[0], dtype=np.float64)
        return np.asarray(self.matrix[:, cols].sum(axis=1)).ravel()


class ElementIndex:
    """The element graph and its three views, loaded for querying."""

    def __init__(self, nodes: pl.DataFrame, edges: pl.DataFrame, vectors: np.ndarray, weights: Weights) -> None:
        nodes = nodes.sort(["document", "ordinal"])
        self.nodes = nodes
        self.ids: list[str] = nodes["element_id"].to_list()
        self.row = {e: i for i, e in enumerate(self.ids)}
        n = len(self.ids)
        self.type: list[str] = nodes["element_type"].to_list()
        self.doc: list[str] = nodes["document"].to_list()
        self.raw: list[str] = nodes["raw"].to_list()
        self.header_raw: list[str] = nodes["header_raw"].to_list()
        self.header_start: list[int | None] = nodes["header_start"].to_list()
        self.header_end: list[int | None] = nodes["header_end"].to_list()
        self.start: list[int | None] = nodes["start_line"].to_list()
        self.end: list[int | None] = nodes["end_line"].to_list()
        self.page: list[int | None] = nodes["page"].to_list()
        self.ordinal: list[int] = nodes["ordinal"].to_list()
        self.heading: list[str] = nodes["heading"].to_list()
        self.note: list[str] = nodes["note_label"].to_list()
        self.version: list[str] = nodes["version"].to_list()
        self.identifiers: list[list[str]] = nodes["identifiers"].to_list()
        self.section: list[int] = [self.row.get(s, -1) if s else -1 for s in nodes["section_id"].to_list()]
        self.vectors = vectors
        # adjacency: node -> [(neighbour, relation, outgoing)]
        self.adj: list[list[tuple[int, str, bool]]] = [[] for _ in range(n)]
        self.children: list[list[int]] = [[] for _ in range(n)]  # contains, in reading order
        self.parts: list[list[int]] = [[] for _ in range(n)]  # table -> rows, figure -> captions
        self.captions: dict[int, list[int]] = defaultdict(list)  # target -> captions
        for src, dst, rel in edges.select("src", "dst", "relation").iter_rows():
            a, b = self.row.get(src), self.row.get(dst)
            if a is None or b is None:
                continue
            self.adj[a].append((b, rel, True))
            self.adj[b].append((a, rel, False))
            if rel == "contains":
                self.children[a].append(b)
                if self.type[a] == "table":
                    self.parts[a].append(b)
            elif rel == "caption_of":
                self.captions[b].append(a)
                if self.doc[a] == self.doc[b] and self.start[a] is not None and self.start[b] is not None \
                        and self.start[b] <= self.start[a] <= (self.end[b] or 0):
                    self.parts[b].append(a)  # caption cells inside a figure table
        for lst in (*self.children, *self.parts):
            lst.sort(key=lambda j: (self.ordinal[j], j))
        self.table_of = [-1] * n
        for t, rows in enumerate(self.parts):
            for r in rows:
                if self.type[t] == "table":
                    self.table_of[r] = t
        # identifier view: BM25 + postings + vocabulary
        self.bm25 = BM25([text_tokens.tokens(v) for v in nodes["id_view"].to_list()], weights.bm25_k1, weights.bm25_b)
        postings: dict[str, list[int]] = defaultdict(list)
        for i, ids in enumerate(self.identifiers):
            for ident in ids:
                postings[ident].append(i)
        self.postings = {k: np.asarray(v, dtype=np.int64) for k, v in postings.items()}
        self.vocabulary = identifiers.IdentifierVocabulary(self.postings)
        self.meta_tokens: list[frozenset[str]] = []
        for path, doc, version in zip(nodes["section_path"].to_list(), self.doc, self.version, strict=True):
            stem = doc.rsplit("/", 1)[-1].rsplit(".", 1)[0]
            self.meta_tokens.append(frozenset(text_tokens.tokens(" ".join([*(path or []), stem, version or ""]))))
        self.doc_of_position: dict[str, list[int]] = defaultdict(list)
        for i, d in enumerate(self.doc):
            self.doc_of_position[d].append(i)

    def __len__(self) -> int:
        return len(self.ids)

    # -- coverage and spans --------------------------------------------------------------

    def coverage(self, member: Member) -> frozenset[int]:
        """Node positions whose text a member shows (a whole table shows its rows too)."""
        if member.header_only:
            return frozenset({member.node})
        return frozenset({member.node, *self.parts[member.node]})

    def member_text(self, member: Member) -> str:
        if member.header_only:
            return self.header_raw[member.node]
        return self.raw[member.node]

    def member_span(self, member: Member) -> tuple[int | None, int | None]:
        if member.header_only:
            return self.header_start[member.node], self.header_end[member.node]
        return self.start[member.node], self.end[member.node]

    def clause_scope(self, i: int) -> int:
        """The nearest section at or above ``i`` that is not a generic subheading."""
        s = i if self.type[i] in ("section", "clause") else self.section[i]
        while s != -1 and graph.is_auxiliary_heading(self.heading[s]) and self.section[s] != -1:
            s = self.section[s]
        return s

    def scope_members(self, s: int) -> list[int]:
        """A clause scope in reading order: its heading, its elements, and its subsections
        (a clause contains its subclauses) with their elements."""
        out = [s]
        for child in self.children[s]:
            if self.type[child] in ("section", "clause"):
                out += self.scope_members(child)
            else:
                out.append(child)
        return out
