"""The property record: its table schema, the raw fields every rule produces, ids and provenance.

A property is one engineering specification: ``name``, a brief ``description`` that keeps its
context (conditions, configurations, variants, test conditions), a value or a range with
``value_min`` / ``value_typ`` / ``value_max`` kept apart (strings exactly as printed), a
``unit``, the ``rule`` that produced it (``table:spec``, ``sentence:limit``, ``llm:...``) and
its provenance: the source chunk id, page and bbox.

Every extractor (the offline table and prose rules, the LLM task) returns *raw* rows
(``raw_property``); ``finish_rows`` adds the content-derived id and the provenance, so that
all of them give rows of one shape.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import polars as pl

from edaqa_pipeline.extraction.datasheets.textutil import strip_numbering
from edaqa_pipeline.model import BBOX, STRS, frame, normalise_ws, stable_id

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
    "rule": pl.String(),  # table:spec | table:register | sentence:limit | llm:... | ...
    "row": pl.Int64(),  # data row (tables) or sentence index (prose) within the chunk
}


def property_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return frame(rows, DATASHEET_PROPERTIES_SCHEMA)


def raw_property(name: str, value: str, rule: str, *, row: int = 0, unit: str = "",
                 vmin: str | None = None, vtyp: str | None = None, vmax: str | None = None,
                 symbol: str = "", conditions: str = "", extra: str = "", entity: str = "",
                 description: str = "") -> dict[str, Any]:
    """The fields one rule found (``extra`` goes into the description, not the conditions)."""
    return {"name": name, "symbol": symbol, "value": value, "value_min": vmin, "value_typ": vtyp,
            "value_max": vmax, "unit": unit, "conditions": conditions, "entity": entity,
            "extra": extra, "description": description, "row": row, "rule": rule}


def display_value(vmin: str | None, vtyp: str | None, vmax: str | None, value: str | None = None) -> str:
    """One display string: the value, or "min X, typ Y, max Z" with the parts present."""
    if value:
        return value
    parts = [(k, v) for k, v in (("min", vmin), ("typ", vtyp), ("max", vmax)) if v]
    if len(parts) == 1:
        return parts[0][1]
    return ", ".join(f"{k} {v}" for k, v in parts)


def describe(name: str, symbol: str, title: str, section: list[str], conditions: str,
             extra: str = "") -> str:
    """The brief description: name (symbol), where it was stated, its conditions, the rest."""
    where = title or (strip_numbering(section[-1]) if section else "")
    text = name + (f" ({symbol})" if symbol and symbol != name else "")
    if where:
        text += f", from {where}"
    if conditions:
        text += f"; conditions: {conditions}"
    if extra:
        text += f"; {extra}"
    return text


def _key(r: Mapping[str, Any]) -> tuple[Any, ...]:
    """What identifies a property within its chunk, whitespace-normalised like ``stable_id``
    (two rows that differ only in spacing must not share an id)."""
    return tuple(normalise_ws(v) if isinstance(v, str) else v for v in (
        str(r["name"]), r.get("symbol") or "", r.get("value") or "", r.get("value_min"),
        r.get("value_typ"), r.get("value_max"), r.get("unit") or "", r.get("conditions") or ""))


def finish_rows(raw: list[dict[str, Any]], chunk: Mapping[str, Any], category: str,
                rule_override: str = "") -> list[dict[str, Any]]:
    """Rows of ``DATASHEET_PROPERTIES_SCHEMA`` for the raw rows of one chunk."""
    document = chunk["document"]
    section = list(chunk.get("section_path") or [])
    title = chunk.get("title") or ""
    seen: Counter[tuple[Any, ...]] = Counter()
    rows = []
    for r in raw:
        name = " ".join(str(r["name"]).split())
        key = _key({**r, "name": name})
        dup = seen[key]
        seen[key] += 1
        description = r.get("description") or describe(
            name, r.get("symbol") or "", title, section, r.get("conditions") or "", r.get("extra") or "")
        rows.append({
            "property_id": stable_id("hwp", document, chunk["chunk_id"], *key, dup),
            "document": document, "name": name, "symbol": r.get("symbol") or "",
            "description": description, "value": r.get("value") or "",
            "value_min": r.get("value_min"), "value_typ": r.get("value_typ"),
            "value_max": r.get("value_max"), "unit": r.get("unit") or "",
            "conditions": r.get("conditions") or "", "entity": r.get("entity") or "",
            "category": category, "section_path": section, "table_title": title,
            "chunk_id": chunk["chunk_id"], "page": chunk["page"], "bbox": chunk.get("bbox"),
            "rule": rule_override or r["rule"], "row": r.get("row"),
        })
    return rows


__all__ = [
    "DATASHEET_PROPERTIES_SCHEMA",
    "describe",
    "display_value",
    "finish_rows",
    "property_frame",
    "raw_property",
]
