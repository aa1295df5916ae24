"""Claim-level provenance Pi_q (TechDocRAG equation 15): each sentence of an answer lists the
evidence that supports it (element ids, or evidence ids for items not built from elements),
by content-token overlap; ``element_metrics.csr`` applies it to every method's evidence."""

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
    evidence_ids: tuple[str, ...]  # ids of the evidence supporting the claim (see claim_provenance)

    @property
    def supported(self) -> bool:
        return bool(self.evidence_ids)


def _content_tokens(text: str) -> set[str]:
    return {t for t in text_tokens.tokens(text) if not t.isdigit() or len(t) > 1}


def evidence_units(evidence: Sequence[EvidenceItem], element_texts: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(id, text) of each piece of evidence a claim can cite: with ``element_texts``, each
    element of an item assembled from elements (``EvidenceItem.element_ids``) on its own
    text; otherwise the item itself (``EvidenceItem.evidence_id``), whatever built it."""
    units: list[tuple[str, str]] = []
    for item in evidence:
        ids = item.element_ids
        if ids and element_texts and all(i in element_texts for i in ids):
            units += [(i, element_texts[i]) for i in ids]
        else:
            units.append((item.evidence_id, item.text))
    return units


def claim_provenance(answer: str, evidence: Sequence[EvidenceItem],
                     element_texts: Mapping[str, str] | None = None, *, min_overlap: float = 0.5) -> list[Claim]:
    """Pi_q: split the answer into claims (sentences) and list, for each, the evidence that
    supports it (``evidence_units``: element ids with ``element_texts``, else evidence ids).
    A piece of evidence supports a claim when it carries one of the claim's identifiers and
    at least 30% of its content terms, or at least ``min_overlap`` of them."""
    prepared = [(uid, _content_tokens(text), set(identifiers.extract_identifiers(text)))
                for uid, text in evidence_units(evidence, element_texts)]
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
