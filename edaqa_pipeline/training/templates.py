"""Offline training queries: the template forms per artifact-type combination (the table in
``training/pairs.py``), and the rule that no query copies a sentence of its unit."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from edaqa_pipeline.model import normalise_ws
from edaqa_pipeline.training.pair_schema import DEFAULT_PER_UNIT, DEFAULT_ROWS_PER_UNIT
from edaqa_pipeline.training.row_queries import row_queries
from edaqa_pipeline.training.unit_facts import UnitFacts, copies_unit_text, normalised, short_phrase


def _pick(options: Sequence[str], key: str) -> str:
    h = int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16)
    return options[h % len(options)]


def _thing(f: UnitFacts) -> str:
    """How to name the unit's subject inside a question."""
    if f.anchor_kind == "command":
        return f"the {f.topic} command"
    if f.anchor_kind == "file":
        return f"the file {f.topic}"
    return f"{f.topic} in {f.context}" if f.context else f.topic


def _verb(step: str) -> str:
    words = step.split()
    return words[0].lower() if words and words[0][:1].isalpha() else ""


def query_forms(f: UnitFacts) -> list[tuple[str, tuple[str, ...], list[str]]]:
    """(form, T_q, wording variants) for every form the unit supports, in priority order."""
    t = set(f.types)
    thing, topic = _thing(f), f.topic
    cmd = f.anchor_kind == "command"
    opts = [o for o, _ in f.options]
    out: list[tuple[str, tuple[str, ...], list[str]]] = []

    def add(form: str, types: tuple[str, ...], variants: list[str]) -> None:
        if set(types) <= t and variants:
            out.append((form, types, variants))

    # Combination forms.
    if opts and "codeblock" in t:
        two = " and ".join(f"`{o}`" for o in opts[:2])
        noun = "options" if opts[0].startswith("-") else "arguments"
        add("usage", ("codeblock", "table"), [
            f"How do I call {thing}, and what do the {noun} {two} mean?",
            f"What is the syntax of {topic} and which options does it take?",
            f"Give the usage of {topic} together with its switches such as {two}.",
        ])
    if opts and f.has_constraint:
        add("option_limits", ("constraint", "table"), [
            f"What values are allowed for the options of {topic}, and what restrictions apply?",
            f"Which limits or requirements apply to the switches of {thing}?",
        ])
    if "codeblock" in t and "text" in t and not f.steps:
        add("usage_example", ("codeblock", "text"), [
            f"What does {thing} do, and can you show an example?",
            f"Explain {topic} with a code example.",
            f"What is {topic} for, and how is it used in a script?",
        ])
    if f.steps and "codeblock" in t:
        add("procedure_commands", ("codeblock", "procedure"), [
            f"Which steps and commands are needed for {thing}?",
            f"Walk me through {topic}: what are the steps and the commands to run?",
        ])
    if f.anchor_kind == "file" and "codeblock" in t:
        add("file_example", ("codeblock", "file"), [
            f"What does {topic} contain, with an example of its contents?",
            f"Show an example of how {topic} is written or used.",
        ])
    # Single-type forms.
    if opts:
        add("options", ("table",), [
            f"What options does {thing} accept?",
            f"Which switches can be passed to {topic}?",
            f"List the parameters of {topic}.",
        ])
        opt, desc = f.options[int(hashlib.sha256(f.unit_id.encode()).hexdigest()[:6], 16) % len(f.options)]
        gist = short_phrase(desc)
        noun = "option" if opt.startswith("-") else "argument"
        variants = [f"What does the `{opt}` {noun} of {topic} do?"]
        if gist:
            variants.append(f"Which option of {topic} controls {gist}?")
        if "default" in desc.lower():
            variants.append(f"What is the default of `{opt}` in {topic}?")
        add("option_lookup", ("table",), variants)
    elif f.table_headers or f.table_keys:
        cols = " and ".join(h.lower() for h in f.table_headers[:2] if h)
        rows = ", ".join(f.table_keys[:2])
        variants = []
        if cols:
            variants.append(f"Which table gives the {cols} for {thing}?")
        if rows:
            variants.append(f"What does the table for {topic} say about {rows}?")
        add("table_lookup", ("table",), variants)
    if f.code_first:
        if f.synopsis:
            add("syntax", ("codeblock",), [
                f"What is the syntax of {topic}?",
                f"How do I invoke {topic} from the Tcl shell?",
            ])
        else:
            add("example", ("codeblock",), [
                f"Show an example script for {thing}.",
                f"What commands do I run for {thing}?",
                f"Is there a code example for {topic}?",
            ])
    if f.steps:
        verbs = [v for v in dict.fromkeys(_verb(s) for s in f.steps) if v][:3]
        variants = [f"What are the steps for {thing}?", f"In what order do I proceed for {topic}?"]
        if len(verbs) >= 2:
            variants.append(f"In which order should I {', '.join(verbs[:-1])} and {verbs[-1]} for {topic}?")
        add("steps", ("procedure",), variants)
    add("constraints", ("constraint",), [
        f"What restrictions or requirements apply to {thing}?",
        f"What must hold when using {topic}?",
        f"Are there limits I should know about for {topic}?",
    ])
    if f.message_ids:
        mid = f.message_ids[0]
        add("diagnostics", ("diagnostic",), [f"What does the message {mid} mean for {topic}?",
                                             f"Why would {mid} be reported?"])
    else:
        add("diagnostics", ("diagnostic",), [f"What errors or warnings are mentioned for {thing}?",
                                             f"Which diagnostics relate to {topic}?"])
    if f.files:
        add("files", ("file",), [f"Which files are involved in {thing}?",
                                 f"What file names does {topic} refer to, such as {f.files[0]}?"])
    if f.captions:
        add("figure", ("figure",), [f"Is there a figure illustrating {thing}?",
                                    f"Which screenshot or diagram shows {f.captions[0].lower()}?"])
    if f.commands:
        other = f.commands[0]
        add("related_commands", ("inline_command",), [
            f"How does {topic} relate to `{other}`?",
            f"Which other commands are used together with {topic}?",
        ])
    if cmd:
        purpose = [f"What does the {topic} command do?", f"What is {topic} used for?"]
    elif f.anchor_kind == "file":
        purpose = [f"What is {topic} used for?", f"What role does {topic} play?"]
    else:
        purpose = [f"What does the documentation explain about {thing}?", f"Give an overview of {thing}."]
    add("purpose", ("text",), purpose)
    return out


def template_queries(facts: UnitFacts, per_unit: int = DEFAULT_PER_UNIT,
                     rows: int = DEFAULT_ROWS_PER_UNIT) -> list[dict[str, Any]]:
    """Up to ``per_unit`` distinct unit-level queries (form, query, required_types) for one
    unit, then up to ``rows`` row-level ones (``row_queries``: table rows, diagnostics, steps)."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for form, types, variants in query_forms(facts):
        if len(out) >= per_unit:
            break
        query = normalise_ws(_pick(variants, f"{facts.unit_id}|{form}"))
        if normalised(query) in seen or copies_unit_text(query, facts.sentences):
            continue
        seen.add(normalised(query))
        out.append({"form": form, "query": query, "required_types": sorted(types)})
    for q in row_queries(facts, rows) if rows else []:
        if normalised(q["query"]) not in seen:
            seen.add(normalised(q["query"]))
            out.append(q)
    return out
