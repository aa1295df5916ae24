"""The sentence intermediate representation (IR) of ChipKG and its vocabularies.

The offline rules and the LLM task ``chipkg_triples`` produce the same records, so the graph
builder never knows (except through the provenance label in ``rule``) who extracted a
sentence. Entity types depend on the kind of document (ChipMind section 3.2 builds its KG from
circuit specifications; the OpenROAD corpus is tool manuals):

* ``manual`` (Markdown tool documentation): command, option, variable, file, tool, message;
* ``spec`` (PDF specifications and datasheets): module, signal, register, field, fsm_state,
  parameter;
* both: ``concept`` (a short noun phrase) and ``value`` (free text local to a document; an
  object type, never a node shared across documents).

Provenance labels (``SentenceIR.rule``): ``offline:<rule>`` when a deterministic rule made the
IR, ``llm:chipkg_triples`` only when a model answered.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

MANUAL_ENTITY_TYPES: tuple[str, ...] = ("command", "option", "variable", "file", "tool", "message")
SPEC_ENTITY_TYPES: tuple[str, ...] = ("module", "signal", "register", "field", "fsm_state", "parameter")
SHARED_ENTITY_TYPES: tuple[str, ...] = ("concept",)
ENTITY_TYPES: tuple[str, ...] = (*MANUAL_ENTITY_TYPES, *SPEC_ENTITY_TYPES, *SHARED_ENTITY_TYPES)
DOCUMENT_KINDS: dict[str, tuple[str, ...]] = {
    "manual": (*MANUAL_ENTITY_TYPES, *SHARED_ENTITY_TYPES),
    "spec": (*SPEC_ENTITY_TYPES, *SHARED_ENTITY_TYPES),
}
ANCHOR_TYPES: tuple[str, ...] = ("configuration", "definition", "procedure", "behavior", "diagnostic")
QUALIFIER_KINDS: tuple[str, ...] = (
    "condition", "temporal", "default", "range", "unit", "purpose", "requirement",
)
TRIPLE_KINDS: tuple[str, ...] = ("backbone", "auxiliary", "linking", "normalisation")
LLM_RULE = "llm:chipkg_triples"


def document_kind(document: str) -> str:
    """``spec`` for PDFs (specifications, datasheets), ``manual`` for everything else."""
    return "spec" if document.lower().endswith(".pdf") else "manual"


def offline_rule(name: str) -> str:
    """The provenance label of an IR or triple made by the offline rule ``name``."""
    return f"offline:{name}"


class IRTriple(BaseModel):
    """``subject_type`` / ``object_type``: an entity type of :data:`ENTITY_TYPES` or ``value``
    (free text local to the document)."""

    subject: str
    subject_type: str
    relation: str
    object: str
    object_type: str


class IRQualifier(IRTriple):
    kind: str  # one of QUALIFIER_KINDS
    backbone: int = 0  # index of the backbone triple it qualifies (-> a linking triple)


class IRAttribute(BaseModel):
    relation: str
    value: str


class IRNormalisation(BaseModel):
    surface: str
    canonical: str
    entity_type: str


class SentenceIR(BaseModel):
    sentence_id: str
    category: Literal["declarative", "procedural"]
    anchor_type: str
    anchor_entity: str
    anchor_entity_type: str = "concept"
    # declarative frame
    entity: str = ""
    attributes: list[IRAttribute] = Field(default_factory=list)
    # procedural frame
    trigger: str = ""
    conditions: list[str] = Field(default_factory=list)
    temporal: list[str] = Field(default_factory=list)
    action: str = ""
    backbone: list[IRTriple] = Field(default_factory=list)
    auxiliary: list[IRQualifier] = Field(default_factory=list)
    normalisation: list[IRNormalisation] = Field(default_factory=list)
    rule: str = ""  # provenance label: offline:<rule> or llm:chipkg_triples (set by the code)


class SentenceIRs(BaseModel):
    """Response record of the ``chipkg_triples`` task."""

    sentences: list[SentenceIR] = Field(default_factory=list)


def validate_irs(result: SentenceIRs, sentence_ids: list[str], kind: str = "manual") -> None:
    """Raise ValueError when an IR names an unknown sentence, anchor type, entity type (of
    this document kind), qualifier kind or backbone index."""
    known = set(sentence_ids)
    types = DOCUMENT_KINDS.get(kind, ENTITY_TYPES)
    for ir in result.sentences:
        if ir.sentence_id not in known:
            raise ValueError(f"unknown sentence id {ir.sentence_id!r}")
        if ir.anchor_type not in ANCHOR_TYPES:
            raise ValueError(f"anchor type {ir.anchor_type!r} not in {ANCHOR_TYPES}")
        if ir.anchor_entity_type != "value" and ir.anchor_entity_type not in types:
            raise ValueError(f"anchor entity type {ir.anchor_entity_type!r} not in {types}")
        for t in [*ir.backbone, *ir.auxiliary]:
            for etype in (t.subject_type, t.object_type):
                if etype != "value" and etype not in types:
                    raise ValueError(f"entity type {etype!r} not in {types} ({kind} document)")
        for q in ir.auxiliary:
            if q.kind not in QUALIFIER_KINDS:
                raise ValueError(f"qualifier kind {q.kind!r} not in {QUALIFIER_KINDS}")
            if not 0 <= q.backbone < max(len(ir.backbone), 1):
                raise ValueError(f"qualifier refers to backbone {q.backbone} of {len(ir.backbone)}")
        for n in ir.normalisation:
            if n.entity_type not in types:
                raise ValueError(f"normalisation type {n.entity_type!r} not in {types}")
