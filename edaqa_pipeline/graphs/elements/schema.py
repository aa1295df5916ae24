"""The element graph's vocabulary: node types, relations, the node and edge table schemas
and the limits the edge rules use (``graph.py`` documents what each type and relation means).

Kept apart from the rules so that the checks, the assets, the index and the metrics can read
the schema without importing the builder.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from edaqa_pipeline.model import stable_id

ELEMENT_TYPES: tuple[str, ...] = (
    "clause", "section", "paragraph", "table", "table_row", "figure", "caption", "step", "code",
)  # fmt: skip
STRUCTURAL: tuple[str, ...] = ("contains", "precedes", "same_section", "step_next")
REFERENTIAL: tuple[str, ...] = (
    "clause_ref", "table_ref", "figure_ref", "caption_of", "same_identifier", "version_of",
    "supersedes",
)  # fmt: skip
RELATIONS: tuple[str, ...] = STRUCTURAL + REFERENTIAL
NOTE_LABELS = frozenset(
    {"note", "warning", "caution", "important", "attention", "danger", "tip", "error", "hint"}
)
SAME_SECTION_WINDOW = 3
MAX_IDENTIFIER_FANOUT = 40
MAX_IDENTIFIER_DOCS = 12
LINKABLE_KINDS = frozenset({"command", "qualified", "variable", "message", "file", "api"})

EDGE_STRUCT = pl.Struct({"dst": pl.String(), "relation": pl.String(), "rule": pl.String()})
ELEMENTS_SCHEMA: dict[str, pl.DataType] = {
    "element_id": pl.String(),
    "document": pl.String(),
    "element_type": pl.String(),  # one of ELEMENT_TYPES
    "block_id": pl.String(),
    "part": pl.String(),  # "" for a whole block, "row:3", "step:2", "caption", "caption:1"
    "ordinal": pl.Int64(),  # reading order within the document
    "label": pl.String(),  # own label: "section:3.2", "table:3", "figure:2" ("" if none)
    "heading": pl.String(),  # section / clause title
    "level": pl.Int64(),  # heading level (sections), else 0
    "section_path": pl.List(pl.String()),
    "section_id": pl.String(),  # nearest enclosing section element ("" at top level)
    "scope_command": pl.String(),  # the command the enclosing section documents
    "note_label": pl.String(),  # note / warning / ... for admonitions and "Note:" paragraphs
    "raw": pl.String(),  # verbatim evidence (source lines; PDF: block text)
    "header_raw": pl.String(),  # tables and rows: the header lines of the table
    "header_start": pl.Int64(),
    "header_end": pl.Int64(),
    "identifiers": pl.List(pl.String()),
    "summary": pl.String(),
    "id_view": pl.String(),  # what the identifier (lexical) index sees
    "version": pl.String(),  # version label ("" when the corpus gives none)
    "start_line": pl.Int64(),
    "end_line": pl.Int64(),
    "page": pl.Int64(),
    "bbox": pl.List(pl.Float64()),
    "pending": pl.List(pl.String()),  # cross-document references to resolve: link|..., option|...
    "meta": pl.String(),
    "out_edges": pl.List(EDGE_STRUCT),  # in-document edges leaving this node
}
EDGES_SCHEMA: dict[str, pl.DataType] = {
    "edge_id": pl.String(),
    "src": pl.String(),
    "dst": pl.String(),
    "relation": pl.String(),
    "rule": pl.String(),
    "src_document": pl.String(),
    "dst_document": pl.String(),
    "scope": pl.String(),  # document | corpus
}



def edge_row(src: str, dst: str, relation: str, rule: str, src_doc: str, dst_doc: str, scope: str) -> dict[str, Any]:
    """One ``EDGES_SCHEMA`` row; the id is derived from its ends and relation."""
    return {
        "edge_id": stable_id("edge", src, dst, relation),
        "src": src, "dst": dst, "relation": relation, "rule": rule,
        "src_document": src_doc, "dst_document": dst_doc, "scope": scope,
    }  # fmt: skip
