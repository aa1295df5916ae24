"""The IR of one prose sentence (rules ``prose.*``).

``prose.conditional``
    "X does Y when Z", "If Z, X does Y": procedural, the condition an auxiliary triple.
``prose.imperative``
    imperative steps ("Run ...", "Use ...", ordered list items): procedural, anchor
    ``procedure``, with temporal and purpose ("to create route guides") auxiliaries.
``prose.declarative``
    everything else: the central entity (the first entity before the main verb, else the
    subject noun phrase, else the section's scope), the verb and its object; other entities
    become ``refers_to`` (``uses`` in procedures) triples.

The central fact is the backbone triple; qualifiers (``qualifiers``) are auxiliaries linked to
it. Which entities a sentence can name depends on the document kind: a tool manual's commands
and options (``mentions.manual_mentions``) or a specification's signals, registers and fields
(``spec_mentions.spec_mentions``).
"""

from __future__ import annotations

import re
from typing import Literal

from edaqa_pipeline.graphs.chipkg import qualifiers as q
from edaqa_pipeline.graphs.chipkg.context import UnitContext, clean_text, short
from edaqa_pipeline.graphs.chipkg.mentions import Mention, manual_mentions
from edaqa_pipeline.graphs.chipkg.schema import (
    IRAttribute,
    IRNormalisation,
    IRQualifier,
    IRTriple,
    SentenceIR,
    offline_rule,
)
from edaqa_pipeline.graphs.chipkg.spec_mentions import spec_mentions
from edaqa_pipeline.model import normalise_ws
from edaqa_pipeline.text.identifiers import DIAGNOSTIC_PREFIX, MESSAGE_ID
from edaqa_pipeline.text.tokens import STOP_WORDS, TOKEN, words


def _word_list(text: str) -> frozenset[str]:
    return frozenset(text.split())


IMPERATIVE_VERBS = _word_list(
    """
    run use set call add install create specify type execute open click select load build
    clone check make define enable disable follow go navigate remove read write source
    download configure change update see refer ensure insert place apply invoke start launch
    provide pass give copy edit modify generate save export import connect delete clear
    choose toggle press drag zoom hover display view show adjust increase decrease reduce
    try avoid consider note put keep compile test debug report
    """
)
VERBS = _word_list(
    """
    is are was were be has have can will must should may might does do supports support
    provides provide performs perform uses use creates create defines define sets set
    specifies specify enables enable disables disable controls control determines determine
    allows allow reads read writes write generates generate runs run returns return adds add
    removes remove places place inserts insert reports report checks check computes compute
    calculates calculate contains contain includes include consists requires require
    means mean indicates indicate represents represent describes describe takes take accepts
    accept reduces reduce increases increase minimizes minimize maximizes maximize optimizes
    optimize builds build connects connect assigns assign selects select displays display
    shows show loads load saves save extracts extract analyzes analyze repairs repair fixes
    fix tries try prints print produces produce outputs output works work applies apply
    makes make gets get needs need implements implement refers refer lists list marks mark
    asserts assert deasserts deassert drives drive samples sample latches latch
    """
)
# concepts made only of these words are too generic to become global nodes (hubs)
GENERIC_CONCEPT_WORDS = _word_list(
    """
    default value values command commands option options parameter parameters argument
    arguments file files user users tool tools design designs following example examples
    result results number name names list set step steps flag flags it this more
    information details detail section page below above following way case cases
    signal signals register registers field fields bit bits
    """
)
PURPOSE = re.compile(r"\b(?:in order )?to\s+([a-z]+\b[^,;.]{2,100})")
DIAGNOSTIC_WORDS = re.compile(r"\b(error|warning|fails?|failed|crash(?:es|ed)?|violation)\b", re.IGNORECASE)
_LEADING_FILLER = re.compile(
    r"^(?:by default,?|simply|please|just|now|then|next|finally|first|also),?\s+", re.IGNORECASE
)
_AFTER_IDENT = re.compile(
    r"^(?:the\s+)?`[^`]+`(?:\s+(?:command|option|tool|module|variable|function|file|flag|"
    r"parameter|argument|utility|engine|switch|api|method|signal|register|field))?\s+([a-z]+(?:s|ed))\b",
    re.IGNORECASE,
)
_NUMBERING = re.compile(r"^(?:[a-z]\.)?\d+(?:\.\d+)*$")
CONFIGURATION_TYPES = frozenset({"option", "variable", "register", "field", "parameter"})


def find_mentions(text: str, ctx: UnitContext) -> list[Mention]:
    """The entities of a sentence, by the rules of its document kind."""
    if ctx.kind == "spec":
        return spec_mentions(text, ctx.vocabulary, ctx.scope, ctx.scope_type)
    return manual_mentions(text, ctx.scope if ctx.scope_type == "command" else "")


def normalisations(found: list[Mention]) -> list[IRNormalisation]:
    return [IRNormalisation(surface=m.surface, canonical=m.canonical, entity_type=m.entity_type)
            for m in found if m.surface != m.canonical]


def verb_split(text: str, after: int = 0) -> tuple[str, str, str] | None:
    """(subject phrase, verb, object) at the first known verb at or after offset ``after``;
    else, for "The `x` [command] <word>s ...", that word."""
    for m in TOKEN.finditer(text):
        if m.start() >= after and m.group(0).lower() in VERBS:
            return text[: m.start()].strip(), m.group(0).lower(), text[m.end():].strip()
    m = _AFTER_IDENT.match(text)
    if m:
        return text[: m.start(1)].strip(), m.group(1).lower(), text[m.end(1):].strip()
    return None


def concept(phrase: str) -> str:
    """A short noun phrase as a concept canonical form ('' when it is not one)."""
    ws = words(phrase)
    while ws and ws[0] in STOP_WORDS:
        ws = ws[1:]
    if not ws or len(ws) > 5 or all(w in STOP_WORDS or w in GENERIC_CONCEPT_WORDS for w in ws):
        return ""
    if _NUMBERING.match(ws[0]) or (ws[0] in ("table", "figure") and len(ws) > 1 and ws[1][0].isdigit()):
        return ""  # "41 3.1.3" (a table of contents), "2.8.1 region access", a caption
    return " ".join(ws)


def section_subject(ctx: UnitContext) -> tuple[str, str]:
    """The section's scope entity, else its title as a document-local value (section titles
    such as "Regression tests" or "FAQs" recur in every document: as global concepts they
    would link unrelated boilerplate)."""
    if ctx.scope:
        return ctx.scope, ctx.scope_type
    title = ctx.section_path[-1] if ctx.section_path else ctx.document
    return f"section: {normalise_ws(title)}", "value"


def _anchor_type(text: str, ctx: UnitContext, subj_type: str, found: list[Mention],
                 aux: list[IRQualifier], imperative: bool, procedural: bool) -> str:
    diagnostic = ctx.kind == "manual" and bool(MESSAGE_ID.search(text) or DIAGNOSTIC_PREFIX.search(text))
    if diagnostic or (DIAGNOSTIC_WORDS.search(text) and any(m.entity_type == "message" for m in found)):
        return "diagnostic"
    if subj_type in CONFIGURATION_TYPES or any(x.kind in ("default", "range", "unit") for x in aux):
        return "configuration"
    if imperative:
        return "procedure"
    return "behavior" if procedural else "definition"


def _central(text: str, main: str, split: tuple[str, str, str] | None, found: list[Mention],
             imperative: bool, ctx: UnitContext) -> tuple[str, str]:
    """(subject, type): first entity before the main verb, else the subject concept, else the
    first entity, else the section's scope / title."""
    central: Mention | None = None
    if split is not None and not imperative:
        verb_pos = len(text) - len(main) + len(split[0])
        before = [m for m in found if m.start < verb_pos and m.entity_type != "concept"]
        central = before[0] if before else None
    subject_concept = concept(split[0]) if split is not None and not imperative else ""
    if central is None and found and not imperative and not subject_concept:
        central = found[0]
    if central is not None:
        return central.canonical, central.entity_type
    if subject_concept:
        return subject_concept, "concept"
    return section_subject(ctx)


def prose_ir(sentence_id: str, text: str, ctx: UnitContext) -> SentenceIR | None:
    """The IR of one prose sentence (rules of the module docstring); None for fragments."""
    text = clean_text(text)
    if len(words(text)) < 3:
        return None
    text = _LEADING_FILLER.sub("", text)
    found = find_mentions(text, ctx)
    first_word = (words(text) or [""])[0]
    imperative = first_word in IMPERATIVE_VERBS or (ctx.block_kind == "ordered_list" and bool(first_word))
    lead = q.LEADING_COND.match(text) or q.LEADING_COND_NOCOMMA.match(text)
    main = lead.group(2) if lead else text
    procedural = bool(imperative or q.COND.search(text) or q.TEMPORAL.search(text) or lead
                      or q.OMITTED.search(text))
    category: Literal["declarative", "procedural"] = "procedural" if procedural else "declarative"
    split = verb_split(main)
    subj, subj_type = _central(text, main, split, found, imperative, ctx)
    if imperative:
        parts = main.split(None, 1)
        verb = parts[0].lower().strip(",:") if parts else "do"
        obj_text = parts[1] if len(parts) > 1 else ""
        purpose = PURPOSE.search(obj_text)
        if purpose:
            obj_text = obj_text[: purpose.start()]
        rule = "prose.imperative"
    else:
        verb, obj_text = (split[1], split[2]) if split is not None else ("states", main)
        rule = "prose.conditional" if procedural else "prose.declarative"
    for pattern in (q.COND, q.TEMPORAL):
        cut = pattern.search(obj_text)
        if cut and cut.start() > 10:
            obj_text = obj_text[: cut.start()]
    obj_text = short(obj_text) or short(main)
    backbone = [IRTriple(subject=subj, subject_type=subj_type, relation=verb, object=obj_text,
                         object_type="value")]
    attrs = [IRAttribute(relation=verb, value=obj_text)]
    rel = "uses" if procedural else "refers_to"
    for mt in [m for m in found if (m.entity_type, m.canonical) != (subj_type, subj)][:8]:
        backbone.append(IRTriple(subject=subj, subject_type=subj_type, relation=rel,
                                 object=mt.canonical, object_type=mt.entity_type))
        attrs.append(IRAttribute(relation=rel, value=mt.canonical))
    aux = q.qualifiers(main, subj, subj_type)
    if lead:
        aux.insert(0, q.qualifier(subj, subj_type, "condition", "when", lead.group(1)))
    if imperative:
        m = PURPOSE.search(main)
        if m:
            aux.append(q.qualifier(subj, subj_type, "purpose", "in_order_to", m.group(1)))
    ir = SentenceIR(
        sentence_id=sentence_id, category=category,
        anchor_type=_anchor_type(text, ctx, subj_type, found, aux, imperative, procedural),
        anchor_entity=subj, anchor_entity_type=subj_type, backbone=backbone, auxiliary=aux,
        normalisation=normalisations(found), rule=offline_rule(rule),
    )
    if category == "declarative":
        ir.entity, ir.attributes = subj, attrs
    else:
        ir.trigger = subj
        ir.conditions = [x.object for x in aux if x.kind == "condition"]
        ir.temporal = [f"{x.relation} {x.object}" for x in aux if x.kind == "temporal"]
        ir.action = short(f"{verb} {obj_text}")
    return ir
