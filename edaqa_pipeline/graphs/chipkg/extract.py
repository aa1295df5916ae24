"""Circuit Semantic-Aware KG construction (ChipMind section 3.2), one document at a time.

Every *sentence unit* of a document -- a prose sentence, a row of an option / variable /
command table, a command synopsis or script code block, a heading that names a command -- is
turned into a JSON intermediate representation (``SentenceIR``):

* a category: ``declarative`` (static properties: what a command / option / variable is,
  module composition) or ``procedural`` (trigger - condition - action: imperative steps,
  "X does Y when Z", ordered steps, scripts);
* the frame of its category: declarative -> central ``entity`` + ``attributes``;
  procedural -> ``trigger``, ``conditions``, ``temporal`` qualifiers and the ``action``;
* a Circuit Semantic Anchor ``(anchor_type, anchor_entity)`` (:data:`ANCHOR_TYPES`), the
  high-level intent the retrieval filter compares against the query's target anchor;
* the hierarchical triples: backbone (the central action or definition), auxiliary
  (conditions, temporal qualifiers, defaults, ranges, units, purposes, requirements), each
  linked to the backbone it qualifies (-> linking triples), and normalisations (surface form
  -> canonical entity, e.g. ``Define_PDN_Grid()`` -> ``define_pdn_grid``, a bare ``-buf_list``
  in the ``clock_tree_synthesis`` section -> ``clock_tree_synthesis -buf_list``, the heading
  "Set Routing Alpha" -> ``set_routing_alpha``).

Offline the IR comes from the deterministic rules below (:func:`rule_ir`); with a configured
LLM, prose sentences go through the LLM task ``chipkg_triples`` (same response model, offline
implementation = the rules), while tables and code blocks always use the rules (their structure
is explicit). :func:`document_kg` converts the IRs into node and triple rows with provenance
(document, line span, chunk id); entity nodes are global (id from the canonical form), so that
the same command mentioned in two documents is one node -- the cross-document link.

Rules (names end up in the triples' ``rule`` column):

``table.option_row``
    ``| `-opt` | description |`` under a command's section -> (cmd, has_option, cmd -opt),
    (cmd -opt, means, description) + auxiliaries found in the description.
``table.variable_row`` / ``table.command_row`` / ``table.row``
    variables (+ a default column), commands, other rows with an identifier in the first cell.
``code.synopsis``
    a code block that starts with a command and lists ``-options``: has_option triples, each
    qualified by ``requirement`` = optional (inside ``[...]``) or required.
``code.script``
    other code: (example, invokes, cmd) for every command a line starts with.
``prose.conditional`` / ``prose.imperative`` / ``prose.declarative``
    "X does Y when Z", "If Z, X does Y" (procedural, condition auxiliary), imperative steps
    ("Run ...", "Use ...", ordered list items), and everything else (central entity, verb,
    object; other identifiers become ``refers_to`` attributes).
``qualifier.*``
    ``Default: N`` / ``defaults to N`` / ``by default`` (default), ``between A and B`` /
    ``allowed values`` (range), ``(in microns)`` (unit), ``to <verb> ...`` after an
    imperative (purpose), ``after`` / ``before`` / ``during`` (temporal), ``if`` / ``when`` /
    ``unless`` / ``once`` / ``is omitted`` (condition).
``heading.command``
    a heading whose snake_case form is a command of the document (normalisation only).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from edaqa_pipeline.extraction.anchors import normalise_anchor, rejection_reason
from edaqa_pipeline.model import normalise_ws, stable_id
from edaqa_pipeline.text.identifiers import (
    COMMAND,
    DIAGNOSTIC_PREFIX,
    FILE_NAME,
    INLINE_CODE,
    LANGUAGE_WORDS,
    MESSAGE_ID,
    OPTION,
)
from edaqa_pipeline.text.sentences import split_sentences

EXTRACTOR_VERSION = "chipkg-rules-2"

ENTITY_TYPES: tuple[str, ...] = (
    "command", "option", "variable", "file", "message", "tool", "concept",
)
ANCHOR_TYPES: tuple[str, ...] = ("configuration", "definition", "procedure", "behavior", "diagnostic")
QUALIFIER_KINDS: tuple[str, ...] = (
    "condition", "temporal", "default", "range", "unit", "purpose", "requirement",
)
TRIPLE_KINDS: tuple[str, ...] = ("backbone", "auxiliary", "linking", "normalisation")
PROSE_KINDS = frozenset({"paragraph", "list", "ordered_list", "blockquote", "admonition"})


# --- the intermediate representation (offline rules and LLM share it) ------------------------


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
    rule: str = ""  # the extraction rule (set by the code, "llm:chipkg_triples" for the LLM)


class SentenceIRs(BaseModel):
    """Response record of the ``chipkg_triples`` task."""

    sentences: list[SentenceIR] = Field(default_factory=list)


def validate_irs(result: SentenceIRs, sentence_ids: list[str]) -> None:
    """Raise ValueError when an IR names an unknown sentence, type or backbone index."""
    known = set(sentence_ids)
    for ir in result.sentences:
        if ir.sentence_id not in known:
            raise ValueError(f"unknown sentence id {ir.sentence_id!r}")
        if ir.anchor_type not in ANCHOR_TYPES:
            raise ValueError(f"anchor type {ir.anchor_type!r} not in {ANCHOR_TYPES}")
        for t in [*ir.backbone, *ir.auxiliary]:
            for kind in (t.subject_type, t.object_type):
                if kind != "value" and kind not in ENTITY_TYPES:
                    raise ValueError(f"entity type {kind!r} not in {ENTITY_TYPES}")
        for q in ir.auxiliary:
            if q.kind not in QUALIFIER_KINDS:
                raise ValueError(f"qualifier kind {q.kind!r} not in {QUALIFIER_KINDS}")
            if not 0 <= q.backbone < max(len(ir.backbone), 1):
                raise ValueError(f"qualifier refers to backbone {q.backbone} of {len(ir.backbone)}")


# --- entities --------------------------------------------------------------------------------

_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_HTML = re.compile(r"<[^>]+>")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_UPPER_VAR = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
_BARE_UPPER_VAR = re.compile(r"(?<![\w$-])([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?![\w-])")
_BARE_COMMAND = re.compile(r"(?<![\w./$-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w./-])")
_TOOL = re.compile(r"(?<![\w-])((?:[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*)|(?:[A-Z]{2,}[a-z][A-Za-z0-9]*)|(?:[A-Z][a-z]+[A-Z]{2,}[A-Za-z0-9]*))(?![\w-])")
_OPTION_IN_TEXT = re.compile(r"(?<![\w-])(-[a-zA-Z][A-Za-z0-9_]*)")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PLACEHOLDER_OPTION = re.compile(r"^-(?:param\d*|option\d*|opt\d*|flag\d*|switch\d*)$")
_TOOL_STOP = frozenset({"GitHub", "JavaScript", "TypeScript", "YouTube", "macOS", "iOS", "PhD", "McDonald"})


@dataclass(frozen=True)
class Mention:
    surface: str  # as written (without backticks)
    entity_type: str
    canonical: str
    start: int  # character offset in the sentence (for "before the verb" decisions)


def scoped_option(option: str, scope: str) -> str:
    """Canonical form of an option: ``cmd -opt`` inside a command's section, else ``-opt``."""
    return f"{scope} {option}" if scope else option


def classify_code(span: str, scope: str = "") -> list[tuple[str, str, str]]:
    """(surface, type, canonical) for the entities an inline code span names.

    ``place_pins -random`` names the command and its option; ``-buf_list`` alone is an option
    (scoped by the section's command); ``PLACE_DENSITY`` a variable; ``floorplan.def`` a file.
    """
    text = span.strip()
    if not text:
        return []
    words = text.split()
    first = words[0].rstrip("();,")
    out: list[tuple[str, str, str]] = []
    if MESSAGE_ID.fullmatch(first):
        return [(first, "message", first.upper())]
    if OPTION.fullmatch(first):
        if _PLACEHOLDER_OPTION.fullmatch(first):
            return []
        return [(first, "option", scoped_option(first, scope))]
    if _UPPER_VAR.match(first.lstrip("$")):
        name = first.lstrip("$")
        return [(first, "variable", name)]
    base = first.rsplit("/", 1)[-1]
    if FILE_NAME.fullmatch(base.lower()) and "." in base:
        canon = normalise_anchor(first)
        if rejection_reason(canon) is None:
            return [(first, "file", canon)]
        return []
    canon = normalise_anchor(first)
    if not canon or rejection_reason(canon) is not None or canon in LANGUAGE_WORDS:
        return []
    if COMMAND.fullmatch(canon):
        out.append((words[0].rstrip(";,"), "command", canon))
        for w in words[1:]:
            if OPTION.fullmatch(w):
                out.append((f"{first} {w}", "option", scoped_option(w, canon)))
        return out
    if _IDENT.match(first) and first.islower() and 2 < len(first) <= 24:
        return [(first, "tool", canon)]
    return []


def mentions(text: str, scope: str = "") -> list[Mention]:
    """Entities mentioned in a sentence: inline code first, then bare identifiers and tools."""
    found: list[Mention] = []
    taken: list[tuple[int, int]] = []
    for m in INLINE_CODE.finditer(text):
        taken.append(m.span())
        for surface, etype, canon in classify_code(m.group(1), scope):
            found.append(Mention(surface, etype, canon, m.start()))
    masked = list(text)
    for a, b in taken:
        masked[a:b] = " " * (b - a)
    rest = "".join(masked)
    for m in MESSAGE_ID.finditer(rest):
        found.append(Mention(m.group(0), "message", m.group(0), m.start()))
    for m in _BARE_UPPER_VAR.finditer(rest):
        if not MESSAGE_ID.fullmatch(m.group(1)):
            found.append(Mention(m.group(1), "variable", m.group(1), m.start()))
    for m in _BARE_COMMAND.finditer(rest):
        canon = m.group(1)
        if rejection_reason(canon) is None and canon not in LANGUAGE_WORDS:
            found.append(Mention(canon, "command", canon, m.start()))
    for m in _OPTION_IN_TEXT.finditer(rest):
        if scope and len(m.group(1)) > 2 and not _PLACEHOLDER_OPTION.fullmatch(m.group(1)):
            found.append(Mention(m.group(1), "option", scoped_option(m.group(1), scope), m.start()))
    for m in _TOOL.finditer(rest):
        word = m.group(1)
        if word not in _TOOL_STOP and not _UPPER_VAR.match(word):
            found.append(Mention(word, "tool", word.lower(), m.start()))
    found.sort(key=lambda x: x.start)
    seen: set[tuple[str, str]] = set()
    unique = []
    for mt in found:
        key = (mt.entity_type, mt.canonical)
        if key not in seen:
            seen.add(key)
            unique.append(mt)
    return unique


# --- sentence-level rules --------------------------------------------------------------------

def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


IMPERATIVE_VERBS = _words(
    """
    run use set call add install create specify type execute open click select load build
    clone check make define enable disable follow go navigate remove read write source
    download configure change update see refer ensure insert place apply invoke start launch
    provide pass give copy edit modify generate save export import connect delete clear
    choose toggle press drag zoom hover display view show adjust increase decrease reduce
    try avoid consider note put keep compile test debug report
    """
)
VERBS = _words(
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
    """
)
_CLAUSE = r"((?:[^,;.]|\.(?=\d)){3,120})"  # up to , ; or a full stop (not a decimal point)
_COND = re.compile(
    r"\b(if|when|whenever|unless|once|while|until|in case|only if|only when)\b\s+" + _CLAUSE,
    re.IGNORECASE,
)
_LEADING_COND = re.compile(
    r"^(?:if|when|whenever|unless|once|in case)\b\s+([^,]{3,160}),\s*(.+)$", re.IGNORECASE | re.DOTALL
)
# "When alpha is 0.0 the net topology ..." (no comma): the condition is "<x> is <value>"
_LEADING_COND_NOCOMMA = re.compile(
    r"^(?:if|when|whenever|unless|once)\s+(\S+(?:\s+\S+){0,3}?\s+(?:is|are|was|were|equals?)\s+\S+)"
    r"\s+(.+)$",
    re.IGNORECASE | re.DOTALL,
)
_TEMPORAL = re.compile(r"\b(after|before|during|prior to|following)\b\s+" + _CLAUSE, re.IGNORECASE)
_OMITTED = re.compile(r"\b(?:is|are) (?:omitted|not (?:specified|given|set|provided))\b", re.IGNORECASE)
_DEFAULT = re.compile(
    r"(?:\bdefault(?: value)?(?: is| of|:|=)\s*|\bdefaults? to\s+)"
    r"([^.;]{1,80})",
    re.IGNORECASE,
)
_RANGE = re.compile(
    r"(\bbetween\s+[-\w.]+\s+and\s+[-\w.]+|\ballowed values? (?:is|are)\s+[^.;]{1,60}|"
    r"\b(?:range|ranges) (?:is|of|from)\s+[^.;]{1,60}|\[[-\d.]+,\s*[-\d.]+\]|\([-\d.]+,\s*[-\d.]+\])",
    re.IGNORECASE,
)
_UNIT = re.compile(
    r"\(\s*in\s+(?:the\s+)?(?:current\s+)?(microns?|um|nm|ps|ns|ohms?|pf|ff|percent|%|"
    r"time units?|capacitance units?|dbu|dbus|degrees|tracks|sites|rows)\s*\)",
    re.IGNORECASE,
)
_PURPOSE = re.compile(r"\b(?:in order )?to\s+([a-z]+\b[^,;.]{2,100})")
_DIAG_WORDS = re.compile(r"\b(error|warning|fails?|failed|crash(?:es|ed)?|violation)\b", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z_][\w'-]*")
_SUBJECT_STOP = _words(
    """
    the a an this that these those it its they them there here which who what we you your our
    each every all some any one such also then so thus however note if when whenever unless
    once while by in on for with of
    """
)
# concepts made only of these words are too generic to become global nodes (hubs)
_GENERIC = _words(
    """
    default value values command commands option options parameter parameters argument
    arguments file files user users tool tools design designs following example examples
    result results number name names list set step steps flag flags it this more
    information details detail section page below above following way case cases
    """
)


def clean_text(text: str) -> str:
    """Markdown links -> their text, HTML tags and list markers removed, whitespace collapsed."""
    text = _MD_LINK.sub(lambda m: m.group(1), text)
    text = _HTML.sub(" ", text)
    text = _LIST_MARK.sub("", text)
    return normalise_ws(text)


def _short(text: str, limit: int = 160) -> str:
    text = normalise_ws(text).strip(" ,;:.")
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _qualifiers(text: str, subject: str, subject_type: str) -> list[IRQualifier]:
    """Auxiliary triples found in ``text``, qualifying backbone 0, subject = the entity."""
    out: list[IRQualifier] = []

    def add(kind: str, relation: str, value: str) -> None:
        value = _short(value, 120)
        if value and not any(q.kind == kind and q.object == value for q in out):
            out.append(IRQualifier(subject=subject, subject_type=subject_type, relation=relation,
                                   object=value, object_type="value", kind=kind))

    for m in _DEFAULT.finditer(text):
        add("default", "default", m.group(1))
    for m in _RANGE.finditer(text):
        add("range", "range", m.group(1))
    for m in _UNIT.finditer(text):
        add("unit", "unit", m.group(1).lower())
    conds = list(_COND.finditer(text))
    if _OMITTED.search(text) and not any(_OMITTED.search(m.group(0)) for m in conds):
        add("condition", "when", "omitted")
    for m in conds:
        add("condition", m.group(1).lower(), m.group(2))
    for m in _TEMPORAL.finditer(text):
        add("temporal", m.group(1).lower(), m.group(2))
    return out


_AFTER_IDENT = re.compile(
    r"^(?:the\s+)?`[^`]+`(?:\s+(?:command|option|tool|module|variable|function|file|flag|"
    r"parameter|argument|utility|engine|switch|api|method))?\s+([a-z]+(?:s|ed))\b",
    re.IGNORECASE,
)


def _verb_split(text: str, after: int = 0) -> tuple[str, str, str] | None:
    """(subject phrase, verb, object) at the first known verb at or after offset ``after``;
    else, for "The `x` [command] <word>s ...", that word."""
    for m in _WORD.finditer(text):
        if m.start() < after:
            continue
        word = m.group(0).lower()
        if word in VERBS:
            return text[: m.start()].strip(), word, text[m.end():].strip()
    m = _AFTER_IDENT.match(text)
    if m:
        return text[: m.start(1)].strip(), m.group(1).lower(), text[m.end(1):].strip()
    return None


def _concept(phrase: str) -> str:
    """A short noun phrase as a concept canonical form ('' when it is not one)."""
    words = [w.lower() for w in _WORD.findall(phrase)]
    while words and words[0] in _SUBJECT_STOP:
        words = words[1:]
    if not words or len(words) > 5 or all(w in _SUBJECT_STOP or w in _GENERIC for w in words):
        return ""
    return " ".join(words)


@dataclass
class UnitContext:
    """What a rule knows about a sentence unit besides its text."""

    document: str
    section_path: list[str]
    scope: str = ""  # the command whose section this is ("" if none)
    block_kind: str = "paragraph"


def _norms(found: list[Mention]) -> list[IRNormalisation]:
    out = []
    for mt in found:
        if mt.surface != mt.canonical:
            out.append(IRNormalisation(surface=mt.surface, canonical=mt.canonical,
                                       entity_type=mt.entity_type))
    return out


def _section_subject(ctx: UnitContext) -> tuple[str, str]:
    """The section's command, else its title as a document-local value (section titles such
    as "Regression tests" or "FAQs" recur in every document: as global concepts they would
    link unrelated boilerplate)."""
    if ctx.scope:
        return ctx.scope, "command"
    title = ctx.section_path[-1] if ctx.section_path else ctx.document
    return f"section: {normalise_ws(title)}", "value"


def prose_ir(sentence_id: str, text: str, ctx: UnitContext) -> SentenceIR | None:
    """The IR of one prose sentence (rules ``prose.*``)."""
    text = clean_text(text)
    if len(_WORD.findall(text)) < 3:
        return None
    text = re.sub(r"^(?:by default,?|simply|please|just|now|then|next|finally|first|also),?\s+",
                  "", text, flags=re.IGNORECASE)
    found = mentions(text, ctx.scope)
    first_word = (_WORD.findall(text) or [""])[0].lower()
    imperative = first_word in IMPERATIVE_VERBS or (ctx.block_kind == "ordered_list" and bool(first_word))
    lead = _LEADING_COND.match(text) or _LEADING_COND_NOCOMMA.match(text)
    main = lead.group(2) if lead else text
    diagnostic = bool(MESSAGE_ID.search(text) or DIAGNOSTIC_PREFIX.search(text))
    quals_probe = _COND.search(text) or _TEMPORAL.search(text) or lead or _OMITTED.search(text)
    category: Literal["declarative", "procedural"] = (
        "procedural" if imperative or quals_probe else "declarative"
    )
    # central entity: first identifier before the main verb, else first identifier, else the
    # subject noun phrase, else the section's command / title
    split = _verb_split(main)
    main_offset = len(text) - len(main)
    central: Mention | None = None
    if split is not None and not imperative:
        verb_pos = main_offset + len(split[0])
        before = [m for m in found if m.start < verb_pos and m.entity_type != "concept"]
        central = before[0] if before else None
    subject_concept = _concept(split[0]) if split is not None and not imperative else ""
    if central is None and found and not imperative and not subject_concept:
        central = found[0]
    if central is not None:
        subj, subj_type = central.canonical, central.entity_type
    elif subject_concept:
        subj, subj_type = subject_concept, "concept"
    else:
        subj, subj_type = _section_subject(ctx)
    if imperative:
        words = main.split(None, 1)
        verb = words[0].lower().strip(",:") if words else "do"
        obj_text = words[1] if len(words) > 1 else ""
        purpose = _PURPOSE.search(obj_text)
        if purpose:
            obj_text = obj_text[: purpose.start()]
        rule = "prose.imperative"
    elif split is not None:
        verb, obj_text = split[1], split[2]
        rule = "prose.conditional" if category == "procedural" else "prose.declarative"
    else:
        verb, obj_text = "states", main
        rule = "prose.conditional" if category == "procedural" else "prose.declarative"
    for pattern in (_COND, _TEMPORAL):
        cut = pattern.search(obj_text)
        if cut and cut.start() > 10:
            obj_text = obj_text[: cut.start()]
    obj_entities = [m for m in found if (m.entity_type, m.canonical) != (subj_type, subj)]
    obj_text = _short(obj_text) or _short(main)
    backbone = [IRTriple(subject=subj, subject_type=subj_type, relation=verb, object=obj_text,
                         object_type="value")]
    attrs = [IRAttribute(relation=verb, value=obj_text)]
    rel = "uses" if category == "procedural" else "refers_to"
    for mt in obj_entities[:8]:
        backbone.append(IRTriple(subject=subj, subject_type=subj_type, relation=rel,
                                 object=mt.canonical, object_type=mt.entity_type))
        attrs.append(IRAttribute(relation=rel, value=mt.canonical))
    aux = _qualifiers(main, subj, subj_type)
    if lead:
        aux.insert(0, IRQualifier(subject=subj, subject_type=subj_type, relation="when",
                                  object=_short(lead.group(1), 120), object_type="value",
                                  kind="condition"))
    if imperative:
        m = _PURPOSE.search(main)
        if m:
            aux.append(IRQualifier(subject=subj, subject_type=subj_type, relation="in_order_to",
                                   object=_short(m.group(1), 120), object_type="value",
                                   kind="purpose"))
    if diagnostic or (_DIAG_WORDS.search(text) and any(m.entity_type == "message" for m in found)):
        anchor_type = "diagnostic"
    elif subj_type in ("option", "variable") or any(q.kind in ("default", "range", "unit") for q in aux):
        anchor_type = "configuration"
    elif imperative:
        anchor_type = "procedure"
    elif category == "procedural":
        anchor_type = "behavior"
    else:
        anchor_type = "definition"
    ir = SentenceIR(
        sentence_id=sentence_id, category=category, anchor_type=anchor_type,
        anchor_entity=subj, anchor_entity_type=subj_type, backbone=backbone, auxiliary=aux,
        normalisation=_norms(found),
    )
    if category == "declarative":
        ir.entity, ir.attributes = subj, attrs
    else:
        ir.trigger = subj
        ir.conditions = [q.object for q in aux if q.kind == "condition"]
        ir.temporal = [f"{q.relation} {q.object}" for q in aux if q.kind == "temporal"]
        ir.action = _short(f"{verb} {obj_text}")
    ir.rule = rule
    return ir

_OPTION_HEADERS = ("switch", "option", "argument", "parameter", "flag", "arg")
_VARIABLE_HEADERS = ("variable", "configuration variable", "env")
_COMMAND_HEADERS = ("command", "function", "tcl command", "api")


def _cells(line: str) -> list[str]:
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|"):
        line = line[:-1]
    return [c.strip() for c in re.split(r"(?<!\\)\|", line)]


def table_irs(
    rows: list[tuple[str, str]], header: list[str], ctx: UnitContext
) -> list[SentenceIR]:
    """IRs for the rows ``(sentence_id, row line)`` of one pipe table (rules ``table.*``)."""
    head = " ".join(h.lower().strip("*` ") for h in header[:1])
    has_default_col = [i for i, h in enumerate(header) if "default" in h.lower()]
    out: list[SentenceIR] = []
    for sid, line in rows:
        cells = _cells(line)
        if len(cells) < 2 or not cells[0]:
            continue
        first = clean_text(cells[0])
        desc = clean_text(" ".join(c for i, c in enumerate(cells[1:], 1) if i not in has_default_col))
        ents = mentions(first, ctx.scope)
        if not ents:
            continue
        lead = ents[0]
        is_option = lead.entity_type == "option" or any(h in head for h in _OPTION_HEADERS)
        if is_option and lead.entity_type != "option":
            opt = first.strip("`").split()[0] if first.strip("`").split() else ""
            if not OPTION.fullmatch(opt):
                is_option = False
            else:
                lead = Mention(opt, "option", scoped_option(opt, ctx.scope), 0)
        backbone: list[IRTriple] = []
        norms = _norms(ents)
        if is_option:
            rule, anchor_type = "table.option_row", "configuration"
            options = [m for m in ents if m.entity_type == "option"] or [lead]
            for opt in options:
                if ctx.scope:
                    backbone.append(IRTriple(subject=ctx.scope, subject_type="command",
                                             relation="has_option", object=opt.canonical,
                                             object_type="option"))
            backbone.insert(0, IRTriple(subject=lead.canonical, subject_type="option",
                                        relation="means", object=_short(desc) or "(no description)",
                                        object_type="value"))
        elif lead.entity_type == "variable" or any(h in head for h in _VARIABLE_HEADERS):
            rule, anchor_type = "table.variable_row", "configuration"
            backbone.append(IRTriple(subject=lead.canonical, subject_type=lead.entity_type,
                                     relation="means", object=_short(desc) or "(no description)",
                                     object_type="value"))
        elif any(h in head for h in _COMMAND_HEADERS) or lead.entity_type == "command":
            rule, anchor_type = "table.command_row", "definition"
            backbone.append(IRTriple(subject=lead.canonical, subject_type=lead.entity_type,
                                     relation="means", object=_short(desc) or "(no description)",
                                     object_type="value"))
        else:
            rule, anchor_type = "table.row", "definition"
            backbone.append(IRTriple(subject=lead.canonical, subject_type=lead.entity_type,
                                     relation="described_as", object=_short(desc) or first,
                                     object_type="value"))
        for mt in mentions(desc, ctx.scope)[:6]:
            if (mt.entity_type, mt.canonical) != (lead.entity_type, lead.canonical):
                backbone.append(IRTriple(subject=lead.canonical, subject_type=lead.entity_type,
                                         relation="refers_to", object=mt.canonical,
                                         object_type=mt.entity_type))
                norms.extend(_norms([mt]))
        aux = _qualifiers(desc, lead.canonical, lead.entity_type)
        for i in has_default_col:
            if i < len(cells) and clean_text(cells[i]):
                aux.insert(0, IRQualifier(subject=lead.canonical, subject_type=lead.entity_type,
                                          relation="default", object=_short(clean_text(cells[i]), 80),
                                          object_type="value", kind="default"))
        out.append(SentenceIR(
            sentence_id=sid, category="declarative", anchor_type=anchor_type,
            anchor_entity=lead.canonical, anchor_entity_type=lead.entity_type,
            entity=lead.canonical,
            attributes=[IRAttribute(relation=t.relation, value=t.object) for t in backbone],
            backbone=backbone, auxiliary=aux, normalisation=norms, rule=rule,
        ))
    return out


_CODE_SKIP = re.compile(r"^\s*(?:#|//|\$ ?$|%|>>>|\.\.\.|\}|\{|$)")
_CODE_OPTION = re.compile(r"(?<![\w-])-([a-zA-Z][A-Za-z0-9_]*)")


def _line_command(line: str) -> str | None:
    stripped = line.strip().lstrip("$ ").strip()
    if not stripped or _CODE_SKIP.match(stripped):
        return None
    word = stripped.split()[0].rstrip(";")
    if word in LANGUAGE_WORDS or word.startswith(("-", "[", "<", "$", "#")):
        return None
    canon = normalise_anchor(word)
    if COMMAND.fullmatch(canon) and rejection_reason(canon) is None:
        return canon
    return None


def code_command(code: str) -> str | None:
    """The command a code block starts with (its first non-comment line), if any."""
    for line in code.split("\n"):
        if _CODE_SKIP.match(line.strip()):
            continue
        return _line_command(line)
    return None


def code_ir(sentence_id: str, code: str, ctx: UnitContext) -> SentenceIR | None:
    """``code.synopsis`` or ``code.script`` (see the module docstring)."""
    lines = code.split("\n")[:80]
    first = code_command(code)
    options = list(dict.fromkeys(_CODE_OPTION.findall("\n".join(lines))))
    commands = [c for c in (_line_command(ln) for ln in lines) if c]
    if first and options and len(set(commands)) <= 2:
        backbone: list[IRTriple] = []
        aux: list[IRQualifier] = []
        body = "\n".join(lines)
        for opt in options:
            canon = scoped_option(f"-{opt}", first)
            backbone.append(IRTriple(subject=first, subject_type="command", relation="has_option",
                                     object=canon, object_type="option"))
            if "[" in body:
                pos = re.search(rf"(?<![\w-])-{re.escape(opt)}\b", body)
                before = body[: pos.start()].rstrip() if pos else ""
                optional = before.endswith("[") or (before.count("[") > before.count("]"))
                aux.append(IRQualifier(subject=canon, subject_type="option", relation="is",
                                       object="optional" if optional else "required",
                                       object_type="value", kind="requirement",
                                       backbone=len(backbone) - 1))
        ir = SentenceIR(
            sentence_id=sentence_id, category="declarative", anchor_type="configuration",
            anchor_entity=first, anchor_entity_type="command", entity=first,
            attributes=[IRAttribute(relation="has_option", value=t.object) for t in backbone],
            backbone=backbone, auxiliary=aux,
            normalisation=[IRNormalisation(surface=f"-{o}", canonical=scoped_option(f"-{o}", first),
                                           entity_type="option") for o in options],
        )
        ir.rule = "code.synopsis"
        return ir
    found = mentions(" ".join(f"`{c}`" for c in commands), ctx.scope)
    variables = [m for m in mentions(" ".join(lines)) if m.entity_type in ("variable", "file")]
    if not found and not variables:
        return None
    title = ctx.section_path[-1] if ctx.section_path else ctx.document
    example = f"example: {normalise_ws(title)}"
    backbone = [IRTriple(subject=example, subject_type="value", relation="invokes", object=m.canonical,
                         object_type=m.entity_type) for m in found[:12]]
    backbone += [IRTriple(subject=example, subject_type="value", relation="uses", object=m.canonical,
                          object_type=m.entity_type) for m in variables[:8]]
    anchor = found[0] if found else variables[0]
    if ctx.scope and ctx.scope not in {m.canonical for m in found}:
        backbone.append(IRTriple(subject=example, subject_type="value", relation="demonstrates",
                                 object=ctx.scope, object_type="command"))
    ir = SentenceIR(
        sentence_id=sentence_id, category="procedural", anchor_type="procedure",
        anchor_entity=ctx.scope or anchor.canonical,
        anchor_entity_type="command" if ctx.scope else anchor.entity_type,
        trigger=example, action="invokes " + ", ".join(m.canonical for m in found[:12]),
        backbone=backbone,
    )
    ir.rule = "code.script"
    return ir


def heading_ir(sentence_id: str, title: str, commands: set[str], ctx: UnitContext) -> SentenceIR | None:
    """``heading.command``: "Set Routing Alpha" -> set_routing_alpha (normalisation)."""
    snake = "_".join(w.lower() for w in _WORD.findall(clean_text(title)))
    if snake not in commands:
        return None
    ir = SentenceIR(
        sentence_id=sentence_id, category="declarative", anchor_type="definition",
        anchor_entity=snake, anchor_entity_type="command", entity=snake,
        attributes=[IRAttribute(relation="documented_in", value=clean_text(title))],
        backbone=[IRTriple(subject=snake, subject_type="command", relation="documented_in",
                           object=f"section: {clean_text(title)}", object_type="value")],
        normalisation=[IRNormalisation(surface=clean_text(title), canonical=snake,
                                       entity_type="command")],
    )
    ir.rule = "heading.command"
    return ir


def rule_irs(inputs: Mapping[str, Any]) -> SentenceIRs:
    """The offline implementation of ``chipkg_triples``: rules over prose sentences."""
    ctx = UnitContext(document=inputs["document"], section_path=list(inputs.get("section_path", [])),
                      scope=inputs.get("scope", ""), block_kind=inputs.get("block_kind", "paragraph"))
    out = []
    for s in inputs["sentences"]:
        ir = prose_ir(s["id"], s["text"], ctx)
        if ir is not None:
            out.append(ir)
    return SentenceIRs(sentences=out)


# --- the LLM task ----------------------------------------------------------------------------

TASK = "chipkg_triples"


def _register() -> None:
    from edaqa_pipeline.llm import DATA_NOT_INSTRUCTIONS, LLMTask, delimit, register_task

    system = (
        "You build a knowledge graph from EDA tool documentation. For every sentence: classify "
        "it declarative (static property: what a command/option/variable/file is, module "
        "composition) or procedural (trigger-condition-action: steps, behaviour under "
        "conditions); give its Circuit Semantic Anchor (anchor_type one of "
        f"{', '.join(ANCHOR_TYPES)}; anchor_entity the canonical entity it is about); fill the "
        "frame (declarative: entity + attributes; procedural: trigger, conditions, temporal, "
        "action); extract backbone triples (the central action or definition), auxiliary "
        f"triples (kind one of {', '.join(QUALIFIER_KINDS)}) each pointing at the backbone "
        "index it qualifies, and normalisations of surface forms to canonical entities "
        "(commands lower snake_case, options as '<command> -opt' inside a command's section, "
        f"variables UPPER_CASE, files by basename). Entity types: {', '.join(ENTITY_TYPES)} or "
        "'value' for free text. Use only the given sentence ids. " + DATA_NOT_INSTRUCTIONS
    )

    def render(inputs: Mapping[str, Any]) -> str:
        sentences = "\n".join(f"{s['id']}: {s['text']}" for s in inputs["sentences"])
        return (f"Document: {inputs['document']}\nSection: {' > '.join(inputs['section_path'])}\n"
                f"Section command: {inputs.get('scope') or '(none)'}\n"
                f"Sentences (id: text):\n{delimit(sentences)}")

    def validate(result: BaseModel, inputs: Mapping[str, Any]) -> None:
        assert isinstance(result, SentenceIRs)
        validate_irs(result, [s["id"] for s in inputs["sentences"]])

    register_task(LLMTask(name=TASK, system_prompt=system, render_user=render, offline=rule_irs,
                          validate=validate))


_register()


# --- one document -> node and triple rows ----------------------------------------------------


@dataclass
class Unit:
    sentence_id: str
    text: str
    kind: str  # prose | table_row | code | heading
    block: dict[str, Any]
    start_line: int | None
    end_line: int | None
    scope: str


@dataclass
class DocumentKG:
    document: str
    nodes: list[dict[str, Any]] = field(default_factory=list)
    triples: list[dict[str, Any]] = field(default_factory=list)
    rules: Counter[str] = field(default_factory=Counter)


def _locator(block: dict[str, Any]):  # type: ignore[no-untyped-def]
    text: str = block["text"] or ""
    raw: str = block.get("raw") or text
    base = block["start_line"]
    cursor = 0

    def locate(piece: str) -> tuple[int | None, int | None]:
        nonlocal cursor
        if base is None:
            return None, None
        probe = piece.strip()[:40]
        idx = raw.find(probe, cursor) if probe else -1
        if idx < 0:
            idx = raw.find(probe) if probe else -1
        if idx < 0:
            return block["start_line"], block["end_line"]
        cursor = idx + len(probe)
        start = base + raw.count("\n", 0, idx)
        end = min(start + piece.strip().count("\n"), block["end_line"] or start)
        return start, end

    return locate


def _section_commands(blocks: list[dict[str, Any]]) -> tuple[dict[tuple[str, ...], str], set[str]]:
    """Command scope per section path (synopsis code blocks and command headings) and the set
    of commands the document names."""
    commands: set[str] = set()
    for b in blocks:
        if b["kind"] == "code":
            commands.update(c for c in (_line_command(ln) for ln in (b["text"] or "").split("\n")) if c)
        else:
            for m in INLINE_CODE.finditer(b["text"] or ""):
                commands.update(c for _, t, c in classify_code(m.group(1)) if t == "command")
    scopes: dict[tuple[str, ...], str] = {}
    for b in blocks:
        path = tuple(b["section_path"] or ())
        if b["kind"] == "heading" and path:
            snake = "_".join(w.lower() for w in _WORD.findall(clean_text(path[-1])))
            if snake in commands:
                scopes.setdefault(path, snake)
        if b["kind"] == "code" and path:
            first = code_command(b["text"] or "")
            if first and _CODE_OPTION.search(b["text"] or "") and path not in scopes:
                scopes[path] = first
    return scopes, commands


def _scope_of(path: tuple[str, ...], scopes: dict[tuple[str, ...], str]) -> str:
    for n in range(len(path), 0, -1):
        if path[:n] in scopes:
            return scopes[path[:n]]
    return ""


def document_units(blocks: list[dict[str, Any]]) -> tuple[list[Unit], set[str], list[tuple[Unit, list[str]]]]:
    """The sentence units of one document, in order; also table headers per table row unit."""
    scopes, commands = _section_commands(blocks)
    units: list[Unit] = []
    headers: list[tuple[Unit, list[str]]] = []
    seen: Counter[tuple[str, str]] = Counter()
    document = blocks[0]["document"] if blocks else ""

    def sid(kind: str, text: str) -> str:
        key = (kind, normalise_ws(text))
        n = seen[key]
        seen[key] += 1
        return stable_id("stm", document, kind, text, n)

    for b in blocks:
        path = tuple(b["section_path"] or ())
        scope = _scope_of(path, scopes)
        kind = b["kind"]
        text = b["text"] or ""
        if kind in PROSE_KINDS:
            locate = _locator(b)
            for piece in split_sentences(text):
                s, e = locate(piece)
                units.append(Unit(sid("prose", piece), piece, "prose", b, s, e, scope))
        elif kind == "table":
            raw_lines = (b.get("raw") or text).split("\n")
            lines = text.split("\n")
            if len(lines) < 3:
                continue
            header = _cells(lines[0])
            for i, line in enumerate(lines[2:], start=2):
                if not line.strip() or set(line.strip()) <= set("|-: "):
                    continue
                line_no = (b["start_line"] + i) if b["start_line"] is not None and len(raw_lines) == len(lines) else b["start_line"]
                unit = Unit(sid("table_row", line), line, "table_row", b, line_no, line_no if line_no else b["end_line"], scope)
                units.append(unit)
                headers.append((unit, header))
        elif kind == "code":
            units.append(Unit(sid("code", text), text, "code", b, b["start_line"], b["end_line"], scope))
        elif kind == "heading" and path:
            units.append(Unit(sid("heading", text), text, "heading", b, b["start_line"], b["end_line"], scope))
    return units, commands, headers


def _chunk_for(block_chunks: dict[str, list[tuple[str, int | None, int | None]]], block_id: str,
               line: int | None) -> str:
    options = block_chunks.get(block_id, [])
    if not options:
        return ""
    if line is not None:
        for cid, s, e in options:
            if s is not None and e is not None and s <= line <= e:
                return cid
    return options[0][0]


def entity_id(entity_type: str, canonical: str) -> str:
    return stable_id("ent", entity_type, canonical)


def _value_id(document: str, text: str) -> str:
    return stable_id("val", document, text)


def _surface_id(document: str, surface: str) -> str:
    return stable_id("sur", document, surface)


def _node(node_id: str, kind: str, node_type: str, text: str, unit: Unit, chunk_id: str,
          **extra: Any) -> dict[str, Any]:
    row = {
        "node_id": node_id, "kind": kind, "node_type": node_type, "text": text,
        "canonical": extra.pop("canonical", ""), "category": extra.pop("category", ""),
        "anchor_type": extra.pop("anchor_type", ""), "anchor_entity": extra.pop("anchor_entity", ""),
        "ir": extra.pop("ir", ""), "document": unit.block["document"],
        "documents": [unit.block["document"]], "chunk_ids": [chunk_id] if chunk_id else [],
        "line_spans": [[unit.start_line, unit.end_line]] if unit.start_line is not None else [],
        "section_path": list(unit.block["section_path"] or []),
    }
    return row


def irs_for_units(units: list[Unit], headers: list[tuple[Unit, list[str]]], commands: set[str],
                  client: Any = None) -> dict[str, SentenceIR]:
    """IR per sentence id: rules for tables / code / headings; prose through the LLM task when a
    non-offline ``client`` is given (one call per block), else the rules."""
    irs: dict[str, SentenceIR] = {}
    header_of = {id(u): h for u, h in headers}
    table_groups: dict[str, list[Unit]] = {}
    prose_groups: dict[str, list[Unit]] = {}
    for u in units:
        if u.kind == "table_row":
            table_groups.setdefault(u.block["block_id"], []).append(u)
        elif u.kind == "prose":
            prose_groups.setdefault(u.block["block_id"], []).append(u)
        else:
            ctx = UnitContext(u.block["document"], list(u.block["section_path"] or []), u.scope, u.block["kind"])
            ir = code_ir(u.sentence_id, u.text, ctx) if u.kind == "code" else heading_ir(u.sentence_id, u.text, commands, ctx)
            if ir is not None:
                irs[u.sentence_id] = ir
    for group in table_groups.values():
        u0 = group[0]
        ctx = UnitContext(u0.block["document"], list(u0.block["section_path"] or []), u0.scope, "table")
        for ir in table_irs([(u.sentence_id, u.text) for u in group], header_of[id(u0)], ctx):
            irs[ir.sentence_id] = ir
    use_llm = client is not None and getattr(client, "provider", "offline") != "offline"
    for group in prose_groups.values():
        u0 = group[0]
        inputs = {
            "document": u0.block["document"], "section_path": list(u0.block["section_path"] or []),
            "scope": u0.scope, "block_kind": u0.block["kind"],
            "sentences": [{"id": u.sentence_id, "text": clean_text(u.text)} for u in group],
        }
        if use_llm:
            result = client.complete_structured(TASK, inputs, SentenceIRs)
            for ir in result.sentences:
                ir.rule = f"llm:{TASK}"
        else:
            result = rule_irs(inputs)
        for ir in result.sentences:
            irs[ir.sentence_id] = ir
    return irs


def document_kg(blocks: list[dict[str, Any]], chunks: list[dict[str, Any]], client: Any = None) -> DocumentKG:
    """Node and triple rows of one document (entity rows carry this document's provenance only;
    :func:`edaqa_pipeline.graphs.chipkg.graph.assemble` merges them across documents)."""
    blocks = sorted(blocks, key=lambda b: b["ordinal"])
    document = blocks[0]["document"] if blocks else (chunks[0]["document"] if chunks else "")
    out = DocumentKG(document=document)
    block_chunks: dict[str, list[tuple[str, int | None, int | None]]] = {}
    for c in chunks:
        for bid in c["block_ids"] or []:
            block_chunks.setdefault(bid, []).append((c["chunk_id"], c["start_line"], c["end_line"]))
    units, commands, headers = document_units(blocks)
    irs = irs_for_units(units, headers, commands, client)
    node_rows: dict[str, dict[str, Any]] = {}

    def add_node(row: dict[str, Any]) -> str:
        prev = node_rows.get(row["node_id"])
        if prev is None:
            node_rows[row["node_id"]] = row
        else:
            for key in ("chunk_ids", "line_spans"):
                for v in row[key]:
                    if v not in prev[key]:
                        prev[key].append(v)
        return row["node_id"]

    def term_node(name: str, etype: str, unit: Unit, chunk_id: str) -> str:
        if etype == "value":
            return add_node(_node(_value_id(document, name), "value", "value", name, unit, chunk_id))
        etype = etype if etype in ENTITY_TYPES else "concept"
        return add_node(_node(entity_id(etype, name), "entity", etype, _entity_text(name, etype),
                              unit, chunk_id, canonical=name))

    for c in chunks:
        prov_unit = Unit("", "", "passage", {"document": c["document"], "section_path": c["section_path"]},
                         c["start_line"], c["end_line"], "")
        add_node(_node(c["chunk_id"], "passage", "passage", "", prov_unit, c["chunk_id"]))
    for u in units:
        ir = irs.get(u.sentence_id)
        if ir is None or not ir.backbone:
            continue
        chunk_id = _chunk_for(block_chunks, u.block["block_id"], u.start_line)
        rule = ir.rule or "rules"
        out.rules[rule] += 1
        text = clean_text(u.text) if u.kind != "code" else u.text.strip()
        section = [s for s in (u.block["section_path"] or [])][-2:]
        embed = (" > ".join(section) + ": " if section else "") + (text if u.kind != "code" else text[:400])
        stmt = add_node(_node(u.sentence_id, "statement", u.kind, embed, u, chunk_id,
                              category=ir.category, anchor_type=ir.anchor_type,
                              anchor_entity=ir.anchor_entity, ir=ir.model_dump_json(),
                              canonical=ir.anchor_entity))
        # the anchor entity exists as a node (normalisation targets and filters rely on it)
        if ir.anchor_entity_type != "value":
            term_node(ir.anchor_entity, ir.anchor_entity_type, u, chunk_id)
        base = {"statement_id": stmt, "document": document, "chunk_id": chunk_id,
                "start_line": u.start_line, "end_line": u.end_line, "rule": rule, "qualifier": ""}
        backbone_ids: list[str] = []
        for i, t in enumerate(ir.backbone):
            s = term_node(t.subject, t.subject_type, u, chunk_id)
            o = term_node(t.object, t.object_type, u, chunk_id)
            tid = stable_id("tri", stmt, "backbone", i, s, t.relation, o)
            backbone_ids.append(tid)
            out.triples.append({**base, "triple_id": tid, "kind": "backbone", "subject": s,
                                "relation": t.relation, "object": o, "subject_kind": "node",
                                "object_kind": "node"})
        for i, q in enumerate(ir.auxiliary):
            s = term_node(q.subject, q.subject_type, u, chunk_id)
            o = term_node(q.object, q.object_type, u, chunk_id)
            tid = stable_id("tri", stmt, "auxiliary", i, s, q.relation, o)
            out.triples.append({**base, "triple_id": tid, "kind": "auxiliary", "subject": s,
                                "relation": q.relation, "object": o, "subject_kind": "node",
                                "object_kind": "node", "qualifier": q.kind})
            target = backbone_ids[min(q.backbone, len(backbone_ids) - 1)]
            out.triples.append({**base, "triple_id": stable_id("tri", target, "linking", tid),
                                "kind": "linking", "subject": target, "relation": f"has_{q.kind}",
                                "object": tid, "subject_kind": "triple", "object_kind": "triple",
                                "qualifier": q.kind})
        for n in ir.normalisation:
            if n.surface == n.canonical:
                continue
            s = add_node(_node(_surface_id(document, n.surface), "surface", n.entity_type, n.surface,
                               u, chunk_id, canonical=n.canonical))
            o = term_node(n.canonical, n.entity_type, u, chunk_id)
            out.triples.append({**base, "triple_id": stable_id("tri", stmt, "normalisation", s, o),
                                "kind": "normalisation", "subject": s, "relation": "normalises_to",
                                "object": o, "subject_kind": "node", "object_kind": "node"})
    out.nodes = list(node_rows.values())
    return out


def _entity_text(canonical: str, etype: str) -> str:
    """What the encoder sees for an entity node: its name and type, e.g. ``-buf_list option of
    clock_tree_synthesis``."""
    if etype == "option" and " " in canonical:
        cmd, opt = canonical.split(" ", 1)
        return f"{opt} option of {cmd}"
    return f"{canonical} ({etype})"


__all__ = [
    "ANCHOR_TYPES", "ENTITY_TYPES", "EXTRACTOR_VERSION", "QUALIFIER_KINDS", "TASK", "TRIPLE_KINDS",
    "DocumentKG", "IRAttribute", "IRNormalisation", "IRQualifier", "IRTriple", "Mention",
    "SentenceIR", "SentenceIRs", "UnitContext", "classify_code", "code_ir", "document_kg",
    "entity_id", "heading_ir", "mentions", "prose_ir", "rule_irs", "scoped_option", "table_irs",
    "validate_irs",
]
