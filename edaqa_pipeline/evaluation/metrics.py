"""Per-question metric functions over ranked evidence, as pure functions.

Every function takes the ranked evidence (a list of ``EvidenceItem``, best first) and the gold
data of one question, and returns a float, or ``None`` when the question has no gold data of
that kind: the runner averages only over questions where a metric applies, so a method is never
credited or penalised with a fabricated 0.

Choices that the numbers depend on (kept here, next to the code):

- Documents: ``doc_recall@k`` / ``mrr@10`` / ``ndcg@10`` look at DISTINCT documents in rank
  order (a document's rank is the rank of its first evidence item), binary relevance; the ideal
  DCG has ``min(|gold docs|, k)`` relevant documents on top.
- Reference passages (ORD-QA): a passage counts as retrieved when at least half of its
  countable lines occur in the evidence text. Countable = non-empty after whitespace
  normalisation and not a heading (a line starting with ``#``; a Tcl comment line is also
  skipped by this rule). A line *occurs* when its whitespace-normalised form is a substring of
  the whitespace-normalised concatenation of the evidence texts (joined with newlines, so a
  match may span two adjacent items; case-sensitive). Passages with no countable line are left
  out of the mean.
- Spans (edaqa): a gold span is found by an evidence item of the same document whose line range
  overlaps it (PDF: the same page; a gold span with neither lines nor page: any item of that
  document).
- Context budget: tokens = characters / 4. :func:`pack_to_budget` (``retrieval/packing.py``,
  shared with the answerer) keeps items in rank order while the total stays within the budget
  and STOPS at the first item that would overflow. The first item always counts, truncated to
  the budget if it alone is too long.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from edaqa_pipeline.evaluation.qa import GoldSpan
from edaqa_pipeline.model import EvidenceItem, normalise_ws
from edaqa_pipeline.retrieval.packing import context_tokens, item_lines, pack_to_budget
from edaqa_pipeline.text.counting import EVIDENCE_BUDGET_TOKENS

KS: tuple[int, ...] = (1, 3, 5, 10)
DEFAULT_BUDGET_TOKENS = EVIDENCE_BUDGET_TOKENS
__all__ = ["context_tokens", "pack_to_budget"]  # re-exported: m.pack_to_budget is the runner's


# --- documents ------------------------------------------------------------------------------


def distinct_docs(items: Sequence[EvidenceItem]) -> list[str]:
    """Documents in rank order of their first evidence item."""
    return list(dict.fromkeys(i.doc for i in items))


def doc_recall_at_k(
    items: Sequence[EvidenceItem], gold_docs: Sequence[str], k: int
) -> float | None:
    """1.0 when a gold document is among the first ``k`` distinct documents."""
    if not gold_docs:
        return None
    gold = set(gold_docs)
    return 1.0 if any(d in gold for d in distinct_docs(items)[:k]) else 0.0


def mrr_at_k(items: Sequence[EvidenceItem], gold_docs: Sequence[str], k: int = 10) -> float | None:
    """Reciprocal rank of the first gold document among the first ``k`` distinct documents."""
    if not gold_docs:
        return None
    gold = set(gold_docs)
    for rank, doc in enumerate(distinct_docs(items)[:k], start=1):
        if doc in gold:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(items: Sequence[EvidenceItem], gold_docs: Sequence[str], k: int = 10) -> float | None:
    """Binary-relevance nDCG over distinct documents; ideal DCG over min(|gold|, k) hits."""
    if not gold_docs:
        return None
    gold = set(gold_docs)
    dcg = sum(
        1.0 / math.log2(rank + 1)
        for rank, doc in enumerate(distinct_docs(items)[:k], start=1)
        if doc in gold
    )
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(gold), k) + 1))
    return dcg / ideal


# --- reference passages (ORD-QA) ------------------------------------------------------------


def passage_lines(passage: str) -> list[str]:
    """The countable lines of a passage: whitespace-normalised, non-empty, not headings."""
    out = []
    for line in passage.splitlines():
        norm = normalise_ws(line)
        if norm and not norm.startswith("#"):
            out.append(norm)
    return out


def passage_found(passage: str, evidence_text: str) -> bool | None:
    """Whether at least half of the passage's countable lines occur in ``evidence_text``.

    ``evidence_text`` must already be whitespace-normalised. None when nothing is countable.
    """
    lines = passage_lines(passage)
    if not lines:
        return None
    hits = sum(1 for line in lines if line in evidence_text)
    return 2 * hits >= len(lines)


def ref_recall(items: Sequence[EvidenceItem], passages: Sequence[str]) -> float | None:
    """Fraction of reference passages that ``items`` (all of them) retrieve."""
    text = normalise_ws("\n".join(i.text for i in items))
    found = [f for f in (passage_found(p, text) for p in passages) if f is not None]
    if not found:
        return None
    return sum(found) / len(found)


def ref_recall_at_k(items: Sequence[EvidenceItem], passages: Sequence[str], k: int) -> float | None:
    return ref_recall(list(items)[:k], passages)


# --- gold spans (edaqa) ---------------------------------------------------------------------


def span_found(item: EvidenceItem, span: GoldSpan) -> bool:
    doc, start, end, page = span
    if item.doc != doc:
        return False
    if page is not None:
        return item.page == page
    if start is None or end is None:
        return True
    if item.start_line is None or item.end_line is None:
        return False
    if item.line_numbers:  # a bundle of separate runs: only the lines it shows count
        return any(start <= line <= end for _, line in item_lines(item))
    return item.start_line <= end and item.end_line >= start


def span_scores(
    items: Sequence[EvidenceItem], spans: Sequence[GoldSpan]
) -> dict[str, float] | None:
    """``{"hit", "cover", "all"}`` for the given evidence, or None without gold spans."""
    if not spans:
        return None
    found = [any(span_found(i, s) for i in items) for s in spans]
    n = sum(found)
    return {
        "hit": 1.0 if n else 0.0,
        "cover": n / len(spans),
        "all": 1.0 if n == len(spans) else 0.0,
    }


# --- answer text ----------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _rouge_scorer():  # type: ignore[no-untyped-def]
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def rouge_l(prediction: str, reference: str) -> float | None:
    """ROUGE-L F-measure (rouge-score, Porter stemmer); None for an empty reference."""
    if not reference.strip():
        return None
    return float(_rouge_scorer().score(reference, prediction)["rougeL"].fmeasure)


def corpus_bleu(predictions: Sequence[str], references: Sequence[str]) -> tuple[float, str] | None:
    """sacrebleu corpus BLEU (0-100, sacrebleu defaults) and its signature; None if empty."""
    if not predictions:
        return None
    from sacrebleu.metrics import BLEU

    bleu = BLEU()
    score = bleu.corpus_score(list(predictions), [list(references)])
    return float(score.score), str(bleu.get_signature())


# --- aggregation helpers --------------------------------------------------------------------


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolation percentile (numpy's default); None for no values."""
    if not values:
        return None
    return float(np.percentile(np.asarray(values, dtype=float), q))
