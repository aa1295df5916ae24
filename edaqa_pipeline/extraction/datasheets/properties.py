"""Property extraction from datasheet chunks (the paper's section I-B).

A property is one engineering specification: ``name``, a brief ``description`` that keeps
its context (conditions, configurations, variants, test conditions), a value or a range with
``value_min`` / ``value_typ`` / ``value_max`` kept apart (strings exactly as printed), a
``unit``, and its provenance: the source chunk id and page.

Two extractors produce the same rows:

* **offline (default)**, deterministic and header-aware, so the graph is useful without a
  model:

  - *spec tables* (a min/typ/max or value column): one property per row; name from the
    parameter column (carried down into rows that leave it empty), symbol, statistics, unit
    from the unit column, else from the statistic's header ("Voltage (V)"), else from the
    cell ("55 MHz"); conditions from condition/comment columns; other columns ("Bits",
    "Access") go into the description. A row with k symbols and k numbers per cell
    ("TC1 TC2 | 3100 0.3 | ppm/K ppm/K2") gives k properties.
  - *matrix tables* (numeric columns, no statistics: "Cell Name | Area | Pin Cap(pf) c2p"):
    one property per numeric cell, named "<row key> <column label>", unit from the label,
    the row's other text cells as conditions.
  - *text tables* (no numbers): a two-column table maps keys to qualitative values
    ("CTI_O(2:0) '001'" -> "Constant address burst cycle"); wider tables give one property
    per short descriptive cell, with the row's categorical cells as conditions.
  - *sentences*: explicit "X is N unit" statements ("The quiescent current is 45 uA.",
    "... is fixed at 3.3 V ...", "... is at least 1 uF ..."), with a trailing "at/with/when
    ..." clause or a leading "With ..., " clause as conditions.

  Tables in revision histories, reference lists and glossaries are skipped.

* **LLM** (``datasheet_properties`` task): the chunk with the paper's general description
  plus the category's description, an instructor schema, validation against the input (the
  source chunk id must be the chunk sent, a name and a value are required), cached by the
  layer. A chunk whose call fails falls back to the offline rules (``rule`` says which).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

import polars as pl
from pydantic import BaseModel, Field

from edaqa_pipeline.extraction.datasheets.chunks import table_view
from edaqa_pipeline.extraction.datasheets.skeletons import (
    CATEGORY_DESCRIPTIONS,
    GENERAL_DESCRIPTION,
)
from edaqa_pipeline.extraction.datasheets.tables import (
    STAT_ROLES,
    TableView,
    is_plain_condition_label,
)
from edaqa_pipeline.extraction.datasheets.textutil import (
    NUMBER_RE,
    UNIT_RE,
    header_unit,
    is_empty_value,
    is_number,
    is_number_list,
    is_numeric_cell,
    is_unit,
    normalise,
    split_number_unit,
    strip_numbering,
)
from edaqa_pipeline.llm import (
    DATA_NOT_INSTRUCTIONS,
    LLMClient,
    LLMError,
    LLMTask,
    delimit,
    register_task,
)
from edaqa_pipeline.model import BBOX, STRS, stable_id

TASK = "datasheet_properties"

DATASHEET_PROPERTIES_SCHEMA: dict[str, pl.DataType] = {
    "property_id": pl.String(),
    "document": pl.String(),
    "name": pl.String(),
    "symbol": pl.String(),
    "description": pl.String(),
    "value": pl.String(),  # the value or range as one display string
    "value_min": pl.String(),  # statistics kept apart, exactly as printed (null = none)
    "value_typ": pl.String(),
    "value_max": pl.String(),
    "unit": pl.String(),
    "conditions": pl.String(),
    "entity": pl.String(),  # the row's item in an item x attribute table (a cell, a pin), or ""
    "category": pl.String(),  # hardware category of the document
    "section_path": STRS,
    "table_title": pl.String(),
    "chunk_id": pl.String(),  # source chunk (provenance)
    "page": pl.Int64(),
    "bbox": BBOX,
    "rule": pl.String(),  # table:spec | table:matrix | table:text | sentence | llm:... | ...
    "row": pl.Int64(),  # data row (tables) or sentence index (prose) within the chunk
}

_SKIP_SECTIONS = re.compile(
    r"revision|change history|document history|reference documents|references\b|"
    r"abbreviations?|glossary|acronyms?|table of contents|\bcontents\b|list of (?:tables|figures)|"
    r"copyright|licen[cs]e|trademark|disclaimer|ordering information",
    re.IGNORECASE,
)
_MAX_TEXT_VALUE = 120


def property_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    if not rows:
        return pl.DataFrame(schema=DATASHEET_PROPERTIES_SCHEMA)
    return pl.DataFrame(rows, schema=DATASHEET_PROPERTIES_SCHEMA, strict=False).select(
        list(DATASHEET_PROPERTIES_SCHEMA)
    )


# ---------------------------------------------------------------------------------------------
# Value helpers


def _clean_cell(cell: str | None) -> str | None:
    if cell is None:
        return None
    text = " ".join(cell.split())
    return None if is_empty_value(text) else text


def _split_stat(cell: str | None) -> tuple[str | None, str]:
    """A statistic cell -> (value, unit found in the cell)."""
    text = _clean_cell(cell)
    if text is None:
        return None, ""
    parts = split_number_unit(text)
    if parts is None:
        return text, ""  # "VIN + 0.3", "0xFFFF_FFFF": kept as printed
    return parts


def display_value(
    vmin: str | None, vtyp: str | None, vmax: str | None, value: str | None = None
) -> str:
    """One display string: the value, or "min X, typ Y, max Z" with the parts present."""
    if value:
        return value
    parts = [(k, v) for k, v in (("min", vmin), ("typ", vtyp), ("max", vmax)) if v]
    if len(parts) == 1:
        return parts[0][1]
    return ", ".join(f"{k} {v}" for k, v in parts)


def _describe(
    name: str,
    symbol: str,
    title: str,
    section: list[str],
    conditions: str,
    extra: str = "",
) -> str:
    where = title or (strip_numbering(section[-1]) if section else "")
    text = name + (f" ({symbol})" if symbol and symbol != name else "")
    if where:
        text += f", from {where}"
    if conditions:
        text += f"; conditions: {conditions}"
    if extra:
        text += f"; {extra}"
    return text


# ---------------------------------------------------------------------------------------------
# Tables


def _mostly_numeric(cells: list[str]) -> bool:
    values = [c for c in cells if not is_empty_value(c)]
    return bool(values) and sum(is_numeric_cell(c) for c in values) >= 0.6 * len(values)


def _mostly_decimal(cells: list[str]) -> bool:
    values = [c for c in cells if not is_empty_value(c)]
    return bool(values) and sum(
        is_number(c) and not c.strip().lower().startswith("0x") for c in values
    ) >= 0.6 * len(values)


def _column(view: TableView, c: int) -> list[str]:
    return [r[c] for r in view.rows if c < len(r)]


def table_kind(view: TableView) -> str:
    """spec | matrix | text | empty."""
    if not view.rows or not view.labels:
        return "empty"
    if any(role in view.roles for role in (*STAT_ROLES, "value")):
        return "spec"
    if any(_mostly_numeric(_column(view, c)) for c in range(len(view.labels))):
        return "matrix"
    return "text"


def _label_cell(label: str, cell: str) -> str:
    return cell if is_plain_condition_label(label) or not label else f"{label}: {cell}"


def _spec_rows(view: TableView) -> list[dict[str, Any]]:
    roles = view.roles
    n = len(view.labels)
    params = [c for c in range(n) if roles[c] == "parameter"]
    if params:
        name_col = params[0]
    else:
        text_cols = [
            c for c in range(n) if roles[c] == "other" and not _mostly_numeric(_column(view, c))
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
        if not any(_clean_cell(v) for v in raw.values()):
            carried = name or carried
            continue
        texts = {" ".join(v.split()) for v in raw.values() if _clean_cell(v)}
        if len(raw) >= 2 and len(texts) == 1 and not is_numeric_cell(next(iter(texts))):
            continue  # one note spanned over the value columns ("refer section 2.15")
        if not name:
            name = carried
        if not name:
            continue
        carried = name
        symbol = " ".join(row[symbol_col].split()) if symbol_col is not None else ""
        unit_cell = _clean_cell(row[unit_col]) if unit_col is not None else None
        # short descriptive cells ("Bits: 31:2", "Access: R/W") tell rows apart: conditions;
        # long ones ("Description: ...") only describe the property
        short = [c for c in other_cols if _clean_cell(row[c]) and len(row[c]) <= 40]
        conditions = "; ".join(
            [
                *(
                    _label_cell(view.labels[c], " ".join(row[c].split()))
                    for c in cond_cols
                    if _clean_cell(row[c])
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
            if _clean_cell(row[c]) and c not in short
        )
        # k symbols with k numbers in every filled statistic cell -> k properties
        symbols = symbol.split()
        k = len(symbols)
        stat_texts = {role: _clean_cell(v) for role, v in raw.items()}
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
                value, found = _split_stat(cell)
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
            out.append(
                {
                    "name": name,
                    "symbol": sym,
                    "value": value,
                    "value_min": vmin,
                    "value_typ": vtyp,
                    "value_max": vmax,
                    "unit": unit,
                    "conditions": conditions,
                    "extra": extra,
                    "row": i,
                    "rule": "table:spec",
                }
            )
    return out


_LOGIC = frozenset({"0", "1", "-", "x", "z", "h", "l", "r", "f", "?"})


def is_truth_table(view: TableView) -> bool:
    """All data cells are logic levels (0/1/-/X/Z): a function table, not specifications."""
    cells = [c.strip().lower() for r in view.rows for c in r if c.strip()]
    return bool(cells) and all(c in _LOGIC for c in cells)


_IDENTIFIER = re.compile(r"[A-Za-z][\w.\-\[\]:/]{1,39}")


def _logic_column(cells: list[str]) -> bool:
    values = [c.strip().lower() for c in cells if c.strip()]
    return len(values) >= 3 and all(v in _LOGIC for v in values)


def _matrix_rows(view: TableView) -> list[dict[str, Any]]:
    if is_truth_table(view):
        return []
    n = len(view.labels)
    numeric = [
        c
        for c in range(n)
        if _mostly_numeric(_column(view, c)) and not _logic_column(_column(view, c))
    ]
    params = [c for c in range(n) if view.roles[c] == "parameter"]
    if params:
        name_col: int | None = params[0]
    elif not _mostly_decimal(_column(view, 0)):
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
            if _clean_cell(row[c]) and len(row[c]) <= 80
        ]
        for c in value_cols:
            if c in indexed:
                continue
            cell = _clean_cell(row[c])
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
                if _clean_cell(row[x])
            ]
            out.append(
                {
                    "name": name,
                    "symbol": "",
                    "value": value,
                    "value_min": None,
                    "value_typ": None,
                    "value_max": None,
                    "unit": unit,
                    "conditions": "; ".join([*row_conditions, *index]),
                    "entity": entity,
                    "extra": "",
                    "row": i,
                    "rule": "table:matrix",
                }
            )
    return out


_DESCRIPTIVE = frozenset(
    {"description", "function", "meaning", "definition", "purpose", "explanation", "comment",
     "comments", "specification"}
)  # fmt: skip


def _categorical(cells: list[str]) -> bool:
    values = [" ".join(c.split()) for c in cells if c.strip()]
    return len(values) >= 3 and len(set(values)) <= 0.5 * len(values)


def _text_rows(view: TableView) -> list[dict[str, Any]]:
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
            out.append(
                {
                    "name": name,
                    "symbol": "",
                    "value": value,
                    "value_min": None,
                    "value_typ": None,
                    "value_max": None,
                    "unit": "",
                    "conditions": "",
                    "extra": "",
                    "row": i,
                    "rule": "table:text",
                }
            )
        return out
    keys = [c for c in range(1, n) if _categorical(_column(view, c))]
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
            out.append(
                {
                    "name": name,
                    "symbol": "",
                    "value": cell,
                    "value_min": None,
                    "value_typ": None,
                    "value_max": None,
                    "unit": "",
                    "conditions": conditions,
                    "extra": "",
                    "row": i,
                    "rule": "table:text",
                }
            )
    return out


def table_properties(view: TableView) -> list[dict[str, Any]]:
    """Raw property fields from one table (no ids or provenance yet)."""
    kind = table_kind(view)
    if kind == "spec":
        return _spec_rows(view)
    if kind == "matrix":
        return _matrix_rows(view)
    if kind == "text":
        return _text_rows(view)
    return []


# ---------------------------------------------------------------------------------------------
# Sentences

_QUALIFIER = {
    "typ": r"typically|nominally|typ\.?",
    "min": r"at\s+least|a\s+minimum\s+of|minimum|no\s+less\s+than|not\s+less\s+than",
    "max": r"at\s+most|up\s+to|a\s+maximum\s+of|maximum|limited\s+to|no\s+more\s+than|"
    r"not\s+more\s+than|below|less\s+than",
    "value": r"(?:fixed|set|specified|rated|defined|guaranteed|configured|programmed)\s+"
    r"(?:at|to|as)|approximately|about|around|exactly|equal\s+to|only|between",
}
_QUALIFIER_RE = "|".join(f"(?P<q_{k}>{v})" for k, v in _QUALIFIER.items())
_STATEMENT = re.compile(
    rf"(?P<subj>[A-Za-z(][^.;:!?]*?)\s+(?:is|are|equals|amounts\s+to|has\s+a\s+value\s+of)\s+"
    rf"(?:(?:{_QUALIFIER_RE})\s+)?"
    rf"(?P<v1>{NUMBER_RE})(?:\s*|-)(?P<u1>{UNIT_RE})?"
    rf"(?:\s*(?:to|and|-|–|\.\.\.?)\s*(?P<v2>{NUMBER_RE})(?:\s*|-)(?P<u2>{UNIT_RE})?)?"
    rf"(?![\w/])"
)
_PRONOUNS = {"it", "this", "that", "these", "those", "which", "there", "they", "he", "she",
             "its", "what", "who", "each", "one", "all", "both", "if", "when", "while",
             "because", "although", "since", "unless", "as", "where", "whether"}  # fmt: skip
_ARTICLES = re.compile(r"^(?:the|a|an|its|their|this|each)\s+", re.IGNORECASE)
_CONDITION_TAIL = re.compile(
    r"^\s*,?\s*((?:at|with|when|for|under|over|if|during|in|from|across|while)\b[^.;]*)",
    re.IGNORECASE,
)
_CONDITION_HEAD = re.compile(
    r"^((?:with|at|when|for|under|in|during|if)\b[^,]{3,80}),\s*(.+)$", re.IGNORECASE
)


def sentence_properties(text: str) -> list[dict[str, Any]]:
    """Explicit "X is N unit" statements in prose (one sentence per line)."""
    out: list[dict[str, Any]] = []
    for i, line in enumerate(ln for ln in text.split("\n") if ln.strip()):
        if line.startswith("#"):
            continue
        for match in _STATEMENT.finditer(line):
            unit = (match.group("u2") or match.group("u1") or "").strip()
            if not unit or not is_unit(unit):
                continue
            subject = " ".join(match.group("subj").split())
            lead = ""
            head = _CONDITION_HEAD.match(subject)
            if head:
                lead, subject = head.group(1), head.group(2)
            subject = re.split(r",\s+|\s+and\s+(?=the\b)|;\s*", subject)[-1]
            subject = _ARTICLES.sub("", subject).strip(" ,")
            words_ = subject.split()
            if (
                not words_
                or len(words_) > 10
                or words_[0].lower() in _PRONOUNS
                or words_[-1].lower() in _PRONOUNS
                or "=" in subject
            ):
                continue
            if not re.search(r"[A-Za-z]{3}", subject) or re.search(r"\d\s*$", subject):
                continue
            v1, v2 = match.group("v1").replace(" ", ""), match.group("v2")
            vmin = vtyp = vmax = None
            if v2:
                vmin, vmax = v1, v2.replace(" ", "")
                value = f"{vmin} to {vmax}"
            else:
                value = v1
                if match.group("q_min"):
                    vmin = v1
                elif match.group("q_max"):
                    vmax = v1
                elif match.group("q_typ"):
                    vtyp = v1
            tail = _CONDITION_TAIL.match(line[match.end() :])
            conditions = "; ".join(
                x.strip(" ,") for x in (lead, tail.group(1) if tail else "") if x and x.strip(" ,")
            )
            out.append(
                {
                    "name": subject,
                    "symbol": "",
                    "value": value,
                    "value_min": vmin,
                    "value_typ": vtyp,
                    "value_max": vmax,
                    "unit": unit,
                    "conditions": conditions[:160],
                    "extra": line if len(line) <= 240 else "",
                    "row": i,
                    "rule": "sentence",
                }
            )
    return out


# ---------------------------------------------------------------------------------------------
# Rows with ids and provenance


def skip_chunk(chunk: Mapping[str, Any]) -> bool:
    """Revision histories, reference lists, glossaries, licences: no hardware properties."""
    context = " ".join([*(chunk.get("section_path") or []), chunk.get("title") or ""])
    return bool(_SKIP_SECTIONS.search(context))


def offline_chunk_properties(chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Raw property fields (name, symbol, value..., conditions, extra, row, rule) of a chunk."""
    if skip_chunk(chunk):
        return []
    view = table_view(dict(chunk))
    if view is not None:
        return table_properties(view)
    return sentence_properties(chunk.get("text") or "")


def _finish(
    raw: list[dict[str, Any]], chunk: Mapping[str, Any], category: str, rule_override: str = ""
) -> list[dict[str, Any]]:
    document = chunk["document"]
    section = list(chunk.get("section_path") or [])
    title = chunk.get("title") or ""
    seen: Counter[tuple[Any, ...]] = Counter()
    rows = []
    for r in raw:
        name = " ".join(str(r["name"]).split())
        key = (name, r.get("symbol") or "", r.get("value") or "", r.get("value_min"),
               r.get("value_typ"), r.get("value_max"), r.get("unit") or "",
               r.get("conditions") or "")  # fmt: skip
        dup = seen[key]
        seen[key] += 1
        description = r.get("description") or _describe(
            name,
            r.get("symbol") or "",
            title,
            section,
            r.get("conditions") or "",
            r.get("extra") or "",
        )
        rows.append(
            {
                "property_id": stable_id("hwp", document, chunk["chunk_id"], *key, dup),
                "document": document,
                "name": name,
                "symbol": r.get("symbol") or "",
                "description": description,
                "value": r.get("value") or "",
                "value_min": r.get("value_min"),
                "value_typ": r.get("value_typ"),
                "value_max": r.get("value_max"),
                "unit": r.get("unit") or "",
                "conditions": r.get("conditions") or "",
                "entity": r.get("entity") or "",
                "category": category,
                "section_path": section,
                "table_title": title,
                "chunk_id": chunk["chunk_id"],
                "page": chunk["page"],
                "bbox": chunk.get("bbox"),
                "rule": rule_override or r["rule"],
                "row": r.get("row"),
            }
        )
    return rows


# ---------------------------------------------------------------------------------------------
# The LLM task


class ExtractedProperty(BaseModel):
    """One engineering property stated in the chunk."""

    name: str = Field(description="variable name as the datasheet uses it, e.g. 'Output voltage'")
    description: str = Field(
        default="",
        description="brief description keeping conditions, configurations, variants, test "
        "conditions",
    )
    value: str = Field(default="", description="the value or range exactly as printed")
    value_min: str | None = Field(default=None, description="minimum, if given")
    value_typ: str | None = Field(default=None, description="typical/nominal, if given")
    value_max: str | None = Field(default=None, description="maximum, if given")
    unit: str = Field(default="", description="unit as printed, '' if none")
    conditions: str = Field(default="", description="conditions/configuration it applies to")
    source_chunk_id: str = Field(description="id of the chunk the property was read from")


class PropertyList(BaseModel):
    """The engineering properties explicitly stated in one datasheet chunk."""

    properties: list[ExtractedProperty] = Field(default_factory=list)


SYSTEM_PROMPT = (
    "You extract engineering properties from one chunk of a hardware datasheet. "
    + GENERAL_DESCRIPTION
    + " Report only properties explicitly stated in the chunk; copy values and units exactly "
    "as printed; keep minimum, typical and maximum apart; put operating conditions, "
    "configurations, device variants and test conditions into the description and "
    "conditions; set source_chunk_id to the id of the chunk. " + DATA_NOT_INSTRUCTIONS
)


def _render(inputs: Mapping[str, Any]) -> str:
    category = inputs.get("category") or "general"
    specific = CATEGORY_DESCRIPTIONS.get(category, "")
    return (
        f"Document: {inputs['document']}\nHardware category: {category}\n"
        + (f"Category-specific focus: {specific}\n" if specific else "")
        + f"Section: {inputs.get('section', '')}\n"
        + delimit(inputs["text"], "document", chunk_id=inputs["chunk_id"], page=inputs["page"])
    )


def _raw_to_extracted(raw: dict[str, Any], chunk_id: str) -> ExtractedProperty:
    return ExtractedProperty(
        name=raw["name"],
        description="",
        value=raw.get("value") or "",
        value_min=raw.get("value_min"),
        value_typ=raw.get("value_typ"),
        value_max=raw.get("value_max"),
        unit=raw.get("unit") or "",
        conditions=raw.get("conditions") or "",
        source_chunk_id=chunk_id,
    )


def _offline(inputs: Mapping[str, Any]) -> BaseModel:
    chunk = inputs["chunk"]
    return PropertyList(
        properties=[
            _raw_to_extracted(r, chunk["chunk_id"]) for r in offline_chunk_properties(chunk)
        ]
    )


def validate_properties(result: BaseModel, inputs: Mapping[str, Any]) -> None:
    """Source chunk ids must be the input chunk; each property needs a name and a value."""
    assert isinstance(result, PropertyList)
    allowed = {inputs["chunk_id"]}
    for i, prop in enumerate(result.properties):
        if prop.source_chunk_id not in allowed:
            raise ValueError(
                f"properties[{i}] ({prop.name!r}): source_chunk_id {prop.source_chunk_id!r} "
                f"is not the input chunk; use {inputs['chunk_id']!r}"
            )
        if not prop.name.strip():
            raise ValueError(f"properties[{i}]: name is empty")
        if not any(
            (v or "").strip() for v in (prop.value, prop.value_min, prop.value_typ, prop.value_max)
        ):
            raise ValueError(f"properties[{i}] ({prop.name!r}): no value or range given")


register_task(
    LLMTask(
        name=TASK,
        system_prompt=SYSTEM_PROMPT,
        render_user=_render,
        offline=_offline,
        validate=validate_properties,
    )
)


def _llm_inputs(chunk: Mapping[str, Any], category: str) -> dict[str, Any]:
    return {
        "document": chunk["document"],
        "category": category,
        "section": " > ".join(chunk.get("section_path") or []),
        "chunk_id": chunk["chunk_id"],
        "page": chunk["page"],
        "text": chunk["text"],
        "chunk": {k: chunk.get(k) for k in ("chunk_id", "document", "text", "table", "kind",
                                            "section_path", "title", "page")},
    }  # fmt: skip


def extract_properties(
    chunks: list[dict[str, Any]],
    category: str,
    client: LLMClient | None = None,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Properties of one document's chunks: (rows of DATASHEET_PROPERTIES_SCHEMA, counters).

    Offline rules when ``client`` is None or offline; otherwise one ``datasheet_properties``
    call per chunk, falling back to the offline rules for a chunk whose call failed.
    """
    rows: list[dict[str, Any]] = []
    stats = Counter({"chunks": len(chunks), "llm_chunks": 0, "fallback_chunks": 0})
    use_llm = client is not None and client.provider != "offline"
    for chunk in chunks:
        if not use_llm or skip_chunk(chunk):
            rows.extend(_finish(offline_chunk_properties(chunk), chunk, category))
            continue
        assert client is not None
        before = client.stats.fallbacks
        try:
            result = client.complete_structured(TASK, _llm_inputs(chunk, category), PropertyList)
        except LLMError:
            result = None
        if result is None or client.stats.fallbacks > before:
            stats["fallback_chunks"] += 1
            rows.extend(
                _finish(offline_chunk_properties(chunk), chunk, category, "offline-fallback")
            )
            continue
        stats["llm_chunks"] += 1
        raw = [
            {**p.model_dump(), "row": i, "rule": f"llm:{TASK}", "extra": ""}
            for i, p in enumerate(result.properties)
        ]
        finished = _finish(raw, chunk, category)
        for row, prop in zip(finished, result.properties, strict=True):
            if prop.description.strip():
                row["description"] = prop.description.strip()
        rows.extend(finished)
    stats["properties"] = len(rows)
    return rows, dict(stats)


def llm_prompt_pairs(chunks: list[dict[str, Any]], category: str) -> list[tuple[str, str]]:
    """The (system, user) prompts an LLM build would send (for ``estimate_tokens``)."""
    return [(SYSTEM_PROMPT, _render(_llm_inputs(c, category))) for c in chunks if not skip_chunk(c)]


def rule_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    return dict(Counter(r["rule"] for r in rows))


def as_json(row: Mapping[str, Any]) -> str:
    return json.dumps(
        {k: row[k] for k in ("name", "value", "unit", "conditions")}, ensure_ascii=False
    )


__all__ = [
    "DATASHEET_PROPERTIES_SCHEMA",
    "TASK",
    "ExtractedProperty",
    "PropertyList",
    "display_value",
    "extract_properties",
    "llm_prompt_pairs",
    "offline_chunk_properties",
    "property_frame",
    "sentence_properties",
    "table_kind",
    "table_properties",
    "validate_properties",
]
