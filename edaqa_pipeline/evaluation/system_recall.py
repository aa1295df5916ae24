"""``system_recall@k``: gold evidence retrieved at ANY point of a multi-step retrieval.

ChipMind section 4.3: "the fraction of ground-truth passages retrieved during the entire
reasoning process". A multi-step retriever makes several retrievals (the question, then each
sub-query); ``steps`` holds each retrieval's ranked candidates. The top ``k`` of every step are
pooled and the gold evidence is matched against the pool with the same rules as the runner's
metrics (``edaqa_pipeline.evaluation.metrics``):

* with reference passages (ORD-QA): the fraction of passages found in the pooled text (a passage
  is found when at least half of its countable lines occur; see ``passage_found``). Each
  passage is tested against the whole pool, like ``ref_recall``;
* else with gold documents: the fraction of gold documents among the pooled documents;
* None when the question has neither.

A single-pass retriever has one step (its ranked list), so ``system_recall@k`` equals
``ref_recall@k`` for it and the two columns compare directly.
"""

from __future__ import annotations

from collections.abc import Sequence

from edaqa_pipeline.evaluation import metrics as m
from edaqa_pipeline.model import EvidenceItem


def pooled(steps: Sequence[Sequence[EvidenceItem]], k: int) -> list[EvidenceItem]:
    """Union of the top ``k`` of every step, first occurrence order, deduplicated by evidence id."""
    seen: set[str] = set()
    out: list[EvidenceItem] = []
    for step in steps:
        for item in list(step)[:k]:
            key = item.evidence_id
            if key not in seen:
                seen.add(key)
                out.append(item)
    return out


def system_recall_at_k(
    steps: Sequence[Sequence[EvidenceItem]],
    k: int,
    *,
    ref_passages: Sequence[str] = (),
    gold_docs: Sequence[str] = (),
) -> float | None:
    """Fraction of gold evidence in the pooled top-``k`` of all retrieval steps (see above)."""
    pool = pooled(steps, k)
    if ref_passages:
        found = m.ref_recall(pool, ref_passages)
        if found is not None:
            return found
    if gold_docs:
        docs = {i.doc for i in pool}
        return sum(1 for d in dict.fromkeys(gold_docs) if d in docs) / len(set(gold_docs))
    return None


__all__ = ["pooled", "system_recall_at_k"]
