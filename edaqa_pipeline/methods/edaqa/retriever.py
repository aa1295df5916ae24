"""The EDAQA method (``edaqa``): the default retriever, built from the parts of the four papers
that earn their place on the dev sets.

1. **Recall, four paths over the chunks of the core build**, each a ranked list:
   * lexical: BM25 over the chunks' section path + text (the shared ``LexicalIndex``);
   * identifier: chunks carrying the query's canonical identifiers (commands, ``-options``,
     ``command -option``, ORFS variables, message ids, files), idf-weighted, fuzzy-matched
     (``ChunkIdentifierIndex``; TechDocRAG's identifier-aware recall, at chunk level);
   * dense: the trained function-aware encoder over chunks when the index has one
     (``--with train``), else the base encoder;
   * units: the top functional units in the function space, expanded to their chunks (the
     primary paper's unit path).
2. **Fusion**: weighted reciprocal rank fusion of the four lists (weights in ``EdaqaConfig``,
   chosen on the dev sets; docs/results.md has the sweep).
3. **Expansion by intent**: for procedure questions the section neighbours of the top chunks
   (a procedure split over two chunks comes back whole).
4. **Packing**: evidence in rank order into the 2,048-token budget, skipping an item that
   does not fit instead of stopping, no line twice (overlapping chunks are not repeated), at
   most ``k`` items: what a reader (or the answer model) gets is what the metrics measure.

Each part can be switched off (``EdaqaConfig``), and the registry holds those ablations as
methods (``edaqa_no_lexical``, ``edaqa_no_identifiers``, ``edaqa_no_dense``, ``edaqa_no_units``,
``edaqa_no_expansion``, ``edaqa_untrained``) so the report measures what each part adds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from edaqa_pipeline.methods.edaqa.focus import bundle
from edaqa_pipeline.methods.edaqa.index import ChunkIdentifierIndex
from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.retrieval.encoders import Encoder
from edaqa_pipeline.retrieval.fusion import rrf
from edaqa_pipeline.retrieval.record import Retrieval
from edaqa_pipeline.retrieval.snapshot import IndexSnapshot, NoTrainedEncoderError
from edaqa_pipeline.retrieval.topk import top_k
from edaqa_pipeline.text.counting import CHARS_PER_TOKEN, EVIDENCE_BUDGET_TOKENS
from edaqa_pipeline.text.identifiers import query_identifiers


@dataclass(frozen=True)
class EdaqaConfig:
    """Every number and switch the ranking depends on (set on the dev sets only)."""

    depth: int = 50  # candidates per recall path
    fusion: str = "rrf"  # rrf | score
    rrf_k: int = 60
    w_lexical: float = 1.0
    w_identifier: float = 1.0
    w_dense: float = 1.0
    w_units: float = 0.5
    top_units: int = 10
    tuned: bool = True  # use the trained encoder when the index has one
    expansion: bool = True
    expand_top: int = 3  # chunks whose section neighbours a procedure question adds
    budget_tokens: int = EVIDENCE_BUDGET_TOKENS
    focus: bool = True  # a chunk may be shown as the bundle of lines that answers
    focus_mode: str = "fallback"  # fallback: bundle only when the whole chunk does not fit; shrink
    whole_top: int = 2  # shrink mode: the best chunks are always shown whole
    focus_min_tokens: int = 120  # chunks shorter than this stay whole


PROCEDURE_WORDS = ("how do", "how can", "how to", "steps", "procedure", "set up", "setup",
                   "configure", "install", "build", "run ", "flow", "then")


def is_procedure(query: str) -> bool:
    q = query.lower()
    return any(w in q for w in PROCEDURE_WORDS)


class EdaqaRetriever:
    """See the module docstring; ``retrieve(query, k)`` returns a ``Retrieval``."""

    def __init__(self, snapshot: IndexSnapshot, config: EdaqaConfig | None = None,
                 name: str = "edaqa") -> None:
        self.config = config or EdaqaConfig()
        self.name = name
        self.snapshot = snapshot
        self.space = snapshot
        if self.config.tuned:
            try:
                self.space = snapshot.tuned_view()
            except NoTrainedEncoderError:
                self.space = snapshot  # core build only: the base encoder

    @property
    def trained(self) -> bool:
        return not self.space.function.is_base

    @cached_property
    def identifiers(self) -> ChunkIdentifierIndex:
        snap = self.snapshot
        sections = [(d, tuple(p or ())) for d, p in snap.chunks.select("document", "section_path").iter_rows()]
        return ChunkIdentifierIndex.build(snap.chunk_records, sections)

    def warm(self) -> None:
        """Load everything a first query would (encoder, lexical and identifier indexes)."""
        self.space.function.encode(["warm up"])
        _ = self.snapshot.lexical, self.identifiers

    # -- recall -----------------------------------------------------------------------------

    def recall(self, query: str) -> tuple[dict[str, list[tuple[int, float]]], dict[str, float]]:
        """(chunk row, path score) lists, best first, of every enabled path, and the time each
        path took (ms)."""
        cfg, snap, space = self.config, self.snapshot, self.space
        paths: dict[str, list[tuple[int, float]]] = {}
        timings: dict[str, float] = {}
        t = time.perf_counter()
        if cfg.w_lexical:
            paths["lexical"] = snap.lexical_chunks(query, cfg.depth)
        t, timings["lexical"] = _lap(t)
        if cfg.w_identifier:
            scores = self.identifiers.scores(query_identifiers(query))
            ranked = sorted(scores, key=lambda r: (-scores[r], r))[: cfg.depth]
            paths["identifier"] = [(r, scores[r]) for r in ranked]
        t, timings["identifier"] = _lap(t)
        if cfg.w_dense or cfg.w_units:
            q = query_vector(space.function, query)
            t, timings["encode"] = _lap(t)
            if cfg.w_dense:
                sims = space.function_chunk_vectors @ q
                paths["dense"] = [(r, float(sims[r])) for r in top_k(sims, cfg.depth)]
            if cfg.w_units and space.unit_vectors.shape[0]:
                unit_sims = space.unit_vectors @ q
                best: dict[int, float] = {}
                for u in top_k(unit_sims, cfg.top_units):
                    for r in space.unit_chunk_rows[u]:
                        best.setdefault(r, float(unit_sims[u]))
                paths["units"] = list(best.items())[: cfg.depth]
            t, timings["dense"] = _lap(t)
        return paths, timings

    def weights(self) -> dict[str, float]:
        cfg = self.config
        return {"lexical": cfg.w_lexical, "identifier": cfg.w_identifier, "dense": cfg.w_dense,
                "units": cfg.w_units}

    def fuse(self, paths: dict[str, list[tuple[int, float]]]) -> dict[int, float]:
        """Weighted RRF over the paths' rankings (``fusion="rrf"``), or a weighted sum of each
        path's scores min-max normalised over its own list (``fusion="score"``)."""
        weight = self.weights()
        names = [n for n in paths if paths[n]]
        if self.config.fusion == "rrf":
            return rrf([[r for r, _ in paths[n]] for n in names], k=self.config.rrf_k,
                       weights=[weight[n] for n in names])
        fused: dict[int, float] = {}
        for n in names:
            values = [s for _, s in paths[n]]
            top, low = max(values), min(values)
            span = (top - low) or 1.0
            for r, s in paths[n]:
                fused[r] = fused.get(r, 0.0) + weight[n] * ((s - low) / span if top > low else 1.0)
        return fused

    # -- packing ----------------------------------------------------------------------------

    def expand(self, query: str, order: list[int]) -> list[int]:
        """Procedure questions: each of the top chunks followed by its section neighbours."""
        if not (self.config.expansion and is_procedure(query)):
            return order
        out: list[int] = []
        for rank, row in enumerate(order):
            if row not in out:
                out.append(row)
            if rank < self.config.expand_top:
                out += [n for n in self.identifiers.neighbours[row] if n not in out]
        return out

    def bundle_item(self, row: int, item: EvidenceItem, query: str, ids: list[str]) -> EvidenceItem | None:
        """The answering bundle of chunk ``row`` as an item (None when the chunk has none)."""
        cut = bundle(self.snapshot.chunk_records[row], query, ids)
        if cut is None or len(cut.text) >= len(item.text):
            return None
        return replace(item, chunk_id="", text=cut.text, start_line=cut.start_line,
                       end_line=cut.end_line, path=f"{item.path}:bundle")

    def candidate_items(self, rank: int, row: int, score: float, path: str, query: str,
                        ids: list[str]) -> list[EvidenceItem]:
        """What chunk ``row`` may contribute, preferred first: the whole chunk, then (focus
        on) its answering bundle. ``focus_mode="shrink"`` shows long chunks past the top
        ``whole_top`` as bundles even when they would fit; ``"fallback"`` only when they do not."""
        cfg = self.config
        whole = self.snapshot.chunk_item(row, score, path)
        if not cfg.focus:
            return [whole]
        cut = self.bundle_item(row, whole, query, ids)
        if cut is None:
            return [whole]
        long = len(whole.text) >= cfg.focus_min_tokens * CHARS_PER_TOKEN
        if cfg.focus_mode == "shrink" and rank >= cfg.whole_top and long:
            return [cut]
        return [whole, cut]

    def pack(self, order: list[int], fused: dict[int, float], paths: dict[str, list[tuple[int, float]]],
             k: int, query: str) -> list[EvidenceItem]:
        """Items in rank order under the budget: the first candidate of a chunk that fits
        (whole, else its bundle), never a line twice, at most ``k`` items."""
        budget = self.config.budget_tokens * CHARS_PER_TOKEN
        ids = query_identifiers(query)
        used = 0
        shown: set[tuple[str, int]] = set()
        members = {n: {r for r, _ in rows} for n, rows in paths.items()}
        items: list[EvidenceItem] = []
        for row in order:
            if len(items) >= k or budget - used < 80:
                break
            path = "+".join(n for n in paths if row in members[n]) or "expansion"
            for item in self.candidate_items(len(items), row, fused.get(row, 0.0), path, query, ids):
                lines = _item_lines(item)
                if lines and all(ln in shown for ln in lines):
                    break
                if used + len(item.text) > budget:
                    continue
                used += len(item.text)
                shown.update(lines)
                items.append(item)
                break
        return items

    def retrieve(self, query: str, k: int) -> Retrieval:
        started = time.perf_counter()
        paths, timings = self.recall(query)
        fused = self.fuse(paths)
        order = sorted(fused, key=lambda r: (-fused[r], r))
        order = self.expand(query, order)
        items = self.pack(order, fused, paths, k, query)
        timings["total"] = (time.perf_counter() - started) * 1000
        trace = {"paths": {n: len(v) for n, v in paths.items()}, "trained_encoder": self.trained,
                 "procedure": is_procedure(query), "identifiers": query_identifiers(query)}
        return Retrieval(self.name, query, tuple(items), trace=trace, timings_ms=timings)


@lru_cache(maxsize=2048)
def query_vector(encoder: Encoder, query: str) -> np.ndarray:
    """The query's vector (cached: a repeated question, or several EDAQA variants in one
    evaluation, encode it once)."""
    vector = encoder.encode([query])[0]
    vector.setflags(write=False)
    return vector


def _lap(t: float) -> tuple[float, float]:
    now = time.perf_counter()
    return now, (now - t) * 1000


def _item_lines(item: EvidenceItem) -> list[tuple[str, int]]:
    if item.start_line is None or item.end_line is None:
        return []
    return [(item.doc, ln) for ln in range(item.start_line, item.end_line + 1)]


ABLATIONS: dict[str, dict[str, Any]] = {
    "edaqa_no_lexical": {"w_lexical": 0.0},
    "edaqa_no_identifiers": {"w_identifier": 0.0},
    "edaqa_no_dense": {"w_dense": 0.0},
    "edaqa_no_units": {"w_units": 0.0},
    "edaqa_no_expansion": {"expansion": False},
    "edaqa_untrained": {"tuned": False},
    "edaqa_no_bundles": {"focus": False},
}


def make_edaqa(snapshot: IndexSnapshot, llm: Any = None, **overrides: Any) -> EdaqaRetriever:
    return EdaqaRetriever(snapshot, replace(EdaqaConfig(), **overrides))


def make_ablation(name: str) -> Any:
    def factory(snapshot: IndexSnapshot, llm: Any = None) -> EdaqaRetriever:
        return EdaqaRetriever(snapshot, replace(EdaqaConfig(), **ABLATIONS[name]), name=name)

    return factory


edaqa_no_lexical = make_ablation("edaqa_no_lexical")
edaqa_no_identifiers = make_ablation("edaqa_no_identifiers")
edaqa_no_dense = make_ablation("edaqa_no_dense")
edaqa_no_units = make_ablation("edaqa_no_units")
edaqa_no_expansion = make_ablation("edaqa_no_expansion")
edaqa_untrained = make_ablation("edaqa_untrained")
edaqa_no_bundles = make_ablation("edaqa_no_bundles")
