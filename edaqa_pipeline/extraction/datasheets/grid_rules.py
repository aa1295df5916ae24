"""Matrix and text tables: item x attribute grids and qualitative tables (offline rules).

* **matrix tables** (numeric columns, no statistics: "Cell Name | Area | Pin Cap(pf) c2p"):
  one property per numeric cell, named ``<row item> <column label>``, unit from the label, the
  row's other text cells as conditions. Numeric columns whose label repeats ("Slew(ns)",
  "Load(pf)" before each of "First", "Mid", "Last") are the index of the next uniquely
  labelled column and become its conditions; the row item (an I/O cell name) is the entity.
  Columns of logic levels (truth tables) are not values.
* **text tables** (no numbers): a two-column table maps keys to qualitative values
  ("CTI_O(2:0) '001'" -> "Constant address burst cycle"); wider tables give one property per
  short descriptive cell, with the row's categorical cells as conditions.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from edaqa_pipeline.extraction.datasheets.property_rows import raw_property
from edaqa_pipeline.extraction.datasheets.table_cells import (
    clean_cell,
    column,
    mostly_decimal,
    mostly_numeric,
)
from edaqa_pipeline.extraction.datasheets.tables import TableView
from edaqa_pipeline.extraction.datasheets.textutil import (
    header_unit,
    is_numeric_cell,
    normalise,
    split_number_unit,
)

_MAX_TEXT_VALUE = 120


_LOGIC = frozenset({"0", "1", "-", "x", "z", "h", "l", "r", "f", "?"})


def is_truth_table(view: TableView) -> bool:
    """All data cells are logic levels (0/1/-/X/Z): a function table, not specifications."""
    cells = [c.strip().lower() for r in view.rows for c in r if c.strip()]
    return bool(cells) and all(c in _LOGIC for c in cells)


_IDENTIFIER = re.compile(r"[A-Za-z][\w.\-\[\]:/]{1,39}")


def _logic_column(cells: list[str]) -> bool:
    values = [c.strip().lower() for c in cells if c.strip()]
    return len(values) >= 3 and all(v in _LOGIC for v in values)


def matrix_rows(view: TableView) -> list[dict[str, Any]]:
    if is_truth_table(view):
        return []
    n = len(view.labels)
    numeric = [
        c
        for c in range(n)
        if mostly_numeric(column(view, c)) and not _logic_column(column(view, c))
    ]
    params = [c for c in range(n) if view.roles[c] == "parameter"]
    if params:
        name_col: int | None = params[0]
    elif not mostly_decimal(column(view, 0)):
        name_col = 0
    else:
        name_col = None
    value_cols = [c for c in numeric if c != name_col]
    key_cols = [c for c in range(n) if c not in value_cols and c != name_col]
    bases = [header_unit(view.labels[c]) for c in range(n)]
    counts = Counter(bases[c][0] for c in value_cols)
    # Index columns: numeric columns whose label repeats ("Slew(ns)", "Load(pf)" before each
    # of "First", "Mid", "Last") are the conditions of the next column with a unique label.
    index_of: dict[int, list[int]] = {}
    pending: list[int] = []
    for c in value_cols:
        if counts[bases[c][0]] > 1:
            pending.append(c)
        else:
            index_of[c] = pending
            pending = []
    indexed = {c for cols in index_of.values() for c in cols}
    seen: Counter[str] = Counter()
    labels: dict[int, str] = {}
    for c in value_cols:
        base = bases[c][0] or f"column {c + 1}"
        seen[base] += 1
        labels[c] = f"{base} #{seen[base]}" if counts[bases[c][0]] > 1 else base
    out: list[dict[str, Any]] = []
    carried = ""
    for i, row in enumerate(view.rows):
        key = " ".join(row[name_col].split()) if name_col is not None else ""
        key = key or carried
        carried = key
        row_conditions = [
            f"{view.labels[c] or f'column {c + 1}'}: {' '.join(row[c].split())}"
            for c in key_cols
            if clean_cell(row[c]) and len(row[c]) <= 80
        ]
        for c in value_cols:
            if c in indexed:
                continue
            cell = clean_cell(row[c])
            if cell is None:
                continue
            parts = split_number_unit(cell)
            value, cell_unit = parts if parts else (cell, "")
            unit = bases[c][1] or cell_unit
            name = f"{key} {labels[c]}".strip() if key else labels[c]
            entity = key if _IDENTIFIER.fullmatch(key) and not is_numeric_cell(key) else ""
            index = [
                f"{bases[x][0]} = {' '.join(row[x].split())}"
                + (f" {bases[x][1]}" if bases[x][1] else "")
                for x in index_of.get(c, [])
                if clean_cell(row[x])
            ]
            out.append(raw_property(name, value, "table:matrix", row=i, unit=unit, entity=entity,
                                    conditions="; ".join([*row_conditions, *index])))
    return out


_DESCRIPTIVE = frozenset(
    {"description", "function", "meaning", "definition", "purpose", "explanation", "comment",
     "comments", "specification"}
)  # fmt: skip


def _categorical(cells: list[str]) -> bool:
    values = [" ".join(c.split()) for c in cells if c.strip()]
    return len(values) >= 3 and len(set(values)) <= 0.5 * len(values)


def text_rows(view: TableView) -> list[dict[str, Any]]:
    n = len(view.labels)
    if n < 2:
        return []
    out: list[dict[str, Any]] = []
    if n == 2:
        head = " ".join(view.labels[0].split())
        for i, row in enumerate(view.rows):
            key, value = " ".join(row[0].split()), " ".join(row[1].split())
            if not key or not value or len(value) > _MAX_TEXT_VALUE or len(key) > 80:
                continue
            name = f"{head} {key}" if head and len(key) <= 24 else key
            out.append(raw_property(name, value, "table:text", row=i))
        return out
    keys = [c for c in range(1, n) if _categorical(column(view, c))]
    values = [c for c in range(1, n) if c not in keys] or list(range(1, n))
    carried = ""
    for i, row in enumerate(view.rows):
        key = " ".join(row[0].split()) or carried
        carried = key
        if not key or len(key) > 80:
            continue
        for c in values:
            cell = " ".join(row[c].split())
            if not cell or len(cell) > _MAX_TEXT_VALUE or cell == key:
                continue
            conditions = "; ".join(
                f"{view.labels[k]}: {' '.join(row[k].split())}"
                for k in keys
                if k != c and row[k].strip() and len(row[k]) <= 60
            )
            label = " ".join(view.labels[c].split())
            name = key if normalise(label) in _DESCRIPTIVE else f"{key} {label}".strip()
            out.append(raw_property(name, cell, "table:text", row=i, conditions=conditions))
    return out


__all__ = ["is_truth_table", "matrix_rows", "text_rows"]
