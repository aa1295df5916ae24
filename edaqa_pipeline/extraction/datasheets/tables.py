"""Reading a parsed PDF table as a datasheet table: header rows, column roles, continuations.

The PDF parser gives each ruled table as pipe-table rows (header row first, stacked group titles
already folded into one row). Datasheet tables need a little more before their rows can be
read as specifications:

* **multi-row headers**: a second or third row that repeats a header cell above it
  ("Access | Core/Bus | Side" over "Access | Core/Bus | Effect") or names the statistics under
  a group title ("Value" over "Min | Typ | Max") belongs to the header; labels are joined
  column by column ("Side Effect");
* **continuations**: a table whose first row is data (two or more numbers) and whose column
  count matches the previous table of the document continues it on the next page: it
  inherits that header and title;
* **column roles** from the labels: parameter, symbol, min, typ, max, value, unit,
  conditions, other. Min/typ/max need a short label ("Min", "Typ.", "Target", "Max 1.65"),
  so "Timing Constraint (MIN)" is a quantity, not a statistic. Units in headers
  ("Voltage (V)", "Pin Cap(pf)") are split off the label.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from edaqa_pipeline.extraction.datasheets.textutil import (
    header_unit,
    is_empty_value,
    is_number_list,
    is_numeric_cell,
    is_unit,
    normalise,
)
from edaqa_pipeline.text.markup import pipe_table

ROLES = ("parameter", "symbol", "min", "typ", "max", "value", "unit", "conditions", "other")
STAT_ROLES = ("min", "typ", "max")

_STAT_WORDS = {
    "min": "min", "min.": "min", "minimum": "min",
    "typ": "typ", "typ.": "typ", "typical": "typ", "nom": "typ", "nom.": "typ",
    "nominal": "typ", "target": "typ",
    "max": "max", "max.": "max", "maximum": "max",
}  # fmt: skip
_UNIT_LABELS = {"unit", "units", "unit(s)", "dimension"}
_SYMBOL_LABELS = {"symbol", "sym", "sym.", "symbols"}
_CONDITION_LABELS = {
    "condition", "conditions", "test condition", "test conditions", "meas. cond.",
    "meas cond", "measurement conditions", "measurement condition", "comment", "comments",
    "note", "notes", "remark", "remarks", "conditions/comments",
}  # fmt: skip
_PLAIN_CONDITION_LABELS = {"condition", "conditions", "test condition", "test conditions"}
_VALUE_LABELS = {
    "value", "values", "reset", "reset value", "default", "default value", "specification",
    "rating", "ratings", "setting", "spec", "spec.",
}  # fmt: skip
_PARAMETER_LABELS = {
    "parameter", "parameters", "characteristic", "characteristics", "item", "feature",
    "property", "field", "signal", "signals", "signal(s)", "signal name", "pin", "pin name",
    "register", "name", "cell name", "description",
}  # fmt: skip


def _stat(label: str) -> str | None:
    """min/typ/max when the label is just that statistic (possibly with a number or group)."""
    text, _ = header_unit(label)
    parts = normalise(text).split()
    if not parts or len(parts) > 3:
        return None
    hits = [_STAT_WORDS[p] for p in parts if p in _STAT_WORDS]
    if len(hits) != 1:
        return None
    rest = [p for p in parts if p not in _STAT_WORDS]
    # "Min 1.35" (a garbled cell), "Value Min" (group title), "Min." -- but not "Min Voltage"
    if all(re.fullmatch(r"[-+]?\d+(?:\.\d+)?|value|values|limits?|spec\.?", p) for p in rest):
        return hits[0]
    return None


def column_role(label: str, has_parameter: bool = False) -> str:
    """The role of a column from its (merged) header label."""
    text = normalise(label)
    bare, _unit = header_unit(label)
    bare_n = normalise(bare)
    stat = _stat(label)
    if stat:
        return stat
    if text in _UNIT_LABELS or bare_n in _UNIT_LABELS:
        return "unit"
    if bare_n in _SYMBOL_LABELS or (has_parameter and bare_n in {"name", "symbol name"}):
        return "symbol"
    if bare_n in _CONDITION_LABELS or bare_n.startswith(("test condition", "condition")):
        return "conditions"
    if bare_n in _VALUE_LABELS:
        return "value"
    if bare_n in _PARAMETER_LABELS:
        return "parameter"
    return "other"


def is_plain_condition_label(label: str) -> bool:
    return normalise(label) in _PLAIN_CONDITION_LABELS


def _looks_like_data(row: list[str]) -> bool:
    cells = [c for c in row if c.strip()]
    numeric = sum(1 for c in cells if is_numeric_cell(c) or is_number_list(c))
    return numeric >= 2 or (numeric >= 1 and numeric * 2 >= len(cells) and len(cells) > 1)


def _continues_header(row: list[str], header_rows: list[list[str]]) -> bool:
    if any(is_numeric_cell(c) or is_number_list(c) for c in row if c.strip()):
        return False
    first = header_rows[0]
    repeats = any(
        c.strip() and c.strip() == first[i].strip() for i, c in enumerate(row) if i < len(first)
    )
    stats_under_group = any(
        _stat(c) or normalise(c) in _UNIT_LABELS
        for i, c in enumerate(row)
        if c.strip() and i < len(first) and not _stat(first[i])
    )
    return repeats or stats_under_group


def merge_labels(header_rows: list[list[str]], n_cols: int) -> list[str]:
    labels = []
    for c in range(n_cols):
        parts: list[str] = []
        for row in header_rows:
            cell = " ".join(row[c].split()) if c < len(row) else ""
            if cell and (not parts or parts[-1] != cell):
                parts.append(cell)
        labels.append(" ".join(parts))
    return labels


@dataclass
class TableView:
    """One table read as a datasheet table."""

    labels: list[str]  # merged header label per column
    rows: list[list[str]]  # data rows (header rows removed), padded to len(labels)
    header_rows: int  # how many rows of this block formed the header (0 = inherited)
    inherited: bool = False  # header taken from the previous table (page continuation)
    title: str = ""  # caption, or the continued table's caption
    roles: list[str] = field(default_factory=list)
    units: list[str] = field(default_factory=list)  # unit found in each label ("" = none)

    def to_json(self) -> dict[str, object]:
        return {
            "labels": self.labels,
            "rows": self.rows,
            "header_rows": self.header_rows,
            "inherited": self.inherited,
            "title": self.title,
            "roles": self.roles,
            "units": self.units,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> TableView:
        return cls(
            labels=list(data["labels"]),  # type: ignore[arg-type]
            rows=[list(r) for r in data["rows"]],  # type: ignore[union-attr]
            header_rows=int(data["header_rows"]),  # type: ignore[arg-type]
            inherited=bool(data["inherited"]),
            title=str(data.get("title", "")),
            roles=list(data.get("roles", [])),  # type: ignore[arg-type]
            units=list(data.get("units", [])),  # type: ignore[arg-type]
        )


def _infer_roles(labels: list[str], rows: list[list[str]]) -> list[str]:
    has_parameter = any(column_role(lb) == "parameter" for lb in labels)
    roles = [column_role(lb, has_parameter) for lb in labels]
    # Unlabelled columns whose cells are all units ("ppm/K", "V") are unit columns.
    for c, label in enumerate(labels):
        if roles[c] != "other" or (label.strip() and not is_unit(label)):
            continue
        cells = [r[c] for r in rows if c < len(r) and not is_empty_value(r[c])]
        if cells and sum(is_unit(x) for x in cells) >= 0.8 * len(cells):
            roles[c] = "unit"
    # With a unit column and no statistic column, a single numeric "other" column is the value.
    if "unit" in roles and not any(r in roles for r in (*STAT_ROLES, "value")):
        numeric = [
            c
            for c, role in enumerate(roles)
            if role == "other" and _mostly_numeric([r[c] for r in rows if c < len(r)])
        ]
        if len(numeric) == 1:
            roles[numeric[0]] = "value"
    # A "Description" column names the row only when nothing better does: a text column 0
    # ("Nomenclature", "Signal") is the parameter, the description describes it.
    if (
        roles
        and roles[0] == "other"
        and "parameter" in roles
        and all(
            normalise(labels[c]) == "description" for c, r in enumerate(roles) if r == "parameter"
        )
        and not _mostly_numeric([r[0] for r in rows if r])
    ):
        roles[0] = "parameter"
        roles = ["other" if c and r == "parameter" else r for c, r in enumerate(roles)]
    # Several "parameter"-like columns: the first is the parameter, the rest describe it.
    seen = False
    for c, role in enumerate(roles):
        if role == "parameter":
            if seen:
                roles[c] = "other"
            seen = True
    return roles


def _mostly_numeric(cells: list[str]) -> bool:
    values = [c for c in cells if not is_empty_value(c)]
    return bool(values) and sum(is_numeric_cell(c) for c in values) >= 0.6 * len(values)


def inherits_header(rows: list[list[str]], caption: str, previous: TableView | None) -> bool:
    """Whether a table continues ``previous`` and takes its header: as many columns, no
    caption of its own, and a first row that is data (two or more numbers)."""
    rows = [r for r in rows if any(c.strip() for c in r)]
    width = max((len(r) for r in rows), default=0)
    return (previous is not None and bool(rows) and len(previous.labels) == width and not caption
            and _looks_like_data(rows[0]))


def read_table(
    rows: list[list[str]], caption: str = "", previous: TableView | None = None
) -> TableView:
    """Header, data rows and column roles of one parsed table (its rows of cells)."""
    rows = [list(r) for r in rows if any(c.strip() for c in r)]
    n_cols = max((len(r) for r in rows), default=0)
    rows = [r + [""] * (n_cols - len(r)) for r in rows]
    if not rows:
        return TableView(labels=[], rows=[], header_rows=0, title=caption)
    if inherits_header(rows, caption, previous):
        view = TableView(
            labels=list(previous.labels),
            rows=rows,
            header_rows=0,
            inherited=True,
            title=previous.title,
            roles=list(previous.roles),
            units=list(previous.units),
        )
        return view
    if _looks_like_data(rows[0]) and len(rows) > 1 and _looks_like_data(rows[1]):
        # no header at all (a table drawn without one): positional labels
        labels = [f"column {i + 1}" for i in range(n_cols)]
        view = TableView(labels=labels, rows=rows, header_rows=0, title=caption)
        view.roles = _infer_roles(labels, rows)
        view.units = [""] * n_cols
        return view
    header = [rows[0]]
    for row in rows[1:4]:
        if len(header) >= 3 or not _continues_header(row, header):
            break
        header.append(row)
    labels = merge_labels(header, n_cols)
    data = rows[len(header) :]
    units = [header_unit(lb)[1] for lb in labels]
    view = TableView(labels=labels, rows=data, header_rows=len(header), title=caption)
    view.roles = _infer_roles(labels, data)
    view.units = units
    return view


def render_table(view: TableView, section: str = "") -> str:
    """Markdown text of a table chunk: a title line, then the table as a pipe table with the
    resolved header (``text.markup.pipe_table``), so each row reads with its column names."""
    title = view.title or (f"table in {section}" if section else "table")
    if view.inherited:
        title += " (continued; header repeated from the previous page)"
    body = pipe_table([view.labels, *view.rows]) if view.labels else ""
    return f"Table: {title}\n{body}".rstrip()
