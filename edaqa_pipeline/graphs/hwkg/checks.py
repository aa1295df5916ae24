"""The blocking checks on the published hardware KG tables.

* ``every_property_has_source``: a source chunk that exists, and a page;
* ``no_property_outside_block``: every active property is attached to a block;
* ``block_tree_is_a_tree``: one root per document, no cycles, no unknown parents;
* ``unique_property_names_per_block``: no two active properties share a name in a block. No
  clean-up pass runs before it, so it fails when the refinement did not converge (a model
  left a conflict after the last iteration) -- the message says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl


def kg_problems(nodes: pl.DataFrame, chunks: pl.DataFrame | None = None) -> dict[str, list[str]]:
    """The four blocking checks, each with its problems (empty lists = pass)."""
    out: dict[str, list[str]] = {
        "every_property_has_source": [],
        "no_property_outside_block": [],
        "block_tree_is_a_tree": [],
        "unique_property_names_per_block": [],
    }
    chunk_ids = set(chunks["chunk_id"].to_list()) if chunks is not None else None
    props = nodes.filter(pl.col("node_type") == "property")
    blocks = nodes.filter(pl.col("node_type") == "block")
    for row in props.select("node_id", "chunk_id", "page").iter_rows(named=True):
        if not row["chunk_id"] or row["page"] is None:
            out["every_property_has_source"].append(f"{row['node_id']}: no source chunk or page")
        elif chunk_ids is not None and row["chunk_id"] not in chunk_ids:
            out["every_property_has_source"].append(
                f"{row['node_id']}: source chunk {row['chunk_id']} does not exist"
            )
    block_ids = set(blocks["node_id"].to_list())
    for row in (
        props.filter(pl.col("status") == "active")
        .select("node_id", "parent_id")
        .iter_rows(named=True)
    ):
        if row["parent_id"] not in block_ids:
            out["no_property_outside_block"].append(f"{row['node_id']}: not attached to a block")
    for kg_id, group in blocks.group_by("kg_id"):
        parent = dict(zip(group["node_id"].to_list(), group["parent_id"].to_list(), strict=True))
        roots = [b for b, p in parent.items() if p is None]
        if len(roots) != 1:
            out["block_tree_is_a_tree"].append(f"{kg_id[0]}: {len(roots)} roots")
        for b in parent:
            seen = {b}
            cur = parent[b]
            while cur is not None:
                if cur not in parent:
                    out["block_tree_is_a_tree"].append(f"{b}: unknown parent {cur}")
                    break
                if cur in seen:
                    out["block_tree_is_a_tree"].append(f"{b}: cycle")
                    break
                seen.add(cur)
                cur = parent[cur]
    active = props.filter(pl.col("status") == "active").with_columns(
        pl.col("name").str.to_lowercase().str.replace_all(r"\s+", " ").str.strip_chars().alias("_n")
    )
    dups = active.group_by("parent_id", "_n").len().filter(pl.col("len") > 1)
    for row in dups.iter_rows(named=True):
        out["unique_property_names_per_block"].append(
            f"block {row['parent_id']}: {row['len']} properties named {row['_n']!r} "
            "(the refinement did not converge: no MERGE or RENAME resolved it)"
        )
    return out


def iteration_table(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"kg_id": k, **it} for k, r in results.items() for it in r.iterations]


__all__ = ["iteration_table", "kg_problems"]
