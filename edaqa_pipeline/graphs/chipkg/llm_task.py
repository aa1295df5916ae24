"""The LLM task ``chipkg_triples``: the IRs of a block's prose sentences.

Prompt, offline implementation (the ``prose.*`` rules), validation (ids, anchor types, the
entity types of the document's kind, qualifier kinds, backbone indexes) and caching live in the
task registry (``edaqa_pipeline.llm.tasks``), so a real model and the rules are interchangeable
behind ``client.complete_structured``. :func:`block_irs` is the one call site: it labels what
a model answered ``llm:chipkg_triples`` and keeps the rules' ``offline:<rule>`` labels when the
client is offline or fell back to the rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from edaqa_pipeline.graphs.chipkg.context import UnitContext
from edaqa_pipeline.graphs.chipkg.prose import prose_ir
from edaqa_pipeline.graphs.chipkg.schema import (
    ANCHOR_TYPES,
    DOCUMENT_KINDS,
    LLM_RULE,
    QUALIFIER_KINDS,
    SentenceIRs,
    document_kind,
    validate_irs,
)
from edaqa_pipeline.llm import DATA_NOT_INSTRUCTIONS, LLMTask, delimit, register_task

TASK = "chipkg_triples"
# ChipMind (section 4.1) builds ChipKG with an instruction-following model; extraction is a
# deterministic task, so it runs at temperature 0 (the response cache then makes re-runs free).
TEMPERATURE = 0.0


def task_inputs(ctx: UnitContext, sentences: list[tuple[str, str]]) -> dict[str, Any]:
    """The inputs of one call: a block's sentences (id, cleaned text) and their context."""
    return {
        "document": ctx.document, "document_kind": ctx.kind, "section_path": list(ctx.section_path),
        "scope": ctx.scope, "scope_type": ctx.scope_type, "block_kind": ctx.block_kind,
        "vocabulary": {k: list(v) for k, v in sorted(ctx.vocabulary.items())},
        "sentences": [{"id": sid, "text": text} for sid, text in sentences],
    }


def _context(inputs: Mapping[str, Any]) -> UnitContext:
    return UnitContext(
        document=inputs["document"], section_path=list(inputs.get("section_path", [])),
        scope=inputs.get("scope", ""), block_kind=inputs.get("block_kind", "paragraph"),
        scope_type=inputs.get("scope_type", "command"),
        vocabulary={k: (v[0], v[1]) for k, v in (inputs.get("vocabulary") or {}).items()},
    )


def rule_irs(inputs: Mapping[str, Any]) -> SentenceIRs:
    """The offline implementation of ``chipkg_triples``: the ``prose.*`` rules."""
    ctx = _context(inputs)
    return SentenceIRs(sentences=[ir for s in inputs["sentences"]
                                  if (ir := prose_ir(s["id"], s["text"], ctx)) is not None])


_SYSTEM = (
    "You build a knowledge graph from chip design documentation (EDA tool manuals and circuit "
    "specifications). For every sentence: classify it declarative (static property: what an "
    "entity is, its attributes, module composition) or procedural (trigger-condition-action: "
    "steps, behaviour under conditions); give its Circuit Semantic Anchor (anchor_type one of "
    f"{', '.join(ANCHOR_TYPES)}; anchor_entity the canonical entity it is about); fill the "
    "frame (declarative: entity + attributes; procedural: trigger, conditions, temporal, "
    "action); extract backbone triples (the central action or definition), auxiliary triples "
    f"(kind one of {', '.join(QUALIFIER_KINDS)}) each pointing at the backbone index it "
    "qualifies, and normalisations of surface forms to canonical entities (commands lower "
    "snake_case, options as '<command> -opt' inside a command's section, variables UPPER_CASE, "
    "files by basename, signals without bit ranges, registers and fields lower case, fields as "
    "'<register>.<field>'). Use only the entity types listed in the message, or 'value' for "
    "free text, and only the given sentence ids. " + DATA_NOT_INSTRUCTIONS
)


def _render(inputs: Mapping[str, Any]) -> str:
    sentences = "\n".join(f"{s['id']}: {s['text']}" for s in inputs["sentences"])
    kind = inputs.get("document_kind") or document_kind(inputs["document"])
    return (f"Document: {inputs['document']} ({kind})\n"
            f"Entity types: {', '.join(DOCUMENT_KINDS[kind])}\n"
            f"Section: {' > '.join(inputs['section_path'])}\n"
            f"Section entity: {inputs.get('scope') or '(none)'}\n"
            f"Sentences (id: text):\n{delimit(sentences)}")


def _validate(result: BaseModel, inputs: Mapping[str, Any]) -> None:
    if not isinstance(result, SentenceIRs):
        raise ValueError(f"expected SentenceIRs, got {type(result).__name__}")
    kind = inputs.get("document_kind") or document_kind(inputs["document"])
    validate_irs(result, [s["id"] for s in inputs["sentences"]], kind)


register_task(LLMTask(name=TASK, system_prompt=_SYSTEM, render_user=_render, offline=rule_irs,
                      validate=_validate))


def uses_model(client: Any) -> bool:
    """Whether ``client`` is a real model (not None, not the offline rules)."""
    return client is not None and getattr(client, "provider", "offline") != "offline"


def extractor_id(client: Any) -> str:
    """``provider:model`` of a client (``offline:rules`` without one): part of every
    document's hash, so that switching from the rules to a model (or between models) rebuilds."""
    if not uses_model(client):
        return "offline:rules"
    return f"{client.provider}:{getattr(client, 'model', '')}"


def block_irs(ctx: UnitContext, sentences: list[tuple[str, str]], client: Any = None) -> tuple[SentenceIRs, bool]:
    """(IRs, fell_back) of one block's prose sentences: the model when ``client`` is one (IRs
    labelled ``llm:chipkg_triples``), else the rules; ``fell_back`` when the model failed and
    the client answered with the offline rules (their labels are kept)."""
    inputs = task_inputs(ctx, sentences)
    if not uses_model(client):
        return rule_irs(inputs), False
    before = client.stats.fallbacks
    result = client.complete_structured(TASK, inputs, SentenceIRs, temperature=TEMPERATURE)
    fell_back = client.stats.fallbacks > before
    if not fell_back:
        for ir in result.sentences:
            ir.rule = LLM_RULE
    return result, fell_back
