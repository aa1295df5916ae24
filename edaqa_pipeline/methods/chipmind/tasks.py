"""ChipMind's LLM tasks (Algorithms 1-2), each with its prompt, offline rule and validation.

============================  =====================  ==========================================
task                          paper step             offline rule
============================  =====================  ==========================================
``chipmind_anchor``           CSA_target of a query  wording rules + known entities (anchors)
``chipmind_summary``          A'_base / A'_new       the first ``m`` sentences (LLM mode only:
                              (Algorithm 1)          offline MIG uses statement vectors)
``chipmind_reason``           Reason(C)              the evidence sentences sharing the most
                                                     content terms with the question
``chipmind_uncertainty``      DetectUncertainty      the aspects not covered: identifiers of the
                                                     question absent from the evidence, clauses
                                                     whose terms no passage covers
``chipmind_subquery``         Formulate-Sub-Query    the first missing aspect (an identifier with
                                                     the question), its target anchor
``chipmind_synthesize``       Synthesize-Answer      the reasoning notes, citing their passages
============================  =====================  ==========================================

Validation makes a model re-ask (and, after its retries, the client fall back to these rules
or raise): cited ids must be evidence ids, anchor types known, and a sub-query must be
non-empty, not repeat the question or an earlier sub-query, address one of the missing aspects
and share a content term with the question, the missing aspects or the notes (a sub-query
about something else is rejected).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, Field

from edaqa_pipeline.llm import DATA_NOT_INSTRUCTIONS, LLMTask, delimit, register_task
from edaqa_pipeline.methods.chipmind.anchors import TYPE_COMPAT, target_anchor
from edaqa_pipeline.methods.chipmind.query import aspect_terms
from edaqa_pipeline.text.counting import approx_tokens
from edaqa_pipeline.text.sentences import split_sentences
from edaqa_pipeline.text.tokens import content_terms

MAX_SUBQUERY_CHARS = 400
MAX_MISSING = 5


EVIDENCE_TOKENS = 1500  # evidence a reasoning prompt shows (a small model's context)

class AnchorOut(BaseModel):
    anchor_type: str
    anchor_entity: str = ""


class SummaryOut(BaseModel):
    summary: str


class Reasoning(BaseModel):
    """What the evidence says towards the answer, and which passages say it."""

    notes: str = ""
    cited: list[str] = Field(default_factory=list)


class Uncertainty(BaseModel):
    """Whether the evidence leaves part of the question open, and which parts."""

    uncertain: bool
    missing: list[str] = Field(default_factory=list)


class SubQuery(BaseModel):
    """One targeted sub-query for a missing aspect, with its target anchor."""

    query: str
    aspect: str
    anchor_type: str = "any"
    anchor_entity: str = ""


class AnswerOut(BaseModel):
    answer: str = ""
    cited: list[str] = Field(default_factory=list)


@lru_cache(maxsize=8192)
def passage_terms(text: str) -> frozenset[str]:
    """Content terms of a passage (cached: the loop checks the same passages every round)."""
    return frozenset(content_terms(text))


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _evidence(inputs: Mapping[str, Any]) -> str:
    """The evidence passages as tagged blocks, each cut at ``evidence_chars``, at most
    ``budget_tokens`` in all (what fits a small model's context), shown in gathering order.

    When not every passage fits, each retrieval step keeps its best passages: the steps take
    turns, the newest step first, so what the last sub-query fetched is never the part cut
    off (gathering order alone would keep only the question's own first step)."""
    per = int(inputs.get("evidence_chars", 600))
    budget = int(inputs.get("budget_tokens", EVIDENCE_TOKENS))
    evidence = list(inputs.get("evidence", []))
    steps: dict[str, list[int]] = {}
    for i, e in enumerate(evidence):
        steps.setdefault(str(e.get("step", "")), []).append(i)
    chosen: set[int] = set()
    used = 0
    queues = [list(q) for q in reversed(list(steps.values()))]  # newest step first
    while any(queues):
        for queue in queues:
            if not queue:
                continue
            i = queue.pop(0)
            cost = approx_tokens(evidence[i]["text"][:per])
            if used + cost > budget and chosen:
                queue.clear()
                continue
            used += cost
            chosen.add(i)
    out = [delimit(e["text"][:per], "passage", id=e["id"]) for i, e in enumerate(evidence) if i in chosen]
    return "\n".join(out) or "(no evidence yet)"


def _notes(inputs: Mapping[str, Any]) -> str:
    """The reasoning notes so far, delimited like evidence (the model wrote them from documents)."""
    notes = str(inputs.get("notes", "")).strip()
    return delimit(notes, "notes") if notes else "(none yet)"


def _check_cited(cited: list[str], inputs: Mapping[str, Any]) -> None:
    known = {e["id"] for e in inputs.get("evidence", [])}
    unknown = [c for c in cited if c not in known]
    if unknown:
        raise ValueError(f"cited ids {unknown[:3]} are not evidence passage ids")


# --- offline rules ---------------------------------------------------------------------------


def anchor_rule(inputs: Mapping[str, Any]) -> AnchorOut:
    known = {k.lower() for k in inputs.get("known_entities", [])}
    t, e = target_anchor(inputs["query"], lambda name: name.lower() in known)
    return AnchorOut(anchor_type=t, anchor_entity=e)


def summary_rule(inputs: Mapping[str, Any]) -> SummaryOut:
    return SummaryOut(summary=" ".join(inputs.get("sentences", [])[: inputs.get("m", 4)]))


def reason_rule(inputs: Mapping[str, Any]) -> Reasoning:
    """The ``m`` evidence sentences sharing the most content terms with the question (ties:
    evidence order), as notes citing their passages."""
    terms = set(aspect_terms(inputs["question"]))
    scored = []
    for rank, e in enumerate(inputs.get("evidence", [])):
        for j, sentence in enumerate(split_sentences(e["text"][: int(inputs.get("evidence_chars", 600))])):
            overlap = len(terms & passage_terms(sentence))
            if overlap:
                scored.append((-overlap, rank, j, sentence, e["id"]))
    best = sorted(scored)[: int(inputs.get("m", 4))]
    return Reasoning(notes=" ".join(s for *_, s, _ in best), cited=list(dict.fromkeys(i for *_, i in best)))


def uncertainty_rule(inputs: Mapping[str, Any]) -> Uncertainty:
    """Missing aspects: identifiers of the question that no evidence passage contains, then
    clauses whose terms no passage covers to ``cover_threshold`` (aspects asked before are not
    missing again: their retrieval found what it could)."""
    asked = set(inputs.get("asked_aspects", []))
    texts = [e["text"] for e in inputs.get("evidence", [])]
    lowered = [t.lower() for t in texts]
    missing = [i for i in inputs.get("identifiers", [])
               if i not in asked and not any(i.lower() in t for t in lowered)]
    for clause in inputs.get("clauses", []):
        if clause in asked or _norm(clause) == _norm(inputs["question"]):
            continue
        kws = set(aspect_terms(clause))
        best = max((len(kws & passage_terms(t)) / len(kws) for t in texts), default=0.0) if kws else 1.0
        if best < float(inputs.get("cover_threshold", 0.9)):
            missing.append(clause)
    return Uncertainty(uncertain=bool(missing), missing=missing[:MAX_MISSING])


def subquery_rule(inputs: Mapping[str, Any]) -> SubQuery:
    """The first missing aspect: an identifier is asked together with the question (it needs
    the question's context), a clause on its own."""
    aspect = inputs["missing"][0]
    query = f"{aspect} {inputs['question']}" if aspect in inputs.get("identifiers", []) else aspect
    anchor = anchor_rule({"query": query, "known_entities": inputs.get("known_entities", [])})
    return SubQuery(query=query, aspect=aspect, anchor_type=anchor.anchor_type, anchor_entity=anchor.anchor_entity)


def synthesize_rule(inputs: Mapping[str, Any]) -> AnswerOut:
    return AnswerOut(answer=inputs.get("notes", ""), cited=list(inputs.get("cited", [])))


# --- validation ------------------------------------------------------------------------------


def validate_anchor(result: BaseModel, inputs: Mapping[str, Any]) -> None:
    assert isinstance(result, AnchorOut)
    if result.anchor_type not in TYPE_COMPAT:
        raise ValueError(f"anchor type {result.anchor_type!r} not in {sorted(TYPE_COMPAT)}")


def validate_reasoning(result: BaseModel, inputs: Mapping[str, Any]) -> None:
    assert isinstance(result, Reasoning)
    _check_cited(result.cited, inputs)


def validate_uncertainty(result: BaseModel, inputs: Mapping[str, Any]) -> None:
    assert isinstance(result, Uncertainty)
    if result.uncertain and not [m for m in result.missing if m.strip()]:
        raise ValueError("uncertain, but no missing aspect is named")
    if len(result.missing) > MAX_MISSING or any(len(m) > MAX_SUBQUERY_CHARS for m in result.missing):
        raise ValueError(f"at most {MAX_MISSING} missing aspects of {MAX_SUBQUERY_CHARS} characters")


def validate_subquery(result: BaseModel, inputs: Mapping[str, Any]) -> None:
    """The sub-query rules of the module docstring."""
    assert isinstance(result, SubQuery)
    query = result.query.strip()
    if not query:
        raise ValueError("empty sub-query")
    if len(query) > MAX_SUBQUERY_CHARS:
        raise ValueError(f"sub-query longer than {MAX_SUBQUERY_CHARS} characters")
    if _norm(query) in {_norm(inputs["question"]), *(_norm(a) for a in inputs.get("asked", []))}:
        raise ValueError("sub-query repeats the question or an earlier sub-query")
    if result.aspect not in inputs.get("missing", []):
        raise ValueError(f"aspect {result.aspect!r} is not one of the missing aspects {inputs.get('missing')}")
    if result.anchor_type not in TYPE_COMPAT:
        raise ValueError(f"anchor type {result.anchor_type!r} not in {sorted(TYPE_COMPAT)}")
    context = " ".join([inputs["question"], *inputs.get("missing", []), inputs.get("notes", "")])
    if not set(content_terms(query)) & set(content_terms(context)):
        raise ValueError("sub-query shares no content word with the question, the missing aspects or the notes")


def validate_answer(result: BaseModel, inputs: Mapping[str, Any]) -> None:
    assert isinstance(result, AnswerOut)
    _check_cited(result.cited, inputs)


# --- registration ----------------------------------------------------------------------------


def _register() -> None:
    def task(name: str, system: str, render: Any, offline: Any, validate: Any = None) -> None:
        register_task(LLMTask(name=name, system_prompt=system + " " + DATA_NOT_INSTRUCTIONS,
                              render_user=render, offline=offline, validate=validate))

    task("chipmind_anchor",
         "Infer the intent of a question about chip design documentation as a Circuit Semantic "
         f"Anchor: anchor_type one of {', '.join(sorted(TYPE_COMPAT))} and anchor_entity the "
         "command, option, variable, signal or register it is about ('' if none).",
         lambda i: (f"Known entities: {', '.join(i.get('known_entities', [])) or '(none)'}\n"
                    f"Question:\n{delimit(i['query'], 'question')}"),
         anchor_rule, validate_anchor)
    task("chipmind_summary",
         "Summarise what the given documentation passages say that helps answer the question, in "
         "at most four sentences, without adding facts.",
         lambda i: (f"Question: {i['query']}\nPassages:\n"
                    f"{delimit(chr(10).join(p[:600] for p in i['passages']))}"),
         summary_rule)
    task("chipmind_reason",
         "Reason step by step over the evidence passages towards an answer to the question. "
         "Write short notes of what the evidence establishes and cite the ids of the passages "
         "you used.",
         lambda i: f"Question: {i['question']}\nEvidence:\n{_evidence(i)}",
         reason_rule, validate_reasoning)
    task("chipmind_uncertainty",
         "Judge whether the evidence and the notes are sufficient to answer every part of the "
         "question. If not, set uncertain and list the missing pieces of information (at most "
         f"{MAX_MISSING}, each a short phrase).",
         lambda i: (f"Question: {i['question']}\nNotes:\n{_notes(i)}\n"
                    f"Already asked: {'; '.join(i.get('asked', [])) or '(nothing)'}\nEvidence:\n{_evidence(i)}"),
         uncertainty_rule, validate_uncertainty)
    task("chipmind_subquery",
         "Formulate ONE targeted search query for one of the missing pieces of information "
         "(copy that piece into 'aspect'), different from the question and from the queries "
         "already asked, and its target anchor (anchor_type one of "
         f"{', '.join(sorted(TYPE_COMPAT))}; anchor_entity the command, option, signal or "
         "register it is about, '' if none).",
         lambda i: (f"Question: {i['question']}\nMissing: {'; '.join(i['missing'])}\n"
                    f"Notes:\n{_notes(i)}\nAlready asked: {'; '.join(i.get('asked', [])) or '(nothing)'}"),
         subquery_rule, validate_subquery)
    task("chipmind_synthesize",
         "Answer the question from the evidence only, concisely, citing the ids of the passages "
         "that support the answer.",
         lambda i: f"Question: {i['question']}\nNotes:\n{_notes(i)}\nEvidence:\n{_evidence(i)}",
         synthesize_rule, validate_answer)


_register()
