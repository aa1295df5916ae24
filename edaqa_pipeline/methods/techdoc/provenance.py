"""Claim-level provenance Pi_q (TechDocRAG equation 15): each sentence of an answer lists the
raw evidence (element ids) that supports it, by content-token overlap."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.text import identifiers
from edaqa_pipeline.text import tokens as text_tokens
from edaqa_pipeline.text.sentences import split_sentences


@dataclass(frozen=True)
class Claim:
    text: str
    evidence_ids: tuple[str, ...]  # element ids of the raw evidence supporting the claim

    @property
    def supported(self) -> bool:
        return bool(self.evidence_ids)


def _content_tokens(text: str) -> set[str]:
    return {t for t in text_tokens.tokens(text) if not t.isdigit() or len(t) > 1}


def claim_provenance(answer: str, evidence: Sequence[EvidenceItem],
                     element_texts: Mapping[str, str] | None = None, *, min_overlap: float = 0.5) -> list[Claim]:
    """Pi_q: split the answer into claims (sentences) and list, for each, the raw evidence
    that supports it. A piece of evidence supports a claim when it carries one of the claim's
    identifiers and at least 30% of its content terms, or at least ``min_overlap`` of them.
    Evidence ids are element ids (``EvidenceItem.chunk_id`` split on ``+``); with
    ``element_texts`` each element of an item is tested on its own text."""
    units: list[tuple[str, str]] = []
    for item in evidence:
        ids = item.chunk_id.split("+")
        if element_texts and all(i in element_texts for i in ids):
            units += [(i, element_texts[i]) for i in ids]
        else:
            units += [(i, item.text) for i in ids[:1]] if len(ids) == 1 else [("+".join(ids), item.text)]
    prepared = [(uid, _content_tokens(text), set(identifiers.extract_identifiers(text))) for uid, text in units]
    claims = []
    for sentence in split_sentences(answer):
        if not re.search(r"\w", sentence):
            continue
        toks = _content_tokens(sentence)
        ids = set(identifiers.extract_identifiers(sentence))
        support = []
        for uid, utoks, uids in prepared:
            share = len(toks & utoks) / len(toks) if toks else 0.0
            if (ids & uids and share >= 0.3) or share >= min_overlap:
                support.append(uid)
        claims.append(Claim(sentence, tuple(dict.fromkeys(support))))
    return claims
