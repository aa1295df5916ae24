"""The LLM tasks of graph construction: ``datasheet_route`` and ``datasheet_refine`` (paper I-C, I-D).

* **route** (and reroute): the current block hierarchy as ``id | path`` lines and the batch's
  properties as ``id | name | value | context`` inside ``<document>``; the answer is an
  ``InstructionList`` of ATTACH / CREATE_BLOCK. Rerouting shows the latest hierarchy only,
  never the other properties (the paper keeps its context small).
* **refine**: one block's batch. As the paper specifies, each property is shown with its
  in-batch index, name, value and unit, conditions and description, and the names the block
  holds outside the batch are listed (a RENAME must not collide with them); the answer refers
  to properties by index and name (``RefineInstructionList``). MERGE covers duplicates and
  properties subsumed by another (compatible units); RENAME gives same-named different
  specifications distinguishing names; KEEP leaves a property as it is.

Both tasks have the offline rules as their offline implementation (the layer's fallback) and
no validate hook: instructions are judged one by one by the executor, so one bad instruction
does not discard the answer. ``DATA_NOT_INSTRUCTIONS`` and the delimiters keep datasheet text
from being read as commands.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from edaqa_pipeline.graphs.hwkg.refinement import offline_refine
from edaqa_pipeline.graphs.hwkg.routing import offline_route_task
from edaqa_pipeline.llm import DATA_NOT_INSTRUCTIONS, LLMTask, delimit, register_task

ROUTE_TASK = "datasheet_route"
REFINE_TASK = "datasheet_refine"

ROUTE_PROMPT = (
    "You organise the engineering properties of one hardware datasheet into a hierarchy of "
    "functional blocks (e.g. Power > Supply, Host Interface > SPI). For every property listed "
    "return ATTACH(property_id, block_id) to the most general existing block for which it "
    "holds unconditionally, or, when no block fits, CREATE_BLOCK(name, parent_id) under the "
    "best existing block followed by ATTACH to it (block_id = the new block's name). Use only "
    "the ids shown. Return only these instructions. " + DATA_NOT_INSTRUCTIONS
)
REFINE_PROMPT = (
    "You clean up the properties attached to one functional block of a hardware knowledge "
    "graph. Each property is shown as [index] name with its value, unit, conditions and "
    "description. Judge by the whole engineering meaning, not the name alone. For every "
    "property return exactly one instruction, referring to properties by their [index] and "
    "name: MERGE(indices, into) when properties state the same specification or one is fully "
    "subsumed by another (into = the index of the one to keep; units must be compatible); "
    "RENAME(index, name, new_name) when properties share a name but are different "
    "specifications (the new name must tell them apart and must not be one of the other "
    "names of the block); otherwise KEEP(index, name). " + DATA_NOT_INSTRUCTIONS
)


def _route_line(p: Mapping[str, Any]) -> str:
    value = " ".join(x for x in (p.get("value") or "", p.get("unit") or "") if x)
    parts = [p["id"], p["name"], value]
    for key in ("conditions", "current_block", "section", "table_title"):
        if p.get(key):
            parts.append(f"{key}: {p[key]}")
    return " | ".join(parts)


def _refine_line(i: int, p: Mapping[str, Any]) -> str:
    value = " ".join(x for x in (p.get("value") or "", p.get("unit") or "") if x)
    parts = [f"[{i}] {p['name']}", value or "-"]
    for key in ("conditions", "description"):
        if p.get(key):
            parts.append(f"{key}: {p[key]}")
    return " | ".join(parts)


def render_route(inputs: Mapping[str, Any]) -> str:
    hierarchy = "\n".join(f"{b['id']} | {b['path']}" for b in inputs["blocks"])
    props = "\n".join(_route_line(p) for p in inputs["properties"])
    task = "Reroute against the latest hierarchy" if inputs.get("stage") == "reroute" else "Route"
    return (
        f"Document: {inputs['kg_id']} (category: {inputs['category']})\n"
        f"Block hierarchy (id | path):\n{hierarchy}\n\n"
        f"{task} these properties (id | name | value | context):\n" + delimit(props, "document")
    )


def render_refine(inputs: Mapping[str, Any]) -> str:
    props = "\n".join(_refine_line(i, p) for i, p in enumerate(inputs["properties"]))
    others = "; ".join(inputs.get("other_names") or []) or "(none)"
    return (
        f"Document: {inputs['kg_id']}\nBlock: {inputs['block']['path']}\n"
        f"Other property names in this block (not in this batch): {others}\n"
        f"Properties of this batch ([index] name | value unit | conditions | description):\n"
        + delimit(props, "document")
    )


register_task(LLMTask(name=ROUTE_TASK, system_prompt=ROUTE_PROMPT, render_user=render_route,
                      offline=offline_route_task))
register_task(LLMTask(name=REFINE_TASK, system_prompt=REFINE_PROMPT, render_user=render_refine,
                      offline=offline_refine))

__all__ = ["REFINE_PROMPT", "REFINE_TASK", "ROUTE_PROMPT", "ROUTE_TASK", "render_refine", "render_route"]
