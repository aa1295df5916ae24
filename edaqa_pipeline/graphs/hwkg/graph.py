"""The state of one hardware KG: blocks, the stored property records, their state, the log.

The records are the extracted properties exactly as extracted; ``PropertyState`` holds what
instructions may change (display name, block, merged or active). Everything here is a query,
so routers, refiners, checks and the retriever read the graph the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from edaqa_pipeline.extraction.datasheets.textutil import normalise
from edaqa_pipeline.graphs.hwkg.instructions import block_id_for
from edaqa_pipeline.model import stable_id


@dataclass
class Block:
    block_id: str
    name: str
    parent_id: str | None
    origin: str  # root | skeleton | created
    keywords: tuple[str, ...] = ()
    synonyms: tuple[str, ...] = ()
    stage: str = ""
    iteration: int = 0


@dataclass
class PropertyState:
    property_id: str
    name: str  # display name (RENAME changes it; the record keeps the extracted name)
    block_id: str | None = None
    status: str = "active"  # active | merged
    merged_into: str | None = None
    merged_from: list[str] = field(default_factory=list)


class GraphState:
    """One hierarchical hardware KG: blocks, the stored property records, their state, the log.

    Queries only; the one way to change it is ``executor.HardwareKG.execute``."""

    def __init__(
        self, kg_id: str, category: str, properties: Iterable[Mapping[str, Any]], title: str = ""
    ) -> None:
        self.kg_id = kg_id
        self.category = category
        self.title = title or kg_id
        self.records: dict[str, dict[str, Any]] = {}
        self.state: dict[str, PropertyState] = {}
        for rec in properties:
            pid = rec["property_id"]
            self.records[pid] = dict(rec)
            self.state[pid] = PropertyState(pid, rec["name"])
        self.order = {pid: i for i, pid in enumerate(self.records)}
        self.root_id = stable_id("hwb", kg_id, "<root>")
        self.blocks: dict[str, Block] = {
            self.root_id: Block(self.root_id, self.title, None, "root")
        }
        self.log: list[dict[str, Any]] = []

    # -- queries ------------------------------------------------------------------------------

    def active(self) -> list[str]:
        return [pid for pid, st in self.state.items() if st.status == "active"]

    def properties_in(self, block_id: str) -> list[str]:
        return [
            pid
            for pid, st in self.state.items()
            if st.status == "active" and st.block_id == block_id
        ]

    def children(self, block_id: str) -> list[str]:
        return [b.block_id for b in self.blocks.values() if b.parent_id == block_id]

    def ancestors(self, block_id: str) -> list[str]:
        """Parent, grandparent, ... up to the root (stops on a cycle, which cannot exist)."""
        out: list[str] = []
        seen = {block_id}
        current = self.blocks[block_id].parent_id if block_id in self.blocks else None
        while current is not None and current not in seen:
            out.append(current)
            seen.add(current)
            current = self.blocks[current].parent_id if current in self.blocks else None
        return out

    def descendants(self, block_id: str) -> list[str]:
        out: list[str] = []
        stack = self.children(block_id)
        while stack:
            b = stack.pop()
            out.append(b)
            stack.extend(self.children(b))
        return out

    def path(self, block_id: str) -> list[str]:
        chain = [block_id, *self.ancestors(block_id)]
        return [self.blocks[b].name for b in reversed(chain)]

    def depth(self, block_id: str) -> int:
        return len(self.ancestors(block_id))

    def child_named(self, parent_id: str, name: str) -> str | None:
        bid = block_id_for(self.kg_id, parent_id, name)
        return bid if bid in self.blocks else None

    def hierarchy(self) -> list[dict[str, Any]]:
        """Blocks in depth-first order as plain dicts (what routers see)."""
        out: list[dict[str, Any]] = []
        kids: dict[str | None, list[str]] = {}
        for b in self.blocks.values():
            kids.setdefault(b.parent_id, []).append(b.block_id)

        def walk(bid: str, path: list[str]) -> None:
            b = self.blocks[bid]
            here = [*path, b.name]
            out.append(
                {
                    "id": bid,
                    "name": b.name,
                    "parent_id": b.parent_id,
                    "path": " > ".join(here),
                    "keywords": list(b.keywords),
                    "synonyms": list(b.synonyms),
                    "origin": b.origin,
                }
            )
            for child in sorted(kids.get(bid, []), key=lambda c: self.blocks[c].name.lower()):
                walk(child, here)

        walk(self.root_id, [])
        return out

    def tree_problems(self) -> list[str]:
        """Why the blocks are not a tree rooted at ``root_id`` (empty when they are)."""
        problems = []
        for bid, block in self.blocks.items():
            if bid == self.root_id:
                if block.parent_id is not None:
                    problems.append(f"root {bid} has a parent")
                continue
            if block.parent_id not in self.blocks:
                problems.append(
                    f"block {bid} ({block.name!r}) has unknown parent {block.parent_id}"
                )
                continue
            chain = self.ancestors(bid)
            if not chain or chain[-1] != self.root_id:
                problems.append(f"block {bid} ({block.name!r}) does not reach the root (cycle?)")
        return problems

    # -- building -----------------------------------------------------------------------------

    def add_block(
        self,
        name: str,
        parent_id: str,
        origin: str,
        *,
        keywords: tuple[str, ...] = (),
        synonyms: tuple[str, ...] = (),
        stage: str = "",
        iteration: int = 0,
    ) -> str:
        bid = block_id_for(self.kg_id, parent_id, name)
        if bid not in self.blocks:
            self.blocks[bid] = Block(
                bid, name, parent_id, origin, keywords, synonyms, stage, iteration
            )
        return bid

    # -- checks -------------------------------------------------------------------------------

    def name_conflicts(self) -> list[tuple[str, str, list[str]]]:
        """(block id, normalised name, property ids) for every name used twice in a block."""
        out = []
        for bid in self.blocks:
            groups: dict[str, list[str]] = {}
            for pid in self.properties_in(bid):
                groups.setdefault(normalise(self.state[pid].name), []).append(pid)
            out.extend((bid, name, pids) for name, pids in groups.items() if len(pids) > 1)
        return out


__all__ = ["Block", "GraphState", "PropertyState"]
