"""Answer-level metrics of grounded answers: ALCE citation recall/precision, abstention.

Citation metrics follow ALCE (Gao et al. 2023), per question over the answer's claims:

* **citation recall**: the share of claims whose cited items, taken together, entail the
  claim;
* **citation precision**: the share of citations that are relevant; a citation of a claim is
  relevant when the claim is entailed by its citations and the citation is not superfluous:
  it entails the claim alone, or the claim's other citations without it do not.

Entailment is the strict claim verifier offline (``generation.verify``: one sentence, row or
code line of the cited items states every identifier, number and value of the claim), and
the judge's ``claim_support`` task when a judge is configured. Offline, an extractive
answer's claims are quotes of such units, so its citation figures are true by construction;
they measure a model's claims. An answer without claims ("not in the documents") has no
citation metrics.

Abstention: an answer abstains when it says "not in the documents". Its rate is reported
separately for questions whose gold evidence was in the answerer's context and those whose
gold evidence was not (``abstain_gold_in_context`` / ``abstain_gold_missing``): a good
answerer abstains on the second kind and not on the first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from edaqa_pipeline.generation.evidence import NumberedEvidence
from edaqa_pipeline.generation.verify import verify_claim

Entails = Callable[[str, Sequence[NumberedEvidence]], bool]


def strict_entails(claim: str, items: Sequence[NumberedEvidence]) -> bool:
    """The claim verifier's verdict: one unit of ``items`` states all that the claim names."""
    return verify_claim(claim, [(n.id, n.units()) for n in items]).verified


def citation_scores(
    claims: Sequence[Mapping[str, Any]],
    items_by_id: Mapping[str, NumberedEvidence],
    entails: Entails = strict_entails,
) -> dict[str, float] | None:
    """``{"citation_recall", "citation_precision"}`` of one answer's claims, None without claims.

    Each claim is ``{"text", "evidence_ids"}``; ``items_by_id`` maps evidence ids (E1...) to
    the items the answerer was given.
    """
    if not claims:
        return None
    n_supported = relevant = total = 0
    for claim in claims:
        texts = [items_by_id[i] for i in claim["evidence_ids"] if i in items_by_id]
        total += len(claim["evidence_ids"])
        if not texts or not entails(claim["text"], texts):
            continue
        n_supported += 1
        for i, text in enumerate(texts):
            others = texts[:i] + texts[i + 1:]
            if len(texts) == 1 or entails(claim["text"], [text]) or not entails(claim["text"], others):
                relevant += 1
    return {"citation_recall": n_supported / len(claims),
            "citation_precision": relevant / total if total else 0.0}


def abstention_scores(abstained: bool, gold_in_context: bool | None) -> dict[str, float]:
    """The per-question abstention value under the key of its gold-evidence condition."""
    if gold_in_context is None:
        return {}
    key = "abstain_gold_in_context" if gold_in_context else "abstain_gold_missing"
    return {key: 1.0 if abstained else 0.0}
