"""Occurrences: local usage events within one document (the paper's o_r = (a_r, V_r, C_r, p_r)).

Grouping rules, in order:

1. Blocks are grouped under their section. Generic sub-headings (Options, Arguments, Example,
   Usage, Synopsis, ...) belong to their parent section, so a command's synopsis and its option
   table stay in one event.
2. Within a section, a code block, an ordered procedure and a diagnostic are *boundaries*:
   an occurrence holds at most one of them, so two code examples are two usage events; the
   descriptive text and tables around a boundary block attach to it.
3. Very short occurrences (under ``min_chars`` of artifact content) are merged into the
   previous occurrence of the same document (or the next one when they come first).

Each occurrence then gets its canonical anchor (``anchors.choose_anchor``), its artifact set,
its chunks and its provenance (line spans / pages). Ids are content-derived.
"""

from __future__ import annotations

from typing import Any

from edaqa_pipeline.extraction.anchors import choose_anchor
from edaqa_pipeline.extraction.chunks import block_chunk_map
from edaqa_pipeline.model import stable_id

GENERIC_HEADINGS = frozenset(
    """options option arguments argument parameters parameter example examples usage synopsis
    description syntax switches flags notes note return value returns""".split()
)
BOUNDARY_TYPES = frozenset({"codeblock", "procedure", "diagnostic"})
DEFAULT_MIN_CHARS = 120


def grouping_section(section_path: list[str]) -> tuple[str, ...]:
    """Section path with trailing generic sub-headings removed."""
    path = list(section_path)
    while len(path) > 1 and path[-1].strip().strip("`#").lower() in GENERIC_HEADINGS:
        path.pop()
    return tuple(path)


def _group_blocks(
    blocks: list[dict[str, Any]], artifacts_by_block: dict[str, list[dict[str, Any]]]
) -> list[list[dict[str, Any]]]:
    groups: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    current_section: tuple[str, ...] | None = None
    has_boundary = False
    for block in blocks:
        arts = artifacts_by_block.get(block["block_id"], [])
        section = grouping_section(block["section_path"])
        is_boundary = any(a["artifact_type"] in BOUNDARY_TYPES for a in arts)
        if section != current_section or (is_boundary and has_boundary):
            if current:
                groups.append(current)
            current, has_boundary = [], False
            current_section = section
        if block["kind"] == "heading" and not arts:
            continue
        current.append(block)
        has_boundary = has_boundary or is_boundary
    if current:
        groups.append(current)
    return groups


def _merge_short(
    groups: list[list[dict[str, Any]]],
    artifacts_by_block: dict[str, list[dict[str, Any]]],
    min_chars: int,
) -> list[list[dict[str, Any]]]:
    def size(group: list[dict[str, Any]]) -> int:
        return sum(len(a["content"]) for b in group for a in artifacts_by_block.get(b["block_id"], []))

    merged: list[list[dict[str, Any]]] = []
    pending: list[dict[str, Any]] = []
    for group in groups:
        group = pending + group
        pending = []
        if size(group) < min_chars:
            if merged:
                merged[-1] = merged[-1] + group
            else:
                pending = group
            continue
        merged.append(group)
    if pending:
        merged.append(pending)
    return merged


def build_occurrences(
    blocks: list[dict[str, Any]],
    artifacts: list[dict[str, Any]],
    chunks: list[dict[str, Any]],
    min_chars: int = DEFAULT_MIN_CHARS,
) -> list[dict[str, Any]]:
    """All occurrences of one document."""
    if not blocks:
        return []
    document = blocks[0]["document"]
    by_block: dict[str, list[dict[str, Any]]] = {}
    for art in artifacts:
        by_block.setdefault(art["block_id"], []).append(art)
    chunk_of_block = block_chunk_map(chunks)
    groups = _merge_short(_group_blocks(blocks, by_block), by_block, min_chars)
    rows: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for group in groups:
        arts = [a for b in group for a in by_block.get(b["block_id"], [])]
        section = list(grouping_section(group[0]["section_path"]))
        anchor, kind, rule = choose_anchor(arts, section)
        chunk_ids: list[str] = []
        for block in group:
            for cid in chunk_of_block.get(block["block_id"], []):
                if cid not in chunk_ids:
                    chunk_ids.append(cid)
        artifact_ids = [a["artifact_id"] for a in arts]
        content_key = "\x1e".join(sorted(artifact_ids))
        dup = seen.get(content_key, 0)
        seen[content_key] = dup + 1
        rows.append(
            {
                "occurrence_id": stable_id("occ", document, anchor, content_key, dup),
                "document": document,
                "anchor": anchor,
                "anchor_kind": kind,
                "anchor_rule": rule,
                "section_path": section,
                "artifact_ids": artifact_ids,
                "artifact_types": sorted({a["artifact_type"] for a in arts}),
                "chunk_ids": chunk_ids,
                "block_ids": [b["block_id"] for b in group],
                "line_spans": [
                    [b["start_line"], b["end_line"]] for b in group if b["start_line"] is not None
                ],
                "pages": sorted({b["page"] for b in group if b["page"] is not None}),
                "content_hash": stable_id(
                    "h", *(f"{a['artifact_type']}:{a['content']}" for a in arts)
                ),
            }
        )
    return rows
