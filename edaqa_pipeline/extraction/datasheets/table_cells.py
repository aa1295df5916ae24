"""Reading datasheet table cells: empty markers, statistics with units, mostly-numeric columns.

Shared by every table rule (``spec_rules``, ``grid_rules``): a cell is empty when it holds
one of the datasheet empty markers ("-", "n/a", "TBD"), a statistic cell splits into its
number and the unit printed with it ("55 MHz"), and a column is numeric when 60 % of its
filled cells are.
"""

from __future__ import annotations

from edaqa_pipeline.extraction.datasheets.tables import TableView, is_plain_condition_label
from edaqa_pipeline.extraction.datasheets.textutil import (
    is_empty_value,
    is_number,
    is_numeric_cell,
    split_number_unit,
)


def clean_cell(cell: str | None) -> str | None:
    if cell is None:
        return None
    text = " ".join(cell.split())
    return None if is_empty_value(text) else text


def split_stat(cell: str | None) -> tuple[str | None, str]:
    """A statistic cell -> (value, unit found in the cell)."""
    text = clean_cell(cell)
    if text is None:
        return None, ""
    parts = split_number_unit(text)
    if parts is None:
        return text, ""  # "VIN + 0.3", "0xFFFF_FFFF": kept as printed
    return parts


def mostly_numeric(cells: list[str]) -> bool:
    values = [c for c in cells if not is_empty_value(c)]
    return bool(values) and sum(is_numeric_cell(c) for c in values) >= 0.6 * len(values)


def mostly_decimal(cells: list[str]) -> bool:
    values = [c for c in cells if not is_empty_value(c)]
    return bool(values) and sum(
        is_number(c) and not c.strip().lower().startswith("0x") for c in values
    ) >= 0.6 * len(values)


def column(view: TableView, c: int) -> list[str]:
    return [r[c] for r in view.rows if c < len(r)]


def label_cell(label: str, cell: str) -> str:
    return cell if is_plain_condition_label(label) or not label else f"{label}: {cell}"
