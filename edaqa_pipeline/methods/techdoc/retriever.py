"""Retriever ``techdoc``: the paper's Algorithm 1 over the element graph.

1. **Query analysis** (``query.analyze``): identifiers k_q, intent z_q -> policy Omega(z_q);
   the query embedding e_q is computed in a background thread while steps 2-3 run.
2. **Identifier-aware recall** (equation 9), top-10 elements by
   ``lam1 * BM25(q, k_v) + lam2 * IdMatch(k_q, k_v) + lam3 * MetaMatch(q, m_v)``:
   BM25 over the identifier view (identifiers + section path + element text; in memory by
   default, or the LanceDB full-text index of table ``elements`` with ``lexical="lancedb"``),
   normalised by the best score of the query; IdMatch = the share of the query's identifiers
   the element carries (exact 1, fuzzy = difflib ratio); MetaMatch = the share of the query's
   terms found in the element's metadata (section path, document name, version label).
   Candidates: the BM25 top-50 plus every element carrying a matched identifier.
3. **Intent-aware expansion** (equation 10): from each recalled element, breadth-first along
   the policy's relations (both directions) up to its max hops (2, version: 1), at most 8
   neighbours per element and hop (same document and nearest in reading order first).
4. **Summary-level rerank** (equation 11):
   ``alpha * cos(e_q, e_v) + beta * RelScore(v, C_id) + gamma * TypePrior(z_q, type_v)``;
   RelScore = the recall score (normalised) of the best seed times 0.5 per hop;
   TypePrior from the policy table in ``query``. The top-5 elements not already inside an
   earlier bundle are kept (top_l = 5).
5. **Raw bundling** (equation 12, Table 1 "bundle composition"): the element plus, in
   priority order, the members its intent asks for (section title, defining paragraph, notes
   and warnings, table header, neighbouring steps, caption, referring paragraph, cited
   element with its local context, prior revision) and then its clause scope (the nearest
   section that is not a generic "Options"/"Example" subheading, with those subheadings'
   content), cut at ``bundle_chars`` characters.
6. **Pack** (equation 13): bundles in rank order under the 2048-token budget (characters / 4,
   the evaluation's count); members that are contiguous in the document become one evidence
   item (its text = the members' raw text, its citation = the covered lines or page); at most
   ``k`` items. ``EvidenceItem.chunk_id`` lists the member element ids joined by ``+``,
   ``path`` is ``techdoc:<relation>`` (``recall`` for a recalled element, else the relation
   that brought the item in).

Weights (the paper gives none): lam = (1.0, 0.5, 0.3); alpha, beta, gamma = 0.5, 0.35, 0.15;
chosen before looking at ORD-QA results so that a semantic match dominates, the graph
evidence of recall counts about as much as two hops of distance, and the type prior breaks
ties; ``docs/techdoc.md`` reports the sensitivity.

The element index and its ``Weights`` live in ``elements/index.py``; ``claim_provenance``
(Pi_q, equation 15) in ``elements/provenance.py``.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from edaqa_pipeline.graphs.elements.index import BM25, ElementIndex, Member, Weights
from edaqa_pipeline.graphs.elements.intent import POLICIES, Policy, QueryAnalysis, analyze
from edaqa_pipeline.methods.techdoc.provenance import Claim, claim_provenance
from edaqa_pipeline.model import EvidenceItem

CHARS_PER_TOKEN = 4
BUDGET_TOKENS = 2048
NOTE_BUNDLE_LABELS = frozenset({"warning", "caution", "important", "attention", "danger", "note", "error"})


@dataclass
class Bundle:
    core: int
    score: float
    relation: str  # how the core was found: recall or the relation that expanded it
    members: list[Member] = field(default_factory=list)


@dataclass
class Trace:
    """What one query did (for tests, debugging and the metrics)."""

    analysis: QueryAnalysis
    recalled: list[tuple[str, float]]
    expanded: int
    reranked: list[tuple[str, float]]
    bundles: list[Bundle]


class TechDocRetriever:
    """Coarse-to-fine element retrieval (module docstring); implements ``Retriever``."""

    name = "techdoc"

    def __init__(self, index: ElementIndex, encoder: Any, *, weights: Weights | None = None,
                 budget_tokens: int = BUDGET_TOKENS, bundle_chars: int = 2600,
                 lexical: str = "memory", lance_table: Any = None, parallel_encode: bool = True,
                 llm: Any = None, expansion: bool = True, rerank: bool = True,
                 bundling: bool = True) -> None:
        self.index = index
        self.encoder = encoder
        self.weights = weights or Weights()
        self.budget_chars = budget_tokens * CHARS_PER_TOKEN
        self.bundle_chars = bundle_chars
        self.lexical = lexical
        self.lance_table = lance_table
        self.llm = llm
        # ablation switches (paper Table 8): without intent-aware expansion, without summary
        # reranking (recall order), without raw bundling (the element alone)
        self.expansion, self.rerank, self.bundling = expansion, rerank, bundling
        self._pool = ThreadPoolExecutor(max_workers=1) if parallel_encode else None
        self._lock = threading.Lock()
        self.last_trace: Trace | None = None

    # -- step 1: query embedding -----------------------------------------------------------

    def _encode(self, query: str) -> np.ndarray:
        return np.asarray(self.encoder.encode([query])[0], dtype=np.float32)

    # -- step 2: identifier-aware recall ---------------------------------------------------

    def lexical_scores(self, analysis: QueryAnalysis) -> dict[int, float]:
        w = self.weights
        if self.lexical == "lancedb" and self.lance_table is not None:
            from edaqa_pipeline.methods.baselines import fts_query

            text = fts_query(analysis.query)
            if not text:
                return {}
            hits = (self.lance_table.search(text, query_type="fts").select(["element_id", "_score"])
                    .limit(w.bm25_depth).to_arrow())
            out = {}
            for eid, score in zip(hits.column("element_id").to_pylist(), hits.column("_score").to_pylist(), strict=True):
                if eid in self.index.row:
                    out[self.index.row[eid]] = float(score)
            return out
        scores = self.index.bm25.scores(analysis.tokens)
        if not scores.any():
            return {}
        depth = min(w.bm25_depth, scores.size)
        top = np.argpartition(-scores, depth - 1)[:depth]
        return {int(i): float(scores[i]) for i in top if scores[i] > 0}

    def recall(self, analysis: QueryAnalysis) -> list[tuple[int, float]]:
        w = self.weights
        idx = self.index
        lexical = self.lexical_scores(analysis)
        matched = idx.vocabulary.match(analysis.identifiers) if analysis.identifiers else {}
        id_score: dict[int, float] = defaultdict(float)
        n_ids = max(len(analysis.identifiers), 1)
        for ident, weight in matched.items():
            for i in idx.postings.get(ident, ())[:500]:
                id_score[int(i)] += weight / n_ids
        candidates = set(lexical) | set(id_score)
        if not candidates:
            return []
        top_lex = max(lexical.values()) if lexical else 1.0
        q_tokens = set(analysis.tokens)
        scored = []
        for i in candidates:
            meta = len(q_tokens & idx.meta_tokens[i]) / max(len(q_tokens), 1)
            score = (w.lam_bm25 * lexical.get(i, 0.0) / (top_lex or 1.0)
                     + w.lam_id * min(id_score.get(i, 0.0), 1.0) + w.lam_meta * meta)
            scored.append((i, score))
        scored.sort(key=lambda t: (-t[1], idx.ordinal[t[0]], t[0]))
        return scored[: w.top_k]

    # -- step 3: intent-aware expansion ----------------------------------------------------

    def expand(self, seeds: list[tuple[int, float]], policy: Policy) -> dict[int, tuple[float, str, int]]:
        """node -> (RelScore, relation that reached it, hops); seeds have hops 0."""
        w = self.weights
        idx = self.index
        best = seeds[0][1] if seeds else 1.0
        found: dict[int, tuple[float, str, int]] = {}
        for node, score in seeds:
            rel = score / (best or 1.0)
            if node not in found or found[node][0] < rel:
                found[node] = (rel, "recall", 0)
        for seed, score in seeds:
            frontier = [seed]
            base = score / (best or 1.0)
            for hop in range(1, policy.max_hops + 1):
                nxt = []
                for node in frontier:
                    nbrs = [(b, r) for b, r, _ in idx.adj[node] if r in policy.relations]
                    nbrs.sort(key=lambda t: (idx.doc[t[0]] != idx.doc[node],
                                             abs(idx.ordinal[t[0]] - idx.ordinal[node]), t[0]))
                    for b, r in nbrs[: w.fanout]:
                        value = base * w.hop_decay**hop
                        if b not in found:
                            if len(found) >= w.max_expanded:
                                continue
                            found[b] = (value, r, hop)
                            nxt.append(b)
                        elif found[b][0] < value:
                            found[b] = (value, r, found[b][2])
                frontier = nxt
        return found

    # -- step 5: bundles -------------------------------------------------------------------

    def bundle(self, core: int, score: float, relation: str, policy: Policy) -> Bundle:
        idx = self.index
        members: list[Member] = [Member(core, "core", relation)]
        section = core if idx.type[core] in ("section", "clause") else idx.section[core]
        scope = idx.clause_scope(core)
        table = core if idx.type[core] == "table" else idx.table_of[core]

        def add(node: int, role: str, rel: str, header_only: bool = False) -> None:
            if node >= 0:
                members.append(Member(node, role, rel, header_only))

        def out_refs(node: int, relations: frozenset[str]) -> list[tuple[int, str]]:
            return [(b, r) for b, r, outgoing in idx.adj[node] if outgoing and r in relations]

        def in_refs(node: int, relations: frozenset[str]) -> list[tuple[int, str]]:
            return [(b, r) for b, r, outgoing in idx.adj[node] if not outgoing and r in relations]

        refs = frozenset({"clause_ref", "table_ref", "figure_ref"})
        for role in policy.bundle:
            if role == "section_title" and section != core:
                add(section, role, "contains")
            elif role == "defining_paragraph" and scope != -1:
                prose = [c for c in idx.children[scope] if idx.type[c] == "paragraph" and not idx.note[c]]
                if prose:
                    add(prose[0], role, "contains")
            elif role == "notes":
                for s in {section, scope} - {-1}:
                    for c in idx.children[s]:
                        if idx.type[c] == "paragraph" and idx.note[c] in NOTE_BUNDLE_LABELS:
                            add(c, role, "same_section")
            elif role == "table_header":
                if table != -1 and table != core:
                    add(table, role, "contains", header_only=True)
                for b, r in out_refs(core, frozenset({"table_ref", "clause_ref"}))[:2]:
                    t = b if idx.type[b] == "table" else idx.table_of[b]
                    if t != -1:
                        add(t, role, r, header_only=True)
            elif role == "neighbour_steps" and idx.type[core] == "step":
                for b, r, _ in idx.adj[core]:
                    if r == "step_next":
                        add(b, role, r)
            elif role == "caption":
                for target in {core, table} - {-1}:
                    for c in idx.captions.get(target, []):
                        add(c, role, "caption_of")
                if idx.type[core] == "caption":
                    for b, r in out_refs(core, frozenset({"caption_of"})):
                        add(b, role, r)
            elif role == "referring":
                for target in {core, table} - {-1}:
                    for b, r in in_refs(target, refs)[:2]:
                        add(b, role, r)
            elif role == "cited":
                for b, r in out_refs(core, refs)[:3]:
                    add(b, role, r)
                    if idx.type[b] in ("section", "clause"):
                        prose = [c for c in idx.children[b] if idx.type[c] == "paragraph"]
                        if prose:
                            add(prose[0], role, r)
                    elif idx.type[b] == "table_row" and idx.table_of[b] != -1:
                        add(idx.table_of[b], role, r, header_only=True)
                    for c in idx.captions.get(b, []):
                        add(c, role, "caption_of")
            elif role == "prior_revision":
                for b, r, _ in idx.adj[core]:
                    if r in ("version_of", "supersedes"):
                        add(b, role, r)
            elif role == "scope" and scope != -1:
                for c in idx.scope_members(scope):
                    add(c, role, "contains")
        return Bundle(core, score, relation, self._trim(members if self.bundling else members[:1]))

    def _trim(self, members: list[Member]) -> list[Member]:
        """Drop repeats and members another member already shows; cut at ``bundle_chars``
        (members in priority order; a table that does not fit keeps its header)."""
        idx = self.index
        kept: list[Member] = []
        shown: set[int] = set()
        used = 0
        for m in members:
            cover = idx.coverage(m)
            if cover <= shown:
                continue
            cost = len(idx.member_text(m)) + 1
            if kept and used + cost > self.bundle_chars:
                if idx.type[m.node] == "table" and not m.header_only:
                    m = Member(m.node, m.role, m.relation, header_only=True)
                    cover = idx.coverage(m)
                    cost = len(idx.member_text(m)) + 1
                    if cover <= shown or used + cost > self.bundle_chars:
                        continue
                else:
                    continue
            kept.append(m)
            shown |= cover
            used += cost
        # a member shown inside a later whole table (header, row) is dropped
        final = []
        for m in kept:
            cover = idx.coverage(m)
            if any(o is not m and cover < idx.coverage(o) for o in kept):
                continue
            final.append(m)
        return final

    # -- step 6: pack ----------------------------------------------------------------------

    def items(self, bundle: Bundle, members: list[Member]) -> list[EvidenceItem]:
        """A bundle's members as evidence items, contiguous members merged."""
        idx = self.index
        ordered = sorted(members, key=lambda m: (idx.doc[m.node], idx.ordinal[m.node], m.header_only is False))
        groups: list[list[Member]] = []
        for m in ordered:
            if groups and self._contiguous(groups[-1], m):
                groups[-1].append(m)
            else:
                groups.append([m])
        out = []
        for n, group in enumerate(groups):
            first = group[0]
            starts = [s for s in (idx.member_span(m)[0] for m in group) if s is not None]
            ends = [e for e in (idx.member_span(m)[1] for m in group) if e is not None]
            core_in = any(m.role == "core" for m in group)
            relation = bundle.relation if core_in else group[0].relation
            out.append(EvidenceItem(
                chunk_id="+".join(dict.fromkeys(idx.ids[m.node] for m in group)),
                doc=idx.doc[first.node],
                text="\n".join(idx.member_text(m) for m in group),
                score=float(bundle.score) - 1e-6 * n,
                path=f"techdoc:{relation}",
                start_line=min(starts) if starts else None,
                end_line=max(ends) if ends else None,
                page=idx.page[first.node] if not starts else None,
            ))
        return out

    def _contiguous(self, group: list[Member], m: Member) -> bool:
        """True when nothing unshown lies between the group and ``m`` in reading order."""
        idx = self.index
        last = group[-1]
        if idx.doc[last.node] != idx.doc[m.node] or idx.page[last.node] != idx.page[m.node]:
            return False
        shown: set[int] = set()
        for g in group:
            shown |= idx.coverage(g)
        shown |= idx.coverage(m)
        lo = max(idx.ordinal[g.node] if g.header_only else max(idx.ordinal[x] for x in idx.coverage(g)) for g in group)
        hi = idx.ordinal[m.node]
        if hi <= lo + 1:
            return True
        positions = idx.doc_of_position[idx.doc[m.node]]
        base = positions[0]
        for pos in range(lo + 1, hi):
            node = base + pos  # nodes of a document are stored in ordinal order
            if node < len(idx) and idx.ordinal[node] == pos and node not in shown:
                return False
        return True

    def pack(self, bundles: list[Bundle], k: int) -> list[EvidenceItem]:
        out: list[EvidenceItem] = []
        used = 0
        for bundle in bundles:
            if len(out) >= k:
                break
            remaining = self.budget_chars - used
            members = list(bundle.members)
            while members:
                items = self.items(bundle, members)
                cost = sum(len(i.text) for i in items)
                if cost <= remaining:
                    break
                members.pop()  # lowest priority first
            if not members:
                if out:
                    break
                items = self.items(bundle, bundle.members[:1])
                items = [replace(items[0], text=items[0].text[: self.budget_chars])]
            # the core's item first, the rest of the bundle in reading order
            core_id = self.index.ids[bundle.core]
            items.sort(key=lambda it: core_id not in it.chunk_id.split("+"))
            for item in items:
                if len(out) >= k:
                    break
                out.append(item)
                used += len(item.text)
            if used >= self.budget_chars:
                break
        return out

    # -- the whole pipeline ----------------------------------------------------------------

    def retrieve_bundles(self, query: str) -> tuple[list[Bundle], Trace]:
        future: Future[np.ndarray] | None = self._pool.submit(self._encode, query) if self._pool else None
        analysis = analyze(query, self.llm)
        policy = analysis.policy
        seeds = self.recall(analysis)
        expanded = self.expand(seeds, policy if self.expansion else replace(policy, max_hops=0))
        e_q = future.result() if future is not None else self._encode(query)
        w = self.weights
        if not self.rerank:
            w = replace(w, alpha=0.0, beta=1.0, gamma=0.0)
        idx = self.index
        rows = np.fromiter(expanded, dtype=np.int64, count=len(expanded))
        cos = idx.vectors[rows] @ e_q if rows.size else np.zeros(0)
        final = []
        for n, node in enumerate(rows.tolist()):
            rel, relation, _ = expanded[node]
            prior = policy.type_prior.get(idx.type[node], 0.0)
            final.append((node, w.alpha * float(cos[n]) + w.beta * rel + w.gamma * prior, relation))
        final.sort(key=lambda t: (-t[1], idx.ordinal[t[0]], t[0]))
        bundles: list[Bundle] = []
        covered: set[int] = set()
        for node, score, relation in final:
            if len(bundles) >= w.top_l:
                break
            if node in covered:
                continue
            bundle = self.bundle(node, score, relation, policy)
            bundles.append(bundle)
            for m in bundle.members:
                covered |= idx.coverage(m)
        trace = Trace(analysis, [(idx.ids[i], s) for i, s in seeds], len(expanded),
                      [(idx.ids[n], s) for n, s, _ in final[:20]], bundles)
        return bundles, trace

    def retrieve(self, query: str, k: int) -> list[EvidenceItem]:
        bundles, trace = self.retrieve_bundles(query)
        self.last_trace = trace
        return self.pack(bundles, k)


# --- factory ----------------------------------------------------------------------------------


def make_techdoc_retriever(snapshot: Any, **options: Any) -> TechDocRetriever:
    """The ``techdoc`` retriever over an ``IndexSnapshot``: element tables from
    ``snapshot.storage`` (rebuilt from its parsed documents when the element assets were not
    materialised), summary vectors from LanceDB ``elements`` (encoded once with the snapshot's
    base encoder when absent)."""
    from edaqa_pipeline.graphs.elements import store

    nodes, edges, from_assets = store.load_graph(snapshot.storage, list(snapshot.documents))
    vectors = store.lance_vectors(snapshot.lancedb_uri, nodes["element_id"].to_list()) if from_assets else None
    if vectors is None:
        vectors, _ = store.embed_summaries(nodes, snapshot.base)
    weights = options.pop("weights", None)
    index = ElementIndex(nodes, edges, vectors, weights or Weights())
    lance_table = None
    if options.get("lexical") == "lancedb":
        from edaqa_pipeline.retrieval import lance_store

        lance_table = lance_store.connect(snapshot.lancedb_uri).open_table(store.ELEMENT_TABLE)
    return TechDocRetriever(index, snapshot.base, weights=weights, lance_table=lance_table, **options)


__all__ = [
    "BM25",
    "POLICIES",
    "Bundle",
    "Claim",
    "ElementIndex",
    "Member",
    "TechDocRetriever",
    "Weights",
    "claim_provenance",
    "make_techdoc_retriever",
]  # fmt: skip
