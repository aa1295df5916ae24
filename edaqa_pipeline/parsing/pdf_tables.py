"""Ruled tables of a PDF page: cells read like ``Table.to_markdown()``, rows on logical columns.

* Cell text is read with the routine ``Table.to_markdown()`` uses (``pymupdf.table.
  extract_cells``: a character belongs to a cell when more than half of its box lies inside),
  never with ``Table.extract()``, which garbles numbers on these files ("14400.00000" ->
  "1440000000 ."). The routine is re-implemented over one ``rawdict`` per page, and rows are
  built from the table's cell boxes instead of parsing the Markdown: the library function
  re-reads the whole page for every cell (about 30 s on the 134-page VeeR manual), and Markdown
  output is lossy (``_`` of italics vs. ``CLK_I``, ``|`` in cells, ``Col1`` placeholders,
  spanned cells copied into their neighbours).
* ``find_tables`` runs with ``use_layout=False``. Its pymupdf 2.0 default gates tables through
  an ONNX layout model at 0.2-0.45 s per page and on these files drops real tables (IHP "Cell
  Name | Area", the VeeR memory map). The line finder alone is 5-10x faster; its false
  positives in timing and block diagrams are refused here (diagonal strokes or curves inside
  the grid, a logo inside, a mostly empty grid, fewer than two rows or columns). Pages without
  two horizontal and two vertical strokes skip ``find_tables`` altogether.
* Word-processor tables often draw their header shading on a finer grid than the body, so the
  raw grid has empty phantom columns and header cells offset from their data. Cells are mapped
  onto logical columns by horizontal overlap; empty columns and rows are dropped; a cell the
  line finder merged over two rows ("Min" + "1.35") is split at the row its lines belong to;
  stacked header rows with group titles become one header row ("Delay(ns) Slew(ns)").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pymupdf

from edaqa_pipeline.parsing.pdf_layout import (
    TABLE_CAPTION,
    WHITESPACE,
    Box,
    Drawing,
    PdfPage,
    PdfTable,
    as_box,
    box_area,
    center_in,
    clean_text,
    clusters,
    font_text,
    grow_box,
    intersect,
    union_box,
    x_overlap,
)

_CAPTION_GAP_ABOVE = 40.0


@dataclass
class RawSpan:
    bbox: Box
    chars: list[tuple[str, Box]]


@dataclass
class RawLine:
    bbox: Box
    spans: list[RawSpan]


def raw_lines(textpage: pymupdf.TextPage) -> list[RawLine]:
    lines = []
    for block in textpage.extractRAWDICT()["blocks"]:
        if block["type"] != 0:
            continue
        for line in block["lines"]:
            spans = [
                RawSpan(as_box(s["bbox"]), [(font_text(c["c"], s["font"]), as_box(c["bbox"])) for c in s["chars"]])
                for s in line["spans"]
            ]
            lines.append(RawLine(as_box(line["bbox"]), spans))
    return lines


def _cell_lines(lines: Sequence[RawLine], cell: Box) -> list[tuple[str, float]]:
    """(text, vertical centre) of each line in the cell: ``pymupdf.table.extract_cells`` without
    Markdown (the routine ``Table.to_markdown`` uses), one text page read for all cells."""
    out = []
    for line in lines:
        lb = line.bbox
        if lb[0] > cell[2] or lb[2] < cell[0] or lb[1] > cell[3] or lb[3] < cell[1]:
            continue
        text = ""
        for span in line.spans:
            sb = span.bbox
            if sb[0] > cell[2] or sb[2] < cell[0] or sb[1] > cell[3] or sb[3] < cell[1]:
                continue
            for char, cb in span.chars:
                if box_area(intersect(cb, cell)) > 0.5 * box_area(cb):
                    text += char
                elif char in WHITESPACE:
                    text += " "
        text = clean_text(text)
        if text:
            out.append((text, (lb[1] + lb[3]) / 2))
    return out


def _logical_columns(cells: list[tuple[int, Box, str]], n_rows: int) -> list[Box]:
    """Column intervals: the cells of the fullest rows first, a new column for each cell that
    does not overlap a known one by half of the narrower of the two."""
    per_row: dict[int, list[Box]] = defaultdict(list)
    for r, box, _ in cells:
        per_row[r].append(box)
    order = sorted(range(n_rows), key=lambda r: (-len(per_row.get(r, [])), r))
    columns: list[Box] = []
    for r in order:
        for box in per_row.get(r, []):
            width = box[2] - box[0]
            if not any(
                x_overlap(box, col) >= 0.5 * max(1e-6, min(width, col[2] - col[0]))
                for col in columns
            ):
                columns.append(box)
    return sorted(columns, key=lambda b: (b[0], b[2]))


def _table_cells(
    table: Any, raw: Sequence[RawLine]
) -> tuple[list[Box], list[tuple[int, Box, str]]]:
    """Row boxes and non-empty cells (row, box, text with "\\n" between lines).

    A cell over several rows whose lines sit in different rows was merged by the line finder
    (a missing rule): it is split into one cell per row. A cell over several rows with all its
    text in one row is a real row span."""
    row_boxes = [as_box(row.bbox) for row in table.rows]
    cells: list[tuple[int, Box, str]] = []
    for r, row in enumerate(table.rows):
        for c in row.cells:
            if c is None:
                continue
            box = as_box(c)
            lines = _cell_lines(raw, box)
            if not lines:
                continue
            spanned = [k for k in range(r, len(row_boxes)) if row_boxes[k][1] < box[3] - 1]
            groups: dict[int, list[str]] = defaultdict(list)
            for text, y in lines:
                rows_at = [k for k in spanned if row_boxes[k][1] <= y <= row_boxes[k][3]]
                # a header cell never spans data rows: the header's box grew over the first row
                # with the cell ("Min" over "1.35"), so its lower lines are that row's values
                home = (max(rows_at) if r == 0 else rows_at[0]) if rows_at else r
                groups[home].append(text)
            if len(groups) > 1:
                for k, texts in sorted(groups.items()):
                    cells.append(
                        (k, (box[0], row_boxes[k][1], box[2], row_boxes[k][3]), "\n".join(texts))
                    )
            else:
                cells.append((r, box, "\n".join(t for t, _ in lines)))
    return row_boxes, cells


def _table_rows(table: Any, raw: Sequence[RawLine]) -> tuple[list[list[str]], str]:
    """(rows, caption): the table as cell strings on logical columns, header first.

    Spanned cells are copied into every column and row they cover (as ``to_markdown`` fills
    them), except a full-width row: a section label, kept in the first column. A first row
    that only says "Table N ..." is the caption.
    """
    row_boxes, cells = _table_cells(table, raw)
    if not cells:
        return [], ""
    columns = _logical_columns(cells, len(row_boxes))
    grid: list[list[str]] = [["" for _ in columns] for _ in row_boxes]
    spans_columns = [False] * len(row_boxes)
    by_row: dict[int, list[tuple[Box, str]]] = defaultdict(list)
    for r, box, text in cells:
        by_row[r].append((box, text))
    for r in sorted(by_row):
        items = by_row[r]
        for box, text in items:
            covered = [
                j
                for j, col in enumerate(columns)
                if x_overlap(box, col) >= 0.5 * max(1e-6, col[2] - col[0])
            ]
            if not covered:
                covered = [
                    max(range(len(columns)), key=lambda j: (x_overlap(box, columns[j]), -j))
                ]
            if len(items) == 1 and len(covered) == len(columns) > 1:
                covered = covered[:1]
            spans_columns[r] = spans_columns[r] or len(covered) > 1
            below = [
                k
                for k in range(r + 1, len(row_boxes))
                if (row_boxes[k][1] + row_boxes[k][3]) / 2 < box[3]
            ]
            for j in covered:
                grid[r][j] = f"{grid[r][j]}\n{text}" if grid[r][j] else text
                for k in below:
                    if not grid[k][j] and not any(
                        x_overlap(b, columns[j]) > 0 for b, _ in by_row.get(k, [])
                    ):
                        grid[k][j] = text
    caption = ""
    first = {v for v in grid[0] if v}
    if len(first) == 1 and TABLE_CAPTION.match(next(iter(first))):
        caption = next(iter(first))
        grid, spans_columns = grid[1:], spans_columns[1:]
    keep_cols = [j for j in range(len(columns)) if any(row[j] for row in grid)]
    keep_rows = [r for r, row in enumerate(grid) if any(row[j] for j in keep_cols)]
    rows = [[grid[r][j] for j in keep_cols] for r in keep_rows]
    spans_columns = [spans_columns[r] for r in keep_rows]
    # stacked header rows with group titles over several columns become one header row
    depth = 1
    while depth < len(rows) - 1 and spans_columns[depth - 1]:
        depth += 1
    if depth > 1:
        header = []
        for j in range(len(rows[0])):
            parts: list[str] = []
            for row in rows[:depth]:
                if row[j] and (not parts or parts[-1] != row[j]):
                    parts.append(row[j])
            header.append("\n".join(parts))
        rows = [header, *rows[depth:]]
    return rows, caption


def _grid_area(drawings: Sequence[Drawing]) -> Box | None:
    """Where ruled tables can be: the union of the clusters of straight strokes with at least
    two horizontal and two vertical ones (a lone rule under a running header is no grid)."""
    strokes = [d for d in drawings if d[1] or d[2]]
    area: Box | None = None
    for group in clusters([d[0] for d in strokes], 3.0):
        if sum(strokes[i][1] for i in group) >= 2 and sum(strokes[i][2] for i in group) >= 2:
            for i in group:
                area = strokes[i][0] if area is None else union_box(area, strokes[i][0])
    return area


def read_tables(
    page: pymupdf.Page, drawings: Sequence[Drawing], images: Sequence[Box]
) -> tuple[list[PdfTable], list[PdfTable]]:
    """The page's ruled tables, and its one-row grids of filled cells (a header row a table
    left behind at the page end; not tables on their own)."""
    area = _grid_area(drawings)
    if area is None:
        return [], []  # no grid: skip find_tables, the costly part of the parse
    # the clip limits find_tables' per-character work to the ruled region
    found = page.find_tables(clip=pymupdf.Rect(grow_box(area, 5)), strategy="lines", use_layout=False)
    if found is None or not found.tables:  # None: pymupdf caught an error and printed it
        return [], []
    raw_cache: dict[int, list[RawLine]] = {}
    tables, header_rows = [], []
    for table in found.tables:
        bbox = as_box(table.bbox)
        inner = grow_box(bbox, 2)
        diagonal = sum(d for box, _, _, d in drawings if d and center_in(box, inner))
        if diagonal >= 3:
            continue  # a timing or block diagram drawn on a grid
        if sum(box_area(intersect(img, bbox)) for img in images) >= 0.15 * box_area(bbox):
            continue  # a title box around a logo, a framed picture
        key = id(table.textpage)
        if key not in raw_cache:
            raw_cache[key] = raw_lines(table.textpage)
        rows, caption = _table_rows(table, raw_cache[key])
        if len(rows) == 1 and len(rows[0]) >= 2 and all(cell.strip() for cell in rows[0]):
            header_rows.append(PdfTable(bbox, rows, caption))
            continue
        if len(rows) < 2 or len(rows[0]) < 2:
            continue  # one row or one column: a framed paragraph, a list, a diagram box
        filled = sum(1 for row in rows for v in row if v) / (len(rows) * len(rows[0]))
        if filled < 0.3:
            continue  # a mostly empty grid: a diagram
        tables.append(PdfTable(bbox, rows, caption))
    return tables, header_rows


def table_captions(page: PdfPage) -> None:
    """A 'Table N' line just above (preferred) or below a table is its caption (it stays text)."""
    for table in page.tables:
        if table.caption:
            continue
        best: tuple[float, str] | None = None
        for ln in page.lines:
            if ln.drop or not TABLE_CAPTION.match(ln.text) or x_overlap(ln.bbox, table.bbox) <= 0:
                continue
            above = table.bbox[1] - ln.bbox[3]
            below = ln.bbox[1] - table.bbox[3]
            if -3 <= above <= _CAPTION_GAP_ABOVE:
                dist = max(above, 0.0)
            elif -3 <= below <= _CAPTION_GAP_ABOVE:
                dist = max(below, 0.0) + 1000.0
            else:
                continue
            if best is None or dist < best[0]:
                best = (dist, ln.text)
        if best:
            table.caption = best[1]
