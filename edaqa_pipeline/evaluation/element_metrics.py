"""Relation-aware grounding metrics of the paper (section 5.4), as pure functions.

They apply to ANY retriever's evidence: evidence items are mapped onto element-graph nodes by
their document and line span (or page), so chunk retrievers and ``techdoc`` are measured on the
same nodes. Choices the numbers depend on:

- **Retrieved nodes** of an evidence item: elements of the same document that the item shows
  for at least half of their lines (PDF: the same page). Section headings count when their
  heading line is shown.
- **Gold nodes**: edaqa gold spans -> elements with at least half of their lines inside a gold
  span (PDF: on the gold page); ORD-QA reference passages -> elements of the gold documents
  with at least half of their countable lines (``evaluation.metrics.passage_lines``) inside
  the passage. Headings are not countable, so sections are never gold nodes there.
- ``rehr@K`` at level L (equation 16 relaxed as in Table 5): 1 when some gold node lies within
  L hops (any relation, either direction) of a node retrieved by the first K items; L0 = the
  exact node, L1..L4 = within 1..4 hops.
- ``ecr`` (equation 18): the share of gold edges whose two ends are both retrieved. Gold edges
  come from the QA file when it has them; otherwise (span-based) they are the graph's edges
  between two gold nodes. None when a question has no gold edge.
- ``poa`` (equation 20): over the gold procedure steps in document order, the share of
  consecutive pairs (s_i, s_i+1) that the evidence retrieves in the same order (first
  appearance in rank order, reading order inside an item). Applies when the gold holds at least
  two steps.
- ``csr`` (equation 21): the share of answer claims supported by at least one evidence item
  (``provenance.claim_provenance``).
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import polars as pl

from edaqa_pipeline.evaluation.metrics import passage_lines
from edaqa_pipeline.model import EvidenceItem, normalise_ws

LEVELS: tuple[int, ...] = (0, 1, 2, 3, 4)


def bfs_distances(adjacency: Mapping[int, Iterable[int]], sources: Iterable[int], max_hops: int) -> dict[int, int]:
    """Hop distance from the nearest source, for nodes within ``max_hops``."""
    dist: dict[int, int] = {}
    queue: deque[int] = deque()
    for s in sources:
        if s not in dist:
            dist[s] = 0
            queue.append(s)
    while queue:
        node = queue.popleft()
        if dist[node] >= max_hops:
            continue
        for nbr in adjacency.get(node, ()):
            if nbr not in dist:
                dist[nbr] = dist[node] + 1
                queue.append(nbr)
    return dist


def rehr(retrieved: set[int], gold: set[int], adjacency: Mapping[int, Iterable[int]], level: int = 0) -> float | None:
    """Raw evidence hit at relaxation ``level`` (0 = exact node); None without gold nodes."""
    if not gold:
        return None
    if level == 0:
        return 1.0 if retrieved & gold else 0.0
    near = bfs_distances(adjacency, gold, level)
    return 1.0 if any(n in near for n in retrieved) else 0.0


def rehr_levels(retrieved: set[int], gold: set[int], adjacency: Mapping[int, Iterable[int]], k: int = 10,
                levels: Sequence[int] = LEVELS) -> dict[str, float]:
    """``{"rehr@K_L0": ..., ..., "rehr@K_L4": ...}`` (empty without gold nodes)."""
    if not gold:
        return {}
    near = bfs_distances(adjacency, gold, max(levels))
    reach = min((near[n] for n in retrieved if n in near), default=None)
    return {f"rehr@{k}_L{lv}": 1.0 if reach is not None and reach <= lv else 0.0 for lv in levels}


def ecr(retrieved: set[int], gold_edges: Iterable[tuple[int, int]]) -> float | None:
    """Evidence connectivity recall: share of gold edges with both ends retrieved."""
    edges = {tuple(sorted(e)) for e in gold_edges}
    if not edges:
        return None
    return sum(1 for a, b in edges if a in retrieved and b in retrieved) / len(edges)


def span_gold_edges(gold: set[int], edges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Span-based gold edges: graph edges between two gold nodes (undirected, deduplicated)."""
    return sorted({tuple(sorted((a, b))) for a, b in edges if a in gold and b in gold and a != b})  # type: ignore[misc]


def poa(retrieved_order: Sequence[int], gold_steps: Sequence[int]) -> float | None:
    """Procedure order accuracy: consecutive gold step pairs retrieved in the same order."""
    if len(gold_steps) < 2:
        return None
    position: dict[int, int] = {}
    for n, node in enumerate(retrieved_order):
        position.setdefault(node, n)
    pairs = list(pairwise(gold_steps))
    ok = sum(1 for a, b in pairs if a in position and b in position and position[a] < position[b])
    return ok / len(pairs)


def csr(supported: Sequence[bool]) -> float | None:
    """Claim support rate over one answer's claims (None for an answer without claims)."""
    if not supported:
        return None
    return sum(1 for s in supported if s) / len(supported)


@dataclass
class ElementGraphView:
    """Nodes and edges of an element graph, indexed for mapping evidence onto nodes."""

    nodes: pl.DataFrame
    edges: pl.DataFrame

    def __post_init__(self) -> None:
        self.nodes = self.nodes.sort(["document", "ordinal"])
        self.ids: list[str] = self.nodes["element_id"].to_list()
        self.type: list[str] = self.nodes["element_type"].to_list()
        self.raw: list[str] = self.nodes["raw"].to_list()
        row = {e: i for i, e in enumerate(self.ids)}
        self.by_doc: dict[str, list[int]] = defaultdict(list)
        for i, doc in enumerate(self.nodes["document"].to_list()):
            self.by_doc[doc].append(i)
        self.start = self.nodes["start_line"].to_list()
        self.end = self.nodes["end_line"].to_list()
        self.page = self.nodes["page"].to_list()
        self.adjacency: dict[int, list[int]] = defaultdict(list)
        self.edge_list: list[tuple[int, int]] = []
        for src, dst in self.edges.select("src", "dst").iter_rows():
            a, b = row.get(src), row.get(dst)
            if a is None or b is None:
                continue
            self.adjacency[a].append(b)
            self.adjacency[b].append(a)
            self.edge_list.append((a, b))

    def _covered(self, i: int, doc_start: int | None, doc_end: int | None, page: int | None) -> bool:
        if self.page[i] is not None or self.start[i] is None:
            return page is not None and self.page[i] == page
        if doc_start is None or doc_end is None:
            return False
        lines = self.end[i] - self.start[i] + 1
        overlap = min(self.end[i], doc_end) - max(self.start[i], doc_start) + 1
        return overlap > 0 and 2 * overlap >= lines

    def item_nodes(self, item: EvidenceItem) -> list[int]:
        """Nodes an evidence item shows, in reading order."""
        return [i for i in self.by_doc.get(item.doc, [])
                if self._covered(i, item.start_line, item.end_line, item.page)]

    def retrieved(self, items: Sequence[EvidenceItem]) -> list[int]:
        """Nodes shown by ``items`` in order of first appearance."""
        out: dict[int, None] = {}
        for item in items:
            for i in self.item_nodes(item):
                out.setdefault(i, None)
        return list(out)

    def gold_from_spans(self, spans: Iterable[tuple[str, int | None, int | None, int | None]]) -> set[int]:
        gold: set[int] = set()
        for doc, start, end, page in spans:
            if start is None and page is None:
                continue
            gold |= {i for i in self.by_doc.get(doc, []) if self._covered(i, start, end, page)}
        return gold

    def gold_from_passages(self, passages: Iterable[str], docs: Iterable[str] = ()) -> set[int]:
        text = normalise_ws("\n".join(passages))
        if not text:
            return set()
        pool = [i for d in docs for i in self.by_doc.get(d, [])] or range(len(self.ids))
        gold = set()
        for i in pool:
            lines = passage_lines(self.raw[i])
            if lines and 2 * sum(1 for ln in lines if ln in text) >= len(lines):
                gold.add(i)
        return gold

    def scores(self, evidence: Sequence[EvidenceItem], *, gold_spans: Sequence[tuple] = (),
               ref_passages: Sequence[str] = (), gold_docs: Sequence[str] = (),
               gold_edges: Sequence[tuple[str, str]] | None = None, answer: str = "",
               k: int = 10, procedure: bool | None = None) -> dict[str, float]:
        """Every element-level metric that applies to one question (see the module docstring).

        ``procedure``: whether the question is a procedure question (None: when its gold
        holds two or more steps)."""
        gold = self.gold_from_spans(gold_spans) if gold_spans else self.gold_from_passages(ref_passages, gold_docs)
        top = self.retrieved(list(evidence)[:k])
        out: dict[str, float] = dict(rehr_levels(set(top), gold, self.adjacency, k))
        if gold_edges is not None:
            row = {e: i for i, e in enumerate(self.ids)}
            g_edges = [(row[a], row[b]) for a, b in gold_edges if a in row and b in row]
        else:
            g_edges = span_gold_edges(gold, self.edge_list)
        value = ecr(set(top), g_edges)
        if value is not None:
            out["ecr"] = value
        steps = sorted(i for i in gold if self.type[i] == "step")
        if procedure is None:
            procedure = len(steps) >= 2
        if procedure:
            value = poa(top, steps)
            if value is not None:
                out["poa"] = value
        if answer.strip():
            from edaqa_pipeline.methods.techdoc.provenance import claim_provenance

            value = csr([c.supported for c in claim_provenance(answer, evidence)])
            if value is not None:
                out["csr"] = value
        return out


def load_view(storage: Path | str, documents: Sequence[str]) -> ElementGraphView:
    """The element graph of an index (its element tables, or rebuilt from its parsed
    documents) for scoring: ``load_view(snapshot.storage, snapshot.documents).scores(...)``."""
    from edaqa_pipeline.graphs.elements.store import load_graph

    nodes, edges, _ = load_graph(Path(storage), list(documents))
    return ElementGraphView(nodes, edges)
