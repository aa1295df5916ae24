"""The one lexical index: Okapi BM25 (bm25s) over the shared search tokens.

Every method's lexical step (the ``bm25`` baseline over chunks, TechDocRAG's identifier view,
ChipMind's passage seeds, the hardware-KG blocks, EDAQA's recall) is a ``LexicalIndex``; a
paper that weights differently sets ``k1`` / ``b`` / ``unique_query_terms``, it does not copy
the ranker.

Why bm25s and not LanceDB's full-text search (docs/techdoc.md measures the latency of both):
bm25s scores with our own tokens (``text.tokens``: compound identifiers kept whole plus their
stemmed parts, so ``set_wire_rc``, ``GRT-0118`` and ``3.3`` are terms), gives every document's
score in one sparse product (what score fusion needs, not only a top-k), builds the 850-chunk
index in tens of milliseconds and answers in well under a millisecond; LanceDB FTS splits every
identifier at ``_`` and ``-`` and returns only a limited top-k. The LanceDB tables stay the
vector store.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np

from edaqa_pipeline.retrieval.topk import top_k
from edaqa_pipeline.text.tokens import tokens as search_tokens

Tokenizer = Callable[[str], list[str]]


class LexicalIndex:
    """BM25 over ``texts`` (or pre-tokenised documents); row i = document i."""

    def __init__(
        self,
        texts: Sequence[str] | None = None,
        *,
        token_lists: Sequence[Sequence[str]] | None = None,
        tokenizer: Tokenizer = search_tokens,
        k1: float = 1.2,
        b: float = 0.75,
        unique_query_terms: bool = True,
    ) -> None:
        import bm25s

        # bm25s sets its own logger to DEBUG at import; once anything configures the root
        # handler (Dagster does), every index build printed "Building index from tokens".
        logging.getLogger("bm25s").setLevel(logging.WARNING)
        if token_lists is None:
            token_lists = [tokenizer(t) for t in (texts or [])]
        self.tokenizer = tokenizer
        self.unique_query_terms = unique_query_terms
        self.size = len(token_lists)
        self._bm25 = bm25s.BM25(k1=k1, b=b, method="lucene")
        if self.size:
            self._bm25.index([list(t) for t in token_lists], show_progress=False)
        # an index of no documents has no vocabulary (bm25s sets vocab_dict only in index())
        self.vocabulary = frozenset(getattr(self._bm25, "vocab_dict", None) or ()) - {""}

    def __len__(self) -> int:
        return self.size

    def query_terms(self, query: str | Sequence[str]) -> list[str]:
        terms = self.tokenizer(query) if isinstance(query, str) else list(query)
        terms = [t for t in terms if t in self.vocabulary]
        return list(dict.fromkeys(terms)) if self.unique_query_terms else terms

    def scores(self, query: str | Sequence[str]) -> np.ndarray:
        """BM25 score of every document (float32, zeros when no query term is indexed)."""
        terms = self.query_terms(query)
        if not terms or not self.size:
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self._bm25.get_scores(terms), dtype=np.float32)

    def top(self, query: str | Sequence[str], k: int) -> list[tuple[int, float]]:
        """The ``k`` best documents with a positive score, best first (ties: lower row)."""
        scores = self.scores(query)
        return [(row, float(scores[row])) for row in top_k(scores, k) if scores[row] > 0]
