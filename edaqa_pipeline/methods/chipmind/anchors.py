"""Circuit Semantic Anchors of queries and the CSA-guided filter (ChipMind section 3.3).

The target anchor ``(type, entity)`` of a (sub-)query: the type by wording rules
(diagnostic > definition > configuration > procedure > behavior, else ``any``), the entity the
first identifier of the query (``text.identifiers.query_identifiers``: commands, options,
variables, message ids canonicalised as everywhere else) that the KG knows, an option
qualified by a command of the query first (``global_placement -density``). A statement is
compatible when its anchor type can answer the target type (:data:`TYPE_COMPAT`) and, if the
target names an entity, the statement is about it (same entity, its option, its command) or
mentions it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from edaqa_pipeline.graphs.chipkg.schema import ANCHOR_TYPES
from edaqa_pipeline.text.identifiers import MESSAGE_ID_ANY_CASE, identifier_kind, query_identifiers

_TYPE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("diagnostic", re.compile(r"\b(error|warning|message|fails?|failed|crash)\b", re.I)),
    ("definition", re.compile(r"\b(what (?:is|are|does)|meaning|difference|purpose|explain)\b", re.I)),
    ("configuration", re.compile(r"\b(option|flag|switch|parameter|argument|default|variable|"
                                 r"setting|configure|value of|set the|register|field)\b", re.I)),
    ("procedure", re.compile(r"\b(how (?:to|can|do|should|would)|steps?|what command|which command|"
                             r"commands?|procedure|run|perform|use)\b", re.I)),
    ("behavior", re.compile(r"\b(what happens|when|if|why|cause|behaviou?r)\b", re.I)),
)
# target anchor type -> statement anchor types that can answer it
TYPE_COMPAT: dict[str, frozenset[str]] = {
    "configuration": frozenset({"configuration", "definition", "procedure"}),
    "procedure": frozenset({"procedure", "configuration", "behavior", "definition"}),
    "behavior": frozenset({"behavior", "configuration", "definition", "procedure", "diagnostic"}),
    "definition": frozenset({"definition", "configuration", "behavior"}),
    "diagnostic": frozenset({"diagnostic", "behavior", "procedure", "configuration"}),
    "any": frozenset(ANCHOR_TYPES),
}
_ENTITY_KINDS = ("qualified", "command", "option", "variable", "file", "message")


def anchor_type_of(query: str) -> str:
    if MESSAGE_ID_ANY_CASE.search(query):  # "GRT-0118", "grt-0118": a diagnostic
        return "diagnostic"
    return next((t for t, rx in _TYPE_RULES if rx.search(query)), "any")


def query_entities(query: str) -> list[str]:
    """Identifiers of a query that can be a target entity, qualified options first."""
    ids = [i for i in query_identifiers(query) if identifier_kind(i) in _ENTITY_KINDS]
    return sorted(ids, key=lambda i: (identifier_kind(i) != "qualified", ids.index(i)))


def target_anchor(query: str, known_entity: Callable[[str], bool] | None = None) -> tuple[str, str]:
    """(type, entity) a (sub-)query asks about (see the module docstring)."""
    for name in query_entities(query):
        if known_entity is None or known_entity(name):
            return anchor_type_of(query), name
    return anchor_type_of(query), ""


def related(entity: str, target: str) -> bool:
    """Same entity, or an option and its command (``cmd -opt`` ~ ``cmd``, ``-opt``)."""
    a, b = entity.lower(), target.lower()
    if not a or not b:
        return False
    return a == b or a.startswith(b + " ") or b.startswith(a + " ") or a.endswith(" " + b) or b.endswith(" " + a)


def compatible(anchor: tuple[str, str], target: tuple[str, str], mentioned: frozenset[str] = frozenset()) -> bool:
    """Compat(CSA_i, CSA_target) of the module docstring."""
    a_type, a_entity = anchor
    t_type, t_entity = target
    if a_type not in TYPE_COMPAT.get(t_type, TYPE_COMPAT["any"]):
        return False
    return not t_entity or related(a_entity, t_entity) or any(related(m, t_entity) for m in mentioned)
