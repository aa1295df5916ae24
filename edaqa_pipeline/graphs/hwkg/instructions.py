"""Graph updates as instructions: the schema the model (or a rule) answers in.

The paper's central safety property (section I-C/I-D): the LLM never regenerates graph data.
It returns explicit operations that reference stored properties and blocks; local code checks
each one and executes it on the locally stored records (``executor.HardwareKG.execute``).

* ``Instruction`` -- one flat pydantic record, ``op`` plus the fields that op needs, by id:

  ========================  ==================================================================
  ``ATTACH``                ``property_id``, ``block_id`` (an existing block id, or the name
                            of a block created earlier in the same batch)
  ``CREATE_BLOCK``          ``name``, ``parent_id`` (existing id or a name created in batch)
  ``MERGE``                 ``ids`` (two or more property ids of the batch), ``into`` (one
                            of them: the property kept)
  ``RENAME``                ``id``, ``new_name``
  ``KEEP``                  ``id``
  ========================  ==================================================================

* ``RefineInstruction`` -- what the refinement task answers. As in the paper, properties are
  referred to by their **name and in-batch index** (``[3] Supply current``), not by id:
  ``MERGE(indices, into)``, ``RENAME(index, name, new_name)``, ``KEEP(index, name)``.
  ``to_instructions`` checks every index against the batch and every name against the
  property at that index (a name that does not match is how a model that lost track of the
  batch shows) and turns the answer into id-based ``Instruction`` records; what it refuses is
  returned with its reason and logged like any rejected instruction.

``op`` is a plain string so that an unknown operation ("DELETE_BLOCK") is rejected and logged
like any other invalid instruction instead of failing the whole answer.
"""

from __future__ import annotations

from collections.abc import Sequence

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


class RefineInstruction(BaseModel):
    """One refinement decision about properties of the batch, referenced by index and name."""

    op: str = Field(description="MERGE | RENAME | KEEP")
    index: int | None = Field(default=None, description="RENAME / KEEP: the property's [index]")
    name: str | None = Field(default=None, description="RENAME / KEEP: its current name")
    indices: list[int] | None = Field(default=None, description="MERGE: [index] of each duplicate")
    into: int | None = Field(default=None, description="MERGE: the [index] (one of indices) to keep")
    new_name: str | None = Field(default=None, description="RENAME: the distinguishing name")


class RefineInstructionList(BaseModel):
    """MERGE, RENAME or KEEP for every property of the batch."""

    instructions: list[RefineInstruction] = Field(default_factory=list)


def to_instructions(answer: Sequence[RefineInstruction], ids: Sequence[str], names: Sequence[str]
                    ) -> tuple[list[Instruction], list[tuple[RefineInstruction, str]]]:
    """(id-based instructions, [(refused answer, reason)]) for a batch whose property ``i`` has
    id ``ids[i]`` and current name ``names[i]``."""
    out: list[Instruction] = []
    refused: list[tuple[RefineInstruction, str]] = []

    def bad(index: int | None) -> str:
        if index is None:
            return "incomplete: index is missing"
        if not 0 <= index < len(ids):
            return f"index {index} is not in the batch (0..{len(ids) - 1})"
        return ""

    for ins in answer:
        op = (ins.op or "").strip().upper()
        if op == "MERGE":
            indices = list(ins.indices or [])
            why = next((w for w in (bad(i) for i in [*indices, ins.into]) if w), "")
            if not why and ins.into not in indices:
                why = f"into [{ins.into}] is not one of indices"
            if why:
                refused.append((ins, why))
                continue
            assert ins.into is not None
            out.append(Instruction(op="MERGE", ids=[ids[i] for i in indices], into=ids[ins.into]))
        elif op in ("RENAME", "KEEP"):
            why = bad(ins.index)
            if not why and ins.name is not None and normalise(ins.name) != normalise(names[ins.index or 0]):
                why = f"name {ins.name!r} is not the name of [{ins.index}] ({names[ins.index or 0]!r})"
            if why:
                refused.append((ins, why))
                continue
            assert ins.index is not None
            out.append(Instruction(op=op, id=ids[ins.index], new_name=ins.new_name))
        else:
            out.append(Instruction(op=ins.op or ""))  # the executor rejects and logs it
    return out, refused


__all__ = [
    "APPLIED",
    "MAX_DEPTH",
    "MAX_NAME",
    "NOOP",
    "OPS",
    "REFINE_OPS",
    "REJECTED",
    "ROUTE_OPS",
    "Instruction",
    "InstructionList",
    "RefineInstruction",
    "RefineInstructionList",
    "block_id_for",
    "to_instructions",
]
