"""Property recall against a gold list of datasheet properties (``data/dev/datasheets_properties*.jsonl``).

A gold property ``{doc, page, name, value, unit}`` is *recalled* when the graph holds a
property node of that document, stated on that page (the node's own page, or the page of a
property merged into it), whose value fields (value, min, typ, max) carry every number of the
gold value, each under any of its spellings (``3.300`` = ``3.3``, ``2`` = ``two``,
``0xFFFF_FFFF``). Names are not compared: a gold name is one engineer's wording, and the
number on the right page is what makes the fact findable; ``unit_ok`` reports separately
whether the unit agrees too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from edaqa_pipeline.extraction.datasheets.textutil import NUMBER_WORDS, normalise, number_variants

_NUMBER = re.compile(r"0x[0-9a-f_]+|[-+]?\d+(?:[.,]\d+)*|\b(?:" + "|".join(NUMBER_WORDS) + r")\b")


def numbers(text: str) -> list[str]:
    """The numbers written in ``text`` (hex literals, decimals, number words), lower case."""
    return _NUMBER.findall(normalise(text))


def read_gold(path: Path) -> list[dict[str, Any]]:
    """The gold properties of a JSONL file; a line without doc/page/value is an error."""
    rows = []
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        missing = [k for k in ("doc", "page", "value") if k not in row]
        if missing:
            raise ValueError(f"{path}:{n}: gold property lacks {', '.join(missing)}")
        rows.append(row)
    return rows


def _carried(node: Mapping[str, Any]) -> set[str]:
    out: set[str] = set()
    for key in ("value", "value_min", "value_typ", "value_max"):
        for n in numbers(str(node.get(key) or "")):
            out |= number_variants(n)
    return out


def property_hits(gold: Iterable[Mapping[str, Any]], nodes: Iterable[Mapping[str, Any]],
                  pages_of: Mapping[str, set[int]] | None = None) -> list[dict[str, Any]]:
    """One verdict per gold property: ``hit``, ``unit_ok`` and the matching node ids.

    ``nodes`` are property rows (graph nodes or extracted properties) with ``document``,
    ``page`` and the value fields; ``pages_of`` maps a node id to extra pages it stands for
    (the pages of the properties merged into it)."""
    index: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for node in nodes:
        node_id = str(node.get("node_id") or node.get("property_id") or "")
        pages = {int(node["page"])} if node.get("page") is not None else set()
        pages |= (pages_of or {}).get(node_id, set())
        for page in pages:
            index.setdefault((node["document"], page), []).append(node)
    out = []
    for g in gold:
        wanted = numbers(str(g["value"]))
        found = []
        for node in index.get((g["doc"], int(g["page"])), []):
            carried = _carried(node)
            if wanted and all(number_variants(n) & carried for n in wanted):
                found.append(node)
        unit = normalise(g.get("unit") or "").replace(" ", "")
        unit_ok = any(not unit or normalise(n.get("unit") or "").replace(" ", "") == unit for n in found)
        out.append({"id": g.get("id"), "doc": g["doc"], "page": g["page"], "hit": bool(found),
                    "unit_ok": bool(found) and unit_ok,
                    "matches": [str(n.get("node_id") or n.get("property_id")) for n in found][:5]})
    return out


def recall_by_document(hits: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{doc: {"hit", "total", "recall"}} plus ``"all"``."""
    out: dict[str, dict[str, Any]] = {}
    for key in [*sorted({h["doc"] for h in hits}), "all"]:
        rows = [h for h in hits if key == "all" or h["doc"] == key]
        hit = sum(h["hit"] for h in rows)
        out[key] = {"hit": hit, "total": len(rows), "recall": round(hit / len(rows), 3) if rows else None,
                    "unit_ok": sum(h["unit_ok"] for h in rows)}
    return out


__all__ = ["numbers", "property_hits", "read_gold", "recall_by_document"]
