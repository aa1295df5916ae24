"""Query analysis for the reasoning loop: the aspects (clauses) of a question, their content
terms, and the vectors of the question and its clauses from one encoder pass.

Content terms are the shared ``text.tokens.content_terms`` (Snowball stems, stop words
removed) minus the filler words every question about the documentation carries ("user",
"design", "OpenROAD", "way"...), which would otherwise make any passage "cover" a clause.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from edaqa_pipeline.retrieval.encoders import _LOCK as ENCODER_LOCK
from edaqa_pipeline.text.tokens import content_terms, stem

# words of questions that say nothing about what is asked (not stop words: they are content
# words elsewhere, so they are removed here only)
QUESTION_FILLER = frozenset(stem(w) for w in """
    want wants need needs like user users engineer engineers designer someone openroad tool
    tools design designs specific certain particular way ways process step steps able help
    going achieve
    """.split())
_CLAUSE_SPLIT = re.compile(
    r"(?:[?!]\s+|\.\s+(?=[A-Z])|;\s*|,?\s+(?:and then|then|and also|and how|and what|and finally|"
    r"after that|afterwards|additionally|moreover|furthermore|as well as|while also|"
    r"and later|and next)\s+|\s+(?:Next|Later|Also|Additionally|Finally|Then),?\s+)"
)
_LEADING_CONNECTOR = re.compile(
    r"^(?:also|next|later|additionally|finally|then|and|moreover|furthermore|afterwards),?\s+", re.I
)


def aspect_terms(text: str) -> list[str]:
    """Content terms of a question or clause (three letters at least, fillers removed)."""
    return [t for t in content_terms(text) if len(t) >= 3 and t not in QUESTION_FILLER]


def question_clauses(question: str) -> list[str]:
    """The aspects of a question: its sentences / coordinated parts (>= 2 content terms)."""
    parts = [_LEADING_CONNECTOR.sub("", p.strip(" ,.?")) for p in _CLAUSE_SPLIT.split(question.strip())
             if p and p.strip(" ,.?")]
    return [p for p in parts if len(aspect_terms(p)) >= 2]


def contextual_vectors(encoder: Any, text: str, spans: Sequence[tuple[int, int]]
                       ) -> tuple[np.ndarray, list[np.ndarray | None]]:
    """The text's vector and a vector per character span from ONE encoder pass ("late
    chunking"): the encoder mean-pools token embeddings, so the mean of all of them is
    ``encoder.encode([text])[0]`` and the mean over a span's tokens embeds that span in the
    context of the whole question. A span without tokens (or beyond the model's maximum
    length) gets None."""
    model = encoder.model()
    with ENCODER_LOCK:
        tokens = model.encode(text, output_value="token_embeddings", show_progress_bar=False)
    emb = np.asarray(tokens.detach().cpu().numpy() if hasattr(tokens, "detach") else tokens, np.float32)
    offsets = model.tokenizer(text, return_offsets_mapping=True, truncation=True,
                              max_length=model.max_seq_length)["offset_mapping"][: emb.shape[0]]

    def pooled(rows: np.ndarray) -> np.ndarray:
        v = rows.mean(axis=0)
        return v / (np.linalg.norm(v) or 1.0)

    out: list[np.ndarray | None] = []
    for start, end in spans:
        idx = [i for i, (a, b) in enumerate(offsets) if b > a and a >= start and b <= end]
        out.append(pooled(emb[idx]) if idx else None)
    return pooled(emb), out


def clause_spans(question: str, clauses: Sequence[str]) -> list[tuple[int, int]]:
    """Character span of each clause in the question ((0, 0) when not found)."""
    spans, cursor = [], 0
    for c in clauses:
        at = question.find(c, cursor)
        at = at if at >= 0 else question.find(c)
        spans.append((at, at + len(c)) if at >= 0 else (0, 0))
        cursor = at + len(c) if at >= 0 else cursor
    return spans
