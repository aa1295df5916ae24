"""Refinement within a block: the offline rules for MERGE, RENAME and KEEP (paper I-D).

* *merging* -- same name + same value (value, min, typ, max) + same unit + same conditions
  (normalised): ``MERGE`` into the earliest (page, position, row). Exact on purpose: the model
  may merge by meaning and by subsumption, the rules only where nothing can be lost.
* *renaming* -- same-named properties left in a block: the earliest keeps its name (unless a
  property outside the batch holds it), the others get ``name [qualifier]``, the qualifier
  being the fewest components (symbol, conditions, table title, value, page/row) that tell
  the group apart, cut to 120 characters.

The answer refers to properties by in-batch index and name (``instructions.RefineInstruction``),
exactly as the model's does, so both go through the same validation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from edaqa_pipeline.extraction.datasheets.textutil import normalise
from edaqa_pipeline.graphs.hwkg.instructions import (
    MAX_NAME,
    RefineInstruction,
    RefineInstructionList,
)


def merge_key(p: Mapping[str, Any]) -> tuple[str, ...]:
    """Same name + same value + same unit + same conditions (normalised)."""
    return tuple(
        normalise(str(p.get(k) or ""))
        for k in ("name", "value", "value_min", "value_typ", "value_max", "unit", "conditions")
    )


def _qualifiers(p: Mapping[str, Any]) -> list[str]:
    value = " ".join(x for x in (p.get("value") or "", p.get("unit") or "") if x)
    return [
        p.get("symbol") or "",
        (p.get("conditions") or "")[:80],
        p.get("table_title") or "",
        f"= {value}" if value else "",
        f"p{p.get('page')} row {p.get('row')}",
    ]


def _distinguishing(m: Mapping[str, Any], members: list[Mapping[str, Any]]) -> str:
    """The qualifier of ``m`` within its same-named group: the fewest components (symbol,
    conditions, table title, value, page/row), chosen greedily, that tell the group apart."""
    table = [_qualifiers(x) for x in members]
    chosen: list[int] = []
    for _ in range(5):
        combos = {tuple(t[q] for q in chosen) for t in table}
        if len(combos) == len(members):
            break
        best = max(
            (q for q in range(5) if q not in chosen),
            key=lambda q: (len({tuple(t[i] for i in (*chosen, q)) for t in table}), -q),
        )
        chosen.append(best)
    mine = _qualifiers(m)
    return "; ".join(mine[q] for q in sorted(chosen) if mine[q])


def _fit(name: str, qualifier: str, suffix: str = "", limit: int = MAX_NAME) -> str:
    """ "name [qualifier]suffix" cut to ``limit`` characters (the qualifier is cut first)."""
    room = limit - len(name) - len(suffix) - 3
    if room >= 8:
        qual = qualifier if len(qualifier) <= room else qualifier[: room - 1].rstrip() + "…"
        return f"{name} [{qual}]{suffix}"
    head = name[: max(limit - len(suffix) - 12, 8)].rstrip()
    return f"{head} [{qualifier[:8]}]{suffix}"


def offline_refine(inputs: Mapping[str, Any]) -> RefineInstructionList:
    """MERGE exact duplicates, RENAME same-named different properties, KEEP the rest; every
    property is referred to by its in-batch index and name, as the model's answer is."""
    props = list(inputs["properties"])
    index = {p["id"]: i for i, p in enumerate(props)}
    out: list[RefineInstruction] = []
    groups: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    for p in props:
        groups.setdefault(merge_key(p), []).append(p)
    kept: list[Mapping[str, Any]] = []
    for members in groups.values():
        if len(members) > 1:
            at = [index[m["id"]] for m in members]
            out.append(RefineInstruction(op="MERGE", indices=at, into=at[0]))
        kept.append(members[0])
    taken = Counter(normalise(n) for n in inputs.get("other_names") or [])
    for p in kept:
        taken[normalise(p["name"])] += 1
    by_name: dict[str, list[Mapping[str, Any]]] = {}
    for p in kept:
        by_name.setdefault(normalise(p["name"]), []).append(p)
    renamed_ids: set[str] = set()
    for name, members in by_name.items():
        total = taken[name]
        if total < 2:
            continue
        # the earliest keeps the name unless the name is also held outside this batch
        renamed = members if total > len(members) else members[1:]
        quals = {m["id"]: _distinguishing(m, members) for m in members}
        for m in renamed:
            qual = quals[m["id"]] or m["id"][-6:]
            base = _fit(m["name"], qual)
            new, k = base, 2
            while taken[normalise(new)]:
                new, k = _fit(m["name"], qual, f" #{k}"), k + 1
            taken[normalise(new)] += 1
            renamed_ids.add(m["id"])
            out.append(RefineInstruction(op="RENAME", index=index[m["id"]], name=m["name"], new_name=new))
    merged = {props[i]["id"] for ins in out if ins.op == "MERGE" for i in ins.indices or []}
    for p in props:
        if p["id"] not in renamed_ids and p["id"] not in merged:
            out.append(RefineInstruction(op="KEEP", index=index[p["id"]], name=p["name"]))
    return RefineInstructionList(instructions=out)


__all__ = ["merge_key", "offline_refine"]
