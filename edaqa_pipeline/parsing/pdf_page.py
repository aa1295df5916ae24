"""One page of a PDF read into records: text lines, ruled and unruled tables, figure regions.

Visual lines come from pymupdf's text dict (a bullet and its text, tab-separated parts on one
baseline: one line), each with its dominant font size and boldness; lines inside a table are
the table's. Drawings that can be seen (no white backgrounds, no page frames) are summarised as
horizontal / vertical / diagonal strokes, which is all the table and figure passes need.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pymupdf

from edaqa_pipeline.parsing.pdf_figures import figure_regions
from edaqa_pipeline.parsing.pdf_layout import (
    Box,
    Drawing,
    PdfPage,
    TextLine,
    as_box,
    box_area,
    center_in,
    clean_text,
    font_text,
    grow_box,
    intersect,
    union_box,
)
from edaqa_pipeline.parsing.pdf_tables import read_tables
from edaqa_pipeline.parsing.pdf_unruled import unruled_tables

# No image payloads in the text dict (figures come from get_image_info, without pixels) and
# ligatures split into letters ("ﬁ" -> "fi") so that words can be searched.
_TEXT_FLAGS = (
    pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES & ~pymupdf.TEXT_PRESERVE_LIGATURES
)


def _drawing_stats(drawing: dict[str, Any]) -> tuple[int, int, int]:
    """(horizontal strokes, vertical strokes, diagonal strokes + curves) of one path."""
    h = v = d = 0
    for item in drawing["items"]:
        op = item[0]
        if op == "l":
            p, q = item[1], item[2]
            dx, dy = abs(p.x - q.x), abs(p.y - q.y)
            if dx <= 1 and dy >= 3:
                v += 1
            elif dy <= 1 and dx >= 3:
                h += 1
            elif dx > 1 and dy > 1:
                d += 1
        elif op in ("re", "qu"):
            r = item[1] if op == "re" else item[1].rect
            if r.width >= 3:
                h += 1 if r.height <= 1 else 2
            if r.height >= 3:
                v += 1 if r.width <= 1 else 2
        elif op == "c":
            d += 1
    return h, v, d


def _visible_drawings(page: pymupdf.Page, page_box: Box) -> list[Drawing]:
    """The drawings that can be seen and are not page backgrounds or frames, cut to the page:
    a path drawn far outside it (coordinates of 1e44 in a damaged file) is nothing a reader
    sees, and left whole it would make the grid clustering walk a plane of that size."""
    page_area = box_area(page_box)
    out = []
    for drawing in page.get_drawings():
        fill = drawing.get("fill")
        if drawing.get("type") == "f" and fill is not None and min(fill) >= 0.99:
            continue  # white fill without a stroke: a background, neither ruling nor art
        box = intersect(as_box(drawing["rect"]), page_box)
        if box[0] > box[2] or box[1] > box[3]:
            continue  # wholly off the page
        if box_area(box) >= 0.9 * page_area:
            continue
        out.append((box, *_drawing_stats(drawing)))
    return out


def _is_bold(span: dict[str, Any]) -> bool:
    return bool(span["flags"] & pymupdf.TEXT_FONT_BOLD) or "bold" in span["font"].lower()


def _page_lines(page: pymupdf.Page, number: int) -> tuple[list[TextLine], Counter[float]]:
    """Visual lines in reading order, and the characters per font size."""
    lines: list[TextLine] = []
    sizes: Counter[float] = Counter()
    blocks = page.get_text("dict", flags=_TEXT_FLAGS, sort=True)["blocks"]
    for b, block in enumerate(blocks):
        if block.get("type") != 0:
            continue
        merged: list[tuple[Box, list[dict[str, Any]]]] = []
        for line in block["lines"]:
            spans = [s for s in line["spans"] if s["text"].strip()]
            if not spans:
                continue
            box = as_box(line["bbox"])
            if merged:  # a bullet and its text, or tab-separated parts: one visual line
                prev, prev_spans = merged[-1]
                overlap = min(prev[3], box[3]) - max(prev[1], box[1])
                if overlap >= 0.6 * min(prev[3] - prev[1], box[3] - box[1]) and box[0] >= prev[0]:
                    merged[-1] = (union_box(prev, box), prev_spans + spans)
                    continue
            merged.append((box, spans))
        for box, spans in merged:
            text = clean_text(" ".join(font_text(s["text"], s["font"]) for s in spans))
            if not text:
                continue
            weight: Counter[float] = Counter()
            for s in spans:
                weight[round(s["size"] * 2) / 2] += len(s["text"].strip())
            sizes.update(weight)
            size = max(weight.items(), key=lambda kv: (kv[1], kv[0]))[0]
            lines.append(TextLine(number, b, box, text, size, all(_is_bold(s) for s in spans)))
    return lines, sizes


def scan_page(page: pymupdf.Page, number: int) -> PdfPage:
    """The page's text lines (outside tables), ruled then unruled tables, figure regions."""
    page_box = as_box(page.rect)
    drawings = _visible_drawings(page, page_box)
    images = [intersect(as_box(info["bbox"]), page_box) for info in page.get_image_info()]
    images = [box for box in images if box_area(box) > 0]
    tables, header_rows = read_tables(page, drawings, images)
    figures = figure_regions(page_box, images, drawings, tables)
    words = page.get_text("words", flags=_TEXT_FLAGS)
    tables += unruled_tables(words, [t.bbox for t in tables] + [f.bbox for f in figures], drawings)
    lines, sizes = _page_lines(page, number)
    table_boxes = [grow_box(t.bbox, 1) for t in tables]
    lines = [ln for ln in lines if not any(center_in(ln.bbox, t) for t in table_boxes)]
    return PdfPage(number, page_box, lines, tables, figures, sizes, header_rows=header_rows)
