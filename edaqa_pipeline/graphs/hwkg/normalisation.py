"""Property normalisation (paper IV-B1): both graphs brought to one granularity before counting.

A normalised property is one engineering characteristic with the context it applies in. The
rules, applied to each property independently and identically to both graphs:

1. independently specified bounds and min / typ / max statistics become separate properties
   (``Supply voltage (min) = 1.71 V``, ``(typ)``, ``(max)``; "1.71 to 3.6" -> min and max);
2. explicitly listed alternatives become separate assertions ("8-bit, 16-bit, 32-bit or
   64-bit", "±2 or ±4");
3. conditions, equations and coupled configurations stay with the specification they apply
   to (they are copied to every part, never split off).

Offline these rules run as written (deterministic); with a model, task
``datasheet_normalise`` applies the same rules to one property at a time, the offline rule
being its fallback. Each normalised row keeps ``source_id`` (the property it came from).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from edaqa_pipeline.llm import (
    DATA_NOT_INSTRUCTIONS,
    LLMClient,
    LLMError,
    LLMTask,
    delimit,
    register_task,
)

TASK = "datasheet_normalise"
_RANGE = re.compile(r"^\s*(?P<a>[-+±−]?[\w.,]+)\s*(?:to|–|\.\.\.?|-)\s*(?P<b>[-+±−]?[\w.,]+)\s*$")
_ALTERNATIVES = re.compile(r"\s*(?:,\s*(?:or\s+|and\s+)?|\s+or\s+|\s+and\s+)\s*")
_STAT_WORDS = ("min", "typ", "max")


class NormalisedProperty(BaseModel):
    name: str
    value: str
    unit: str = ""
    conditions: str = ""


class NormalisedList(BaseModel):
    """The property as one or more normalised properties (same context in each)."""

    properties: list[NormalisedProperty] = Field(default_factory=list)


def _split_alternatives(value: str) -> list[str]:
    parts = [p.strip() for p in _ALTERNATIVES.split(value) if p.strip()]
    if len(parts) > 1 and all(re.match(r"^[-+±−]?\d", p) for p in parts):
        return parts
    return [value]


def normalise_property(prop: Mapping[str, Any]) -> list[dict[str, str]]:
    """The offline rules for one property (module docstring)."""
    name, unit, cond = str(prop.get("name") or ""), str(prop.get("unit") or ""), str(prop.get("conditions") or "")
    stats = [(k, prop.get(f"value_{k}")) for k in _STAT_WORDS]
    present = [(k, v) for k, v in stats if v]
    out: list[dict[str, str]] = []
    if present:
        for k, v in present:
            for part in _split_alternatives(str(v)):
                out.append({"name": f"{name} ({k})" if len(present) > 1 or k != "typ" else name,
                            "value": part, "unit": unit, "conditions": cond})
        return out
    value = str(prop.get("value") or "")
    bounds = _RANGE.match(value)
    if bounds and re.match(r"^[-+±−]?\d", bounds.group("a")) and re.match(r"^[-+±−]?\d", bounds.group("b")):
        return [{"name": f"{name} (min)", "value": bounds.group("a"), "unit": unit, "conditions": cond},
                {"name": f"{name} (max)", "value": bounds.group("b"), "unit": unit, "conditions": cond}]
    return [{"name": name, "value": part, "unit": unit, "conditions": cond} for part in _split_alternatives(value)]


PROMPT = (
    "You normalise one engineering property of a hardware knowledge graph to a consistent "
    "granularity. Rules: (1) split independently specified lower/upper bounds and "
    "min/typ/max statistics into separate properties; (2) split explicitly listed "
    "alternatives (modes, variants, protocols, supported options) into separate properties; "
    "(3) keep conditions, complete equations and coupled configurations with the "
    "specification they apply to, copying them into every part. Copy values and units "
    "exactly. Return the property unchanged when no rule applies. " + DATA_NOT_INSTRUCTIONS
)


def _render(inputs: Mapping[str, Any]) -> str:
    p = inputs["property"]
    stats = ", ".join(f"{k} {p.get(f'value_{k}')}" for k in _STAT_WORDS if p.get(f"value_{k}"))
    text = (f"name: {p.get('name')}\nvalue: {p.get('value')}\n" + (f"statistics: {stats}\n" if stats else "")
            + f"unit: {p.get('unit') or ''}\nconditions: {p.get('conditions') or ''}\n"
            f"description: {p.get('description') or ''}")
    return delimit(text, "document")


def _offline(inputs: Mapping[str, Any]) -> BaseModel:
    return NormalisedList(properties=[NormalisedProperty(**r) for r in normalise_property(inputs["property"])])


register_task(LLMTask(name=TASK, system_prompt=PROMPT, render_user=_render, offline=_offline))


def normalise_graph(props: list[Mapping[str, Any]], client: LLMClient | None = None, *,
                    temperature: float = 0.2) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Normalised rows (``source_id``, ``document``, ``name``, ``value``, ``unit``,
    ``conditions``, ``method``) of every property, and counts by method."""
    use_llm = client is not None and client.provider != "offline"
    rows: list[dict[str, Any]] = []
    methods = {"offline": 0, "llm": 0, "offline-fallback": 0}
    for prop in props:
        pid = str(prop.get("property_id") or prop.get("node_id") or "")
        method = "offline"
        parts = normalise_property(prop)
        if use_llm:
            assert client is not None
            before = client.stats.fallbacks
            try:
                answer = client.complete_structured(TASK, {"property": dict(prop)}, NormalisedList,
                                                    temperature=temperature)
                if client.stats.fallbacks == before and answer.properties:
                    parts = [p.model_dump() for p in answer.properties]
                    method = "llm"
                else:
                    method = "offline-fallback"
            except LLMError:
                method = "offline-fallback"
        methods[method] += 1
        rows.extend({**p, "source_id": pid, "document": prop.get("document"), "method": method} for p in parts)
    return rows, methods


__all__ = ["TASK", "NormalisedList", "normalise_graph", "normalise_property"]
