"""Node rules of the element graph: one rule per block kind (headings, tables and their rows,
figures, captions, ordered-list steps, code, paragraphs), then the caption adjacency rule and
the structural edges (``contains``, ``same_section``, ``precedes``). ``graph.py`` lists them.
"""

from __future__ import annotations

import json
import re
from itertools import pairwise
from typing import Any

from edaqa_pipeline.graphs.elements import rules
from edaqa_pipeline.graphs.elements.builder import DocumentBuilder
from edaqa_pipeline.graphs.elements.schema import NOTE_LABELS, SAME_SECTION_WINDOW
from edaqa_pipeline.text import identifiers
from edaqa_pipeline.text.markup import table_cells


def table_nodes(b: DocumentBuilder, block: dict[str, Any], section: str) -> None:
    """A table and one ``table_row`` per data line (``contains.row``, ``precedes.row``), each row
    keeping the header lines (every parser writes a table as pipe-table text); a PDF table has
    no source lines, and its caption comes from the parser."""
    meta = rules.block_meta(block)
    is_pdf = block.get("page") is not None
    raw = block["raw"] if not is_pdf else block["text"]
    if "<img" in raw.lower():
        figure_table_nodes(b, block, section, raw)
        return
    lines = raw.split("\n")
    kinds = block["line_kinds"]
    header_n = 2 if len(kinds) > 1 and kinds[1] == "table_rule" else 1
    header_raw = "\n".join(lines[:header_n])
    start = None if block.get("start_line") is None else int(block["start_line"])
    header_span = (None, None) if start is None else (start, start + header_n - 1)
    body = [
        (line, table_cells(line), None if start is None else start + i)
        for i, line in enumerate(lines)
        if i >= header_n and line.strip()
    ]
    table_id = b.add(
        block, "table", raw, section=section, header_raw=header_raw,
        header_start=header_span[0], header_end=header_span[1],
        meta={"header": meta.get("header", []), "n_rows": len(body),
              "caption": meta.get("caption", "")},
    )
    previous = ""
    for i, (line, cells, line_no) in enumerate(body):
        row_id = b.add(
            block, "table_row", line, part=f"row:{i}", section=section, start=line_no,
            end=line_no, top=False, header_raw=header_raw, header_start=header_span[0],
            header_end=header_span[1], text=" | ".join(cells),
            meta={"cells": cells, "key": cells[0] if cells else "", "table": table_id},
        )
        b.nodes[table_id].children.append(row_id)
        b.edge(table_id, row_id, "contains", "contains.row")
        if previous:
            b.edge(previous, row_id, "precedes", "precedes.row")
        previous = row_id
    caption = meta.get("caption", "")
    if is_pdf and caption:
        synthetic_caption(b, block, section, table_id, caption)



def figure_table_nodes(b: DocumentBuilder, block: dict[str, Any], section: str, raw: str) -> None:
    """A table of ``<img>`` cells is a figure; its "Figure N: ..." cells are captions."""
    figure_id = b.add(block, "figure", raw, section=section,
                         meta={"src": re.findall(r"src=\"([^\"]+)\"", raw)})
    start = block.get("start_line")
    labels = []
    for i, line in enumerate(raw.split("\n")):
        for j, cell in enumerate(table_cells(line)):
            match = rules.CAPTION.match(cell)
            if match and match.group("kind").lower().startswith("fig"):
                label = identifiers.canonical_label("figure", match.group("num"))
                labels.append(label)
                line_no = start + i if start is not None else None
                cap = b.add(block, "caption", cell, part=f"caption:{i}:{j}", section=section,
                               start=line_no, end=line_no, top=False, label=label)
                b.edge(cap, figure_id, "caption_of", "caption_of.cell")
    if labels:
        b.nodes[figure_id].row["label"] = labels[0]
        b.nodes[figure_id].row["meta"] = json.dumps({"labels": labels}, sort_keys=True)



def synthetic_caption(b: DocumentBuilder, block: dict[str, Any], section: str, target: str, caption: str) -> None:
    """A caption node the parser found next to a PDF figure / table (``caption_of.pdf_meta``);
    its "Figure N" / "Table N" label becomes the target's label."""
    label = ""
    match = rules.CAPTION.match(caption)
    if match:
        kind = "figure" if match.group("kind").lower().startswith("fig") else "table"
        label = identifiers.canonical_label(kind, match.group("num"))
        b.nodes[target].row["label"] = label
    cap = b.add(block, "caption", caption, part="caption", section=section, top=False,
                   label=label)
    b.edge(cap, target, "caption_of", "caption_of.pdf_meta")



def step_nodes(b: DocumentBuilder, block: dict[str, Any], section: str) -> list[tuple[str, int]]:
    """One ``step`` per top-level item of an ordered list, chained by ``step_next.list``;
    returns (step id, item number) in order."""
    is_pdf = block.get("page") is not None
    raw = block["text"] if is_pdf else block["raw"]
    lines = raw.split("\n")
    starts: list[tuple[int, int]] = []  # (line index, number)
    base = None
    for i, line in enumerate(lines):
        match = rules.STEP.match(line)
        if not match:
            continue
        indent = len(match.group("indent").expandtabs(4))
        if base is None:
            base = indent
        if indent <= (base or 0) + 1:
            starts.append((i, int(match.group("num"))))
    if not starts:
        starts = [(0, 1)]
    out = []
    for k, (i, number) in enumerate(starts):
        j = starts[k + 1][0] if k + 1 < len(starts) else len(lines)
        while j - 1 > i and not lines[j - 1].strip():
            j -= 1
        text = "\n".join(lines[i:j])
        first = block.get("start_line")
        start, end = (None, None) if is_pdf or first is None else (first + i, first + j - 1)
        step_id = b.add(block, "step", text, part=f"step:{k}", section=section, start=start,
                           end=end, meta={"number": number})
        if out:
            b.edge(out[-1][0], step_id, "step_next", "step_next.list")
        out.append((step_id, number))
    return out

# -- the document -------------------------------------------------------------------


def build_nodes(b: DocumentBuilder, blocks: list[dict[str, Any]]) -> None:
    """Every node of the document in reading order (headings open sections by level), then
    the caption and structural edges."""
    stack: list[tuple[int, str]] = []
    previous_steps: dict[str, list[tuple[str, int]]] = {}  # section -> last list's steps
    for block in sorted(blocks, key=lambda blk: blk["ordinal"]):
        kind = block["kind"]
        meta = rules.block_meta(block)
        if kind == "heading":
            level = int(block.get("heading_level") or 1)
            while stack and stack[-1][0] >= level:
                stack.pop()
            parent = stack[-1][1] if stack else ""
            label = rules.clause_label(block["text"])
            sec = b.add(block, "clause" if label else "section", block["raw"] or block["text"],
                           section=parent, text=block["text"], heading=block["text"],
                           level=level, label=label)
            if parent:
                b.edge(parent, sec, "contains", "contains.subsection")
            stack.append((level, sec))
            b.sections.append(sec)
            continue
        section = stack[-1][1] if stack else ""
        raw = block["raw"] or block["text"]
        if kind == "table":
            table_nodes(b, block, section)
        elif kind in ("image", "figure") or (kind == "html" and "<img" in raw.lower()):
            fig = b.add(block, "figure", raw, section=section, text=block["text"],
                           meta={"src": meta.get("src") or meta.get("source", "")})
            if kind == "figure" and (meta.get("caption") or block["text"]).strip():
                synthetic_caption(b, block, section, fig, meta.get("caption") or block["text"])
        elif kind == "code":
            b.add(block, "code", raw, section=section, text=block["text"],
                     meta={"language": block.get("language", "")})
        elif kind == "ordered_list":
            steps = step_nodes(b, block, section)
            before = previous_steps.get(section)
            if before and steps and steps[0][1] == before[-1][1] + 1 and steps[0][1] > 1:
                b.edge(before[-1][0], steps[0][0], "step_next", "step_next.continued")
            previous_steps[section] = steps
        else:
            note = (meta.get("label") or "").lower() if kind == "admonition" else ""
            match = rules.NOTE_PREFIX.match(block["text"])
            if not note and match:
                note = match.group("label").lower()
            b.add(block, "paragraph", raw, section=section, text=block["text"],
                     note_label=note if note in NOTE_LABELS else ("note" if note else ""),
                     meta={"block_kind": kind})
    caption_edges(b)
    structure_edges(b)



def caption_edges(b: DocumentBuilder) -> None:
    """An adjacent "Figure N:" / "Table N:" paragraph, or an emphasised line right under a
    figure, is the caption of that figure / table (one caption per target)."""
    captioned = {dst for _, dst, rel, _ in b.edges if rel == "caption_of"}
    for i, eid in enumerate(b.top):
        el = b.nodes[eid]
        if el.row["element_type"] != "paragraph" or el.row["note_label"]:
            continue
        text = el.text.strip()
        match = rules.CAPTION.match(text)
        emphasised = bool(rules.EMPHASIS_LINE.match(text))
        if not match and not emphasised:
            continue
        want = None
        if match:
            want = "figure" if match.group("kind").lower().startswith("fig") else "table"
        for j, rule in ((i - 1, "caption_of.after"), (i + 1, "caption_of.before")):
            if not 0 <= j < len(b.top) or b.top[j] in captioned:
                continue
            target = b.nodes[b.top[j]]
            ttype = target.row["element_type"]
            if ttype not in ("figure", "table") or (want and ttype != want):
                continue
            if not match and (ttype != "figure" or rule != "caption_of.after"):
                continue
            if target.row["section_id"] != el.row["section_id"]:
                continue
            el.row["element_type"] = "caption"
            if match:
                label = identifiers.canonical_label(ttype, match.group("num"))
                el.row["label"] = label
                target.row["label"] = target.row["label"] or label
            b.edge(eid, b.top[j], "caption_of", rule)
            captioned.add(b.top[j])
            break



def structure_edges(b: DocumentBuilder) -> None:
    """``contains`` (section -> its direct elements), ``same_section`` (elements of a section
    at most ``SAME_SECTION_WINDOW`` apart) and ``precedes`` (reading order)."""
    for sec in b.sections:
        kids = [k for k in b.nodes[sec].children
                if b.nodes[k].row["element_type"] not in ("section", "clause")]
        for kid in kids:
            b.edge(sec, kid, "contains", "contains.section")
        for i in range(len(kids)):
            for j in range(i + 1, min(len(kids), i + SAME_SECTION_WINDOW + 1)):
                b.edge(kids[i], kids[j], "same_section", "same_section.window")
    for first, second in pairwise(b.top):
        b.edge(first, second, "precedes", "precedes.reading_order")
