"""The LLM property extractor: task ``datasheet_properties`` (paper section I-B).

Each chunk is sent with the paper's general description (power, interfaces such as
I2C/SPI/UART/ADC/PWM/GPIO, signal characteristics, operating environment, connector and pin
information) plus the category's description, inside ``<document chunk_id=... page=...>``;
the answer is an instructor schema (``PropertyList``) validated against the input: the source
chunk id must be the chunk sent, a name and a value are required, or the model is asked again.
The task's offline implementation is the rule extractor (``rules.py``), so a call answered by
the fallback gives the same rows as the offline build.

``DatasheetProperty`` is the one definition of a datasheet property's fields (name,
description, value or minimum/typical/maximum, unit, conditions) in a response schema; each
task that answers with properties extends it with where the property was read from (here
``source_chunk_id``; the one-shot baseline, ``graphs.hwkg.oneshot``, its block and
reference), so both graphs are built from the same fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from edaqa_pipeline.extraction.datasheets.rules import offline_chunk_properties
from edaqa_pipeline.extraction.datasheets.skeletons import (
    CATEGORY_DESCRIPTIONS,
    GENERAL_DESCRIPTION,
)
from edaqa_pipeline.llm import DATA_NOT_INSTRUCTIONS, LLMTask, delimit, register_task

TASK = "datasheet_properties"


class DatasheetProperty(BaseModel):
    """The fields of one datasheet property, shared by every task that answers with properties.

    The field descriptions are part of each task's prompt (the tool's JSON schema) and of its
    response cache key (``llm.cache``): rewording one re-asks every cached call.
    """

    name: str = Field(description="variable name as the datasheet uses it, e.g. 'Output voltage'")
    description: str = Field(
        default="",
        description="brief description keeping conditions, configurations, variants, test "
        "conditions",
    )
    value: str = Field(default="", description="the value or range exactly as printed")
    value_min: str | None = Field(default=None, description="minimum, if given")
    value_typ: str | None = Field(default=None, description="typical/nominal, if given")
    value_max: str | None = Field(default=None, description="maximum, if given")
    unit: str = Field(default="", description="unit as printed, '' if none")
    conditions: str = Field(default="", description="conditions/configuration it applies to")


def rule_fields(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The ``DatasheetProperty`` fields of one row of the rule extractor
    (``rules.offline_chunk_properties``): how both tasks' offline implementations answer."""
    return {"name": raw["name"], "value": raw.get("value") or "", "value_min": raw.get("value_min"),
            "value_typ": raw.get("value_typ"), "value_max": raw.get("value_max"),
            "unit": raw.get("unit") or "", "conditions": raw.get("conditions") or ""}


class ExtractedProperty(DatasheetProperty):
    """One engineering property stated in the chunk."""

    source_chunk_id: str = Field(description="id of the chunk the property was read from")


class PropertyList(BaseModel):
    """The engineering properties explicitly stated in one datasheet chunk."""

    properties: list[ExtractedProperty] = Field(default_factory=list)


SYSTEM_PROMPT = (
    "You extract engineering properties from one chunk of a hardware datasheet. "
    + GENERAL_DESCRIPTION
    + " Report only properties explicitly stated in the chunk; copy values and units exactly "
    "as printed; keep minimum, typical and maximum apart; put operating conditions, "
    "configurations, device variants and test conditions into the description and "
    "conditions; set source_chunk_id to the id of the chunk. " + DATA_NOT_INSTRUCTIONS
)


def _render(inputs: Mapping[str, Any]) -> str:
    category = inputs.get("category") or "general"
    specific = CATEGORY_DESCRIPTIONS.get(category, "")
    return (
        f"Document: {inputs['document']}\nHardware category: {category}\n"
        + (f"Category-specific focus: {specific}\n" if specific else "")
        + f"Section: {inputs.get('section', '')}\n"
        + delimit(inputs["text"], "document", chunk_id=inputs["chunk_id"], page=inputs["page"])
    )


def _offline(inputs: Mapping[str, Any]) -> BaseModel:
    chunk = inputs["chunk"]
    return PropertyList(
        properties=[
            ExtractedProperty(**rule_fields(r), source_chunk_id=chunk["chunk_id"])
            for r in offline_chunk_properties(chunk)
        ]
    )


def validate_properties(result: BaseModel, inputs: Mapping[str, Any]) -> None:
    """Source chunk ids must be the input chunk; each property needs a name and a value; a
    chunk in which the rule extractor finds properties may not be answered with none."""
    assert isinstance(result, PropertyList)
    if not result.properties and "chunk" in inputs:
        stated = offline_chunk_properties(dict(inputs["chunk"]))
        if stated:  # an empty answer for a chunk that states values is not an answer
            names = ", ".join(sorted({str(r["name"]) for r in stated})[:5])
            raise ValueError(f"no properties, but the chunk states {len(stated)} (e.g. {names}); "
                             "report every property the chunk states")
    allowed = {inputs["chunk_id"]}
    for i, prop in enumerate(result.properties):
        if prop.source_chunk_id not in allowed:
            raise ValueError(
                f"properties[{i}] ({prop.name!r}): source_chunk_id {prop.source_chunk_id!r} "
                f"is not the input chunk; use {inputs['chunk_id']!r}"
            )
        if not prop.name.strip():
            raise ValueError(f"properties[{i}]: name is empty")
        if not any(
            (v or "").strip() for v in (prop.value, prop.value_min, prop.value_typ, prop.value_max)
        ):
            raise ValueError(f"properties[{i}] ({prop.name!r}): no value or range given")


def _llm_inputs(chunk: Mapping[str, Any], category: str) -> dict[str, Any]:
    return {
        "document": chunk["document"],
        "category": category,
        "section": " > ".join(chunk.get("section_path") or []),
        "chunk_id": chunk["chunk_id"],
        "page": chunk["page"],
        "text": chunk["text"],
        "chunk": {k: chunk.get(k) for k in ("chunk_id", "document", "text", "table", "kind",
                                            "section_path", "title", "page")},
    }  # fmt: skip


register_task(
    LLMTask(
        name=TASK,
        system_prompt=SYSTEM_PROMPT,
        render_user=_render,
        offline=_offline,
        validate=validate_properties,
    )
)


def llm_inputs(chunk: Mapping[str, Any], category: str) -> dict[str, Any]:
    """The task inputs for one chunk (what the cache key and the prompt are made of)."""
    return _llm_inputs(chunk, category)


def prompt_pair(chunk: Mapping[str, Any], category: str) -> tuple[str, str]:
    """(system, user) prompt of one chunk, for ``llm.estimate_tokens``."""
    return SYSTEM_PROMPT, _render(_llm_inputs(chunk, category))


__all__ = ["TASK", "DatasheetProperty", "ExtractedProperty", "PropertyList", "llm_inputs", "prompt_pair",
           "rule_fields", "validate_properties"]
