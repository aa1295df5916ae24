"""Structural checks of the element graph (the ``elements`` / ``element_graph`` asset checks)
and the rows -> Polars frames conversion both assets use."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import polars as pl

from edaqa_pipeline.graphs.elements.schema import (
    EDGES_SCHEMA,
    ELEMENT_TYPES,
    ELEMENTS_SCHEMA,
    RELATIONS,
)


def graph_problems(nodes: pl.DataFrame, edges: pl.DataFrame) -> list[str]:
    """Every check of the element graph: ``dangling_edge_problems``,
    ``provenance_problems``, ``step_chain_problems``."""
    return dangling_edge_problems(nodes, edges) + provenance_problems(nodes) + step_chain_problems(nodes, edges)


def dangling_edge_problems(nodes: pl.DataFrame, edges: pl.DataFrame) -> list[str]:
    """No dangling edge: both ends of every edge are nodes; ids unique; relations and types
    in the schema."""
    problems: list[str] = []
    ids = set(nodes["element_id"].to_list())
    if len(ids) != nodes.height:
        problems.append(f"{nodes.height - len(ids)} duplicate element ids")
    if edges.height:
        dangling = edges.filter(~pl.col("src").is_in(list(ids)) | ~pl.col("dst").is_in(list(ids)))
        if dangling.height:
            sample = dangling.head(3).select("src", "dst", "relation").rows()
            problems.append(f"{dangling.height} dangling edges, e.g. {sample}")
        bad_rel = sorted(set(edges["relation"].to_list()) - set(RELATIONS))
        if bad_rel:
            problems.append(f"unknown relations: {bad_rel}")
    bad_types = sorted(set(nodes["element_type"].to_list()) - set(ELEMENT_TYPES))
    if bad_types:
        problems.append(f"unknown element types: {bad_types}")
    return problems


def provenance_problems(nodes: pl.DataFrame) -> list[str]:
    """Every node has provenance: a document and a line span (Markdown) or a page (PDF), and
    non-empty raw evidence (figures excepted: an image without caption text)."""
    problems: list[str] = []
    no_prov = nodes.filter(
        (pl.col("document").is_null() | (pl.col("document") == ""))
        | ((pl.col("start_line").is_null() | pl.col("end_line").is_null()) & pl.col("page").is_null())
        | (pl.col("start_line").is_not_null() & (pl.col("end_line") < pl.col("start_line")))
    )
    if no_prov.height:
        problems.append(f"{no_prov.height} elements without provenance (document + lines or page), "
                        f"e.g. {no_prov['element_id'].head(3).to_list()}")
    # a PDF figure without caption text is evidence by its page + bbox only
    empty = nodes.filter((pl.col("raw").str.strip_chars() == "") & (pl.col("element_type") != "figure"))
    if empty.height:
        problems.append(f"{empty.height} elements with empty raw evidence")
    return problems


def step_chain_problems(nodes: pl.DataFrame, edges: pl.DataFrame) -> list[str]:
    """``step_next`` forms chains: steps only, at most one successor and one predecessor per
    step, no cycle."""
    if not edges.height:
        return []
    steps = set(nodes.filter(pl.col("element_type") == "step")["element_id"].to_list())
    chain = edges.filter(pl.col("relation") == "step_next").select("src", "dst").rows()
    problems = []
    off = [(s, d) for s, d in chain if s not in steps or d not in steps]
    if off:
        problems.append(f"{len(off)} step_next edges between non-steps")
    nxt: dict[str, list[str]] = defaultdict(list)
    prv: dict[str, list[str]] = defaultdict(list)
    for s, d in chain:
        nxt[s].append(d)
        prv[d].append(s)
    branching = [s for s, ds in nxt.items() if len(ds) > 1] + [d for d, ss in prv.items() if len(ss) > 1]
    if branching:
        problems.append(f"{len(branching)} steps with several step_next successors/predecessors")
    for start in nxt:
        seen = {start}
        node = start
        while len(nxt.get(node, [])) == 1:
            node = nxt[node][0]
            if node in seen:
                problems.append(f"step_next cycle through {start}")
                break
            seen.add(node)
        if problems and problems[-1].startswith("step_next cycle"):
            break
    return problems


def frames(rows: list[dict[str, Any]], edges: list[dict[str, Any]]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Element and edge rows as frames with exactly the schemas above (also when empty)."""
    from edaqa_pipeline.model import frame

    return frame(rows, ELEMENTS_SCHEMA), frame(edges, EDGES_SCHEMA)
