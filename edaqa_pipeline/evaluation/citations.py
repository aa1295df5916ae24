"""Answer-level metrics of grounded answers: ALCE citation recall/precision, abstention.

Citation metrics follow ALCE (Gao et al. 2023), per question over the answer's claims:

* **citation recall**: the share of claims whose cited items, taken together, entail the
  claim;
* **citation precision**: the share of citations that are relevant; a citation of a claim is
  relevant when the claim is entailed by its citations and the citation is not superfluous:
  it entails the claim alone, or the claim's other citations without it do not.

Entailment is the lexical check of ``generation.claims.supported`` offline, and the judge's
``claim_support`` task when a judge is configured. An answer without claims ("not in the
documents") has no citation metrics.

Abstention: an answer abstains when it says "not in the documents". Its rate is reported
separately for questions whose gold evidence was in the answerer's context and those whose
gold evidence was not (``abstain_gold_in_context`` / ``abstain_gold_missing``): a good
answerer abstains on the second kind and not on the first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from edaqa_pipeline.generation.claims import supported

Entails = Callable[[str, Sequence[str]], bool]


def lexical_entails(claim: str, texts: Sequence[str]) -> bool:
    return supported(claim, "\n".join(texts))


def citation_scores(
    claims: Sequence[Mapping[str, Any]],
    texts_by_id: Mapping[str, str],
    entails: Entails = lexical_entails,
) -> dict[str, float] | None:
    """``{"citation_recall", "citation_precision"}`` of one answer's claims, None without claims.

    Each claim is ``{"text", "evidence_ids"}``; ``texts_by_id`` maps evidence ids (E1...) to
    the text of the items the answerer was given.
    """
    if not claims:
        return None
    n_supported = relevant = total = 0
    for claim in claims:
        texts = [texts_by_id[i] for i in claim["evidence_ids"] if i in texts_by_id]
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
