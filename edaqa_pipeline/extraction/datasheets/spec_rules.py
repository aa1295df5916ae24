"""Specification and register tables: one property per row (paper I-B, offline rules).

* **spec tables** (a min/typ/max or value column): one property per row; name from the
  parameter column (carried down into rows that leave it empty), symbol, statistics, unit from
  the unit column, else from the statistic's header ("Voltage (V)"), else from the cell
  ("55 MHz"); conditions from condition/comment columns; short other columns ("Bits",
  "Access") are conditions too, since they tell rows apart, long ones go to the description.
  A row with k symbols and k numbers per cell ("TC1 TC2 | 3100 0.3 | ppm/K ppm/K2") gives k
  properties.
* **register tables** (a field column, a bits column and a reset column: "Field | Bits |
  Description | Access | Reset"): one property per bit field, named ``<register> <field>``
  (the register from the caption, "mitb0/1" in "Internal Timer Bound 0 / 1 Register (mitb0/1,
  at CSR 0x7D3 / 0x7D6)"), value = the reset value as printed, conditions ``bits 31:0; access
  R/W``, the description cell in the description. Reserved fields are skipped.

``table_kind`` decides which rule (or ``grid_rules``) reads a table.
"""

from __future__ import annotations

import re
from typing import Any

from edaqa_pipeline.extraction.datasheets.grid_rules import matrix_rows, text_rows
from edaqa_pipeline.extraction.datasheets.property_rows import display_value, raw_property
from edaqa_pipeline.extraction.datasheets.table_cells import (
    clean_cell,
    column,
    label_cell,
    mostly_numeric,
    split_stat,
)
from edaqa_pipeline.extraction.datasheets.tables import STAT_ROLES, TableView
from edaqa_pipeline.extraction.datasheets.textutil import (
    is_number_list,
    is_numeric_cell,
    normalise,
)

_FIELD_LABELS = {"field", "field name", "name", "bit name", "bit field", "bitfield", "signal"}
_BITS_LABELS = {"bits", "bit", "bit(s)", "bit position", "bit range", "position", "bits range"}
_RESET_LABELS = {"reset", "reset value", "default", "default value", "reset state", "init", "initial value"}
_ACCESS_LABELS = {"access", "type", "r/w", "mode", "attribute", "attr"}
_REGISTER = re.compile(r"\(([A-Za-z][\w./{}|\- ]{0,30}?)\s*(?:,|\))")
_RESERVED = re.compile(r"^(?:reserved|rsvd|unused)\b", re.IGNORECASE)


def _register_columns(view: TableView) -> tuple[int, int, int, int | None] | None:
    """(field, bits, reset, access) column indexes of a register table, else None."""
    labels = [normalise(lb) for lb in view.labels]
    find = lambda names: next((c for c, lb in enumerate(labels) if lb in names), None)  # noqa: E731
    field_col, bits_col, reset_col = find(_FIELD_LABELS), find(_BITS_LABELS), find(_RESET_LABELS)
    if field_col is None or bits_col is None or reset_col is None:
        return None
    return field_col, bits_col, reset_col, find(_ACCESS_LABELS)


def table_kind(view: TableView) -> str:
    """register | spec | matrix | text | empty."""
    if not view.rows or not view.labels:
        return "empty"
    if _register_columns(view) is not None:
        return "register"
    if any(role in view.roles for role in (*STAT_ROLES, "value")):
        return "spec"
    if any(mostly_numeric(column(view, c)) for c in range(len(view.labels))):
        return "matrix"
    return "text"


def register_name(title: str) -> str:
    """The register a register table describes: "mitb0/1" from "... Register (mitb0/1, at CSR
    0x7D3 / 0x7D6)"; "" when the title names none."""
    found = _REGISTER.findall(title or "")
    return found[-1].strip() if found else ""


def register_rows(view: TableView) -> list[dict[str, Any]]:
    cols = _register_columns(view)
    assert cols is not None
    field_col, bits_col, reset_col, access_col = cols
    skip = {field_col, bits_col, reset_col, access_col}
    register = register_name(view.title)
    out: list[dict[str, Any]] = []
    for i, row in enumerate(view.rows):
        field = " ".join(row[field_col].split())
        reset = clean_cell(row[reset_col])
        bits = clean_cell(row[bits_col])
        if not field or reset is None or _RESERVED.match(field):
            continue
        conditions = "; ".join(x for x in (
            f"bits {bits}" if bits else "",
            f"access {' '.join(row[access_col].split())}" if access_col is not None and clean_cell(row[access_col]) else "",
        ) if x)
        extra = "; ".join(f"{view.labels[c]}: {' '.join(row[c].split())}"
                          for c in range(len(row)) if c not in skip and clean_cell(row[c]))
        name = f"{register} {field}" if register and normalise(register) not in normalise(field) else field
        out.append(raw_property(name, reset, "table:register", row=i, conditions=conditions,
                                extra=f"reset value; {extra}" if extra else "reset value",
                                entity=register))
    return out


def spec_rows(view: TableView) -> list[dict[str, Any]]:
    roles = view.roles
    n = len(view.labels)
    params = [c for c in range(n) if roles[c] == "parameter"]
    if params:
        name_col = params[0]
    else:
        text_cols = [
            c for c in range(n) if roles[c] == "other" and not mostly_numeric(column(view, c))
        ]
        name_col = text_cols[0] if text_cols else 0
    symbol_col = next((c for c in range(n) if roles[c] == "symbol"), None)
    unit_col = next((c for c in range(n) if roles[c] == "unit"), None)
    stat_cols = {role: c for c in range(n) if (role := roles[c]) in (*STAT_ROLES, "value")}
    cond_cols = [c for c in range(n) if roles[c] == "conditions"]
    other_cols = [
        c for c in range(n) if roles[c] == "other" and c != name_col and c not in stat_cols.values()
    ]
    out: list[dict[str, Any]] = []
    carried = ""
    for i, row in enumerate(view.rows):
        filled = [c for c in row if c.strip()]
        if len(filled) > 2 and len(set(filled)) == 1:
            continue  # a note spanned over the whole row ("refer section 2.13")
        name = " ".join(row[name_col].split()) if name_col < len(row) else ""
        raw = {role: row[c] if c < len(row) else "" for role, c in stat_cols.items()}
        if not any(clean_cell(v) for v in raw.values()):
            carried = name or carried
            continue
        texts = {" ".join(v.split()) for v in raw.values() if clean_cell(v)}
        if len(raw) >= 2 and len(texts) == 1 and not is_numeric_cell(next(iter(texts))):
            continue  # one note spanned over the value columns ("refer section 2.15")
        if not name:
            name = carried
        if not name:
            continue
        carried = name
        symbol = " ".join(row[symbol_col].split()) if symbol_col is not None else ""
        unit_cell = clean_cell(row[unit_col]) if unit_col is not None else None
        # short descriptive cells ("Bits: 31:2", "Access: R/W") tell rows apart: conditions;
        # long ones ("Description: ...") only describe the property
        short = [c for c in other_cols if clean_cell(row[c]) and len(row[c]) <= 40]
        conditions = "; ".join(
            [
                *(
                    label_cell(view.labels[c], " ".join(row[c].split()))
                    for c in cond_cols
                    if clean_cell(row[c])
                ),
                *(
                    f"{view.labels[c] or f'column {c + 1}'}: {' '.join(row[c].split())}"
                    for c in short
                ),
            ]
        )
        extra = "; ".join(
            f"{view.labels[c] or f'column {c + 1}'}: {' '.join(row[c].split())}"
            for c in other_cols
            if clean_cell(row[c]) and c not in short
        )
        # k symbols with k numbers in every filled statistic cell -> k properties
        symbols = symbol.split()
        k = len(symbols)
        stat_texts = {role: clean_cell(v) for role, v in raw.items()}
        splittable = (
            k >= 2
            and all(
                v is None or (is_number_list(v) and len(v.split()) == k)
                for v in stat_texts.values()
            )
            and any(v is not None for v in stat_texts.values())
            and (unit_cell is None or len(unit_cell.split()) in (1, k))
        )
        variants: list[tuple[str, dict[str, str | None], str | None]] = []
        if splittable:
            units = unit_cell.split() if unit_cell else []
            for j in range(k):
                stats_j = {r: (v.split()[j] if v else None) for r, v in stat_texts.items()}
                unit_j = units[j] if len(units) == k else (units[0] if units else None)
                variants.append((symbols[j], stats_j, unit_j))
        else:
            variants.append((symbol, {r: v for r, v in raw.items()}, unit_cell))
        for sym, stats, unit_given in variants:
            values: dict[str, str | None] = {}
            cell_unit = ""
            for role, cell in stats.items():
                value, found = split_stat(cell)
                values[role] = value
                cell_unit = cell_unit or found
            unit = unit_given or ""
            if not unit:
                for role in ("typ", "min", "max", "value"):
                    if role in stat_cols and (u := view.units[stat_cols[role]]):
                        unit = u
                        break
            unit = unit or cell_unit
            vmin, vtyp, vmax = values.get("min"), values.get("typ"), values.get("max")
            value = display_value(vmin, vtyp, vmax, values.get("value"))
            out.append(raw_property(name, value, "table:spec", row=i, unit=unit, vmin=vmin,
                                    vtyp=vtyp, vmax=vmax, symbol=sym, conditions=conditions,
                                    extra=extra))
    return out


def table_properties(view: TableView) -> list[dict[str, Any]]:
    """Raw property fields from one table (no ids or provenance yet)."""
    kind = table_kind(view)
    if kind == "register":
        return register_rows(view)
    if kind == "spec":
        return spec_rows(view)
    if kind == "matrix":
        return matrix_rows(view)
    if kind == "text":
        return text_rows(view)
    return []


__all__ = ["register_name", "register_rows", "spec_rows", "table_kind", "table_properties"]
