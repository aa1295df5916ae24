"""Claims as an answer shows them: verified on the evidence, cited by the lines that state them.

One definition of a shown claim (``AnswerClaim``) and of the check every answerer's claims
pass (``verify_all``: ``verify.py`` on the cited items, re-cited where another item of the
same document states it, a claim of several sentences kept sentence by sentence), used by
``answer.py`` and the streamed answers (``ClaimStream``); ``verified_claim`` also cites the
release change claims.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from edaqa_pipeline.generation.claim_verdicts import checked, sentence_verdicts, verdict_of
from edaqa_pipeline.generation.claims import clean_claim, same_claim_key
from edaqa_pipeline.generation.evidence import NumberedEvidence
from edaqa_pipeline.generation.grounded import MAX_CLAIMS, Claim
from edaqa_pipeline.generation.text_answer import finished_claims
from edaqa_pipeline.generation.verify import SUPPORT_THRESHOLD, Verdict


@dataclass(frozen=True)
class AnswerClaim:
    """A verified claim: its text, the items it cites and their narrowed locations."""

    text: str
    evidence_ids: tuple[str, ...]
    citations: tuple[str, ...]
    support: float  # share of the claim's words in the unit it rests on (verify.unit_support)
    recited: bool = False  # the model cited other items; these state it (``claim_verdicts``)
    quoted: bool = False  # the extractive answer's, after a model's claims (``answer._with_quotes``)

    @property
    def supported(self) -> bool:
        return self.support >= SUPPORT_THRESHOLD

    def rendered(self) -> str:
        text = self.text if self.text.endswith((".", "!", "?", ":", "`")) else self.text + "."
        return f"{text} [{'; '.join(self.citations)}]"

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "citations": list(self.citations),
                "evidence_ids": list(self.evidence_ids), "supported": self.supported,
                "support": round(self.support, 6), **({"recited": True} if self.recited else {}),
                **({"quoted": True} if self.quoted else {})}


ClaimListener = Callable[[AnswerClaim], None]  # receives each verified claim as it is written


def check_claim(claim: Claim, by_id: dict[str, NumberedEvidence]) -> str:
    """Why ``claim`` fails verification ("" when it passes)."""
    return verdict_of(claim, by_id).reason


def verified_claim(text: str, verdict: Verdict, by_id: dict[str, NumberedEvidence],
                   recited: bool = False) -> AnswerClaim:
    """The claim as shown: cited by the items its units come from, narrowed to their lines."""
    citations = [by_id[b.evidence_id].citation(b.unit.first, b.unit.last) for b in verdict.bindings]
    ids = tuple(dict.fromkeys(b.evidence_id for b in verdict.bindings))
    return AnswerClaim(clean_claim(text), ids, tuple(dict.fromkeys(citations)), verdict.support, recited)


def verify_all(
    claims: Sequence[Claim], by_id: dict[str, NumberedEvidence], shown: Sequence[AnswerClaim] = ()
) -> tuple[list[AnswerClaim], list[tuple[Claim, str]], list[tuple[Claim, str]]]:
    """The claims that verify, on the items they cite or re-cited to the item that states them,
    and are not among ``shown`` already (of a claim of several sentences that fails whole, each
    sentence that verifies: ``claim_verdicts.py``), the failed
    ones a re-ask may repair, and the failed sentences that continue another (dropped: re-asked
    alone they would lose their subject), each with the verifier's reason."""
    kept: list[AnswerClaim] = []
    failed: list[tuple[Claim, str]] = []
    final: list[tuple[Claim, str]] = []
    seen: set[str] = {same_claim_key(c.text) for c in shown}

    def keep(claim: Claim, verdict: Verdict, recited: bool) -> bool:
        verified = verified_claim(claim.text, verdict, by_id, recited)
        if same_claim_key(verified.text) in seen:  # a model may repeat a claim
            return False
        seen.add(same_claim_key(verified.text))
        kept.append(verified)
        return True

    for claim in claims:
        verdict, recited = checked(claim, by_id)
        if verdict.verified:
            keep(claim, verdict, recited)
            continue
        parts = sentence_verdicts(claim, by_id)
        if not any(p.verdict.verified for p in parts):
            failed.append((claim, verdict.reason))
            continue
        shown = False  # whether the sentence before was shown right before this one
        for part in parts:
            if part.verdict.verified and (shown or not part.continues):
                shown = keep(part.claim, part.verdict, part.recited)
                continue
            shown = False
            reason = part.verdict.reason or "the sentence it continues is not shown before it"
            (final if part.continues else failed).append((part.claim, reason))
    return kept, failed, final


class ClaimStream:
    """Verifies the sentences of a text answer while the model writes it and hands each
    claim that verifies to ``on_claim`` at once, in order, each claim once. A sentence that
    fails is not sent (the answer's final verification drops it too)."""

    def __init__(self, by_id: dict[str, NumberedEvidence], on_claim: ClaimListener) -> None:
        self.by_id = by_id
        self.on_claim = on_claim
        self.checked: set[str] = set()
        self.sent: set[str] = set()

    def feed(self, text: str) -> None:
        """The answer text so far (a retried request starts again from the beginning)."""
        for claim in finished_claims(text):
            key = f"{claim.text}|{claim.evidence}"
            if key in self.checked:
                continue
            self.checked.add(key)
            kept, _, _ = verify_all([claim], self.by_id)
            for verified in kept:  # a claim of several sentences may keep more than one
                if same_claim_key(verified.text) in self.sent or len(self.sent) >= MAX_CLAIMS:
                    break  # what follows a sentence shown earlier would land after another claim
                self.sent.add(same_claim_key(verified.text))
                self.on_claim(verified)
