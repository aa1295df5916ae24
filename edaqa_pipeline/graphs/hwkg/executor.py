"""Validating and executing graph instructions: the only code that changes a hardware KG.

``HardwareKG.execute`` validates each instruction against the current graph and the batch (op
allowed in this stage; fields complete; ids exist and belong to the batch; the property is
still active; no block becomes its own ancestor; a MERGE joins properties of one block whose
units are compatible -- equal, one of them unitless, or one SI prefix apart, the paper's
subsumption; a RENAME only resolves a real name conflict and does not create a new one; one
refinement instruction per property per batch), then applies it. The only mutations that
exist are: add a block, set a property's block, set a property's display name, mark a
property merged into another. Property values, units, descriptions, conditions and provenance
are never written after extraction; there is no delete. Every instruction, applied or
rejected, is appended to the log with its stage, iteration, batch, source, status and reason.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from edaqa_pipeline.extraction.datasheets.textutil import normalise
from edaqa_pipeline.graphs.hwkg.graph import GraphState
from edaqa_pipeline.graphs.hwkg.instructions import (
    APPLIED,
    MAX_DEPTH,
    MAX_NAME,
    NOOP,
    OPS,
    REJECTED,
    Instruction,
    block_id_for,
)

_SI_PREFIX = re.compile(r"^[yzafpnuµmckKMGT](?=[A-Za-zΩ°%])")


def units_compatible(a: str, b: str) -> bool:
    """Units a MERGE may join: equal, one of them empty (a unitless statement subsumed by the
    specification with its unit), or the same base unit under another SI prefix (mA, µA)."""
    a, b = normalise(a).replace(" ", ""), normalise(b).replace(" ", "")
    if a == b or not a or not b:
        return True
    return _SI_PREFIX.sub("", a) == _SI_PREFIX.sub("", b)


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


class HardwareKG(GraphState):
    """A hardware KG that instructions can change (see the module docstring)."""

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
            self.record(str(instruction.op),
                        instruction.model_dump(exclude_none=True, exclude={"op"}), status, reason,
                        stage=stage, iteration=iteration, batch=batch, source=source)
        return counts

    def record(self, op: str, args: dict[str, object], status: str, reason: str, *, stage: str,
               iteration: int, batch: str, source: str) -> None:
        """Append one entry to the audit log (also for answers refused before execution: a
        refinement index outside the batch, a name that does not match its index)."""
        self.log.append({
            "kg_id": self.kg_id, "seq": len(self.log), "stage": stage, "iteration": iteration,
            "batch": batch, "source": source, "op": op,
            "args": json.dumps(args, ensure_ascii=False, sort_keys=True, default=str),
            "status": status, "reason": reason,
        })

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
        units = sorted({self.records[p].get("unit") or "" for p in ids})
        if not all(units_compatible(x, y) for x in units for y in units):
            return REJECTED, f"units differ ({', '.join(units)}): not compatible, not duplicates"
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


__all__ = ["HardwareKG", "units_compatible"]
