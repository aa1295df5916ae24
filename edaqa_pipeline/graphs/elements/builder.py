"""The state of one document's element graph under construction: nodes in reading order,
their section membership and the edges the rules have found.

The rules that fill it live in ``node_rules`` (one node type per block kind, captions,
structure) and ``link_rules`` (identifiers, views, references); ``document_graph`` runs them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from edaqa_pipeline.graphs.elements.schema import edge_row
from edaqa_pipeline.model import stable_id


@dataclass
class Element:
    """A node under construction."""

    row: dict[str, Any]
    text: str  # what views are computed from (raw without markup for some types)
    children: list[str]
    block_ordinal: int


class DocumentBuilder:
    """The nodes and edges of one document while the rules run (node rules, then link rules)."""

    def __init__(self, document: str, version: str) -> None:
        self.document = document
        self.version = version
        self.nodes: dict[str, Element] = {}
        self.order: list[str] = []  # every node in reading order
        self.top: list[str] = []  # block-level nodes in reading order
        self.edges: list[tuple[str, str, str, str]] = []  # (src, dst, relation, rule)
        self.sections: list[str] = []
        self.own_command: set[str] = set()  # sections that name or invoke their command

    # -- nodes --------------------------------------------------------------------------

    def add(
        self, block: dict[str, Any], element_type: str, raw: str, *, part: str = "",
        section: str = "", start: int | None = None, end: int | None = None, text: str | None = None,
        top: bool = True, **extra: Any,
    ) -> str:
        """A new node of ``element_type`` from ``block`` (id from document, block and part);
        ``top``: a block-level node (reading order, section membership)."""
        element_id = stable_id("el", self.document, block["block_id"], part)
        is_pdf = block.get("page") is not None
        row = {
            "element_id": element_id,
            "document": self.document,
            "element_type": element_type,
            "block_id": block["block_id"],
            "part": part,
            "ordinal": len(self.order),
            "label": extra.pop("label", ""),
            "heading": extra.pop("heading", ""),
            "level": extra.pop("level", 0),
            "section_path": list(block.get("section_path") or []),
            "section_id": section,
            "scope_command": "",
            "note_label": extra.pop("note_label", ""),
            "raw": raw,
            "header_raw": extra.pop("header_raw", ""),
            "header_start": extra.pop("header_start", None),
            "header_end": extra.pop("header_end", None),
            "identifiers": [],
            "summary": "",
            "id_view": "",
            "version": self.version,
            "start_line": None if is_pdf else (start if start is not None else block.get("start_line")),
            "end_line": None if is_pdf else (end if end is not None else block.get("end_line")),
            "page": block.get("page"),
            "bbox": block.get("bbox"),
            "pending": [],
            "meta": json.dumps(extra.pop("meta", {}), sort_keys=True, ensure_ascii=False),
            "out_edges": [],
        }
        self.nodes[element_id] = Element(row, raw if text is None else text, [], int(block["ordinal"]))
        self.order.append(element_id)
        if top:
            self.top.append(element_id)
        if section and (top or element_type == "caption"):
            self.nodes[section].children.append(element_id)
        return element_id

    def edge(self, src: str, dst: str, relation: str, rule: str) -> None:
        """Record an edge (self-loops are dropped; duplicates are removed by ``rows``)."""
        if src != dst:
            self.edges.append((src, dst, relation, rule))

    def rows(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Node rows in reading order (``out_edges`` filled) and edge rows, each edge once."""
        seen: set[tuple[str, str, str]] = set()
        edges = []
        for src, dst, relation, rule in self.edges:
            if (src, dst, relation) in seen:
                continue
            seen.add((src, dst, relation))
            self.nodes[src].row["out_edges"].append({"dst": dst, "relation": relation, "rule": rule})
            edges.append(edge_row(src, dst, relation, rule, self.document, self.document, "document"))
        return [self.nodes[e].row for e in self.order], edges
