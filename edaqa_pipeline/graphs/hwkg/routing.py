"""Routing properties to blocks: the offline rules (paper I-C; the LLM answers the same task).

* *routing* -- section path / table title to block: the deepest heading (numbering stripped)
  that matches a skeleton block's keywords picks the block (longest keyword match, then the
  deeper skeleton block); that heading and the leaf below it become blocks under it (at most
  ``max_chain``), unless the heading just names the block ("Specifications" under "Electrical
  Characteristics"); nothing matches: the table title, else "General" plus the last
  headings. The row item of an item x attribute table (an I/O cell such as
  ``sg13g2_IOPadIn``) becomes a block below that.
* *rerouting* -- a property moves to a descendant block whose name (or its parenthesised
  acronym, ``(mrac)``) occurs in the property's name or conditions; a property left in
  "General", "Electrical Characteristics" (document sections, not functions) or the root
  moves to the functional block whose skeleton keywords match its name ("Output voltage" ->
  Output).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from edaqa_pipeline.extraction.datasheets.skeletons import SkeletonBlock, iter_blocks, skeleton
from edaqa_pipeline.extraction.datasheets.textutil import normalise, strip_numbering
from edaqa_pipeline.graphs.hwkg.instructions import (
    MAX_NAME,
    Instruction,
    InstructionList,
    block_id_for,
)

GENERAL = "General"
# Skeleton blocks named after document sections rather than hardware functions: rerouting may
# move their properties to a functional block whose keywords match the property name.
GENERIC_BLOCKS = (GENERAL, "Electrical Characteristics")


def _keyword_rx(keyword: str) -> re.Pattern[str]:
    return re.compile(r"(?<![a-z0-9])" + keyword, re.IGNORECASE)


@dataclass(frozen=True)
class _SkelIndex:
    entries: tuple[tuple[tuple[str, ...], SkeletonBlock, tuple[re.Pattern[str], ...]], ...]

    def match(self, text: str) -> tuple[tuple[str, ...], SkeletonBlock] | None:
        """The skeleton block whose keyword matches ``text`` best: longest match, then
        deepest block, then declaration order."""
        norm = normalise(text)
        best: tuple[int, int, int] | None = None
        found = None
        for order, (path, block, rxs) in enumerate(self.entries):
            for rx in rxs:
                m = rx.search(norm)
                if m:
                    score = (len(m.group(0)), len(path), -order)
                    if best is None or score > best:
                        best, found = score, (path, block)
        return found


_INDEXES: dict[str, _SkelIndex] = {}


def skeleton_index(category: str) -> _SkelIndex:
    if category not in _INDEXES:
        _INDEXES[category] = _SkelIndex(
            tuple(
                (path, block, tuple(_keyword_rx(k) for k in block.keywords))
                for path, block in iter_blocks(skeleton(category))
            )
        )
    return _INDEXES[category]


def route_path(
    category: str,
    section_path: list[str],
    table_title: str = "",
    max_chain: int = 2,
    entity: str = "",
) -> list[str]:
    """Block names under the root for a property with this section path / table title; the
    row item of an item x attribute table (an I/O cell) becomes the last block."""
    names = _section_route(category, section_path, table_title, max_chain)
    if entity and normalise(entity) not in {normalise(n) for n in names}:
        names.append(entity)
    # a heading can be a whole sentence (a manual's "Set ... Example: ..." line); a block
    # name the executor would refuse would leave the property without a block
    return [n if len(n) <= MAX_NAME else n[: MAX_NAME - 1].rstrip() + "…" for n in names]


def _section_route(
    category: str, section_path: list[str], table_title: str, max_chain: int
) -> list[str]:
    index = skeleton_index(category)
    headings = [h for h in (strip_numbering(s) for s in section_path or []) if h]
    for i in range(len(headings) - 1, -1, -1):
        found = index.match(headings[i])
        if found is None:
            continue
        path, block = found
        chain = headings[i:]
        if normalise(chain[0]) in block.synonyms or normalise(chain[0]) == normalise(path[-1]):
            chain = chain[1:]
        if len(chain) > max_chain:
            chain = [*chain[: max(max_chain - 1, 0)], chain[-1]] if max_chain > 0 else []
        return [*path, *chain]
    if table_title:
        found = index.match(table_title)
        if found is not None:
            return list(found[0])
    chain = headings[-max_chain:] if max_chain > 0 else []
    return [GENERAL, *chain]


def offline_route(inputs: Mapping[str, Any]) -> InstructionList:
    """CREATE_BLOCK / ATTACH for each property, from its section path and table title."""
    kg_id = inputs["kg_id"]
    root = inputs["root_id"]
    existing = {b["id"] for b in inputs["blocks"]}
    out: list[Instruction] = []
    for prop in inputs["properties"]:
        names = route_path(
            inputs["category"], prop.get("section_path") or [], prop.get("table_title") or "",
            int(inputs.get("max_chain", 2)), prop.get("entity") or "",
        )  # fmt: skip
        current = root
        for name in names:
            child = block_id_for(kg_id, current, name)
            if child not in existing:
                out.append(Instruction(op="CREATE_BLOCK", name=name, parent_id=current))
                existing.add(child)
            current = child
        out.append(Instruction(op="ATTACH", property_id=prop["id"], block_id=current))
    return InstructionList(instructions=out)


_ACRONYM = re.compile(r"\(([A-Za-z][A-Za-z0-9_/]{1,15})\)")


def offline_reroute(inputs: Mapping[str, Any]) -> InstructionList:
    """ATTACH properties to a more specific block of the latest hierarchy (see module doc)."""
    blocks = {b["id"]: b for b in inputs["blocks"]}
    children: dict[str | None, list[str]] = {}
    for b in inputs["blocks"]:
        children.setdefault(b["parent_id"], []).append(b["id"])

    def descendants(bid: str) -> list[str]:
        out, stack = [], list(children.get(bid, []))
        while stack:
            x = stack.pop()
            out.append(x)
            stack.extend(children.get(x, []))
        return out

    depth = {b["id"]: b["path"].count(" > ") for b in inputs["blocks"]}
    root = inputs["root_id"]
    generic = {root, *(block_id_for(inputs["kg_id"], root, name) for name in GENERIC_BLOCKS)}
    keyword_rx = {
        b["id"]: [_keyword_rx(k) for k in b.get("keywords") or []] for b in inputs["blocks"]
    }
    out: list[Instruction] = []
    for prop in inputs["properties"]:
        current = prop["block_id"]
        text = normalise(f"{prop['name']} {prop.get('conditions') or ''}")
        best: tuple[int, int, str] | None = None
        for bid in descendants(current):
            name = blocks[bid]["name"]
            hits = [normalise(name)] + [normalise(a) for a in _ACRONYM.findall(name)]
            if any(len(h) >= 3 and re.search(rf"(?<![a-z0-9]){re.escape(h)}(?![a-z0-9])", text)
                   for h in hits):  # fmt: skip
                score = (depth[bid], len(name), bid)
                best = max(best, score) if best else score
        if best is None and current in generic:
            name_text = normalise(prop["name"])
            for bid, rxs in keyword_rx.items():
                if bid in generic or not rxs:
                    continue
                m = max((len(x.group(0)) for rx in rxs if (x := rx.search(name_text))), default=0)
                if m:
                    score = (m, depth[bid], bid)
                    best = max(best, score) if best else score
        if best is not None and best[2] != current:
            out.append(Instruction(op="ATTACH", property_id=prop["id"], block_id=best[2]))
    return InstructionList(instructions=out)


def offline_route_task(inputs: Mapping[str, Any]) -> InstructionList:
    """The route task's offline implementation: routing, or rerouting when ``stage`` says so."""
    return offline_reroute(inputs) if inputs.get("stage") == "reroute" else offline_route(inputs)


__all__ = ["GENERAL", "GENERIC_BLOCKS", "offline_reroute", "offline_route", "offline_route_task",
           "route_path", "skeleton_index"]
