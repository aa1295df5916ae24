"""The paper's one-shot baseline (section IV-A): the whole document in as few calls as the context allows.

The baseline gets the same parsed text our pipeline reads (the chunks' Markdown-like text,
figures excluded, tables as pipe tables), split into as few parts as ``context_tokens`` allows, and
is asked for the whole graph at once: every property with name, description, value, unit,
conditions, the block path it belongs to, and the **exact supporting text** it was read from
(``reference``). Same output fields as our properties (``DatasheetProperty``, extended with
``block`` and ``reference``), so both graphs are compared on equal terms. A baseline property whose reference does not occur in its input is unfaithful (the
paper's exact-string check, on whitespace-normalised text).

Offline, the baseline is the rule extractor run on the whole document at once (task
``datasheet_oneshot``'s offline implementation): the same table and prose rules, with no
refinement (no MERGE, no RENAME) and each property's reference its source sentence or table.
What that shows: that the evaluation runs end to end and how much the refinement changes
(duplicates the baseline keeps and ours merged); what it does not show: the paper's point,
that a model reading a long document at once omits properties -- the rules read every chunk
whatever its position, so offline completeness is close to full both ways by construction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from edaqa_pipeline.extraction.datasheets.property_llm import DatasheetProperty, rule_fields
from edaqa_pipeline.extraction.datasheets.rules import offline_chunk_properties, skip_chunk
from edaqa_pipeline.extraction.datasheets.skeletons import GENERAL_DESCRIPTION
from edaqa_pipeline.graphs.hwkg.routing import route_path
from edaqa_pipeline.llm import (
    DATA_NOT_INSTRUCTIONS,
    LLMClient,
    LLMError,
    LLMTask,
    delimit,
    register_task,
)
from edaqa_pipeline.model import normalise_ws, stable_id
from edaqa_pipeline.text.counting import approx_tokens

TASK = "datasheet_oneshot"
DEFAULT_CONTEXT_TOKENS = 100_000


# The one-shot prompt (the tool's JSON schema) words six of the shared fields its own way. The
# response cache is keyed on that schema (``llm.cache``), so the wording is kept here, applied
# to the schema only; the fields themselves (names, types, defaults) are ``DatasheetProperty``'s.
ONESHOT_WORDING = {
    "name": "variable name as the datasheet uses it",
    "description": "brief description with conditions and variants",
    "value": "value or range exactly as printed",
    "value_typ": "typical, if given",
    "unit": "unit as printed",
    "conditions": "conditions / configuration it applies to",
}


def _oneshot_wording(schema: dict[str, Any]) -> None:
    for field, text in ONESHOT_WORDING.items():
        schema["properties"][field]["description"] = text


class OneShotProperty(DatasheetProperty):
    """One property of the one-shot graph."""

    model_config = ConfigDict(json_schema_extra=_oneshot_wording)

    block: str = Field(default="", description="functional block path, e.g. 'Power > Supply'")
    reference: str = Field(default="", description="the exact text of the input it was read from")


class OneShotGraph(BaseModel):
    """The whole hardware knowledge graph of the input, deduplicated, names unique per block."""

    properties: list[OneShotProperty] = Field(default_factory=list)


SYSTEM_PROMPT = (
    "You build a hierarchical hardware knowledge graph from a complete datasheet in one step. "
    + GENERAL_DESCRIPTION
    + " Organise the properties into functional blocks (give each property its block path, "
    "e.g. 'Host Interface > SPI'; create blocks as needed), keep conditions and device "
    "variants with each property, merge duplicates, give same-named different specifications "
    "distinguishing names, and for every property copy the exact supporting text from the "
    "input into reference. " + DATA_NOT_INSTRUCTIONS
)


def _render(inputs: Mapping[str, Any]) -> str:
    return (f"Document: {inputs['document']} (category: {inputs['category']}, part "
            f"{inputs['part'] + 1} of {inputs['parts']})\n" + delimit(inputs["text"], "document"))


def _offline(inputs: Mapping[str, Any]) -> BaseModel:
    props = []
    for chunk in inputs["chunks"]:
        if skip_chunk(chunk):
            continue
        for raw in offline_chunk_properties(chunk):
            # a table row means what its header says: the reference is the whole table
            is_table = chunk.get("kind") == "table"
            reference = chunk["text"] if is_table else (raw.get("extra") or chunk["text"])
            block = " > ".join(route_path(inputs["category"], list(chunk.get("section_path") or []),
                                          chunk.get("title") or "", entity=raw.get("entity") or ""))
            props.append(OneShotProperty(**rule_fields(raw), block=block, reference=reference))
    return OneShotGraph(properties=props)


register_task(LLMTask(name=TASK, system_prompt=SYSTEM_PROMPT, render_user=_render, offline=_offline))


def parts(chunks: list[dict[str, Any]], context_tokens: int) -> list[list[dict[str, Any]]]:
    """Chunks in reading order cut into as few consecutive parts as fit ``context_tokens``."""
    out: list[list[dict[str, Any]]] = [[]]
    used = 0
    for chunk in chunks:
        size = approx_tokens(chunk["text"]) + 1
        if out[-1] and used + size > context_tokens:
            out.append([])
            used = 0
        out[-1].append(chunk)
        used += size
    return [p for p in out if p]


def one_shot(document: str, chunks: list[dict[str, Any]], category: str, client: LLMClient | None = None,
             *, context_tokens: int = DEFAULT_CONTEXT_TOKENS, temperature: float = 0.2,
             ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The baseline graph's properties (rows with ``reference_ok``) and run statistics."""
    groups = parts(chunks, context_tokens)
    rows: list[dict[str, Any]] = []
    stats = {"parts": len(groups), "llm_parts": 0, "fallback_parts": 0}
    use_llm = client is not None and client.provider != "offline"
    for n, group in enumerate(groups):
        text = "\n\n".join(c["text"] for c in group)
        inputs = {"document": document, "category": category, "part": n, "parts": len(groups),
                  "text": text, "chunks": group}
        if use_llm:
            assert client is not None
            before = client.stats.fallbacks
            try:
                graph = client.complete_structured(TASK, inputs, OneShotGraph, temperature=temperature)
                ok = client.stats.fallbacks == before
            except LLMError:
                graph, ok = _offline(inputs), False
            stats["llm_parts" if ok else "fallback_parts"] += 1
            source = f"llm:{TASK}" if ok else "offline-fallback"
        else:
            graph, source = _offline(inputs), "offline:rules"
        haystack = normalise_ws(text)
        for i, p in enumerate(graph.properties):  # type: ignore[attr-defined]
            ref = normalise_ws(p.reference)
            rows.append({
                "property_id": stable_id("hwo", document, n, i, p.name, p.value, p.unit, p.conditions),
                "document": document, "name": p.name, "description": p.description, "value": p.value,
                "value_min": p.value_min, "value_typ": p.value_typ, "value_max": p.value_max, "unit": p.unit,
                "conditions": p.conditions, "block": p.block, "reference": p.reference,
                "reference_ok": bool(ref) and ref in haystack, "part": n, "rule": source,
            })
    stats["properties"] = len(rows)
    return rows, stats


__all__ = ["DEFAULT_CONTEXT_TOKENS", "TASK", "OneShotGraph", "OneShotProperty", "one_shot", "parts"]
