"""Query analysis (k_q, e_q, z_q) = Analyze(q) and the expansion policy Omega(z_q) of the
paper's Table 1.

Offline the intent comes from the rules below, checked in this order (first match wins):

=====================  ==================================================================
intent                 rule (case-insensitive)
=====================  ==================================================================
version                version / revision / release / changed / deprecated / supersede /
                       "new in" / "since v" / "older|newer|latest|previous|current" version
cross_reference        an explicit label ("Section 5.2", "Table 7", "Figure 3", "§4") together
                       with a second label or a reference verb (refer, cited, see, clarify,
                       according to, mentioned in)
text_figure            figure / fig. / diagram / image / picture / illustrat / drawing / plot
                       / screenshot, or a "Figure N" label
text_table             table / row / column / "default value" / range / "allowed value" /
                       "valid value" / "list of (options|variables|...)", or a "Table N" label
procedure              how do|can|to|should / steps / procedure / install / build / set up /
                       configure / run / fix / troubleshoot / error / fail / warning / debug,
                       or a message id (GRT-0243)
definition             what is|are|does / meaning / define / definition / purpose / describe /
                       must / shall / required / requirement
default                anything else
=====================  ==================================================================

With a model configured (``analyze(query, llm=client)`` with a non-offline ``LLMClient``) the
``query_intent`` task decides the intent and adds the identifiers it names to those the rules
find; offline (``llm=None`` or the offline provider, the default) the rules decide. A model
call per query costs far more than the rest of a retrieval (about 2 ms without the query
encoding), which is why the rules stay the default.

Identifiers come from ``text.identifiers.query_identifiers`` and search tokens from
``text.tokens.tokens``: the same definitions the element views were built with.

Policies (Table 1; ``default`` is ours: the paper has no default row):

=================  ========================================  ====  =======================
intent             relations expanded                        hops  primary target types
=================  ========================================  ====  =======================
definition         contains, same_identifier, clause_ref      2    clause, paragraph
procedure          step_next, contains, same_section          2    step
text_table         table_ref, caption_of, same_identifier     2    table_row, table
text_figure        figure_ref, caption_of, same_section       2    figure, caption
cross_reference    clause_ref, table_ref, figure_ref          2    clause, table, figure
version            version_of, supersedes, same_identifier    1    clause, section
default            contains, same_section, same_identifier,   1    paragraph, code,
                   table_ref, caption_of                            table_row
=================  ========================================  ====  =======================
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from edaqa_pipeline.llm import LLMError
from edaqa_pipeline.text.identifiers import MESSAGE_ID, canonical, label_refs, query_identifiers
from edaqa_pipeline.text.tokens import tokens as search_tokens

Intent = Literal[
    "definition", "procedure", "text_table", "text_figure", "cross_reference", "version", "default"
]
INTENTS: tuple[str, ...] = (
    "definition", "procedure", "text_table", "text_figure", "cross_reference", "version", "default",
)  # fmt: skip


@dataclass(frozen=True)
class Policy:
    """Omega(z): which relations to expand, how far, and what a bundle holds."""

    intent: str
    relations: frozenset[str]
    max_hops: int
    primary: tuple[str, ...]
    type_prior: Mapping[str, float] = field(default_factory=dict)
    bundle: tuple[str, ...] = ()  # bundle roles in priority order (``bundles.ROLES``)


_PRIOR_BASE = {
    "clause": 0.5, "section": 0.4, "paragraph": 0.5, "code": 0.5, "table": 0.4, "table_row": 0.5,
    "figure": 0.3, "caption": 0.3, "step": 0.5,
}  # fmt: skip


def _prior(**overrides: float) -> dict[str, float]:
    return {**_PRIOR_BASE, **overrides}


POLICIES: dict[str, Policy] = {
    "definition": Policy(
        "definition", frozenset({"contains", "same_identifier", "clause_ref"}), 2,
        ("clause", "paragraph"),
        _prior(clause=1.0, section=0.8, paragraph=1.0, table_row=0.7, code=0.6),
        ("section_title", "defining_paragraph", "notes", "table_header", "scope"),
    ),
    "procedure": Policy(
        "procedure", frozenset({"step_next", "contains", "same_section"}), 2, ("step",),
        _prior(step=1.0, code=0.8, paragraph=0.6),
        ("section_title", "neighbour_steps", "notes", "scope"),
    ),
    "text_table": Policy(
        "text_table", frozenset({"table_ref", "caption_of", "same_identifier"}), 2,
        ("table_row", "table"),
        _prior(table_row=1.0, table=0.9, caption=0.6),
        ("section_title", "table_header", "caption", "referring", "scope"),
    ),
    "text_figure": Policy(
        "text_figure", frozenset({"figure_ref", "caption_of", "same_section"}), 2,
        ("figure", "caption"),
        _prior(figure=1.0, caption=0.9, paragraph=0.6),
        ("section_title", "caption", "referring", "scope"),
    ),
    "cross_reference": Policy(
        "cross_reference", frozenset({"clause_ref", "table_ref", "figure_ref"}), 2,
        ("clause", "table", "figure"),
        _prior(clause=1.0, table=1.0, figure=1.0, table_row=0.7, caption=0.6, section=0.8),
        ("section_title", "cited", "scope"),
    ),
    "version": Policy(
        "version", frozenset({"version_of", "supersedes", "same_identifier"}), 1,
        ("clause", "section"),
        _prior(clause=1.0, section=0.8, paragraph=0.8, table_row=0.7),
        ("section_title", "prior_revision", "scope"),
    ),
    "default": Policy(
        "default",
        frozenset({"contains", "same_section", "same_identifier", "table_ref", "caption_of"}), 1,
        ("paragraph", "code", "table_row"),
        _prior(paragraph=0.6, code=0.6, table_row=0.6),
        ("section_title", "table_header", "scope"),
    ),
}

_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("version", re.compile(
        r"\b(version|revision|release[sd]?|changed?|changes|deprecated|supersed\w*|new in|"
        r"since v\d|(older|newer|latest|previous|current|earlier) (version|release|doc\w*))\b",
        re.I)),
    ("text_figure", re.compile(
        r"\b(figure|fig\.|diagram|image|picture|illustrat\w*|drawing|plot|screenshot)s?\b", re.I)),
    ("text_table", re.compile(
        r"\b(tables?|rows?|columns?|default values?|ranges?|allowed values?|valid values?|"
        r"list of (options|variables|parameters|arguments|switches))\b", re.I)),
    ("procedure", re.compile(
        r"\b(how (do|can|to|should|would)|steps?|procedures?|install\w*|build\w*|set ?up|"
        r"configur\w*|run(ning)?|fix\w*|troubleshoot\w*|errors?|fail\w*|warnings?|debug\w*)\b",
        re.I)),
    ("definition", re.compile(
        r"\b(what (is|are|does|do)|meaning|means|defin\w*|purpose|describe\w*|must|shall|"
        r"required|requirements?)\b", re.I)),
)  # fmt: skip
_REF_VERB = re.compile(r"\b(refer\w*|cited|cites?|see|clarif\w*|according to|mentioned in)\b", re.I)


def rule_intent(query: str) -> str:
    """The intent by the rules of the module docstring."""
    labels = label_refs(query)
    if _RULES[0][1].search(query):
        return "version"
    if labels and (len(labels) > 1 or _REF_VERB.search(query)):
        return "cross_reference"
    kinds = {kind for kind, _, _, _ in labels}
    if "figure" in kinds:
        return "text_figure"
    if "table" in kinds:
        return "text_table"
    if MESSAGE_ID.search(query):
        return "procedure"
    for intent, pattern in _RULES[1:]:
        if pattern.search(query):
            return intent
    return "default"


@dataclass(frozen=True)
class QueryAnalysis:
    """(k_q, z_q) of equation (8); e_q is computed by the caller (it owns the encoder)."""

    query: str
    identifiers: tuple[str, ...]
    intent: str
    policy: Policy
    tokens: tuple[str, ...]
    fallback: str = ""  # why the model's analysis was not used (the rules answered), else ""


class QueryIntent(BaseModel):
    """Response record of the ``query_intent`` LLM task."""

    intent: Intent
    identifiers: list[str] = []


QUERY_TASK = "query_intent"
QUERY_PROMPT = (
    "Classify a question about technical documentation into one retrieval intent: definition "
    "(what something is or requires), procedure (how to do or fix something), text_table (a "
    "value in a table: defaults, ranges, option lists), text_figure (what a figure shows), "
    "cross_reference (what a cited section/table/figure says), version (what changed between "
    "revisions), default (none of these). Also list the technical identifiers it names "
    "(commands, options, variables, message ids, file names, labels)."
)


def _query_offline(inputs: Mapping[str, Any]) -> BaseModel:
    return QueryIntent(intent=rule_intent(inputs["query"]),  # type: ignore[arg-type]
                       identifiers=query_identifiers(inputs["query"]))


def register_query_task() -> None:
    from edaqa_pipeline.llm import DATA_NOT_INSTRUCTIONS, LLMTask, delimit, register_task

    register_task(
        LLMTask(name=QUERY_TASK, system_prompt=QUERY_PROMPT + " " + DATA_NOT_INSTRUCTIONS,
                render_user=lambda inputs: delimit(inputs["query"], "question"),
                offline=_query_offline)
    )


def analyze(query: str, llm: Any = None) -> QueryAnalysis:
    """Identifiers, tokens and intent of ``query`` (rules; the LLM layer when ``llm`` is a
    non-offline ``LLMClient``). A model that fails (an error, or output that does not
    validate) leaves the rules' analysis, and ``fallback`` says why in one line."""
    identifiers = query_identifiers(query)
    intent = rule_intent(query)
    fallback = ""
    if llm is not None and getattr(llm, "provider", "offline") != "offline":
        register_query_task()
        try:
            result = llm.complete_structured(QUERY_TASK, {"query": query}, QueryIntent)
        except LLMError as exc:
            fallback = f"query analysis by rules: {exc.one_line()}"
        else:
            intent = result.intent
            named = [c for c in (canonical(i) for i in result.identifiers) if c]
            identifiers = list(dict.fromkeys([*identifiers, *named]))
    return QueryAnalysis(
        query=query,
        identifiers=tuple(identifiers),
        intent=intent,
        policy=POLICIES[intent],
        tokens=tuple(search_tokens(query)),
        fallback=fallback,
    )
