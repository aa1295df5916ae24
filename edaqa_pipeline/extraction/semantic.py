"""Semantic spans: which sentences of a prose block are procedures, constraints or diagnostics.

The paper has an LLM mark these spans; this module is the offline default, a set of documented
heuristic rules with the same output record as the LLM path (``SemanticSpans``). Each rule has
a name that ends up in the artifact's ``rule`` column, so every extraction is traceable.

Rules (checked in this order for every sentence):

``diagnostic.message_id``
    the sentence names a message id such as ``GRT-0243``.
``diagnostic.severity_prefix``
    the sentence starts with (or brackets) ERROR / WARNING / FATAL.
``constraint.modal``
    a requirement or limit: must, must not, cannot, should not, is required, only if/when,
    at least, at most, no more than, no less than, greater/less than, between .. and ..,
    exceed, minimum/maximum of, range, valid values.
``procedure.sequence``
    an ordering of actions: "first ... then", "step N", "followed by", "before running".
Everything else stays ``text``.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

from edaqa_pipeline.text.identifiers import DIAGNOSTIC_PREFIX, MESSAGE_ID

SpanType = Literal["procedure", "constraint", "diagnostic"]

_CONSTRAINT = re.compile(
    r"\b(must|must not|mustn't|cannot|can not|can't|should not|shouldn't|is required|are required|"
    r"required to|only if|only when|only after|only be|at least|at most|no more than|no less than|"
    r"greater than|less than|larger than|smaller than|between .{1,40}? and|exceed|exceeds|"
    r"minimum|maximum|valid values|allowed values|range of|in the range|not allowed|"
    r"not supported|is ignored|are ignored|mutually exclusive|overrides?)\b",
    re.IGNORECASE,
)
_PROCEDURE = re.compile(
    r"(\bfirst\b.*\bthen\b|\bstep \d+\b|\bfollowed by\b|\bbefore (running|calling|using)\b|"
    r"\bafter (running|calling)\b|^\s*(then|next|finally),)",
    re.IGNORECASE,
)


class SemanticSpan(BaseModel):
    """One span: the ids of consecutive sentences and the artifact type they form."""

    sentence_ids: list[str] = Field(min_length=1)
    artifact_type: SpanType


class SemanticSpans(BaseModel):
    """Response record of the ``semantic_spans`` task (offline rules and LLM alike)."""

    spans: list[SemanticSpan] = Field(default_factory=list)


def classify_sentence(sentence: str) -> tuple[SpanType, str] | None:
    """Type and rule name of one sentence, or None when it is plain descriptive text."""
    if MESSAGE_ID.search(sentence):
        return "diagnostic", "diagnostic.message_id"
    if DIAGNOSTIC_PREFIX.search(sentence):
        return "diagnostic", "diagnostic.severity_prefix"
    if _CONSTRAINT.search(sentence):
        return "constraint", "constraint.modal"
    if _PROCEDURE.search(sentence):
        return "procedure", "procedure.sequence"
    return None


def offline_semantic_spans(sentences: list[dict[str, str]]) -> tuple[SemanticSpans, dict[str, str]]:
    """Apply the rules to ``[{"id", "text"}]``; consecutive sentences of one type form a span.

    Returns the spans and, per sentence id, the rule that fired.
    """
    spans: list[SemanticSpan] = []
    rules: dict[str, str] = {}
    current: SemanticSpan | None = None
    for sentence in sentences:
        found = classify_sentence(sentence["text"])
        if found is None:
            current = None
            continue
        kind, rule = found
        rules[sentence["id"]] = rule
        if current is not None and current.artifact_type == kind:
            current.sentence_ids.append(sentence["id"])
        else:
            current = SemanticSpan(sentence_ids=[sentence["id"]], artifact_type=kind)
            spans.append(current)
    return SemanticSpans(spans=spans), rules


def validate_spans(result: SemanticSpans, sentence_ids: list[str]) -> None:
    """Reject output that references sentences not in the input (LLM output is never trusted)."""
    known = set(sentence_ids)
    for span in result.spans:
        unknown = [s for s in span.sentence_ids if s not in known]
        if unknown:
            raise ValueError(f"span references unknown sentence ids {unknown}")
