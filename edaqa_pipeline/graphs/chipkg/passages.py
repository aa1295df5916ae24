"""The ChipKG's passages ranked for a question by Personalized PageRank.

The part of ChipMind's retrieval step (paper 001, 3.3) that is a property of the graph, not of
the method: seed a personalization vector from the question, run PPR, rank the passage nodes
by their mass. ChipMind cuts that ranking with its adaptive K and anchor filter
(``methods.chipmind.search``); EDAQA reads it as one of its chunk paths. Both build on this one
definition.

Seeds (``PPRSeeds``): the ``seed_nodes`` entity / statement nodes most similar to the question
vector (weight = cosine), the entities the question names literally (``entity_weight``, damped
by how many passages the entity reaches), the ``seed_passages`` passages most similar to the
question (``passage_weight`` x cosine) and the ``seed_passages`` best BM25 passages (the
snapshot's shared ``LexicalIndex``; ``lexical_weight`` x score / best score; 0 = vector seeds
only).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edaqa_pipeline.graphs.chipkg.graph import ChipKGNotBuiltError, KGGraph, load_graph
from edaqa_pipeline.graphs.chipkg.mentions import TOOL_NAME
from edaqa_pipeline.retrieval.topk import top_k
from edaqa_pipeline.text.identifiers import query_identifiers


@dataclass(frozen=True)
class PPRSeeds:
    """How a question seeds Personalized PageRank, and the PPR itself (module docstring).

    ChipMind (paper 001, 3.3) ranks ChipKG nodes by PPR from vector-similar seeds but gives no
    numbers. The measurements quoted are ChipMind's on dev26 (``data/dev/openroad_dev.jsonl``),
    one value changed at a time at k0 = 5, as span_cover / span_all @2048t against 0.7995 /
    0.62 (docs/chipmind.md, "Sweep"); EDAQA's ChipKG path was tuned on the dev sets with these
    seeds in place.
    """

    seed_nodes: int = 5
    """Entity and statement nodes most similar to the question vector that seed PPR (weight =
    cosine). dev26: 3 and 10 both give 0.800, flat."""
    seed_passages: int = 10
    """Passages most similar to the question vector, and passages best by BM25, that seed PPR
    (this many of each). dev26: 5 and 20 both give 0.803 span_cover against 0.7995 but lower
    system cover@10 (0.852 / 0.860 against 0.864)."""
    passage_weight: float = 0.5
    """Weight of a vector-similar passage seed (times its cosine) relative to node seeds. No
    dev measurement."""
    lexical_weight: float = 1.0
    """Weight of a BM25 passage seed (times its score over the best score); 0 = vector seeds
    only. dev26: 0.5 / 2 / 4 give 0.805 / 0.798 / 0.793; at k0 8, 0.5 gives 0.819 against
    0.812 span_cover but loses a doc_recall@1 hit."""
    entity_weight: float = 1.0
    """Weight of an entity the question names literally, relative to the best vector seed and
    damped by the log of how many passages the entity reaches. No dev measurement."""
    damping: float = 0.5
    """PPR damping: the probability of following an edge rather than restarting at the seeds
    (networkx's ``alpha``). HippoRAG 2's value (ChipMind gives none); 0.3, 0.5 and 0.7 give
    the same dev26 figures (0.880 / 0.76 at K 10, one step, no filter)."""
    ppr_tol: float = 1e-6
    """L1 change at which the power iteration stops. Not tuned."""


def similarities(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix @ vector`` without BLAS: OpenBLAS runs a large matrix-vector product on every
    core, which on a shared machine costs ~14 ms for the 8k x 384 node matrix instead of ~2 ms
    on one core (measured on the 2-core dev machine); einsum stays on one core."""
    return np.einsum("ij,j->i", matrix, vector)


def query_entity_names(query: str) -> list[str]:
    """Lower-case names the query gives entities: its identifiers and tool names."""
    names = [i.lower() for i in query_identifiers(query)]
    names += [m.group(1).lower() for m in TOOL_NAME.finditer(query)]
    return list(dict.fromkeys(names))


class PassageRanker:
    """PPR passage ranking over one ChipKG, mapped onto an ``IndexSnapshot``'s chunk rows."""

    def __init__(self, snapshot: Any, graph: KGGraph) -> None:
        self.snapshot = snapshot
        self.graph = graph
        self.passage_pos = {int(r): i for i, r in enumerate(graph.passage_rows)}
        rows = snapshot._chunk_row
        # KG passage order -> snapshot chunk row (-1 when the KG is stale for that chunk)
        self.passage_snap = np.asarray([rows.get(c, -1) for c in graph.passage_chunk], np.int64)
        self.snap_passage = {int(s): int(graph.passage_rows[i]) for i, s in enumerate(self.passage_snap) if s >= 0}

    def rank(self, qvec: np.ndarray, query: str, depth: int, seeds: PPRSeeds) -> list[tuple[int, float]]:
        """Passage nodes by PPR mass for one (sub-)question: [(passage node row, score)],
        best first, only passages whose chunk the snapshot has and that got mass."""
        g = self.graph
        if not len(g.passage_rows):  # an empty ChipKG ranks nothing
            return []
        p = np.zeros(len(g.node_ids), np.float64)
        if g.vectors.shape[0]:
            sims = similarities(g.vectors, qvec)
            for i in top_k(sims, seeds.seed_nodes):
                if sims[i] > 0:
                    p[g.embedded_rows[i]] += float(sims[i])
        peak = p.max() if p.max() > 0 else 1.0
        for name in query_entity_names(query):
            for row in g.entity_by_name.get(name, []):
                p[row] += seeds.entity_weight * peak / np.log2(2.0 + g.entity_degree[row])
        if seeds.seed_passages and self.snapshot.chunk_vectors.shape[0]:
            csims = similarities(self.snapshot.chunk_vectors, qvec)
            for srow in top_k(csims, seeds.seed_passages):
                node = self.snap_passage.get(srow)
                if node is not None and csims[srow] > 0:
                    p[node] += seeds.passage_weight * float(csims[srow])
        if seeds.lexical_weight > 0 and seeds.seed_passages:
            hits = self.snapshot.lexical.top(query, seeds.seed_passages)
            best = hits[0][1] if hits else 1.0
            for srow, score in hits:
                node = self.snap_passage.get(srow)
                if node is not None:
                    p[node] += seeds.lexical_weight * score / best
        x = g.ppr(p, alpha=seeds.damping, tol=seeds.ppr_tol)
        scores = np.where(self.passage_snap >= 0, x[g.passage_rows], -1.0)
        return [(int(g.passage_rows[i]), float(scores[i])) for i in top_k(scores, depth) if scores[i] > 0]

    def chunk_row(self, passage: int) -> int:
        """The snapshot chunk row of a passage node (-1 when the KG is stale for it)."""
        return int(self.passage_snap[self.passage_pos[passage]])


def usable_ranker(snapshot: Any) -> PassageRanker | None:
    """A ranker over the storage root's ChipKG when one is built and fits this index: both
    tables present, at least one passage of the snapshot's chunks, and node vectors of the
    snapshot's base encoder (a ChipKG left from a build with another encoder is not read).
    None otherwise: a method that merely *can* use the ChipKG runs without it."""
    try:
        graph = load_graph(Path(snapshot.storage), snapshot.dim)
    except ChipKGNotBuiltError:
        return None
    encoders = set(graph.nodes["encoder_id"].drop_nulls().unique().to_list()) if "encoder_id" in graph.nodes.columns else set()
    if encoders - {snapshot.base.encoder_id} or graph.vectors.shape[1] != snapshot.dim:
        return None
    ranker = PassageRanker(snapshot, graph)
    return ranker if (ranker.passage_snap >= 0).any() else None
