"""The ``training_queries`` LLM task: a model writes one question per requested form; its
offline implementation is the template generator. Registered on import."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from edaqa_pipeline.llm import DATA_NOT_INSTRUCTIONS, LLMTask, delimit, register_task
from edaqa_pipeline.model import ARTIFACT_TYPES
from edaqa_pipeline.training.pair_schema import TASK
from edaqa_pipeline.training.templates import copies_unit_text, query_forms, template_queries
from edaqa_pipeline.training.unit_facts import unit_facts


class TrainingQuery(BaseModel):
    form: str
    query: str = Field(min_length=8)
    required_types: list[str] = Field(min_length=1)


class TrainingQueries(BaseModel):
    """Response record of the ``training_queries`` task."""

    queries: list[TrainingQuery] = Field(default_factory=list)


SYSTEM_PROMPT = (
    "You write realistic user questions about EDA tool documentation, used to train a "
    "retriever. You receive one functional unit (its anchor, its artifact types and a "
    "summary) and a list of requested forms, each with the artifact types the question must "
    "need. For each form write one question a user could ask whose answer needs exactly those "
    "artifact types of this unit. Do not copy sentences from the unit; paraphrase, and name "
    "the command or topic. Keep each question under 30 words. " + DATA_NOT_INSTRUCTIONS
)


def task_inputs(unit: Mapping[str, Any], artifacts: Sequence[Mapping[str, Any]], per_unit: int) -> dict[str, Any]:
    return {
        "unit": {k: unit[k] for k in ("unit_id", "anchor", "anchor_kind", "summary")}
        | {"artifact_types": list(unit["artifact_types"])},
        "artifacts": [{"artifact_type": a["artifact_type"], "content": a["content"],
                       "section_path": list(a.get("section_path") or [])} for a in artifacts],
        "per_unit": per_unit,
    }


def _render(inputs: Mapping[str, Any]) -> str:
    unit = inputs["unit"]
    facts = unit_facts(unit, inputs["artifacts"])
    forms = "\n".join(f"- {form}: needs {', '.join(types)}" for form, types, _ in query_forms(facts))
    return (
        f"Anchor: {unit['anchor']} ({unit['anchor_kind']})\n"
        f"Artifact types: {', '.join(unit['artifact_types'])}\n"
        f"Write up to {inputs['per_unit']} questions, one per form, in this order:\n{forms}\n"
        f"Unit summary:\n{delimit(unit['summary'])}"
    )


def _offline(inputs: Mapping[str, Any]) -> BaseModel:
    """The unit-level templates (row-level queries are templates on both paths)."""
    facts = unit_facts(inputs["unit"], inputs["artifacts"])
    return TrainingQueries(queries=[TrainingQuery(**q) for q in template_queries(facts, inputs["per_unit"], rows=0)])


def _validate(result: BaseModel, inputs: Mapping[str, Any]) -> None:
    assert isinstance(result, TrainingQueries)
    types = set(inputs["unit"]["artifact_types"])
    facts = unit_facts(inputs["unit"], inputs["artifacts"])
    for q in result.queries:
        bad = set(q.required_types) - types
        if bad:
            raise ValueError(f"query {q.query!r} requires types {sorted(bad)} the unit lacks")
        if set(q.required_types) - set(ARTIFACT_TYPES):
            raise ValueError(f"unknown artifact types in {q.required_types}")
        if copies_unit_text(q.query, facts.sentences):
            raise ValueError(f"query {q.query!r} copies a sentence of the unit")


register_task(LLMTask(name=TASK, system_prompt=SYSTEM_PROMPT, render_user=_render, offline=_offline,
                      validate=_validate))
