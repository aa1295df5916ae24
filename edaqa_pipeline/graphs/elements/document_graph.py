"""The element graph, per document: node rows (``ELEMENTS_SCHEMA``) and in-document edges.

``build_document`` turns one parsed document's blocks into element nodes (clause, section,
paragraph, table + rows, figure, caption, step, code) and the structural and referential edges
that stay inside it, by running the rule groups in order: node rules (``node_rules``: one rule
per block kind, caption adjacency, structure), then link rules (``link_rules``: scope
commands, identifier and summary views, references, same-identifier edges). The node types and
edge rules are listed in ``elements/graph.py``.
"""

from __future__ import annotations

from typing import Any

from edaqa_pipeline.graphs.elements import link_rules, node_rules
from edaqa_pipeline.graphs.elements.builder import DocumentBuilder
from edaqa_pipeline.graphs.elements.rules import document_version


def build_document(blocks: list[dict[str, Any]], version: str | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Nodes (``ELEMENTS_SCHEMA`` rows, in reading order) and in-document edges of one
    document's parsed blocks. ``version``: a label to record (default: stated in the text)."""
    if not blocks:
        return [], []
    builder = DocumentBuilder(blocks[0]["document"], document_version(blocks) if version is None else version)
    node_rules.build_nodes(builder, blocks)
    link_rules.scope_commands(builder)
    link_rules.identifier_views(builder)
    link_rules.reference_edges(builder)
    link_rules.identifier_edges(builder)
    return builder.rows()
