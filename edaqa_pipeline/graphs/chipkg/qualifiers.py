"""Auxiliary triples: the qualifiers a sentence attaches to its central fact (ChipMind's
auxiliary triples, each linked to the backbone triple it qualifies).

``qualifier.*`` rules: ``Default: N`` / ``defaults to N`` / ``by default`` (default),
``between A and B`` / ``allowed values`` (range), ``(in microns)`` (unit), ``after`` /
``before`` / ``during`` (temporal), ``if`` / ``when`` / ``unless`` / ``once`` / ``is omitted``
(condition). Purposes ("to create route guides" after an imperative) are found by the prose
rules, which know where the imperative's object ends.
"""

from __future__ import annotations

import re

from edaqa_pipeline.graphs.chipkg.context import short
from edaqa_pipeline.graphs.chipkg.schema import IRQualifier

CLAUSE = r"((?:[^,;.]|\.(?=\d)){3,120})"  # up to , ; or a full stop (not a decimal point)
COND = re.compile(
    r"\b(if|when|whenever|unless|once|while|until|in case|only if|only when)\b\s+" + CLAUSE,
    re.IGNORECASE,
)
LEADING_COND = re.compile(
    r"^(?:if|when|whenever|unless|once|in case)\b\s+([^,]{3,160}),\s*(.+)$", re.IGNORECASE | re.DOTALL
)
# "When alpha is 0.0 the net topology ..." (no comma): the condition is "<x> is <value>"
LEADING_COND_NOCOMMA = re.compile(
    r"^(?:if|when|whenever|unless|once)\s+(\S+(?:\s+\S+){0,3}?\s+(?:is|are|was|were|equals?)\s+\S+)"
    r"\s+(.+)$",
    re.IGNORECASE | re.DOTALL,
)
TEMPORAL = re.compile(r"\b(after|before|during|prior to|following)\b\s+" + CLAUSE, re.IGNORECASE)
OMITTED = re.compile(r"\b(?:is|are) (?:omitted|not (?:specified|given|set|provided))\b", re.IGNORECASE)
DEFAULT = re.compile(
    r"(?:\bdefault(?: value)?(?: is| of|:|=)\s*|\bdefaults? to\s+)([^.;]{1,80})",
    re.IGNORECASE,
)
RANGE = re.compile(
    r"(\bbetween\s+[-\w.]+\s+and\s+[-\w.]+|\ballowed values? (?:is|are)\s+[^.;]{1,60}|"
    r"\b(?:range|ranges) (?:is|of|from)\s+[^.;]{1,60}|\[[-\d.]+,\s*[-\d.]+\]|\([-\d.]+,\s*[-\d.]+\))",
    re.IGNORECASE,
)
UNIT = re.compile(
    r"\(\s*in\s+(?:the\s+)?(?:current\s+)?(microns?|um|nm|ps|ns|ohms?|pf|ff|percent|%|"
    r"time units?|capacitance units?|dbu|dbus|degrees|tracks|sites|rows)\s*\)",
    re.IGNORECASE,
)


def qualifier(subject: str, subject_type: str, kind: str, relation: str, value: str,
              backbone: int = 0, limit: int = 120) -> IRQualifier:
    return IRQualifier(subject=subject, subject_type=subject_type, relation=relation,
                       object=short(value, limit), object_type="value", kind=kind, backbone=backbone)


def qualifiers(text: str, subject: str, subject_type: str) -> list[IRQualifier]:
    """Auxiliary triples found in ``text``, qualifying backbone 0, subject = the entity."""
    out: list[IRQualifier] = []

    def add(kind: str, relation: str, value: str) -> None:
        q = qualifier(subject, subject_type, kind, relation, value)
        if q.object and not any(o.kind == kind and o.object == q.object for o in out):
            out.append(q)

    for m in DEFAULT.finditer(text):
        add("default", "default", m.group(1))
    for m in RANGE.finditer(text):
        add("range", "range", m.group(1))
    for m in UNIT.finditer(text):
        add("unit", "unit", m.group(1).lower())
    conds = list(COND.finditer(text))
    if OMITTED.search(text) and not any(OMITTED.search(m.group(0)) for m in conds):
        add("condition", "when", "omitted")
    for m in conds:
        add("condition", m.group(1).lower(), m.group(2))
    for m in TEMPORAL.finditer(text):
        add("temporal", m.group(1).lower(), m.group(2))
    return out
