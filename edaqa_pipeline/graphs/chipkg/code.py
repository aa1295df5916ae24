"""Code blocks and headings -> IRs (rules ``code.*`` and ``heading.*``).

``code.synopsis``
    a code block that starts with a command and lists ``-options``: has_option triples, each
    qualified by ``requirement`` = optional (inside ``[...]``) or required.
``code.script``
    other code: (example, invokes, cmd) for every command a line starts with, (example, uses,
    X) for the variables and files it names.
``heading.command``
    a tool-manual heading whose snake_case form is a command of the document ("Set Routing
    Alpha" -> ``set_routing_alpha``; normalisation only).
``heading.spec_entity``
    a specification heading that names a signal ("ACK_I", "DAT_I()") or a register ("Region
    Access Control Register (mrac)"): the heading normalises to the entity.

Commands are what ``text.identifiers.line_command`` says a code line invokes.
"""

from __future__ import annotations

import re

from edaqa_pipeline.graphs.chipkg.context import UnitContext, clean_text
from edaqa_pipeline.graphs.chipkg.mentions import manual_mentions, scoped_option
from edaqa_pipeline.graphs.chipkg.schema import (
    IRAttribute,
    IRNormalisation,
    IRQualifier,
    IRTriple,
    SentenceIR,
    offline_rule,
)
from edaqa_pipeline.graphs.chipkg.spec_mentions import PORT_SIGNAL, REGISTER_IN_TITLE, signal_name
from edaqa_pipeline.model import normalise_ws
from edaqa_pipeline.text.identifiers import OPTION, canonical, is_placeholder, line_command
from edaqa_pipeline.text.tokens import words

_COMMENT = re.compile(r"^\s*(?:#|//|%|>>>|\.\.\.|\}|\{|$)")
_PROMPT = re.compile(r"^\s*\$\s+")
# a heading's leading section number: "2.8.1 ", "A.6 ", "4.2.3 "
_NUMBERING = re.compile(r"^(?:[A-Z]|\d+)(?:\.\d+)*\.?\s+")


def code_line_command(line: str) -> str:
    """The command of one code line, shell prompts (``$ ``) removed."""
    return line_command(_PROMPT.sub("", line))


def first_command(code: str) -> str:
    """The command a code block starts with (its first non-comment line), or ''."""
    for line in code.split("\n"):
        if not _COMMENT.match(line):
            return code_line_command(line)
    return ""


def code_options(code: str) -> list[str]:
    """Canonical options of a code block in order (placeholders dropped)."""
    return list(dict.fromkeys(canonical(o) for o in OPTION.findall(code) if not is_placeholder(o)))


def _synopsis(sentence_id: str, first: str, options: list[str], body: str) -> SentenceIR:
    backbone: list[IRTriple] = []
    aux: list[IRQualifier] = []
    for opt in options:
        canon = scoped_option(opt, first)
        backbone.append(IRTriple(subject=first, subject_type="command", relation="has_option",
                                 object=canon, object_type="option"))
        if "[" in body:
            pos = re.search(rf"(?<![\w-])-{{1,2}}{re.escape(opt.lstrip('-'))}\b", body, re.IGNORECASE)
            before = body[: pos.start()].rstrip() if pos else ""
            optional = before.endswith("[") or before.count("[") > before.count("]")
            aux.append(IRQualifier(subject=canon, subject_type="option", relation="is",
                                   object="optional" if optional else "required",
                                   object_type="value", kind="requirement", backbone=len(backbone) - 1))
    return SentenceIR(
        sentence_id=sentence_id, category="declarative", anchor_type="configuration",
        anchor_entity=first, anchor_entity_type="command", entity=first,
        attributes=[IRAttribute(relation="has_option", value=t.object) for t in backbone],
        backbone=backbone, auxiliary=aux,
        normalisation=[IRNormalisation(surface=o, canonical=scoped_option(o, first), entity_type="option")
                       for o in options],
        rule=offline_rule("code.synopsis"),
    )


def code_ir(sentence_id: str, code: str, ctx: UnitContext) -> SentenceIR | None:
    """``code.synopsis`` or ``code.script`` (see the module docstring); None for code that
    names nothing."""
    lines = code.split("\n")[:80]
    body = "\n".join(lines)
    first = first_command(code)
    options = code_options(body)
    commands = [c for c in (code_line_command(ln) for ln in lines) if c]
    if first and options and len(set(commands)) <= 2:
        return _synopsis(sentence_id, first, options, body)
    scope = ctx.scope if ctx.scope_type == "command" else ""
    found = manual_mentions(" ".join(f"`{c}`" for c in commands), scope)
    named = [m for m in manual_mentions(" ".join(lines)) if m.entity_type in ("variable", "file")]
    if not found and not named:
        return None
    title = ctx.section_path[-1] if ctx.section_path else ctx.document
    example = f"example: {normalise_ws(title)}"
    backbone = [IRTriple(subject=example, subject_type="value", relation="invokes", object=m.canonical,
                         object_type=m.entity_type) for m in found[:12]]
    backbone += [IRTriple(subject=example, subject_type="value", relation="uses", object=m.canonical,
                          object_type=m.entity_type) for m in named[:8]]
    anchor = found[0] if found else named[0]
    if scope and scope not in {m.canonical for m in found}:
        backbone.append(IRTriple(subject=example, subject_type="value", relation="demonstrates",
                                 object=scope, object_type="command"))
    return SentenceIR(
        sentence_id=sentence_id, category="procedural", anchor_type="procedure",
        anchor_entity=scope or anchor.canonical,
        anchor_entity_type="command" if scope else anchor.entity_type,
        trigger=example, action="invokes " + ", ".join(m.canonical for m in found[:12]),
        backbone=backbone, rule=offline_rule("code.script"),
    )


def heading_command(title: str) -> str:
    """The snake_case form of a heading ("Set Routing Alpha" -> ``set_routing_alpha``)."""
    return "_".join(words(clean_text(title)))


def heading_entity(title: str) -> tuple[str, str]:
    """(canonical, type) of the signal or register a specification heading names, else ('', '')."""
    text = _NUMBERING.sub("", clean_text(title)).strip()
    m = PORT_SIGNAL.fullmatch(text)
    if m:
        return signal_name(m.group(1)), "signal"
    m = REGISTER_IN_TITLE.search(text)
    if m:
        return m.group(1).lower(), "register"
    return "", ""


def heading_ir(sentence_id: str, title: str, commands: set[str], ctx: UnitContext) -> SentenceIR | None:
    """``heading.command`` / ``heading.spec_entity`` (see the module docstring)."""
    surface = clean_text(title)
    if ctx.kind == "spec":
        name, etype = heading_entity(title)
        rule = "heading.spec_entity"
    else:
        name, etype, rule = heading_command(title), "command", "heading.command"
        name = name if name in commands else ""
    if not name:
        return None
    return SentenceIR(
        sentence_id=sentence_id, category="declarative", anchor_type="definition",
        anchor_entity=name, anchor_entity_type=etype, entity=name,
        attributes=[IRAttribute(relation="documented_in", value=surface)],
        backbone=[IRTriple(subject=name, subject_type=etype, relation="documented_in",
                           object=f"section: {surface}", object_type="value")],
        normalisation=[IRNormalisation(surface=surface, canonical=name, entity_type=etype)],
        rule=offline_rule(rule),
    )
