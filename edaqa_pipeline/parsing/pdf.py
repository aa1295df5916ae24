"""PDF parser: the text layer of a datasheet or specification -> a document row and blocks.

Why it is built this way:

* EDA datasheets keep their facts in ruled tables (limits, pin lists, register maps). Each table
  becomes ONE ``table`` block whose text is CSV, header row first, so that a question about a
  maximum meets the whole row together with its header. Cell text is read with the routine
  ``Table.to_markdown()`` uses (``pymupdf.table.extract_cells``: a character belongs to a cell
  when more than half of its box lies inside), never with ``Table.extract()``, which garbles
  numbers on these files ("14400.00000" -> "1440000000 ."). We re-implement that routine over
  one ``rawdict`` per page and build the cells from the table's cell boxes instead of parsing
  the Markdown: the library function re-reads the whole page for every cell (about 30 s on the
  134-page VeeR manual), and Markdown output is lossy (``_`` of italics vs. ``CLK_I``, ``|`` in
  cells, ``Col1`` placeholders, spanned cells copied into their neighbours).
* ``find_tables`` runs with ``use_layout=False``. Its pymupdf 2.0 default gates tables through
  an ONNX layout model at 0.2-0.45 s per page (about a minute for VeeR) and on these files drops
  real tables (IHP "Cell Name | Area", the VeeR memory map). The line finder alone is 5-10x
  faster; its false positives inside timing and block diagrams are refused here (diagonal
  strokes or curves inside the grid, a mostly empty grid, fewer than two rows or columns).
  Pages without two horizontal and two vertical strokes skip ``find_tables`` altogether. The
  price: tables without ruling lines are not detected, their text stays in paragraphs.
* Word-processor tables often draw their header shading on a finer grid than the body, so the
  raw grid has empty phantom columns and header cells offset from their data. Cells are mapped
  onto logical columns by horizontal overlap; empty columns and rows are dropped.
* Running headers and footers (same text, digits aside, at the same height on more than half of
  the pages) are dropped. Raster images and clusters of vector drawings become ``figure`` blocks
  whose text is the adjacent "Figure N" caption; the labels drawn inside them leave the prose.
* Every refusal is a ``DocumentError`` naming the document and the problem (not a PDF,
  encrypted, no pages, no text layer), and ids are content-derived (``stable_id``): parsing the
  same bytes twice gives identical rows.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pymupdf

from edaqa_pipeline.model import normalise_ws, sha256_bytes, stable_id
from edaqa_pipeline.parsing.errors import DocumentError

Box = tuple[float, float, float, float]

# Text extraction: no image payloads (figures come from get_image_info, without pixel data) and
# ligatures split into letters ("ﬁ" -> "fi") so that words can be searched.
_TEXT_FLAGS = pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES & ~pymupdf.TEXT_PRESERVE_LIGATURES
_LIGATURES = str.maketrans(
    {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st", "\ufb06": "st", "\u00ad": ""}
)
_WHITE = frozenset(" \t\n\r\x0b\x0c")

_TABLE_CAPTION = re.compile(r"^(?:table|tab\.)\s*[A-Z]?\s*\d+(?:\s*[.\-–:]\s*\d+)*", re.IGNORECASE)
_FIGURE_CAPTION = re.compile(r"^(?:figure|fig\.)\s*[A-Z]?\s*\d+(?:\s*[.\-–:]\s*\d+)*", re.IGNORECASE)
_SECTION_NUMBER = re.compile(r"^(?:\d{1,2}|[A-Z])((?:\.\d{1,3})*)\.?\s+\S")
_BULLET = re.compile(r"^(?:[•·▪◦‣∙●○■□➢►✓✔\uf000-\uf0ff]\s*|[-*–]\s+)")
_ORDERED = re.compile(r"^(?:\(?\d{1,2}[.)]|\(?[a-z][.)])\s+\S")
_DIGITS = re.compile(r"\d+")
_LEADER_DOTS = re.compile(r"(?:\.\s?){5,}")
# metadata titles that are not titles: empty, placeholders, notices, file names
_JUNK_TITLE = re.compile(
    r"^$|^<?(untitled|title|document|slide \d+)>?$|^(copyright|©|\(c\)|microsoft word)|\.(docx?|odt|rtf|tex|dvi|pdf|indd)$",
    re.IGNORECASE,
)

_MIN_FIGURE_SIDE = 30.0  # points; smaller images and drawing clusters are icons, rules, bullets
_CLUSTER_GAP = 8.0  # drawings closer than this belong to one figure
_CAPTION_GAP_BELOW = 60.0
_CAPTION_GAP_ABOVE = 40.0


@dataclass
class _Line:
    """One visual text line (spans on the same baseline merged) outside tables."""

    page: int
    block: int
    bbox: Box
    text: str
    size: float
    bold: bool
    drop: bool = False  # header/footer, figure label or figure caption


@dataclass
class _Table:
    bbox: Box
    rows: list[list[str]]
    caption: str = ""


@dataclass
class _Figure:
    bbox: Box
    source: str  # image | vector | image+vector
    caption: str = ""
    labels: list[str] = field(default_factory=list)


@dataclass
class _Page:
    number: int  # 0-based
    rect: Box
    lines: list[_Line]
    tables: list[_Table]
    figures: list[_Figure]
    sizes: Counter[float]  # characters per font size over the whole text layer, tables included


# ---------------------------------------------------------------------------------------------
# Geometry helpers (plain tuples: pymupdf.Rect is slow in the inner loops)


def _area(b: Box) -> float:
    return max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1])


def _inter(a: Box, b: Box) -> Box:
    return (max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3]))


def _union(a: Box, b: Box) -> Box:
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def _grow(b: Box, d: float) -> Box:
    return (b[0] - d, b[1] - d, b[2] + d, b[3] + d)


def _touches(a: Box, b: Box) -> bool:
    """Closed-box intersection (degenerate boxes such as lines count)."""
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


def _center_in(b: Box, outer: Box) -> bool:
    cx, cy = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
    return outer[0] <= cx <= outer[2] and outer[1] <= cy <= outer[3]


def _x_overlap(a: Box, b: Box) -> float:
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0]))


def _box(r: Any) -> Box:
    return (float(r[0]), float(r[1]), float(r[2]), float(r[3]))


def _clean(text: str) -> str:
    return normalise_ws(text.translate(_LIGATURES))


# ---------------------------------------------------------------------------------------------
# Opening


def _open(data: bytes, document: str) -> pymupdf.Document:
    if not data:
        raise DocumentError(document, "not a readable PDF: the file is empty")
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:  # pymupdf raises FileDataError, RuntimeError, ... by version
        raise DocumentError(document, f"not a readable PDF: {exc}") from exc
    if doc.needs_pass:
        doc.close()
        raise DocumentError(document, "PDF is encrypted (password required); decrypt it first")
    if doc.page_count == 0:
        doc.close()
        raise DocumentError(document, "not a readable PDF: it has no pages")
    return doc


# ---------------------------------------------------------------------------------------------
# Vector drawings


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
        elif op == "re" or op == "qu":
            r = item[1] if op == "re" else item[1].rect
            if r.width >= 3:
                h += 1 if r.height <= 1 else 2
            if r.height >= 3:
                v += 1 if r.width <= 1 else 2
        elif op == "c":
            d += 1
    return h, v, d


def _visible_drawings(page: pymupdf.Page, page_box: Box) -> list[tuple[Box, int, int, int]]:
    """(bbox, h, v, diagonal) of the drawings that can be seen and are not page backgrounds."""
    page_area = _area(page_box)
    out = []
    for drawing in page.get_drawings():
        fill = drawing.get("fill")
        if drawing.get("type") == "f" and fill is not None and min(fill) >= 0.99:
            continue  # white fill without stroke: a background, not ruling or art
        box = _box(drawing["rect"])
        if _area(_inter(box, page_box)) >= 0.9 * page_area:
            continue  # page frame or background
        out.append((box, *_drawing_stats(drawing)))
    return out


# ---------------------------------------------------------------------------------------------
# Tables


@dataclass
class _RawSpan:
    bbox: Box
    chars: list[tuple[str, Box]]


@dataclass
class _RawLine:
    bbox: Box
    spans: list[_RawSpan]


def _raw_lines(textpage: pymupdf.TextPage) -> list[_RawLine]:
    lines = []
    for block in textpage.extractRAWDICT()["blocks"]:
        if block["type"] != 0:
            continue
        for line in block["lines"]:
            spans = [
                _RawSpan(_box(s["bbox"]), [(c["c"], _box(c["bbox"])) for c in s["chars"]])
                for s in line["spans"]
            ]
            lines.append(_RawLine(_box(line["bbox"]), spans))
    return lines


def _cell_text(lines: Sequence[_RawLine], cell: Box) -> str:
    """Plain-text twin of ``pymupdf.table.extract_cells`` (what ``to_markdown`` uses)."""
    text = ""
    for line in lines:
        lb = line.bbox
        if lb[0] > cell[2] or lb[2] < cell[0] or lb[1] > cell[3] or lb[3] < cell[1]:
            continue
        if text:
            text += "\n"
        for span in line.spans:
            sb = span.bbox
            if sb[0] > cell[2] or sb[2] < cell[0] or sb[1] > cell[3] or sb[3] < cell[1]:
                continue
            for char, cb in span.chars:
                if _area(_inter(cb, cell)) > 0.5 * _area(cb):
                    text += char
                elif char in _WHITE:
                    text += " "
    return text.strip()


def _logical_columns(cells: list[tuple[int, Box, str]], n_rows: int) -> list[Box]:
    """Column intervals: cells of the fullest rows first, a new column for each cell that does
    not overlap an existing one by half of the narrower of the two."""
    per_row: dict[int, list[Box]] = defaultdict(list)
    for r, box, _ in cells:
        per_row[r].append(box)
    order = sorted(range(n_rows), key=lambda r: (-len(per_row.get(r, [])), r))
    columns: list[Box] = []
    for r in order:
        for box in per_row.get(r, []):
            width = box[2] - box[0]
            if not any(
                _x_overlap(box, col) >= 0.5 * max(1e-6, min(width, col[2] - col[0])) for col in columns
            ):
                columns.append(box)
    return sorted(columns, key=lambda b: (b[0], b[2]))


def _table_rows(table: Any, raw: Sequence[_RawLine]) -> tuple[list[list[str]], str]:
    """(rows, caption): the table as cell strings on logical columns, header first.

    Spanned cells are copied into every column / row they cover (as ``to_markdown`` fills
    them), except a full-width row, a section label that keeps its text in the first column.
    A leading row that only says "Table N ..." is the caption. Header rows with spanned group
    titles ("Delay(ns)" over "Slew(ns)" / "Load(pf)") are merged into one header row
    ("Delay(ns) Slew(ns)", ...).
    """
    row_boxes = [_box(row.bbox) for row in table.rows]
    cells: list[tuple[int, Box, str]] = []
    for r, row in enumerate(table.rows):
        for c in row.cells:
            if c is None:
                continue
            box = _box(c)
            text = _clean(_cell_text(raw, box))
            if text:
                cells.append((r, box, text))
    if not cells:
        return [], ""
    columns = _logical_columns(cells, len(row_boxes))
    grid: list[list[str]] = [["" for _ in columns] for _ in row_boxes]
    spanned = [False] * len(row_boxes)  # a cell of the row covers several columns
    by_row: dict[int, list[tuple[Box, str]]] = defaultdict(list)
    for r, box, text in cells:
        by_row[r].append((box, text))
    for r, items in by_row.items():
        for box, text in items:
            covered = [
                j
                for j, col in enumerate(columns)
                if _x_overlap(box, col) >= 0.5 * max(1e-6, col[2] - col[0])
            ]
            if not covered:
                best = max(range(len(columns)), key=lambda j: (_x_overlap(box, columns[j]), -j))
                covered = [best]
            if len(items) == 1 and len(covered) == len(columns) > 1:
                covered = covered[:1]  # a full-width row is a section label: first column only
            spanned[r] = spanned[r] or len(covered) > 1
            # a cell taller than its row spans the rows below (filled down, as to_markdown does)
            below = [
                k
                for k in range(r + 1, len(row_boxes))
                if (row_boxes[k][1] + row_boxes[k][3]) / 2 < box[3]
            ]
            for j in covered:
                grid[r][j] = f"{grid[r][j]} {text}" if grid[r][j] else text
                for k in below:
                    if not grid[k][j] and not any(
                        _x_overlap(b, columns[j]) > 0 for b, _ in by_row.get(k, [])
                    ):
                        grid[k][j] = text
    caption = ""
    first = {v for v in grid[0] if v}
    if len(first) == 1 and _TABLE_CAPTION.match(next(iter(first))):
        caption = next(iter(first))
        grid, spanned = grid[1:], spanned[1:]
    keep_cols = [j for j in range(len(columns)) if any(row[j] for row in grid)]
    keep_rows = [r for r, row in enumerate(grid) if any(row[j] for j in keep_cols)]
    rows = [[grid[r][j] for j in keep_cols] for r in keep_rows]
    spanned = [spanned[r] for r in keep_rows]
    depth = 1
    while depth < len(rows) - 1 and spanned[depth - 1]:
        depth += 1
    if depth > 1:
        header = []
        for j in range(len(rows[0])):
            parts: list[str] = []
            for row in rows[:depth]:
                if row[j] and (not parts or parts[-1] != row[j]):
                    parts.append(row[j])
            header.append(" ".join(parts))
        rows = [header, *rows[depth:]]
    return rows, caption


def _read_tables(
    page: pymupdf.Page,
    drawings: Sequence[tuple[Box, int, int, int]],
    images: Sequence[Box],
) -> list[_Table]:
    found = page.find_tables(strategy="lines", use_layout=False)
    if found is None or not found.tables:
        return []
    raw_cache: dict[int, list[_RawLine]] = {}
    tables = []
    for table in found.tables:
        bbox = _box(table.bbox)
        inner = _grow(bbox, 2)
        diagonal = sum(d for box, _, _, d in drawings if d and _touches(box, inner) and _center_in(box, inner))
        if diagonal >= 3:
            continue  # timing or block diagram drawn on a grid, not a table
        if sum(_area(_inter(img, bbox)) for img in images) >= 0.15 * _area(bbox):
            continue  # a title box around a logo, a framed picture
        key = id(table.textpage)
        if key not in raw_cache:
            raw_cache[key] = _raw_lines(table.textpage)
        rows, caption = _table_rows(table, raw_cache[key])
        if len(rows) < 2 or len(rows[0]) < 2:
            continue  # one row or one column: a framed paragraph, a list or a diagram box
        filled = sum(1 for row in rows for v in row if v) / (len(rows) * len(rows[0]))
        if filled < 0.3:
            continue  # mostly empty grid: a diagram
        tables.append(_Table(bbox, rows, caption))
    return tables


def _csv(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().rstrip("\n")


# ---------------------------------------------------------------------------------------------
# Figures


def _clusters(items: list[tuple[Box, str, int]], gap: float) -> list[list[int]]:
    """Connected groups of boxes closer than ``gap`` (union-find over a coarse grid)."""
    parent = list(range(len(items)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    cell = 40.0
    buckets: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, (box, _, _) in enumerate(items):
        g = _grow(box, gap / 2)
        for gx in range(int(g[0] // cell), int(g[2] // cell) + 1):
            for gy in range(int(g[1] // cell), int(g[3] // cell) + 1):
                for j in buckets[(gx, gy)]:
                    if find(i) != find(j) and _touches(g, _grow(items[j][0], gap / 2)):
                        parent[find(i)] = find(j)
                buckets[(gx, gy)].append(i)
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(len(items)):
        groups[find(i)].append(i)
    return sorted(groups.values())


def _figure_regions(
    page_box: Box,
    images: Sequence[Box],
    drawings: Sequence[tuple[Box, int, int, int]],
    tables: Sequence[_Table],
) -> list[_Figure]:
    page_area = _area(page_box)
    table_boxes = [_grow(t.bbox, 3) for t in tables]

    def in_table(box: Box) -> bool:
        return any(_area(_inter(box, t)) >= 0.5 * max(_area(box), 1e-6) or _center_in(box, t) for t in table_boxes)

    items: list[tuple[Box, str, int]] = []
    for box in images:
        if _area(box) >= 0.8 * page_area or in_table(box):
            continue  # off page, a page-sized background or scan, or a picture inside a cell
        items.append((box, "image", 0))
    for box, _, _, diagonal in drawings:
        if not in_table(box):
            items.append((box, "vector", diagonal))
    figures = []
    for group in _clusters(items, _CLUSTER_GAP):
        box = items[group[0]][0]
        for i in group[1:]:
            box = _union(box, items[i][0])
        box = _inter(box, page_box)
        if box[2] - box[0] < _MIN_FIGURE_SIDE or box[3] - box[1] < _MIN_FIGURE_SIDE:
            continue
        kinds = {items[i][1] for i in group}
        diagonal = sum(items[i][2] for i in group)
        if "image" not in kinds and diagonal < 2:
            continue  # only straight ruling: a frame, shading or a list grid, not a drawing
        if any(_area(_inter(box, t)) >= 0.8 * _area(t) for t in table_boxes):
            continue  # the grid around a table
        source = "+".join(k for k in ("image", "vector") if k in kinds)
        figures.append(_Figure(box, source))
    return figures


# ---------------------------------------------------------------------------------------------
# Page scan


def _is_bold(span: dict[str, Any]) -> bool:
    return bool(span["flags"] & pymupdf.TEXT_FONT_BOLD) or "bold" in span["font"].lower()


def _page_lines(page: pymupdf.Page, number: int) -> tuple[list[_Line], Counter[float]]:
    """Visual lines of the page in reading order (spans on one baseline joined) and the
    characters per font size."""
    lines: list[_Line] = []
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
            box = _box(line["bbox"])
            if merged:
                prev, prev_spans = merged[-1]
                overlap = min(prev[3], box[3]) - max(prev[1], box[1])
                if overlap >= 0.6 * min(prev[3] - prev[1], box[3] - box[1]) and box[0] >= prev[0]:
                    merged[-1] = (_union(prev, box), prev_spans + spans)
                    continue
            merged.append((box, spans))
        for box, spans in merged:
            text = _clean(" ".join(s["text"] for s in spans))
            if not text:
                continue
            weight: Counter[float] = Counter()
            for s in spans:
                weight[round(s["size"] * 2) / 2] += len(s["text"].strip())
            sizes.update(weight)
            size = max(weight.items(), key=lambda kv: (kv[1], kv[0]))[0]
            bold = all(_is_bold(s) for s in spans)
            lines.append(_Line(number, b, box, text, size, bold))
    return lines, sizes


def _scan_page(page: pymupdf.Page, number: int) -> _Page:
    page_box = _box(page.rect)
    drawings = _visible_drawings(page, page_box)
    h = sum(d[1] for d in drawings)
    v = sum(d[2] for d in drawings)
    images = [_inter(_box(info["bbox"]), page_box) for info in page.get_image_info()]
    images = [box for box in images if _area(box) > 0]
    tables = _read_tables(page, drawings, images) if h >= 2 and v >= 2 else []
    lines, sizes = _page_lines(page, number)
    table_boxes = [_grow(t.bbox, 1) for t in tables]
    lines = [ln for ln in lines if not any(_center_in(ln.bbox, t) for t in table_boxes)]
    figures = _figure_regions(page_box, images, drawings, tables)
    return _Page(number, page_box, lines, tables, figures, sizes)


# ---------------------------------------------------------------------------------------------
# Whole-document passes


def _drop_running_lines(pages: Sequence[_Page]) -> None:
    """Mark lines repeated (digits ignored) at the same height on more than half of the pages."""
    n = len(pages)
    if n < 3:
        return
    where: dict[str, list[tuple[int, float, _Line]]] = defaultdict(list)
    for page in pages:
        for line in page.lines:
            key = _DIGITS.sub("#", line.text.lower())
            where[key].append((page.number, (line.bbox[1] + line.bbox[3]) / 2, line))
    for occurrences in where.values():
        if len({p for p, _, _ in occurrences}) * 2 <= n:
            continue
        for _, y, line in occurrences:
            pages_here = {p for p, y2, _ in occurrences if abs(y2 - y) <= 3}
            if len(pages_here) * 2 > n:
                line.drop = True


def _is_label(line: _Line, fig: Box, lines_per_block: Counter[int]) -> bool:
    """Text drawn on a figure, or a short label just left or right of it (dimensions)."""
    if _center_in(line.bbox, _grow(fig, 2)):
        return True
    cy = (line.bbox[1] + line.bbox[3]) / 2
    return (
        fig[1] <= cy <= fig[3]
        and _touches(line.bbox, _grow(fig, 12))
        and len(line.text.split()) <= 5
        and lines_per_block[line.block] <= 3
        and not _FIGURE_CAPTION.match(line.text)
        and not _TABLE_CAPTION.match(line.text)
    )


def _cover_title(page: _Page) -> str:
    """The largest text on the first page (running headers aside), lines joined."""
    lines = [ln for ln in page.lines if not ln.drop and re.search(r"[A-Za-z]{2}", ln.text)]
    if not lines:
        return ""
    top = max(ln.size for ln in lines)
    return " ".join(ln.text for ln in lines if ln.size >= top - 0.5)[:200]


def _attach_figure_text(page: _Page) -> None:
    """Labels of a figure leave the prose; an adjacent 'Figure N' line becomes its caption.

    A region whose text is mostly long prose lines is a framed text box: not a figure. Text
    over a large graphic on the first page is the cover title: it stays text.
    """
    kept = []
    lines_per_block = Counter(ln.block for ln in page.lines)
    for fig in page.figures:
        inside = [ln for ln in page.lines if not ln.drop and _is_label(ln, fig.bbox, lines_per_block)]
        chars = sum(len(ln.text) for ln in inside)
        prose = sum(len(ln.text) for ln in inside if len(ln.text.split()) >= 10)
        if chars >= 150 and prose >= 0.5 * chars:
            continue
        kept.append(fig)
        if page.number == 0 and _area(fig.bbox) >= 0.35 * _area(page.rect):
            continue
        for ln in inside:
            ln.drop = True
        fig.labels = [ln.text for ln in inside]
    page.figures = kept
    for fig in sorted(page.figures, key=lambda f: (f.bbox[1], f.bbox[0])):
        best: tuple[float, _Line] | None = None
        for ln in page.lines:
            if ln.drop or not _FIGURE_CAPTION.match(ln.text) or _x_overlap(ln.bbox, fig.bbox) <= 0:
                continue
            below = ln.bbox[1] - fig.bbox[3]
            above = fig.bbox[1] - ln.bbox[3]
            if -5 <= below <= _CAPTION_GAP_BELOW:
                dist = max(below, 0.0)
            elif -5 <= above <= _CAPTION_GAP_ABOVE:
                dist = max(above, 0.0) + 1000.0  # a caption below wins over one above
            else:
                continue
            if best is None or dist < best[0]:
                best = (dist, ln)
        if best is None:
            continue
        first = best[1]
        block_lines = [ln for ln in page.lines if ln.block == first.block and not ln.drop]
        start = block_lines.index(first)
        caption = [first]
        for ln in block_lines[start + 1 :]:  # a caption wrapped over more lines
            if _FIGURE_CAPTION.match(ln.text) or _TABLE_CAPTION.match(ln.text):
                break
            caption.append(ln)
        for ln in caption:
            ln.drop = True
        fig.caption = " ".join(ln.text for ln in caption)


def _table_captions(page: _Page) -> None:
    for table in page.tables:
        if table.caption:
            continue
        best: tuple[float, str] | None = None
        for ln in page.lines:
            if ln.drop or not _TABLE_CAPTION.match(ln.text) or _x_overlap(ln.bbox, table.bbox) <= 0:
                continue
            above = table.bbox[1] - ln.bbox[3]
            below = ln.bbox[1] - table.bbox[3]
            if -3 <= above <= _CAPTION_GAP_ABOVE:
                dist = max(above, 0.0)
            elif -3 <= below <= _CAPTION_GAP_ABOVE:
                dist = max(below, 0.0) + 1000.0  # a caption above wins over one below
            else:
                continue
            if best is None or dist < best[0]:
                best = (dist, ln.text)
        if best:
            table.caption = best[1]


def _body_size(pages: Iterable[_Page]) -> float:
    """The font size of most characters, table text included (datasheets with little prose)."""
    weight: Counter[float] = Counter()
    for page in pages:
        weight.update(page.sizes)
    if not weight:
        return 10.0
    return max(weight.items(), key=lambda kv: (kv[1], -kv[0]))[0]


@dataclass
class _Run:
    """Consecutive lines of one text block with the same role (heading candidate or body)."""

    lines: list[_Line]

    @property
    def bbox(self) -> Box:
        box = self.lines[0].bbox
        for ln in self.lines[1:]:
            box = _union(box, ln.bbox)
        return box


def _heading_candidate(line: _Line, body: float) -> bool:
    return line.size >= body + 0.9 or (line.bold and line.size >= body - 0.6)


def _runs(page: _Page, body: float) -> list[_Run]:
    live = [ln for ln in page.lines if not ln.drop]
    if not live:
        return []
    text_width = max(ln.bbox[2] for ln in live) - min(ln.bbox[0] for ln in live)
    runs: list[_Run] = []
    prev: _Line | None = None
    for ln in live:
        candidate = _heading_candidate(ln, body)
        same = (
            prev is not None
            and prev.block == ln.block
            and _heading_candidate(prev, body) == candidate
            and not _FIGURE_CAPTION.match(ln.text)
            and not _TABLE_CAPTION.match(ln.text)
        )
        if same and candidate and prev is not None:
            # a heading wraps only when its line is full; a short line ends the heading
            same = abs(prev.size - ln.size) < 0.9 and prev.bbox[2] - prev.bbox[0] >= 0.6 * text_width
        if same:
            runs[-1].lines.append(ln)
        else:
            runs.append(_Run([ln]))
        prev = ln
    return runs


def _heading_kind(run: _Run, body: float) -> str:
    """"size" (larger than body text), "bold" (a short bold line of body size) or ""."""
    text = " ".join(ln.text for ln in run.lines)
    words = text.split()
    if len(run.lines) > 3 or not 2 <= len(text) <= 150 or len(words) > 20:
        return ""
    if not re.search(r"[A-Za-z]{2}", text) or _LEADER_DOTS.search(text) or "://" in text:
        return ""  # numbers, table-of-contents lines, URLs
    if _TABLE_CAPTION.match(text) or _FIGURE_CAPTION.match(text) or _BULLET.match(text):
        return ""
    if text.endswith((":", ",", ";")) or (text.endswith(".") and len(words) > 6):
        return ""  # the lead-in or the end of a sentence
    if max(ln.size for ln in run.lines) >= body + 0.9:
        return "size"
    if (
        all(ln.bold for ln in run.lines)
        and len(run.lines) <= 2
        and len(text) <= 100
        and not text.endswith(".")
        and not text[0].islower()
    ):
        return "bold"
    return ""


def _run_text(run: _Run) -> tuple[str, str]:
    """(kind, text): a paragraph joins its lines with spaces; list items start new lines."""
    first = run.lines[0].text
    items = [ln for ln in run.lines if _BULLET.match(ln.text) or _ORDERED.match(ln.text)]
    if _BULLET.match(first) and len(first) > 1:
        kind = "list"
    elif _ORDERED.match(first) and len(items) >= 2:
        kind = "ordered_list"
    else:
        kind = "paragraph"
    parts: list[str] = []
    for ln in run.lines:
        if parts and kind != "paragraph" and (_BULLET.match(ln.text) or _ORDERED.match(ln.text)):
            parts.append("\n" + ln.text)
        elif parts:
            parts.append(" " + ln.text)
        else:
            parts.append(ln.text)
    return kind, "".join(parts)


def _heading_levels(headings: list[tuple[_Run, str]]) -> dict[int, int]:
    """Level by section number depth when numbered ("2.3.1 Foo" -> 3), else by size rank."""
    sizes = sorted({max(ln.size for ln in run.lines) for run, _ in headings}, reverse=True)
    levels = {}
    for run, text in headings:
        match = _SECTION_NUMBER.match(text)
        if match and (text[0].isdigit() or match.group(1)):
            depth = 1 + match.group(1).count(".")
        else:
            depth = 1 + sizes.index(max(ln.size for ln in run.lines))
        levels[id(run)] = min(depth, 3)
    return levels


# ---------------------------------------------------------------------------------------------
# Entry point


def parse_pdf(data: bytes, document: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Returns (document_row matching DOCUMENTS_SCHEMA, block rows matching BLOCKS_SCHEMA)."""
    doc = _open(data, document)
    try:
        metadata_title = _clean((doc.metadata or {}).get("title") or "")
        pages = []
        for number in range(doc.page_count):
            try:
                pages.append(_scan_page(doc[number], number))
            except DocumentError:
                raise
            except Exception as exc:  # damaged content stream, unsupported object, ...
                raise DocumentError(document, f"page {number + 1} could not be read: {exc}") from exc
    finally:
        doc.close()
    if not any(p.sizes for p in pages):
        raise DocumentError(document, "PDF has no text layer (scanned images?); OCR is not configured")

    _drop_running_lines(pages)
    cover_title = _cover_title(pages[0])
    for page in pages:
        _attach_figure_text(page)
        _table_captions(page)
    body = _body_size(pages)

    # (page, y0, x0, kind, text, bbox, level, meta) in reading order
    elements: list[tuple[int, Box, str, str, int, dict[str, Any]]] = []
    page_runs = [(page, _runs(page, body)) for page in pages]
    flat = [run for _, runs in page_runs for run in runs]
    kinds = [_heading_kind(run, body) for run in flat]
    headings = [
        (run, " ".join(ln.text for ln in run.lines))
        for i, run in enumerate(flat)
        # a bold line is a heading only when the next line is not bold too (a bold list)
        if kinds[i] == "size" or kinds[i] == "bold" and (i + 1 == len(flat) or kinds[i + 1] != "bold")
    ]
    levels = _heading_levels(headings)
    for page, runs in page_runs:
        items: list[tuple[Box, str, str, int, dict[str, Any]]] = []
        for run in runs:
            if id(run) in levels:
                text = " ".join(ln.text for ln in run.lines)
                items.append((run.bbox, "heading", text, levels[id(run)], {}))
            else:
                kind, text = _run_text(run)
                items.append((run.bbox, kind, text, 0, {}))
        for table in page.tables:
            meta: dict[str, Any] = {"header": table.rows[0], "n_rows": len(table.rows) - 1}
            if table.caption:
                meta["caption"] = table.caption
            items.append((table.bbox, "table", _csv(table.rows), 0, meta))
        for fig in page.figures:
            meta = {"source": fig.source}
            if fig.caption:
                meta["caption"] = fig.caption
            if fig.labels:
                meta["labels"] = fig.labels
            items.append((fig.bbox, "figure", fig.caption, 0, meta))
        items.sort(key=lambda it: (round(it[0][1], 1), round(it[0][0], 1)))
        for box, kind, text, level, meta in items:
            elements.append((page.number + 1, box, kind, text, level, meta))

    blocks: list[dict[str, Any]] = []
    section: list[tuple[int, str]] = []
    seen: Counter[tuple[int, str, str]] = Counter()
    for page_no, box, kind, text, level, meta in elements:
        if kind == "heading":
            while section and section[-1][0] >= level:
                section.pop()
            section.append((level, text))
        norm = normalise_ws(text)
        dup = seen[(page_no, kind, norm)]
        seen[(page_no, kind, norm)] += 1
        blocks.append(
            {
                "block_id": stable_id("blk", document, kind, norm, page_no, dup),
                "document": document,
                "ordinal": len(blocks),
                "kind": kind,
                "section_path": [h for _, h in section],
                "heading_level": level,
                "language": "",
                "text": text,
                "raw": text,
                "start_line": None,
                "end_line": None,
                "page": page_no,
                "bbox": [round(v, 2) for v in box],
                "meta": json.dumps(meta, sort_keys=True, ensure_ascii=False),
            }
        )

    title = "" if _JUNK_TITLE.search(metadata_title) else metadata_title
    title = title or cover_title or next((b["text"] for b in blocks if b["kind"] == "heading"), document)
    doc_row = {
        "document": document,
        "format": "pdf",
        "source_sha256": sha256_bytes(data),
        "n_bytes": len(data),
        "n_lines": 0,
        "n_pages": len(pages),
        "title": title,
    }
    return doc_row, blocks
