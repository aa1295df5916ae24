"""The published tables of the hardware KG: one row per node, one row per instruction.

``hardware_kgs``: blocks in depth-first order (``parent_id`` = parent block), then properties
(``parent_id`` = the block they are attached to; merged ones keep ``merged_into``) with the
property fields and provenance. ``hardware_kg_instructions``: the audit trail.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from edaqa_pipeline.graphs.hwkg.graph import GraphState
from edaqa_pipeline.model import BBOX, STRS

HARDWARE_KGS_SCHEMA: dict[str, pl.DataType] = {
    "kg_id": pl.String(),  # the document the graph was built from
    "node_id": pl.String(),
    "node_type": pl.String(),  # block | property
    "name": pl.String(),  # block name / property display name (after RENAME)
    "parent_id": pl.String(),  # block: parent block; property: the block it is attached to
    "path": STRS,  # block names from the root down to the node's block
    "depth": pl.Int64(),
    "origin": pl.String(),  # root | skeleton | created | extracted
    "category": pl.String(),
    "status": pl.String(),  # active | merged (merged properties keep no block)
    "merged_into": pl.String(),
    "merged_from": STRS,
    "original_name": pl.String(),
    "symbol": pl.String(),
    "description": pl.String(),
    "value": pl.String(),
    "value_min": pl.String(),
    "value_typ": pl.String(),
    "value_max": pl.String(),
    "unit": pl.String(),
    "conditions": pl.String(),
    "document": pl.String(),
    "chunk_id": pl.String(),
    "page": pl.Int64(),
    "bbox": BBOX,
    "rule": pl.String(),
}

INSTRUCTIONS_SCHEMA: dict[str, pl.DataType] = {
    "kg_id": pl.String(),
    "seq": pl.Int64(),
    "stage": pl.String(),  # skeleton | route | refine | reroute | final
    "iteration": pl.Int64(),
    "batch": pl.String(),
    "source": pl.String(),  # skeleton | offline | offline-fallback | llm:<task>
    "op": pl.String(),
    "args": pl.String(),  # JSON of the instruction's fields
    "status": pl.String(),  # applied | noop | rejected
    "reason": pl.String(),
}


def kg_nodes(kg: GraphState) -> list[dict[str, Any]]:
    """Rows of HARDWARE_KGS_SCHEMA: blocks in depth-first order, then properties."""
    rows: list[dict[str, Any]] = []
    for entry in kg.hierarchy():
        bid = entry["id"]
        block = kg.blocks[bid]
        rows.append(
            {
                "kg_id": kg.kg_id,
                "node_id": bid,
                "node_type": "block",
                "name": block.name,
                "parent_id": block.parent_id,
                "path": kg.path(bid),
                "depth": kg.depth(bid),
                "origin": block.origin,
                "category": kg.category,
                "status": "active",
                "merged_into": None,
                "merged_from": [],
                "original_name": block.name,
                "document": kg.kg_id,
            }
        )
    for pid, rec in kg.records.items():
        st = kg.state[pid]
        block = st.block_id
        rows.append(
            {
                "kg_id": kg.kg_id,
                "node_id": pid,
                "node_type": "property",
                "name": st.name,
                "parent_id": block,
                "path": kg.path(block) if block else [],
                "depth": kg.depth(block) + 1 if block else None,
                "origin": "extracted",
                "category": kg.category,
                "status": st.status,
                "merged_into": st.merged_into,
                "merged_from": list(st.merged_from),
                "original_name": rec["name"],
                **{
                    k: rec.get(k)
                    for k in (
                        "symbol",
                        "description",
                        "value",
                        "value_min",
                        "value_typ",
                        "value_max",
                        "unit",
                        "conditions",
                        "document",
                        "chunk_id",
                        "page",
                        "bbox",
                        "rule",
                    )
                },
            }
        )
    return rows


__all__ = ["HARDWARE_KGS_SCHEMA", "INSTRUCTIONS_SCHEMA", "kg_nodes"]
