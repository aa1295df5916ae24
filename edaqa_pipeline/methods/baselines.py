"""The baselines every method is compared with, over the chunks of the core build.

* ``bm25``: BM25 over chunks (the shared ``LexicalIndex`` of the snapshot).
* ``dense``: the base encoder over chunks (the primary paper's Chunk RAG).
* ``hybrid_rrf``: BM25 + dense fused by reciprocal rank (k = 60, depth 50), as OpenROAD's
  ORAssistant does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from edaqa_pipeline.retrieval.fusion import rrf
from edaqa_pipeline.retrieval.record import Retrieval, retrieval
from edaqa_pipeline.retrieval.snapshot import IndexSnapshot


@dataclass
class DenseRetriever:
    snapshot: IndexSnapshot
    name: str = "dense"

    def retrieve(self, query: str, k: int) -> Retrieval:
        started = time.perf_counter()
        ranked = self.snapshot.dense_chunks(query, k)
        items = [self.snapshot.chunk_item(r, s, "dense") for r, s in ranked]
        return retrieval(self.name, query, items,
                         timings_ms={"total": (time.perf_counter() - started) * 1000})


@dataclass
class BM25Retriever:
    snapshot: IndexSnapshot
    name: str = "bm25"

    def retrieve(self, query: str, k: int) -> Retrieval:
        started = time.perf_counter()
        ranked = self.snapshot.lexical_chunks(query, k)
        items = [self.snapshot.chunk_item(r, s, "bm25") for r, s in ranked]
        return retrieval(self.name, query, items,
                         timings_ms={"total": (time.perf_counter() - started) * 1000})


@dataclass
class HybridRRFRetriever:
    snapshot: IndexSnapshot
    depth: int = 50
    name: str = "hybrid_rrf"

    def retrieve(self, query: str, k: int) -> Retrieval:
        started = time.perf_counter()
        lexical = [r for r, _ in self.snapshot.lexical_chunks(query, self.depth)]
        dense = [r for r, _ in self.snapshot.dense_chunks(query, self.depth)]
        fused = rrf([lexical, dense])
        lex, den = set(lexical), set(dense)
        order = sorted(fused, key=lambda r: (-fused[r], r))[:k]
        items = [
            self.snapshot.chunk_item(r, fused[r], "bm25+dense" if r in lex and r in den
                                     else ("bm25" if r in lex else "dense"))
            for r in order
        ]
        return retrieval(self.name, query, items,
                         timings_ms={"total": (time.perf_counter() - started) * 1000})


def make_bm25(snapshot: IndexSnapshot, llm: Any = None) -> BM25Retriever:
    return BM25Retriever(snapshot)


def make_dense(snapshot: IndexSnapshot, llm: Any = None) -> DenseRetriever:
    return DenseRetriever(snapshot)


def make_hybrid_rrf(snapshot: IndexSnapshot, llm: Any = None) -> HybridRRFRetriever:
    return HybridRRFRetriever(snapshot)
