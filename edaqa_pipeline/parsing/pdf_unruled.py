"""Tables drawn without ruling lines, found by layout analysis of the words on a page.

pymupdf's text-strategy table finder was measured on the four corpus PDFs and refused: on
prose pages it cuts words in half at invented column edges ("TheWISHBONE1 System-on-Ch" |
"sisa"), finds tables in tables of contents, glossaries and timing diagrams, and misses the
unruled tables it should find. What an engineer reads as an unruled table is narrower and
easy to state:

* **rows** -- words on one baseline split into *cells* wherever the gap between two words is
  wider than ``GAP_EM`` times the font size (a column gap, not a word space);
* **a table** -- at least ``MIN_ROWS`` consecutive rows (no more than ``ROW_GAP`` line heights
  apart) of two or more cells whose cells fall into the same columns (each cell overlaps
  exactly one column of the region; columns are the union of overlapping cell intervals);
* **numbers** -- at least ``MIN_NUMERIC`` of the columns hold mostly numbers (or numbers with
  a unit, hex literals) below their first row, and no cell is longer than ``MAX_CELL``
  characters: specification tables, not two-column prose, glossaries or definition lists;
* **header** -- the aligned non-numeric row directly above the body, if there is one.

Words inside ruled tables and figures are never considered, nor regions with vertical strokes
inside (byte-lane and register diagrams drawn as boxes). A table found here is a
``PdfTable`` with ``ruled = False``; its rows are cells like a ruled table's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from edaqa_pipeline.parsing.pdf_layout import (
    Box,
    Drawing,
    PdfTable,
    center_in,
    clean_text,
    grow_box,
)

GAP_EM = 1.2
ROW_GAP = 2.6
MIN_ROWS = 3
MIN_COLUMNS = 2
MAX_COLUMNS = 14
MIN_NUMERIC = 0.4
MAX_CELL = 40
_NUMERIC = re.compile(
    r"^[-+±−–]?\s?(?:\d+(?:[.,]\d+)*|0x[0-9A-Fa-f_]+)(?:\s?[%A-Za-zµΩ°/²³]{1,8})?$"
)


@dataclass
class _Cell:
    x0: float
    x1: float
    text: str


@dataclass
class _Row:
    top: float
    bottom: float
    cells: list[_Cell]

    @property
    def height(self) -> float:
        return self.bottom - self.top


def _rows(words: Sequence[tuple], skip: Sequence[Box]) -> list[_Row]:
    """Words grouped into rows by baseline, each row cut into cells at column gaps."""
    live = [w for w in words if w[4].strip() and not any(center_in((w[0], w[1], w[2], w[3]), b) for b in skip)]
    live.sort(key=lambda w: ((w[1] + w[3]) / 2, w[0]))
    rows: list[list[tuple]] = []
    for w in live:
        mid = (w[1] + w[3]) / 2
        if rows:
            last = rows[-1]
            top, bottom = min(x[1] for x in last), max(x[3] for x in last)
            if top <= mid <= bottom or abs(mid - (top + bottom) / 2) <= 0.3 * (bottom - top):
                last.append(w)
                continue
        rows.append([w])
    out = []
    for group in rows:
        group.sort(key=lambda w: w[0])
        height = max(w[3] - w[1] for w in group)
        cells: list[_Cell] = []
        for w in group:
            if cells and w[0] - cells[-1].x1 <= GAP_EM * height:
                cells[-1].x1, cells[-1].text = max(cells[-1].x1, w[2]), f"{cells[-1].text} {w[4]}"
            else:
                cells.append(_Cell(w[0], w[2], w[4]))
        for cell in cells:
            cell.text = clean_text(cell.text)
        out.append(_Row(min(w[1] for w in group), max(w[3] for w in group), cells))
    return out


def _columns(rows: Sequence[_Row]) -> list[tuple[float, float]] | None:
    """Column intervals of rows whose cells line up (each cell in exactly one column)."""
    intervals = sorted((c.x0, c.x1) for r in rows for c in r.cells)
    columns: list[list[float]] = []
    for x0, x1 in intervals:
        if columns and x0 <= columns[-1][1]:
            columns[-1][1] = max(columns[-1][1], x1)
        else:
            columns.append([x0, x1])
    if not MIN_COLUMNS <= len(columns) <= MAX_COLUMNS:
        return None
    for row in rows:
        used = [next(i for i, (a, b) in enumerate(columns) if a <= c.x0 <= b) for c in row.cells]
        if len(set(used)) != len(used):
            return None  # two cells of one row in one column: not aligned
    return [(a, b) for a, b in columns]


def _numeric_share(rows: Sequence[_Row]) -> float:
    cells = [c.text for r in rows for c in r.cells]
    return sum(bool(_NUMERIC.match(c)) for c in cells) / len(cells) if cells else 0.0


def _grid(rows: Sequence[_Row], columns: list[tuple[float, float]]) -> list[list[str]]:
    grid = []
    for row in rows:
        line = [""] * len(columns)
        for cell in row.cells:
            j = next(i for i, (a, b) in enumerate(columns) if a <= cell.x0 <= b)
            line[j] = cell.text
        grid.append(line)
    return grid


def _numeric_columns(grid: list[list[str]]) -> int:
    """Columns whose filled cells below the first row are mostly numbers."""
    count = 0
    for j in range(len(grid[0])):
        cells = [row[j] for row in grid[1:] if row[j]]
        if cells and sum(bool(_NUMERIC.match(c)) for c in cells) >= 0.6 * len(cells):
            count += 1
    return count


def _accept(body: list[_Row]) -> list[tuple[float, float]] | None:
    if len(body) < MIN_ROWS or any(len(c.text) > MAX_CELL for r in body for c in r.cells):
        return None
    columns = _columns(body)
    if columns is None:
        return None
    numeric = _numeric_columns(_grid(body, columns))
    return columns if numeric and numeric >= MIN_NUMERIC * len(columns) else None


def _drawn(box: Box, drawings: Sequence[Drawing]) -> bool:
    """Vertical strokes inside the region: a diagram of boxes (byte lanes, register layouts) or
    a grid the ruled-table finder refused, not an unruled table."""
    inner = grow_box(box, 2)
    return sum(d[2] for d in drawings if center_in(d[0], inner)) >= 2


def unruled_tables(words: Sequence[tuple], skip: Sequence[Box],
                   drawings: Sequence[Drawing] = ()) -> list[PdfTable]:
    """Unruled tables among ``words`` (``page.get_text("words")`` tuples) outside ``skip``;
    ``drawings`` (the page's visible strokes) refuse regions drawn with vertical lines."""
    rows = _rows(words, [grow_box(b, 2) for b in skip])
    tables: list[PdfTable] = []
    i = 0
    while i < len(rows):
        j = i
        while (j + 1 < len(rows) and len(rows[j + 1].cells) >= MIN_COLUMNS and len(rows[i].cells) >= MIN_COLUMNS
               and rows[j + 1].top - rows[j].bottom <= ROW_GAP * max(rows[j].height, 1.0)):
            j += 1
        body = rows[i : j + 1]
        columns = _accept(body) if len(rows[i].cells) >= MIN_COLUMNS else None
        if columns is None:
            i += 1
            continue
        head = rows[i - 1] if i > 0 else None
        if (head is not None and len(head.cells) >= MIN_COLUMNS and _numeric_share([head]) == 0
                and body[0].top - head.bottom <= ROW_GAP * max(head.height, 1.0)
                and _columns([head, *body]) is not None):
            body = [head, *body]
            columns = _columns(body) or columns
        box = (min(c.x0 for r in body for c in r.cells), body[0].top,
               max(c.x1 for r in body for c in r.cells), body[-1].bottom)
        if not _drawn(box, drawings):
            tables.append(PdfTable(box, _grid(body, columns), ruled=False))
        i = j + 1
    return tables
