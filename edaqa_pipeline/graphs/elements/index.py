"""The element graph loaded for querying: the identifier view as a ``LexicalIndex``, the
identifier postings and vocabulary, summary vectors, typed adjacency, and each element's
coverage and clause scope.

Any method may search it (TechDocRAG's ``techdoc``, the ``edaqa`` default): ``load_index``
builds one from an ``IndexSnapshot``; ``recall``, ``expansion`` and ``bundles`` are the
steps that read it. It holds no method's weights: ``k1`` / ``b`` of the identifier view's
BM25 are the only numbers, and they default to the shared ``LexicalIndex`` ones.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import polars as pl

from edaqa_pipeline.graphs.elements.rules import is_auxiliary_heading
from edaqa_pipeline.retrieval.lexical import LexicalIndex
from edaqa_pipeline.retrieval.line_structure import LineStructure
from edaqa_pipeline.text import identifiers
from edaqa_pipeline.text.tokens import tokens

SECTION_TYPES = ("section", "clause")


class ElementIndex:
    """The element graph and its three views (identifiers, summary vectors, raw text).

    Nodes are positions 0..n-1 in (document, ordinal) order, so the nodes of one document
    are contiguous and in reading order. ``adj[i]`` lists ``(neighbour, relation, outgoing)``
    for every edge touching ``i``; ``children`` (``contains``, reading order), ``parts``
    (table -> rows, figure table -> caption cells), ``captions`` (target -> captions) and
    ``table_of`` (row -> table) are the structural shortcuts bundling needs."""

    def __init__(self, nodes: pl.DataFrame, edges: pl.DataFrame, vectors: np.ndarray, *,
                 k1: float = 1.2, b: float = 0.75, lines: LineStructure | None = None) -> None:
        nodes = nodes.sort(["document", "ordinal"])
        if len(vectors) != nodes.height:
            raise ValueError(f"{len(vectors)} summary vectors for {nodes.height} elements")
        self.nodes = nodes
        self.lines = lines or LineStructure({})  # the parser's line kinds, for bundle items
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
        self.section_path: list[list[str]] = nodes["section_path"].to_list()
        self.vectors = np.asarray(vectors, dtype=np.float32)
        self.adj: list[list[tuple[int, str, bool]]] = [[] for _ in range(n)]
        self.children: list[list[int]] = [[] for _ in range(n)]
        self.parts: list[list[int]] = [[] for _ in range(n)]
        self.captions: dict[int, list[int]] = defaultdict(list)
        for src, dst, rel in edges.select("src", "dst", "relation").iter_rows():
            a, b_ = self.row.get(src), self.row.get(dst)
            if a is None or b_ is None:
                continue
            self.adj[a].append((b_, rel, True))
            self.adj[b_].append((a, rel, False))
            if rel == "contains":
                self.children[a].append(b_)
                if self.type[a] == "table":
                    self.parts[a].append(b_)
            elif rel == "caption_of":
                self.captions[b_].append(a)
                if self.doc[a] == self.doc[b_] and self.start[a] is not None and self.start[b_] is not None \
                        and self.start[b_] <= self.start[a] <= (self.end[b_] or 0):
                    self.parts[b_].append(a)  # caption cells inside a figure table
        for lst in (*self.children, *self.parts):
            lst.sort(key=lambda j: (self.ordinal[j], j))
        self.table_of = [-1] * n
        for t, rows in enumerate(self.parts):
            for r in rows:
                if self.type[t] == "table":
                    self.table_of[r] = t
        # the identifier view: one BM25 document per element (the shared ranker and tokens)
        self.lexical = LexicalIndex(token_lists=[tokens(v) for v in nodes["id_view"].to_list()], k1=k1, b=b)
        postings: dict[str, list[int]] = defaultdict(list)
        for i, ids in enumerate(self.identifiers):
            for ident in ids:
                postings[ident].append(i)
        self.postings = {k: np.asarray(v, dtype=np.int64) for k, v in postings.items()}
        self.vocabulary = identifiers.IdentifierVocabulary(self.postings)
        self.meta_tokens: list[frozenset[str]] = []
        for path, doc, version in zip(nodes["section_path"].to_list(), self.doc, self.version, strict=True):
            stem = doc.rsplit("/", 1)[-1].rsplit(".", 1)[0]
            self.meta_tokens.append(frozenset(tokens(" ".join([*(path or []), stem, version or ""]))))
        self.doc_start: dict[str, int] = {}
        for i, d in enumerate(self.doc):
            self.doc_start.setdefault(d, i)

    def __len__(self) -> int:
        return len(self.ids)

    # -- what an element shows -----------------------------------------------------------

    def coverage(self, node: int, header_only: bool = False) -> frozenset[int]:
        """Node positions whose text ``node`` shows (a whole table shows its rows too)."""
        if header_only:
            return frozenset({node})
        return frozenset({node, *self.parts[node]})

    def text(self, node: int, header_only: bool = False) -> str:
        """The raw evidence of ``node`` (a table's header lines when ``header_only``)."""
        return self.header_raw[node] if header_only else self.raw[node]

    def span(self, node: int, header_only: bool = False) -> tuple[int | None, int | None]:
        """The line span of ``node``'s raw evidence (None for PDF elements)."""
        if header_only:
            return self.header_start[node], self.header_end[node]
        return self.start[node], self.end[node]

    def node_at(self, document: str, ordinal: int) -> int:
        """The position of the element with ``ordinal`` in ``document`` (-1 if none)."""
        base = self.doc_start.get(document)
        if base is None:
            return -1
        i = base + ordinal
        return i if i < len(self.ids) and self.doc[i] == document and self.ordinal[i] == ordinal else -1

    # -- scopes --------------------------------------------------------------------------

    def clause_scope(self, i: int) -> int:
        """The nearest section at or above ``i`` that is not a generic subheading."""
        s = i if self.type[i] in SECTION_TYPES else self.section[i]
        while s != -1 and is_auxiliary_heading(self.heading[s]) and self.section[s] != -1:
            s = self.section[s]
        return s

    def scope_members(self, s: int) -> list[int]:
        """A clause scope in reading order: its heading, its elements, and its subsections
        (a clause contains its subclauses) with their elements."""
        out = [s]
        for child in self.children[s]:
            if self.type[child] in SECTION_TYPES:
                out += self.scope_members(child)
            else:
                out.append(child)
        return out


def load_index(snapshot: Any, *, k1: float = 1.2, b: float = 0.75, encoder: Any = None) -> ElementIndex:
    """The element index of an ``IndexSnapshot``: the element tables of ``snapshot.storage``
    (rebuilt from its parsed documents when the element assets were not materialised) and the
    summary vectors stored in LanceDB ``elements`` under ``snapshot.base`` (or ``encoder``);
    summaries the table lacks (or holds under another encoder) are encoded now, in one batch.
    Built once per snapshot, encoder and BM25 parameters (``IndexSnapshot.derived``); the
    index is read-only to the methods."""
    from edaqa_pipeline.graphs.elements import store

    encoder = encoder or snapshot.base

    def build() -> ElementIndex:
        nodes, edges, _ = store.load_graph(snapshot.storage, list(snapshot.documents))
        embedder = store.summary_embedder(encoder, snapshot.lancedb_uri)
        return ElementIndex(nodes, edges, store.embed_summaries(nodes, embedder), k1=k1, b=b,
                            lines=snapshot.line_structure)

    # once per snapshot: an evaluation's techdoc and edaqa rows (eight) share it
    return snapshot.derived(("element_index", encoder.encoder_id, k1, b), build)
