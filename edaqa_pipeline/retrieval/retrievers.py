"""Retrievers behind one protocol: query -> ranked EvidenceItems (document, lines/page, text).

* ``bm25``: lexical search over chunks (LanceDB full-text index).
* ``dense``: base encoder over chunks (the paper's Chunk RAG).
* ``hybrid_rrf``: BM25 + dense fused by reciprocal rank (k=60), as OpenROAD's ORAssistant.
* ``fa_units``: top-M units by the function-aware encoder, expanded to their chunks only
  (the ablation row "+ functional unit organisation"), ordered in the function space.
* ``fa_hybrid``: the paper's Algorithm 1 (lines 11-17): top-M=10 units expanded through
  chunks(e), plus top-N=5 chunks by the base encoder, deduplicated, reranked by
  s(c) = 0.4 sim_base(q,c) + 0.6 sim_func(q,c), top-K.

Until the encoder-training issue lands the function-aware encoder is the base encoder
(``snapshot.function.is_base``), so sim_func == sim_base and ``fa_hybrid`` differs from
``dense`` only through the candidates the unit path adds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.retrieval.snapshot import IndexSnapshot

RRF_K = 60


@runtime_checkable
class Retriever(Protocol):
    name: str

    def retrieve(self, query: str, k: int) -> list[EvidenceItem]: ...


def _item(snapshot: IndexSnapshot, row: int, score: float, path: str) -> EvidenceItem:
    rec = snapshot.chunk_records[row]
    return EvidenceItem(
        chunk_id=rec["chunk_id"], doc=rec["document"], text=rec["text"], score=float(score), path=path,
        start_line=rec["start_line"], end_line=rec["end_line"], page=rec["page"],
    )


def top_rows(scores: np.ndarray, k: int) -> list[int]:
    """Indexes of the k highest scores, ties broken by row order (deterministic)."""
    if k <= 0 or scores.size == 0:
        return []
    k = min(k, scores.size)
    part = np.argpartition(-scores, k - 1)[:k]
    return sorted(part.tolist(), key=lambda i: (-scores[i], i))


def fused_score(sim_base: float, sim_func: float, alpha: float = 0.4) -> float:
    """The paper's unified reranker, equation (5): alpha*sim_base + (1-alpha)*sim_func."""
    return alpha * sim_base + (1.0 - alpha) * sim_func


def rrf(rankings: list[list[int]], k: int = RRF_K) -> dict[int, float]:
    """Reciprocal rank fusion: sum over rankings of 1 / (k + rank), rank 1-based."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, row in enumerate(ranking, 1):
            scores[row] = scores.get(row, 0.0) + 1.0 / (k + rank)
    return scores


@dataclass
class DenseRetriever:
    snapshot: IndexSnapshot
    name: str = "dense"

    def ranked(self, query: str, k: int) -> list[tuple[int, float]]:
        q = self.snapshot.base.encode([query])[0]
        scores = self.snapshot.chunk_vectors @ q
        return [(r, float(scores[r])) for r in top_rows(scores, k)]

    def retrieve(self, query: str, k: int) -> list[EvidenceItem]:
        return [_item(self.snapshot, r, s, "dense") for r, s in self.ranked(query, k)]


def fts_query(query: str) -> str:
    """Query text for the full-text index: identifiers kept, punctuation that the query parser
    would read as syntax removed."""
    cleaned = "".join(ch if ch.isalnum() or ch in "_-. " else " " for ch in query)
    return " ".join(w.strip("-.") for w in cleaned.split() if w.strip("-."))


@dataclass
class BM25Retriever:
    snapshot: IndexSnapshot
    name: str = "bm25"

    def ranked(self, query: str, k: int) -> list[tuple[int, float]]:
        text = fts_query(query)
        if not text:
            return []
        hits = (
            self.snapshot.lance_chunks.search(text, query_type="fts")
            .select(["chunk_id", "_score"])
            .limit(k)
            .to_arrow()
        )
        ids = hits.column("chunk_id").to_pylist()
        scores = hits.column("_score").to_pylist() if "_score" in hits.column_names else [0.0] * len(ids)
        out = []
        for cid, score in zip(ids, scores, strict=True):
            if cid in self.snapshot._chunk_row:
                out.append((self.snapshot.chunk_row(cid), float(score)))
        return out

    def retrieve(self, query: str, k: int) -> list[EvidenceItem]:
        return [_item(self.snapshot, r, s, "bm25") for r, s in self.ranked(query, k)]


@dataclass
class HybridRRFRetriever:
    snapshot: IndexSnapshot
    depth: int = 50
    name: str = "hybrid_rrf"

    def retrieve(self, query: str, k: int) -> list[EvidenceItem]:
        lexical = [r for r, _ in BM25Retriever(self.snapshot).ranked(query, self.depth)]
        dense = [r for r, _ in DenseRetriever(self.snapshot).ranked(query, self.depth)]
        fused = rrf([lexical, dense])
        lex, den = set(lexical), set(dense)
        order = sorted(fused, key=lambda r: (-fused[r], r))[:k]
        return [
            _item(self.snapshot, r, fused[r], "bm25+dense" if r in lex and r in den else ("bm25" if r in lex else "dense"))
            for r in order
        ]


@dataclass
class FunctionAwareRetriever:
    """Unit path (+ chunk path for ``fa_hybrid``) with the unified reranker (Algorithm 1)."""

    snapshot: IndexSnapshot
    name: str = "fa_hybrid"
    top_units: int = 10  # top-M
    top_chunks: int = 5  # top-N; 0 = unit path only (fa_units)
    alpha: float = 0.4

    def candidates(self, q_base: np.ndarray, q_func: np.ndarray) -> dict[int, str]:
        snap = self.snapshot
        found: dict[int, str] = {}
        if snap.unit_vectors.shape[0]:
            unit_scores = snap.unit_vectors @ q_func
            for u in top_rows(unit_scores, self.top_units):
                for row in snap.unit_chunk_rows[u]:
                    found.setdefault(row, "unit")
        if self.top_chunks:
            for row in top_rows(snap.chunk_vectors @ q_base, self.top_chunks):
                found[row] = "unit+chunk" if found.get(row) == "unit" else "chunk"
        return found

    def retrieve(self, query: str, k: int) -> list[EvidenceItem]:
        snap = self.snapshot
        q_base = snap.base.encode([query])[0]
        q_func = q_base if snap.function.is_base else snap.function.encode([query])[0]
        found = self.candidates(q_base, q_func)
        if not found:
            return []
        rows = np.fromiter(found, dtype=np.int64)
        sim_base = snap.chunk_vectors[rows] @ q_base
        sim_func = snap.function_chunk_vectors[rows] @ q_func
        alpha = self.alpha if self.top_chunks else 0.0  # fa_units ranks in the function space
        fused = alpha * sim_base + (1.0 - alpha) * sim_func
        order = top_rows(fused, k)
        return [_item(snap, int(rows[i]), float(fused[i]), found[int(rows[i])]) for i in order]


METHODS: dict[str, Callable[[IndexSnapshot], Retriever]] = {
    "bm25": lambda s: BM25Retriever(s),
    "dense": lambda s: DenseRetriever(s),
    "hybrid_rrf": lambda s: HybridRRFRetriever(s),
    "fa_units": lambda s: FunctionAwareRetriever(s, name="fa_units", top_chunks=0),
    "fa_hybrid": lambda s: FunctionAwareRetriever(s, name="fa_hybrid"),
    # fa_hybrid with the trained LoRA adapter as f_func (unit retrieval and sim_func);
    # raises NoTrainedEncoderError when the storage root has no trained encoder.
    "fa_hybrid_tuned": lambda s: _tuned(s),
    # Block-first retrieval over the hardware knowledge graphs of PDF datasheets (paper 002).
    "hwkg": lambda s: _hwkg(s),
    # TechDocRAG (paper 003): element graph, identifier-aware recall, intent-aware expansion.
    "techdoc": lambda s: _techdoc(s),
    # ChipMind (paper 001): KG + Personalized PageRank, adaptive top-K, anchor filter, iterations.
    **{name: (lambda s, _n=name: _chipmind(_n, s)) for name in (
        "chipmind", "chipmind_no_adaptive_k", "chipmind_no_filter", "chipmind_no_iteration")},
}


def _techdoc(snapshot: IndexSnapshot) -> Retriever:
    from edaqa_pipeline.elements.retriever import make_techdoc_retriever

    return make_techdoc_retriever(snapshot)


def _chipmind(name: str, snapshot: IndexSnapshot) -> Retriever:
    from edaqa_pipeline.chipkg.retriever import FACTORIES

    return FACTORIES[name](snapshot)


def _tuned(snapshot: IndexSnapshot) -> Retriever:
    return FunctionAwareRetriever(snapshot.tuned_view(), name="fa_hybrid_tuned")


def _hwkg(snapshot: IndexSnapshot) -> Retriever:
    from edaqa_pipeline.datasheets.retrieval import make_hwkg_retriever

    return make_hwkg_retriever(snapshot)


# The table a method needs beyond the core build (chunks, units, their vectors), i.e. which
# optional job made it: `edaqa index --with train|techdoc|chipkg`; hwkg needs a PDF in the corpus.
OPTIONAL_TABLES = {
    "fa_hybrid_tuned": "tuned_embeddings",
    "techdoc": "element_graph",
    "hwkg": "hardware_kgs",
    **{name: "chip_kg_nodes" for name in METHODS if name.startswith("chipmind")},
}
# Tables whose existence is enough: element_graph holds only the cross-document edges, which a
# corpus of unrelated manuals may not have; the elements themselves are per-document tables.
EMPTY_ALLOWED = frozenset({"element_graph"})


def available_methods(storage: Path) -> list[str]:
    """Every method (in ``METHODS`` order) whose indexes exist under the storage root."""
    import polars as pl

    from edaqa_pipeline.storage.tables import table_path

    tables = Path(storage) / "tables"
    present = {
        table for table in set(OPTIONAL_TABLES.values())
        if (path := table_path(tables, table)).is_file()
        and (table in EMPTY_ALLOWED or pl.scan_parquet(path).select(pl.len()).collect().item() > 0)
    }
    return [m for m in METHODS if OPTIONAL_TABLES.get(m, "") in present or m not in OPTIONAL_TABLES]


def make_retriever(name: str, snapshot: IndexSnapshot) -> Retriever:
    try:
        return METHODS[name](snapshot)
    except KeyError:
        raise ValueError(f"unknown method {name!r}; choose from {', '.join(METHODS)}") from None
