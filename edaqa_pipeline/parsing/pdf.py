"""PDF parser: the text layer of a datasheet or specification -> a document row and blocks.

Why it is built this way:

* EDA datasheets keep their facts in ruled tables (limits, pin lists, register maps). Each table
  becomes ONE ``table`` block whose text is CSV, header row first, so that a question about a
  maximum meets the whole row together with its header. Cell text is read with the routine
  ``Table.to_markdown()`` uses (``pymupdf.table.extract_cells``: a character belongs to a cell
  when more than half of its box lies inside), never with ``Table.extract()``, which garbles
  numbers on these files ("14400.00000" -> "1440000000 ."). We re-implement that routine over
  one ``rawdict`` per page and build the rows from the table's cell boxes instead of parsing
  the Markdown: the library function re-reads the whole page for every cell (about 30 s on the
  134-page VeeR manual), and Markdown output is lossy (``_`` of italics vs. ``CLK_I``, ``|`` in
  cells, ``Col1`` placeholders, spanned cells copied into their neighbours).
* ``find_tables`` runs with ``use_layout=False``. Its pymupdf 2.0 default gates tables through
  an ONNX layout model at 0.2-0.45 s per page (about a minute for VeeR) and on these files drops
  real tables (IHP "Cell Name | Area", the VeeR memory map). The line finder alone is 5-10x
  faster; its false positives in timing and block diagrams are refused here (diagonal strokes or
  curves inside the grid, a logo inside, a mostly empty grid, fewer than two rows or columns).
  Pages without two horizontal and two vertical strokes skip ``find_tables`` altogether. The
  price: tables without ruling lines are not detected, their text stays in paragraphs.
* Word-processor tables often draw their header shading on a finer grid than the body, so the
  raw grid has empty phantom columns and header cells offset from their data. Cells are mapped
  onto logical columns by horizontal overlap; empty columns and rows are dropped; a cell the
  line finder merged over two rows ("Min" + "1.35") is split at the row its lines belong to;
  stacked header rows with group titles become one header row ("Delay(ns) Slew(ns)").
* Running headers and footers (same text, page numbers aside, at the same height on more than
  half of the pages) are dropped. Raster images and clusters of vector drawings with curves or
  diagonal strokes become ``figure`` blocks whose text is the adjacent "Figure N" caption; the
  labels drawn on them leave the prose (kept in the block's meta).
* Headings are lines larger than the body text, or short bold lines followed by non-bold text.
  Numbered headings ("2.3.1 ...", "Chapter 4", "A.2") take their level from the numbering,
  others from their font size relative to the numbered ones (by size rank when none is
  numbered).
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
from itertools import pairwise
from typing import Any

import pymupdf

from edaqa_pipeline.model import normalise_ws, sha256_bytes, stable_id
from edaqa_pipeline.parsing.errors import DocumentError

Box = tuple[float, float, float, float]
Drawing = tuple[Box, int, int, int]  # bbox, horizontal strokes, vertical strokes, diagonal+curves

# No image payloads in the text dict (figures come from get_image_info, without pixels) and
# ligatures split into letters ("ﬁ" -> "fi") so that words can be searched.
_TEXT_FLAGS = (
    pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES & ~pymupdf.TEXT_PRESERVE_LIGATURES
)
_LIGATURES = str.maketrans(
    {
        "\ufb00": "ff",
        "\ufb01": "fi",
        "\ufb02": "fl",
        "\ufb03": "ffi",
        "\ufb04": "ffl",
        "\ufb05": "st",
        "\ufb06": "st",
        "\u00ad": "",  # soft hyphen
    }
)
_WHITE = frozenset(" \t\n\r\x0b\x0c")

# "Table 3-1. TAG TYPEs", "Table A-2 ...", "Fig. 1.1.2: ..." but not "Figure 1-1 depicts ...".
_NUMBER = r"\s*(?:[A-Z]\s*[.\-–]?\s*)?\d+(?:\s*[.\-–:]\s*\d+)*\s*[.:\-–]?\s*(?![a-z])"
_TABLE_CAPTION = re.compile(r"^(?i:table|tab\.)" + _NUMBER)
_FIGURE_CAPTION = re.compile(r"^(?i:figure|fig\.)" + _NUMBER)
_SECTION_NUMBER = re.compile(r"^(?:\d{1,2}|[A-Z](?=\.\d))((?:\.\d{1,3})*)\.?\s+\S")
_CHAPTER = re.compile(r"^(?i:chapter|appendix|part)\s+[\dA-Z]{1,3}\b")
_BULLET = re.compile(r"^(?:[•·▪◦‣∙●○■□➢►✓✔\uf000-\uf0ff]\s*|[-*–]\s+)")
_ORDERED = re.compile(r"^(?:\(?\d{1,2}[.)]|\(?[a-z][.)])\s+\S")
_DIGITS = re.compile(r"\d+")
_ROMAN = re.compile(r"\b[ivxlc]{1,7}\b")  # page numbers of front matter (lower-cased text)
_PAGE_WORDS = re.compile(r"\b(?:page|of)\b|/")
_LEADER_DOTS = re.compile(r"(?:\.\s?){5,}")
_WORD = re.compile(r"[a-z][a-z\-]*[a-z]")
_HYPHEN_END = re.compile(r"([A-Za-z]+)-$")
_WORD_START = re.compile(r"^([a-z]+)")
# metadata titles that are not titles: empty, placeholders, notices, file names
_JUNK_TITLE = re.compile(
    r"^$|^<?(?:untitled|title|document|slide \d+)>?$|^(?:copyright|©|\(c\)|microsoft word)"
    r"|\.(?:docx?|odt|rtf|tex|dvi|pdf|indd)$",
    re.IGNORECASE,
)

_MIN_FIGURE_SIDE = 30.0  # points; smaller images and drawing clusters are icons, rules, bullets
_CLUSTER_GAP = 8.0  # drawings closer than this belong to one figure
_LABEL_GAP = 20.0  # short text this close left or right of a figure is one of its labels
_CAPTION_GAP_BELOW = 60.0
_CAPTION_GAP_ABOVE = 40.0


@dataclass
class _Line:
    """One visual text line outside tables (spans on one baseline joined)."""

    page: int
    block: int  # index of the pymupdf text block on the page
    bbox: Box
    text: str
    size: float  # font size of most of its characters, to 0.5 pt
    bold: bool
    drop: bool = False  # running header/footer, figure label or figure caption


@dataclass
class _Table:
    bbox: Box
    rows: list[list[str]]  # cell lines joined with "\n" until the document's words are known
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
# Geometry on plain tuples (pymupdf.Rect is slow in the inner loops)


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


def _join_lines(lines: Iterable[str], vocab: set[str]) -> str:
    """Join text lines with spaces. A word split by a hyphen at a line end is rejoined
    ("mea-" + "surements" -> "measurements") unless the document spells it with the hyphen
    elsewhere or both halves are words of their own ("machine-" + "mode" -> "machine-mode")."""
    out = ""
    for line in lines:
        if not line:
            continue
        end = _HYPHEN_END.search(out)
        start = _WORD_START.match(line)
        if end and start:
            left, right = end.group(1).lower(), start.group(1)
            compound = f"{left}-{right}" in vocab or (left in vocab and right in vocab)
            if left + right not in vocab and compound:
                out += line
            else:
                out = out[:-1] + line
        else:
            out = f"{out} {line}" if out else line
    return out


# ---------------------------------------------------------------------------------------------
# Opening


def _open(data: bytes, document: str) -> pymupdf.Document:
    if not data:
        raise DocumentError(document, "not a readable PDF: the file is empty")
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:  # FileDataError, RuntimeError, ... depending on the damage
        reason = normalise_ws(f"{exc} ({exc.__cause__})" if exc.__cause__ else str(exc))
        raise DocumentError(document, f"not a readable PDF: {reason}") from exc
    if not doc.is_pdf:  # pymupdf sniffs the content: HTML, XPS, images open as other formats
        kind = (doc.metadata or {}).get("format") or "another format"
        doc.close()
        raise DocumentError(document, f"not a readable PDF: the content is {kind}, not PDF")
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
    """The drawings that can be seen and are not page backgrounds or frames."""
    page_area = _area(page_box)
    out = []
    for drawing in page.get_drawings():
        fill = drawing.get("fill")
        if drawing.get("type") == "f" and fill is not None and min(fill) >= 0.99:
            continue  # white fill without a stroke: a background, neither ruling nor art
        box = _box(drawing["rect"])
        if _area(_inter(box, page_box)) >= 0.9 * page_area:
            continue
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


def _cell_lines(lines: Sequence[_RawLine], cell: Box) -> list[tuple[str, float]]:
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
                if _area(_inter(cb, cell)) > 0.5 * _area(cb):
                    text += char
                elif char in _WHITE:
                    text += " "
        text = _clean(text)
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
                _x_overlap(box, col) >= 0.5 * max(1e-6, min(width, col[2] - col[0]))
                for col in columns
            ):
                columns.append(box)
    return sorted(columns, key=lambda b: (b[0], b[2]))


def _table_cells(
    table: Any, raw: Sequence[_RawLine]
) -> tuple[list[Box], list[tuple[int, Box, str]]]:
    """Row boxes and non-empty cells (row, box, text with "\\n" between lines).

    A cell over several rows whose lines sit in different rows was merged by the line finder
    (a missing rule): it is split into one cell per row. A cell over several rows with all its
    text in one row is a real row span."""
    row_boxes = [_box(row.bbox) for row in table.rows]
    cells: list[tuple[int, Box, str]] = []
    for r, row in enumerate(table.rows):
        for c in row.cells:
            if c is None:
                continue
            box = _box(c)
            lines = _cell_lines(raw, box)
            if not lines:
                continue
            spanned = [k for k in range(r, len(row_boxes)) if row_boxes[k][1] < box[3] - 1]
            groups: dict[int, list[str]] = defaultdict(list)
            for text, y in lines:
                home = next((k for k in spanned if row_boxes[k][1] <= y <= row_boxes[k][3]), r)
                groups[home].append(text)
            if len(groups) > 1:
                for k, texts in sorted(groups.items()):
                    cells.append(
                        (k, (box[0], row_boxes[k][1], box[2], row_boxes[k][3]), "\n".join(texts))
                    )
            else:
                cells.append((r, box, "\n".join(t for t, _ in lines)))
    return row_boxes, cells


def _table_rows(table: Any, raw: Sequence[_RawLine]) -> tuple[list[list[str]], str]:
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
                if _x_overlap(box, col) >= 0.5 * max(1e-6, col[2] - col[0])
            ]
            if not covered:
                covered = [
                    max(range(len(columns)), key=lambda j: (_x_overlap(box, columns[j]), -j))
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
                        _x_overlap(b, columns[j]) > 0 for b, _ in by_row.get(k, [])
                    ):
                        grid[k][j] = text
    caption = ""
    first = {v for v in grid[0] if v}
    if len(first) == 1 and _TABLE_CAPTION.match(next(iter(first))):
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
    for group in _clusters([d[0] for d in strokes], 3.0):
        if sum(strokes[i][1] for i in group) >= 2 and sum(strokes[i][2] for i in group) >= 2:
            for i in group:
                area = strokes[i][0] if area is None else _union(area, strokes[i][0])
    return area


def _read_tables(
    page: pymupdf.Page, drawings: Sequence[Drawing], images: Sequence[Box]
) -> list[_Table]:
    area = _grid_area(drawings)
    if area is None:
        return []  # no grid: skip find_tables, the costly part of the parse
    # the clip limits find_tables' per-character work to the ruled region
    found = page.find_tables(clip=pymupdf.Rect(_grow(area, 5)), strategy="lines", use_layout=False)
    if found is None or not found.tables:  # None: pymupdf caught an error and printed it
        return []
    raw_cache: dict[int, list[_RawLine]] = {}
    tables = []
    for table in found.tables:
        bbox = _box(table.bbox)
        inner = _grow(bbox, 2)
        diagonal = sum(d for box, _, _, d in drawings if d and _center_in(box, inner))
        if diagonal >= 3:
            continue  # a timing or block diagram drawn on a grid
        if sum(_area(_inter(img, bbox)) for img in images) >= 0.15 * _area(bbox):
            continue  # a title box around a logo, a framed picture
        key = id(table.textpage)
        if key not in raw_cache:
            raw_cache[key] = _raw_lines(table.textpage)
        rows, caption = _table_rows(table, raw_cache[key])
        if len(rows) < 2 or len(rows[0]) < 2:
            continue  # one row or one column: a framed paragraph, a list, a diagram box
        filled = sum(1 for row in rows for v in row if v) / (len(rows) * len(rows[0]))
        if filled < 0.3:
            continue  # a mostly empty grid: a diagram
        tables.append(_Table(bbox, rows, caption))
    return tables


def _csv(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().rstrip("\n")


# ---------------------------------------------------------------------------------------------
# Figures


def _clusters(boxes: Sequence[Box], gap: float) -> list[list[int]]:
    """Groups of boxes connected by gaps smaller than ``gap`` (union-find over a grid)."""
    parent = list(range(len(boxes)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    grown = [_grow(b, gap / 2) for b in boxes]
    cell = 40.0
    buckets: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, g in enumerate(grown):
        for gx in range(int(g[0] // cell), int(g[2] // cell) + 1):
            for gy in range(int(g[1] // cell), int(g[3] // cell) + 1):
                for j in buckets[(gx, gy)]:
                    if find(i) != find(j) and _touches(g, grown[j]):
                        parent[find(i)] = find(j)
                buckets[(gx, gy)].append(i)
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(len(boxes)):
        groups[find(i)].append(i)
    return sorted(groups.values())


def _figure_regions(
    page_box: Box, images: Sequence[Box], drawings: Sequence[Drawing], tables: Sequence[_Table]
) -> list[_Figure]:
    """Raster images and clusters of drawings with curves or diagonal strokes, outside tables."""
    page_area = _area(page_box)
    table_boxes = [_grow(t.bbox, 3) for t in tables]

    def in_table(box: Box) -> bool:
        return any(_center_in(box, t) for t in table_boxes)

    items: list[tuple[Box, str, int]] = [
        (box, "image", 0) for box in images if _area(box) < 0.8 * page_area and not in_table(box)
    ]
    items += [(box, "vector", diagonal) for box, _, _, diagonal in drawings if not in_table(box)]
    regions: list[tuple[Box, set[str]]] = []
    for group in _clusters([it[0] for it in items], _CLUSTER_GAP):
        box = items[group[0]][0]
        for i in group[1:]:
            box = _union(box, items[i][0])
        box = _inter(box, page_box)
        if box[2] - box[0] < _MIN_FIGURE_SIDE or box[3] - box[1] < _MIN_FIGURE_SIDE:
            continue
        kinds = {items[i][1] for i in group}
        if "image" not in kinds and sum(items[i][2] for i in group) < 2:
            continue  # straight ruling only: a frame, shading or the grid of a list
        if any(_area(_inter(box, t)) >= 0.8 * _area(t) for t in table_boxes):
            continue  # the ruling around a table
        regions.append((box, kinds))
    merged = True
    while merged:  # overlapping regions are one figure
        merged = False
        for i in range(len(regions)):
            for j in range(i + 1, len(regions)):
                if _area(_inter(regions[i][0], regions[j][0])) > 0:
                    regions[i] = (
                        _union(regions[i][0], regions[j][0]),
                        regions[i][1] | regions[j][1],
                    )
                    del regions[j]
                    merged = True
                    break
            if merged:
                break
    regions.sort(key=lambda r: (r[0][1], r[0][0]))
    return [
        _Figure(box, "+".join(k for k in ("image", "vector") if k in kinds))
        for box, kinds in regions
    ]


# ---------------------------------------------------------------------------------------------
# Page scan


def _is_bold(span: dict[str, Any]) -> bool:
    return bool(span["flags"] & pymupdf.TEXT_FONT_BOLD) or "bold" in span["font"].lower()


def _page_lines(page: pymupdf.Page, number: int) -> tuple[list[_Line], Counter[float]]:
    """Visual lines in reading order, and the characters per font size."""
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
            if merged:  # a bullet and its text, or tab-separated parts: one visual line
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
            lines.append(_Line(number, b, box, text, size, all(_is_bold(s) for s in spans)))
    return lines, sizes


def _scan_page(page: pymupdf.Page, number: int) -> _Page:
    page_box = _box(page.rect)
    drawings = _visible_drawings(page, page_box)
    images = [_inter(_box(info["bbox"]), page_box) for info in page.get_image_info()]
    images = [box for box in images if _area(box) > 0]
    tables = _read_tables(page, drawings, images)
    lines, sizes = _page_lines(page, number)
    table_boxes = [_grow(t.bbox, 1) for t in tables]
    lines = [ln for ln in lines if not any(_center_in(ln.bbox, t) for t in table_boxes)]
    figures = _figure_regions(page_box, images, drawings, tables)
    return _Page(number, page_box, lines, tables, figures, sizes)


# ---------------------------------------------------------------------------------------------
# Whole-document passes


def _drop_running_lines(pages: Sequence[_Page]) -> None:
    """Drop lines repeated at the same height on more than half of the pages (running titles,
    footers, page numbers: numbers, roman numerals, "page" and "of" are ignored in the
    comparison, so that "ii" and "12 of 115" footers match). In a two-page document only lines
    in the top or bottom tenth of the page count, the margins of headers and footers."""
    n = len(pages)
    if n < 2:
        return
    where: dict[str, list[tuple[int, float, _Line]]] = defaultdict(list)
    for page in pages:
        height = page.rect[3] - page.rect[1]
        for line in page.lines:
            y = (line.bbox[1] + line.bbox[3]) / 2
            if n == 2 and 0.1 * height < y - page.rect[1] < 0.9 * height:
                continue
            text = _ROMAN.sub(" ", _DIGITS.sub(" ", line.text.lower()))
            where[normalise_ws(_PAGE_WORDS.sub(" ", text))].append((page.number, y, line))
    for occurrences in where.values():
        if len({p for p, _, _ in occurrences}) * 2 <= n:
            continue
        for _, y, line in occurrences:
            if len({p for p, y2, _ in occurrences if abs(y2 - y) <= 3}) * 2 > n:
                line.drop = True


def _text_width(page: _Page) -> float:
    live = [ln for ln in page.lines if not ln.drop]
    return max(ln.bbox[2] for ln in live) - min(ln.bbox[0] for ln in live) if live else 1.0


def _cover_title(page: _Page) -> str:
    """The largest text on the first page (running headers aside), lines joined."""
    lines = [ln for ln in page.lines if not ln.drop and re.search(r"[A-Za-z]{2}", ln.text)]
    if not lines:
        return ""
    top = max(ln.size for ln in lines)
    return " ".join(ln.text for ln in lines if ln.size >= top - 0.5)[:200]


def _is_label(line: _Line, fig: Box, lines_per_block: Counter[int]) -> bool:
    """Text drawn on a figure, a short label touching it, or one just left or right of it
    (dimension arrows)."""
    if _center_in(line.bbox, _grow(fig, 2)):
        return True
    if len(line.text.split()) > 5 or lines_per_block[line.block] > 3:
        return False
    if _FIGURE_CAPTION.match(line.text) or _TABLE_CAPTION.match(line.text):
        return False
    cy = (line.bbox[1] + line.bbox[3]) / 2
    beside = fig[1] <= cy <= fig[3] and _touches(line.bbox, _grow(fig, _LABEL_GAP))
    return beside or _touches(line.bbox, _grow(fig, 4))


def _attach_figure_text(page: _Page) -> None:
    """Labels of a figure leave the prose; an adjacent 'Figure N' line becomes its caption.

    A region whose text is mostly long prose lines is a framed text box, not a figure. Text over
    a large graphic on the first page is the cover title: it stays text.
    """
    kept = []
    lines_per_block = Counter(ln.block for ln in page.lines)
    for fig in page.figures:
        inside = [
            ln for ln in page.lines if not ln.drop and _is_label(ln, fig.bbox, lines_per_block)
        ]
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
    width = _text_width(page)
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
        caption = [best[1]]
        # short lines between the figure and a caption below it are labels too ("64-bit AXI4")
        top, bottom = (
            (fig.bbox[3], best[1].bbox[1]) if best[0] < 1000 else (best[1].bbox[3], fig.bbox[1])
        )
        between = (fig.bbox[0], top, fig.bbox[2], bottom)
        for ln in page.lines:
            if ln.drop or ln is best[1] or len(ln.text.split()) > 6:
                continue
            if _center_in(ln.bbox, between):
                ln.drop = True
                fig.labels.append(ln.text)
        following = [ln for ln in page.lines if ln.block == best[1].block and not ln.drop]
        for ln in following[following.index(best[1]) + 1 :]:
            if not _wraps_into(caption[-1], ln, width):
                break
            caption.append(ln)
        for ln in caption:
            ln.drop = True
        fig.caption = " ".join(ln.text for ln in caption)


def _table_captions(page: _Page) -> None:
    """A 'Table N' line just above (preferred) or below a table is its caption (it stays text)."""
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
                dist = max(below, 0.0) + 1000.0
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
    return max(weight.items(), key=lambda kv: (kv[1], -kv[0]))[0] if weight else 10.0


def _wraps_into(prev: _Line, line: _Line, text_width: float) -> bool:
    """``line`` continues ``prev`` (same style, next line down) because ``prev`` is full or
    both are centred (a title set over several lines)."""
    height = prev.bbox[3] - prev.bbox[1]
    gap = line.bbox[1] - prev.bbox[3]
    if abs(prev.size - line.size) > 0.5 or prev.bold != line.bold or not -2 <= gap <= 0.6 * height:
        return False
    full = prev.bbox[2] - prev.bbox[0] >= 0.6 * text_width
    centred = (
        abs((prev.bbox[0] + prev.bbox[2]) - (line.bbox[0] + line.bbox[2])) <= 6
        and abs(prev.bbox[0] - line.bbox[0]) > 3
    )
    return full or centred


@dataclass
class _Run:
    """Consecutive lines of one paragraph or one heading."""

    lines: list[_Line]

    @property
    def bbox(self) -> Box:
        box = self.lines[0].bbox
        for ln in self.lines[1:]:
            box = _union(box, ln.bbox)
        return box

    @property
    def text(self) -> str:
        return " ".join(ln.text for ln in self.lines)


def _heading_candidate(line: _Line, body: float) -> bool:
    return line.size >= body + 0.9 or (line.bold and line.size >= body - 0.6)


def _runs(page: _Page, body: float) -> list[_Run]:
    """Lines grouped into paragraphs (pymupdf text blocks) and headings (split off the blocks;
    a heading continues on the next line only when it wrapped)."""
    live = [ln for ln in page.lines if not ln.drop]
    width = _text_width(page)
    gaps: dict[int, list[float]] = defaultdict(list)
    for a, b in pairwise(live):
        if a.block == b.block:
            gaps[a.block].append(b.bbox[1] - a.bbox[3])
    usual = {block: sorted(g)[len(g) // 2] for block, g in gaps.items()}
    runs: list[_Run] = []
    prev: _Line | None = None
    for ln in live:
        candidate = _heading_candidate(ln, body)
        if prev is None or _FIGURE_CAPTION.match(ln.text) or _TABLE_CAPTION.match(ln.text):
            same = False
        elif candidate and _heading_candidate(prev, body):
            same = _wraps_into(prev, ln, width)
        else:
            # one text block may hold several paragraphs: a wider gap than usual starts one
            height = prev.bbox[3] - prev.bbox[1]
            limit = max(0.5 * height, usual.get(ln.block, 0.0) + 0.5 * height)
            same = (
                prev.block == ln.block
                and not candidate
                and not _heading_candidate(prev, body)
                and ln.bbox[1] - prev.bbox[3] <= limit
            )
        if same:
            runs[-1].lines.append(ln)
        else:
            runs.append(_Run([ln]))
        prev = ln
    return runs


def _heading_kind(run: _Run, body: float) -> str:
    """ "size" (larger than the body text), "bold" (a short bold line of body size) or ""."""
    text = run.text
    words = text.split()
    if len(run.lines) > 3 or not 2 <= len(text) <= 150 or len(words) > 20:
        return ""
    if not re.search(r"[A-Za-z]{2}", text) or _LEADER_DOTS.search(text) or "://" in text:
        return ""  # numbers, table-of-contents lines, URLs
    if _TABLE_CAPTION.match(text) or _FIGURE_CAPTION.match(text) or _BULLET.match(text):
        return ""
    if text.endswith((":", ",", ";")) or (text.endswith(".") and len(words) > 6):
        return ""  # the lead-in to a list, the end of a sentence
    if max(ln.size for ln in run.lines) >= body + 0.9:
        return "size"
    short = len(run.lines) <= 2 and len(text) <= 100
    if (
        short
        and all(ln.bold for ln in run.lines)
        and not text.endswith(".")
        and not text[0].islower()
    ):
        return "bold"
    return ""


def _demote_heading_lists(runs: list[_Run], kinds: list[str]) -> list[str]:
    """Three or more unnumbered heading-like lines of one style in a row, with nothing between
    them, are a list (a styled table of contents, a list of links), not headings."""
    out = list(kinds)

    def style(i: int) -> tuple[float, bool] | None:
        if not kinds[i] or _numbering_depth(runs[i].text):
            return None
        return (max(ln.size for ln in runs[i].lines), all(ln.bold for ln in runs[i].lines))

    i = 0
    while i < len(runs):
        j = i
        while style(i) is not None and j + 1 < len(runs) and style(j + 1) == style(i):
            j += 1
        if j - i >= 2:
            out[i : j + 1] = [""] * (j - i + 1)
        i = j + 1
    return out


def _numbering_depth(text: str) -> int:
    """1 for "3 Foo", "Chapter 3", "Appendix A"; 2 for "3.1 Foo", "A.1 Foo"; 0 when unnumbered."""
    if _CHAPTER.match(text):
        return 1
    match = _SECTION_NUMBER.match(text)
    return 1 + match.group(1).count(".") if match else 0


def _heading_levels(headings: list[_Run]) -> dict[int, int]:
    """Level 1-3 per heading run (keyed by id): the numbering depth when numbered; otherwise
    one below the numbered headings set larger (1 when none is larger); by size rank in a
    document without numbered headings."""
    size = {id(run): max(ln.size for ln in run.lines) for run in headings}
    depth = {id(run): _numbering_depth(run.text) for run in headings}
    numbered: dict[float, int] = {}
    for run in headings:
        if depth[id(run)]:
            s = size[id(run)]
            numbered[s] = min(numbered.get(s, 99), depth[id(run)])
    ranks = sorted(set(size.values()), reverse=True)
    levels = {}
    for run in headings:
        key = id(run)
        if depth[key]:
            level = depth[key]
        elif numbered:
            if size[key] in numbered:
                level = numbered[size[key]]
            else:
                larger = [d for s, d in numbered.items() if s > size[key]]
                level = max(larger) + 1 if larger else 1
        else:
            level = ranks.index(size[key]) + 1
        levels[key] = min(level, 3)
    return levels


def _run_text(run: _Run, vocab: set[str]) -> tuple[str, str]:
    """(kind, text): a paragraph's lines joined with spaces; list items start new lines."""
    first = run.lines[0].text
    starts = [bool(_BULLET.match(ln.text) or _ORDERED.match(ln.text)) for ln in run.lines]
    if _BULLET.match(first) and len(first) > 1:
        kind = "list"
    elif _ORDERED.match(first) and sum(starts) >= 2:
        kind = "ordered_list"
    else:
        return "paragraph", _join_lines((ln.text for ln in run.lines), vocab)
    items: list[list[str]] = []
    for ln, start in zip(run.lines, starts, strict=True):
        if start or not items:
            items.append([ln.text])
        else:
            items[-1].append(ln.text)
    return kind, "\n".join(_join_lines(item, vocab) for item in items)


def _vocabulary(pages: Iterable[_Page]) -> set[str]:
    words: set[str] = set()
    for page in pages:
        for ln in page.lines:
            words.update(_WORD.findall(ln.text.lower()))
        for table in page.tables:
            for row in table.rows:
                for cell in row:
                    words.update(_WORD.findall(cell.lower()))
    return words


# ---------------------------------------------------------------------------------------------
# Entry point


def parse_pdf(data: bytes, document: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Returns (document_row matching DOCUMENTS_SCHEMA, block rows matching BLOCKS_SCHEMA).

    Blocks come in reading order per page (top to bottom, then left to right); kinds are
    heading, paragraph, list, ordered_list, table (CSV text, meta header / n_rows / caption)
    and figure (caption text, meta source / caption / labels). Raises ``DocumentError`` for
    input that is not a readable, unencrypted PDF with a text layer.
    """
    doc = _open(data, document)
    try:
        metadata_title = _clean((doc.metadata or {}).get("title") or "")
        pages = []
        for number in range(doc.page_count):
            try:
                pages.append(_scan_page(doc[number], number))
            except Exception as exc:  # a damaged content stream, an unsupported object, ...
                reason = normalise_ws(str(exc)) or type(exc).__name__
                raise DocumentError(
                    document, f"page {number + 1} could not be read: {reason}"
                ) from exc
    finally:
        doc.close()
    if not any(p.sizes for p in pages):
        raise DocumentError(
            document, "PDF has no text layer (scanned images?); OCR is not configured"
        )

    _drop_running_lines(pages)
    cover_title = _cover_title(pages[0])
    for page in pages:
        _attach_figure_text(page)
        _table_captions(page)
    body = _body_size(pages)
    vocab = _vocabulary(pages)

    page_runs = [(page, _runs(page, body)) for page in pages]
    flat = [run for _, runs in page_runs for run in runs]
    kinds = _demote_heading_lists(flat, [_heading_kind(run, body) for run in flat])
    headings = [
        run
        for i, run in enumerate(flat)
        # a bold line is a heading when the next one is not bold as well (a list in bold)
        if kinds[i] == "size"
        or (kinds[i] == "bold" and (i + 1 == len(flat) or kinds[i + 1] != "bold"))
    ]
    levels = _heading_levels(headings)

    elements: list[tuple[int, Box, str, str, int, dict[str, Any]]] = []
    for page, runs in page_runs:
        items: list[tuple[Box, str, str, int, dict[str, Any]]] = []
        for run in runs:
            if id(run) in levels:
                items.append((run.bbox, "heading", run.text, levels[id(run)], {}))
            else:
                kind, text = _run_text(run, vocab)
                items.append((run.bbox, kind, text, 0, {}))
        for table in page.tables:
            rows = [[_join_lines(cell.split("\n"), vocab) for cell in row] for row in table.rows]
            meta: dict[str, Any] = {"header": rows[0], "n_rows": len(rows) - 1}
            if table.caption:
                meta["caption"] = _join_lines(table.caption.split("\n"), vocab)
            items.append((table.bbox, "table", _csv(rows), 0, meta))
        for fig in page.figures:
            meta = {"source": fig.source}
            if fig.caption:
                meta["caption"] = fig.caption
            if fig.labels:
                meta["labels"] = fig.labels
            items.append((fig.bbox, "figure", fig.caption, 0, meta))
        items.sort(key=lambda it: (round(it[0][1], 1), round(it[0][0], 1)))
        elements.extend((page.number + 1, *item) for item in items)

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
    title = (
        title
        or cover_title
        or next((b["text"] for b in blocks if b["kind"] == "heading"), document)
    )
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
