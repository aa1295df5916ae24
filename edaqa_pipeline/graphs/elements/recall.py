"""Identifier-aware recall over the element identifier view (TechDocRAG equation 9):

    score(v) = w_lex * BM25(q, k_v) / max_u BM25(q, k_u)
             + w_id  * IdMatch(k_q, k_v)
             + w_meta * MetaMatch(q, m_v)

* BM25 over the identifier view (identifiers + last two section-path levels + the element's
  plain text; ``ElementIndex.lexical``, the shared ``LexicalIndex``), normalised by the best
  score of the query, so the three terms share a 0..1 scale;
* IdMatch: the share of the query's identifiers the element carries (exact 1; a fuzzy match
  counts its difflib ratio, ``IdentifierVocabulary``), capped at 1;
* MetaMatch: the share of the query's search tokens found in the element's metadata (section
  path, document name, version label).

Candidates are the BM25 top ``lexical_depth`` plus every element carrying a matched
identifier (at most ``postings_cap`` per identifier: an identifier on thousands of elements
is no evidence of any one of them). The weights are the caller's: ``techdoc`` uses
(1.0, 0.5, 0.3), another method passes its own.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from edaqa_pipeline.graphs.elements.index import ElementIndex


@dataclass(frozen=True)
class RecallWeights:
    """The numbers of equation 9 (module docstring). TechDocRAG (paper 003) gives no values for
    lam_1..lam_3; these were set once, before any evaluation, and are not tuned. ``techdoc``
    and EDAQA's element path both use the defaults."""

    lexical: float = 1.0
    """lam_1, weight of the BM25 score over the identifier view (divided by the query's best
    score), the largest of the three. Not tuned."""
    identifier: float = 0.5
    """lam_2, weight of IdMatch (share of the query's identifiers the element carries). Not
    tuned."""
    meta: float = 0.3
    """lam_3, weight of MetaMatch (share of the query's tokens in section path, document name,
    version label). Not tuned."""
    lexical_depth: int = 50
    """BM25 candidates considered before scoring (every element carrying a matched identifier
    is added to them). Not tuned."""
    postings_cap: int = 500
    """Most elements one matched identifier contributes: an identifier on thousands of
    elements is no evidence of any one of them. Not tuned."""


def lexical_scores(index: ElementIndex, query_tokens: Sequence[str], depth: int) -> dict[int, float]:
    """BM25 of the ``depth`` best elements with a positive score (node -> score)."""
    return dict(index.lexical.top(list(query_tokens), depth))


def identifier_scores(index: ElementIndex, query_identifiers: Sequence[str], cap: int = 500) -> dict[int, float]:
    """IdMatch per element carrying a (fuzzily) matched query identifier, capped at 1."""
    if not query_identifiers:
        return {}
    matched = index.vocabulary.match(query_identifiers)
    out: dict[int, float] = defaultdict(float)
    for ident, weight in matched.items():
        for i in index.postings.get(ident, ())[:cap]:
            out[int(i)] += weight / len(query_identifiers)
    return {i: min(v, 1.0) for i, v in out.items()}


def meta_score(index: ElementIndex, node: int, query_tokens: frozenset[str]) -> float:
    """MetaMatch: share of the query's tokens in the element's section path / document / version."""
    return len(query_tokens & index.meta_tokens[node]) / max(len(query_tokens), 1)


def identifier_recall(index: ElementIndex, query_identifiers: Sequence[str], query_tokens: Sequence[str],
                      k: int, weights: RecallWeights = RecallWeights()) -> list[tuple[int, float]]:
    """The ``k`` best elements by equation 9, best first (ties: reading order, then position).

    ``query_identifiers``: canonical identifiers of the query (``text.identifiers.
    query_identifiers``); ``query_tokens``: its search tokens (``text.tokens.tokens``)."""
    lexical = lexical_scores(index, query_tokens, weights.lexical_depth)
    ids = identifier_scores(index, query_identifiers, weights.postings_cap)
    candidates = set(lexical) | set(ids)
    if not candidates:
        return []
    top_lex = max(lexical.values()) if lexical else 1.0
    q_tokens = frozenset(query_tokens)
    scored = [
        (i, weights.lexical * lexical.get(i, 0.0) / (top_lex or 1.0) + weights.identifier * ids.get(i, 0.0)
         + weights.meta * meta_score(index, i, q_tokens))
        for i in candidates
    ]
    scored.sort(key=lambda t: (-t[1], index.ordinal[t[0]], t[0]))
    return scored[:k]
