"""Inter-graph completeness (paper IV-B3): how much of one graph another one recovers.

For each direction the graph evaluated is the *Reference*, the other the *Source*. Only
faithful properties take part, both graphs normalised first (``normalisation.py``). For every
Reference property the semantically relevant Source properties are retrieved and judged
*together*: **full** coverage when they support its complete assertion (quantity, value,
unit, conditions), **partial** when some of it is recoverable but a detail is missing,
**none** otherwise. The result is the share of full / partial / none per direction.

* **offline lexical judge** (labelled ``offline-lexical``): relevant Source properties are the
  top ``k`` by BM25 (the shared ``LexicalIndex``) over name, value, unit and conditions, plus
  every Source property carrying one of the Reference value's numbers; full = the Source
  properties that share at least half of the name's content terms and have a compatible unit
  carry, together, every number of the value (any spelling); partial = some of the numbers,
  or the name with other numbers; none otherwise. Lexical on purpose: it cannot tell paraphrases apart, so it
  under-counts coverage between differently worded graphs;
* **LLM judge** (task ``datasheet_coverage``, when a real model is configured): the Reference
  property and the retrieved Source properties in, ``full | partial | none`` with a reason
  out; the offline judge is its fallback.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from edaqa_pipeline.extraction.datasheets.textutil import number_variants
from edaqa_pipeline.graphs.hwkg.executor import units_compatible
from edaqa_pipeline.graphs.hwkg.recall import numbers
from edaqa_pipeline.llm import (
    DATA_NOT_INSTRUCTIONS,
    LLMClient,
    LLMError,
    LLMTask,
    delimit,
    register_task,
)
from edaqa_pipeline.retrieval.lexical import LexicalIndex
from edaqa_pipeline.text.tokens import content_terms

TASK = "datasheet_coverage"
COVERAGE = ("full", "partial", "none")


class Coverage(BaseModel):
    """How far the source properties together support the reference property."""

    coverage: Literal["full", "partial", "none"] = Field(description="full | partial | none")
    reason: str = Field(default="", description="one short sentence")


def _text(p: Mapping[str, Any]) -> str:
    return " ".join(str(p.get(k) or "") for k in ("name", "value", "unit", "conditions"))


def _variants(p: Mapping[str, Any]) -> set[str]:
    out: set[str] = set()
    for n in numbers(str(p.get("value") or "")):
        out |= number_variants(n)
    return out


def offline_coverage(ref: Mapping[str, Any], sources: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """(coverage, reason) by the lexical rule of the module docstring; the sources are judged
    together, as the paper's judge does ("min 1.71" and "max 3.6" cover "1.71 to 3.6")."""
    wanted = numbers(str(ref.get("value") or ""))
    terms = set(content_terms(str(ref.get("name") or "")))
    partial = ""
    covered: set[str] = set()
    names: list[str] = []
    for s in sources:
        carried = _variants(s)
        shared = terms & set(content_terms(str(s.get("name") or "") + " " + str(s.get("conditions") or "")))
        named = not terms or len(shared) >= 0.5 * len(terms)
        unit_ok = units_compatible(str(ref.get("unit") or ""), str(s.get("unit") or ""))
        if not wanted and named:
            return "full", f"qualitative match: {s.get('name')}"
        if named and unit_ok:
            hits = {n for n in wanted if number_variants(n) & carried}
            if hits:
                covered |= hits
                names.append(str(s.get("name")))
                if covered >= set(wanted):
                    return "full", "covered by " + "; ".join(names[:3])
        has_some = bool(wanted) and any(number_variants(n) & carried for n in wanted)
        if (has_some or (named and shared)) and not partial:
            partial = f"partly by {s.get('name')} = {s.get('value')}"
    return ("partial", partial) if partial else ("none", "no source property carries it")


JUDGE_PROMPT = (
    "You judge whether engineering properties from one hardware knowledge graph (the sources) "
    "together cover a reference property from another graph. full: they support its complete "
    "assertion -- quantity or behaviour, value, unit, variant, operating conditions and scope; "
    "partial: some of its information is recoverable but at least one required detail is "
    "missing; none: no meaningful part is recoverable. " + DATA_NOT_INSTRUCTIONS
)


def _line(p: Mapping[str, Any]) -> str:
    return " | ".join(x for x in (str(p.get("name") or ""), f"{p.get('value') or ''} {p.get('unit') or ''}".strip(),
                                  str(p.get("conditions") or "")) if x)


def _render(inputs: Mapping[str, Any]) -> str:
    sources = "\n".join(f"- {_line(s)}" for s in inputs["sources"]) or "(none retrieved)"
    return f"Reference property:\n{delimit(_line(inputs['reference']), 'document')}\nSource properties:\n" + delimit(
        sources, "document")


def _offline(inputs: Mapping[str, Any]) -> BaseModel:
    coverage, reason = offline_coverage(inputs["reference"], inputs["sources"])
    return Coverage(coverage=coverage, reason=reason)  # type: ignore[arg-type]


register_task(LLMTask(name=TASK, system_prompt=JUDGE_PROMPT, render_user=_render, offline=_offline))


class _SourceIndex:
    """The Source graph's normalised properties, for relevant-property retrieval."""

    def __init__(self, sources: Sequence[Mapping[str, Any]]) -> None:
        self.rows = list(sources)
        self.lexical = LexicalIndex([_text(s) for s in self.rows])
        self.by_number: dict[str, list[int]] = {}
        for i, s in enumerate(self.rows):
            for v in _variants(s):
                self.by_number.setdefault(v, []).append(i)

    def relevant(self, ref: Mapping[str, Any], k: int) -> list[Mapping[str, Any]]:
        rows = [r for r, _ in self.lexical.top(_text(ref), k)]
        for n in numbers(str(ref.get("value") or "")):
            for v in number_variants(n):
                rows.extend(self.by_number.get(v, [])[:k])
        return [self.rows[i] for i in dict.fromkeys(rows)][: 2 * k]


def completeness(reference: Sequence[Mapping[str, Any]], source: Sequence[Mapping[str, Any]],
                 client: LLMClient | None = None, *, k: int = 8, temperature: float = 0.2,
                 ) -> dict[str, Any]:
    """Coverage of each Reference property by the Source graph: shares and counts of full /
    partial / none, the judge that answered (``offline-lexical``, ``llm``, ``offline-fallback``)."""
    use_llm = client is not None and client.provider != "offline"
    index = _SourceIndex(source)
    counts: Counter[str] = Counter()
    methods: Counter[str] = Counter()
    for ref in reference:
        sources = index.relevant(ref, k)
        coverage, method = offline_coverage(ref, sources)[0], "offline-lexical"
        if use_llm:
            assert client is not None
            before = client.stats.fallbacks
            try:
                answer = client.complete_structured(TASK, {"reference": dict(ref), "sources": [dict(s) for s in sources]},
                                                    Coverage, temperature=temperature)
                if client.stats.fallbacks == before:
                    coverage, method = answer.coverage, "llm"
                else:
                    method = "offline-fallback"
            except LLMError:
                method = "offline-fallback"
        counts[coverage] += 1
        methods[method] += 1
    n = sum(counts.values())
    return {"n": n, **{c: counts[c] for c in COVERAGE},
            **{f"{c}_share": round(counts[c] / n, 4) if n else None for c in COVERAGE},
            "methods": dict(methods)}


__all__ = ["COVERAGE", "TASK", "Coverage", "completeness", "offline_coverage"]
