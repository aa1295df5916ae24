"""Graph updates as instructions: the schema, the validator and the deterministic executor.

The paper's central safety property (section I-C/I-D): the LLM never regenerates graph data.
It returns explicit operations that reference stored properties and blocks; local code checks
each one and executes it on the locally stored records. Here that contract is:

* ``Instruction`` -- one flat pydantic record, ``op`` plus the fields that op needs:

  ========================  ==================================================================
  ``ATTACH``                ``property_id``, ``block_id`` (an existing block id, or the name
                            of a block created earlier in the same batch)
  ``CREATE_BLOCK``          ``name``, ``parent_id`` (existing id or a name created in batch)
  ``MERGE``                 ``ids`` (two or more property ids of the batch), ``into`` (one
                            of them: the property kept)
  ``RENAME``                ``id``, ``new_name``
  ``KEEP``                  ``id``
  ========================  ==================================================================

  ``op`` is a plain string so that an unknown operation ("DELETE_BLOCK") is rejected and
  logged like any other invalid instruction instead of failing the whole answer.
* ``HardwareKG.execute`` validates each instruction against the current graph and the batch
  (op allowed in this stage; fields complete; ids exist and belong to the batch; the property
  is still active; no block becomes its own ancestor; a MERGE joins properties with the same
  unit; a RENAME only resolves a real name conflict and does not create a new one; one
  refinement instruction per property per batch), then applies it. The only mutations that
  exist are: add a block, set a property's block, set a property's display name, mark a
  property merged into another. Property values, units, descriptions, conditions and
  provenance are never written after extraction; there is no delete.
* Every instruction, applied or rejected, is appended to ``HardwareKG.log`` with its stage,
  iteration, batch, source (``llm:<task>``, ``offline``, ``offline-fallback``, ``skeleton``),
  status (``applied`` / ``noop`` / ``rejected``) and reason: the audit trail.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from edaqa_pipeline.extraction.datasheets.textutil import normalise
from edaqa_pipeline.model import stable_id

OPS = ("ATTACH", "CREATE_BLOCK", "MERGE", "RENAME", "KEEP")
ROUTE_OPS = frozenset({"ATTACH", "CREATE_BLOCK"})
REFINE_OPS = frozenset({"MERGE", "RENAME", "KEEP"})
MAX_DEPTH = 10
MAX_NAME = 120

APPLIED, NOOP, REJECTED = "applied", "noop", "rejected"


class Instruction(BaseModel):
    """One graph operation. op is ATTACH, CREATE_BLOCK, MERGE, RENAME or KEEP; fill only the
    fields of that op."""

    op: str = Field(description="ATTACH | CREATE_BLOCK | MERGE | RENAME | KEEP")
    property_id: str | None = Field(default=None, description="ATTACH: the property")
    block_id: str | None = Field(
        default=None, description="ATTACH: target block id (or name of a block created above)"
    )
    name: str | None = Field(default=None, description="CREATE_BLOCK: name of the new block")
    parent_id: str | None = Field(default=None, description="CREATE_BLOCK: parent block id")
    ids: list[str] | None = Field(default=None, description="MERGE: duplicate property ids")
    into: str | None = Field(default=None, description="MERGE: the id (one of ids) to keep")
    id: str | None = Field(default=None, description="RENAME / KEEP: the property id")
    new_name: str | None = Field(default=None, description="RENAME: the distinguishing name")


class InstructionList(BaseModel):
    """Graph operations for the batch, in the order they should be executed."""

    instructions: list[Instruction] = Field(default_factory=list)


def block_id_for(kg_id: str, parent_id: str, name: str) -> str:
    """Deterministic id of a block (so re-creating it is a no-op and routers can predict it)."""
    return stable_id("hwb", kg_id, parent_id, normalise(name))


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


@dataclass
class _Batch:
    stage: str
    iteration: int
    batch: str
    source: str
    allowed_ops: frozenset[str]
    property_ids: frozenset[str] | None  # None = any property
    created: dict[str, str] = field(default_factory=dict)  # normalised name -> block id
    handled: set[str] = field(default_factory=set)
    names: dict[str, Counter[str]] = field(default_factory=dict)  # block -> names at start


class HardwareKG:
    """One hierarchical hardware KG: blocks, the stored property records, their state, the log."""

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

    # -- execution ----------------------------------------------------------------------------

    def execute(
        self,
        instructions: Iterable[Instruction],
        *,
        stage: str,
        iteration: int,
        batch: str,
        source: str,
        allowed_ops: frozenset[str],
        property_ids: Iterable[str] | None = None,
    ) -> Counter[str]:
        """Validate and apply ``instructions`` in order; log every one. Returns counts
        ``<OP>`` (applied), ``noop`` and ``rejected``."""
        ctx = _Batch(
            stage, iteration, batch, source, allowed_ops,
            frozenset(property_ids) if property_ids is not None else None,
        )  # fmt: skip
        counts: Counter[str] = Counter()
        for instruction in instructions:
            status, reason = self._apply(instruction, ctx)
            counts[instruction.op if status == APPLIED else status] += 1
            self.log.append(
                {
                    "kg_id": self.kg_id,
                    "seq": len(self.log),
                    "stage": stage,
                    "iteration": iteration,
                    "batch": batch,
                    "source": source,
                    "op": str(instruction.op),
                    "args": json.dumps(
                        instruction.model_dump(exclude_none=True, exclude={"op"}),
                        ensure_ascii=False,
                        sort_keys=True,
                    ),
                    "status": status,
                    "reason": reason,
                }
            )
        return counts

    def _resolve_block(self, ref: str, ctx: _Batch) -> str | None:
        if ref in self.blocks:
            return ref
        return ctx.created.get(normalise(ref))

    def _property(self, pid: str | None, ctx: _Batch, field_name: str) -> tuple[str | None, str]:
        if not pid:
            return None, f"incomplete: {field_name} is missing"
        if pid not in self.state:
            return None, f"unknown property id {pid!r}"
        if ctx.property_ids is not None and pid not in ctx.property_ids:
            return None, f"property {pid!r} is not in this batch"
        if self.state[pid].status != "active":
            return None, f"property {pid!r} was merged into {self.state[pid].merged_into!r}"
        return pid, ""

    def _apply(self, ins: Instruction, ctx: _Batch) -> tuple[str, str]:
        op = (ins.op or "").strip().upper()
        if op not in OPS:
            return (
                REJECTED,
                f"unknown op {ins.op!r} (allowed: {', '.join(sorted(ctx.allowed_ops))})",
            )
        if op not in ctx.allowed_ops:
            return REJECTED, f"op {op} is not allowed in stage {ctx.stage}"
        return getattr(self, f"_op_{op.lower()}")(ins, ctx)

    def _op_attach(self, ins: Instruction, ctx: _Batch) -> tuple[str, str]:
        pid, why = self._property(ins.property_id, ctx, "property_id")
        if pid is None:
            return REJECTED, why
        if not ins.block_id:
            return REJECTED, "incomplete: block_id is missing"
        bid = self._resolve_block(ins.block_id, ctx)
        if bid is None:
            return REJECTED, f"unknown block id {ins.block_id!r}"
        state = self.state[pid]
        if state.block_id == bid:
            return NOOP, "already attached to this block"
        state.block_id = bid
        return APPLIED, ""

    def _op_create_block(self, ins: Instruction, ctx: _Batch) -> tuple[str, str]:
        name = " ".join((ins.name or "").split())
        if not name:
            return REJECTED, "incomplete: name is missing"
        if not ins.parent_id:
            return REJECTED, "incomplete: parent_id is missing"
        if len(name) > MAX_NAME:
            return REJECTED, f"block name longer than {MAX_NAME} characters"
        parent = self._resolve_block(ins.parent_id, ctx)
        if parent is None:
            if normalise(ins.parent_id) == normalise(name):
                return REJECTED, "cycle: a block cannot be its own parent"
            return REJECTED, f"unknown parent id {ins.parent_id!r}"
        bid = block_id_for(self.kg_id, parent, name)
        if bid == parent or bid in self.ancestors(parent):
            return REJECTED, "cycle: the new block would be its own ancestor"
        if self.depth(parent) + 1 > MAX_DEPTH:
            return REJECTED, f"block would be deeper than {MAX_DEPTH} levels"
        ctx.created[normalise(name)] = bid
        if bid in self.blocks:
            return NOOP, "block already exists under this parent"
        self.add_block(name, parent, "created", stage=ctx.stage, iteration=ctx.iteration)
        return APPLIED, ""

    def _claim(self, pid: str, ctx: _Batch) -> str:
        if pid in ctx.handled:
            return f"property {pid!r} already has an instruction in this batch"
        return ""

    def _op_merge(self, ins: Instruction, ctx: _Batch) -> tuple[str, str]:
        ids = [i for i in (ins.ids or []) if i]
        if len(ids) < 2:
            return REJECTED, "incomplete: MERGE needs two or more ids"
        if not ins.into:
            return REJECTED, "incomplete: into is missing"
        if len(set(ids)) != len(ids):
            return REJECTED, "ids repeat"
        if ins.into not in ids:
            return REJECTED, f"into {ins.into!r} is not one of ids"
        for pid in ids:
            found, why = self._property(pid, ctx, "ids")
            if found is None:
                return REJECTED, why
            if why := self._claim(pid, ctx):
                return REJECTED, why
        blocks = {self.state[p].block_id for p in ids}
        if len(blocks) != 1:
            return REJECTED, "properties are attached to different blocks"
        units = {normalise(self.records[p].get("unit") or "") for p in ids}
        if len(units) != 1:
            return REJECTED, f"units differ ({', '.join(sorted(units))}): not duplicates"
        keep = self.state[ins.into]
        for pid in ids:
            if pid == ins.into:
                continue  # the survivor may still be renamed in this batch
            ctx.handled.add(pid)
            st = self.state[pid]
            st.status, st.merged_into, st.block_id = "merged", ins.into, None
            keep.merged_from.extend([pid, *st.merged_from])
        return APPLIED, ""

    def _op_rename(self, ins: Instruction, ctx: _Batch) -> tuple[str, str]:
        pid, why = self._property(ins.id, ctx, "id")
        if pid is None:
            return REJECTED, why
        new = " ".join((ins.new_name or "").split())
        if not new:
            return REJECTED, "incomplete: new_name is missing"
        if len(new) > MAX_NAME:
            return REJECTED, f"new_name longer than {MAX_NAME} characters"
        if why := self._claim(pid, ctx):
            return REJECTED, why
        state = self.state[pid]
        if normalise(new) == normalise(state.name):
            return REJECTED, "new_name equals the current name"
        block = state.block_id or ""
        # conflicts are judged on the names the batch started with (before its renames)
        start = ctx.names.setdefault(
            block, Counter(normalise(self.state[p].name) for p in self.properties_in(block))
        )
        if start[normalise(state.name)] < 2:
            return REJECTED, "no name conflict in this block: RENAME only resolves conflicts"
        current = Counter(
            normalise(self.state[p].name) for p in self.properties_in(block) if p != pid
        )
        if current[normalise(new)]:
            return REJECTED, f"new_name {new!r} is already used in this block"
        ctx.handled.add(pid)
        state.name = new
        return APPLIED, ""

    def _op_keep(self, ins: Instruction, ctx: _Batch) -> tuple[str, str]:
        pid, why = self._property(ins.id, ctx, "id")
        if pid is None:
            return REJECTED, why
        if why := self._claim(pid, ctx):
            return REJECTED, why
        ctx.handled.add(pid)
        return NOOP, ""

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


__all__ = [
    "APPLIED",
    "NOOP",
    "OPS",
    "REFINE_OPS",
    "REJECTED",
    "ROUTE_OPS",
    "Block",
    "HardwareKG",
    "Instruction",
    "InstructionList",
    "PropertyState",
    "block_id_for",
]
