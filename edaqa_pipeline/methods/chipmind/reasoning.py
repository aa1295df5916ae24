"""ChipKG-augmented reasoning (ChipMind Algorithm 2): the loop around the retrieval steps.

::

    C <- retrieve(Q_in, CSA_target(Q_in))                       # iteration 0
    for t in 1 .. max_iterations:
        r_t <- Reason(C)                                        # chipmind_reason
        if not DetectUncertainty(r_t, C): break                 # chipmind_uncertainty
        (q_t, CSA_target) <- Formulate-Sub-Query(r_t)           # chipmind_subquery
        C <- C + CSAGuidedFilter(AdaptiveKRetrieve(q_t), CSA_target)
    A_final <- Synthesize-Answer(C)                             # chipmind_synthesize

Every step is an LLM task of ``tasks`` (the offline client runs their rules, so the default
path is deterministic); the loop is bounded by ``max_iterations`` and stops early when the
evidence is judged sufficient or a step fails (a rejected sub-query after the model's
retries). The returned items are the gathered context in gathering order (question first), cut
at k; ``steps`` holds each retrieval's candidates (``system_recall@k``), ``trace`` every
reasoning step.

Vectors: the question and its clauses come from one encoder pass (``clause_vectors =
"contextual"``); a sub-query for a clause uses the clause's vector, one for an identifier the
question's, any other (a model's own wording) is encoded.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel

from edaqa_pipeline.llm import LLMError
from edaqa_pipeline.methods.chipmind.anchors import query_entities
from edaqa_pipeline.methods.chipmind.config import EVALUATION_TEMPERATURE, GENERATIVE_TEMPERATURE
from edaqa_pipeline.methods.chipmind.query import clause_spans, contextual_vectors, question_clauses
from edaqa_pipeline.methods.chipmind.search import KGSearch, Step
from edaqa_pipeline.methods.chipmind.tasks import (
    AnchorOut,
    AnswerOut,
    Reasoning,
    SubQuery,
    Uncertainty,
)
from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.retrieval.record import Draft, Retrieval
from edaqa_pipeline.text.identifiers import identifier_kind, query_identifiers

GAP_KINDS = ("command", "option", "variable", "file", "message")


def encode_question(search: KGSearch, query: str, clauses: list[str]) -> dict[str, np.ndarray]:
    """Vectors of the question and its clauses: one encoder pass (``contextual``), or one
    batch (``separate``)."""
    base = search.snapshot.base
    if search.config.clause_vectors == "contextual" and clauses and hasattr(base, "model"):
        qvec, cvecs = contextual_vectors(base, query, clause_spans(query, clauses))
        out = {query: qvec, **{c: v for c, v in zip(clauses, cvecs, strict=True) if v is not None}}
        missing = [c for c, v in zip(clauses, cvecs, strict=True) if v is None]
        if missing:
            out.update(zip(missing, base.encode(missing), strict=True))
        return out
    texts = list(dict.fromkeys([query, *clauses]))
    return dict(zip(texts, base.encode(texts), strict=True))


@dataclass
class _Context:
    """The gathered context C and everything the record reports about it."""

    gathered: list[int] = field(default_factory=list)
    scores: dict[int, float] = field(default_factory=dict)
    paths: dict[int, str] = field(default_factory=dict)
    steps: list[tuple[EvidenceItem, ...]] = field(default_factory=list)
    trace_steps: list[dict[str, Any]] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    model_fallbacks: list[str] = field(default_factory=list)  # one line per model step that fell back

    def integrate(self, search: KGSearch, step: Step, iteration: int, label: str) -> int:
        self.model_fallbacks.extend(step.model_fallbacks)
        new = [n for n in step.kept if n not in self.scores]
        for n in new:
            self.gathered.append(n)
            self.scores[n] = step.scores[n] / (1 + iteration)
            self.paths[n] = label
        self.steps.append(tuple(search.item(n, step.scores[n], label) for n in step.candidates))
        ids = search.graph.node_ids
        self.trace_steps.append({
            "iteration": iteration, "query": step.query, "target_anchor": list(step.target),
            "also_entities": list(step.also),
            "k": len(step.candidates), "migs": [round(x, 6) for x in step.migs],
            "candidates": [ids[n] for n in step.candidates], "kept": [ids[n] for n in step.kept],
            "new": len(new), "filter_fallback": step.fell_back,
        })
        self.sizes.append(len(self.gathered))
        return len(new)


@dataclass
class _Loop:
    """What the rounds of one question share."""

    query: str
    clauses: list[str]
    identifiers: list[str]
    known: list[str]
    asked: list[str] = field(default_factory=list)  # sub-queries issued
    asked_aspects: list[str] = field(default_factory=list)  # the aspects they addressed
    notes: str = ""
    cited: list[str] = field(default_factory=list)
    graph_s: float = 0.0


class ReasoningLoop:
    """One question through Algorithm 2 (see the module docstring)."""

    def __init__(self, search: KGSearch, name: str) -> None:
        self.search = search
        self.name = name
        self.cfg = search.config
        self.llm_ms = 0.0

    def _task(self, task: str, inputs: dict[str, Any], model: type[BaseModel], temperature: float) -> Any:
        started = time.perf_counter()
        try:
            return self.search.llm.complete_structured(task, inputs, model, temperature=temperature)
        finally:
            self.llm_ms += (time.perf_counter() - started) * 1000

    def _target(self, anchor_type: str, entity: str) -> tuple[str, str]:
        """A target anchor with an entity the KG does not know reduced to its type."""
        return anchor_type, entity if entity and self.search.known(entity) else ""

    def _also(self, query: str, target: tuple[str, str]) -> tuple[str, ...]:
        """Offline, the rules cannot tell which of several named entities a multi-part query is
        about: every KG entity it names is a target entity. A model names the one it means."""
        if self.search.uses_model or not self.cfg.all_named_entities:
            return ()
        return tuple(e for e in query_entities(query) if self.search.known(e) and e != target[1])

    def _retrieve(self, ctx: _Context, query: str, vec: np.ndarray, target: tuple[str, str], k: int,
                  iteration: int, label: str) -> tuple[int, float]:
        """(new passages, seconds outside the model) of one retrieval step integrated into C."""
        started = time.perf_counter()
        step = self.search.step(query, vec, target, k, self._also(query, target))
        self.llm_ms += step.llm_ms
        new = ctx.integrate(self.search, step, iteration, label)
        return new, time.perf_counter() - started - step.llm_ms / 1000

    def _evidence(self, ctx: _Context) -> list[dict[str, str]]:
        return [{"id": self.search.graph.node_ids[n], "text": self.search.text(n), "step": ctx.paths[n]}
                for n in ctx.gathered]

    def _iterate(self, ctx: _Context, loop: _Loop, vec_of: dict[str, np.ndarray], k: int,
                 reasoning: list[dict[str, Any]]) -> str:
        """Rounds of Reason -> DetectUncertainty -> Formulate-Sub-Query -> retrieve; the stop
        reason: ``sufficient``, ``max_iterations`` or ``llm_error``."""
        cfg, query = self.cfg, loop.query
        common = {"question": query, "evidence_chars": cfg.evidence_chars, "m": cfg.summary_sentences}
        for it in range(1, cfg.max_iterations + 1):
            record: dict[str, Any] = {"iteration": it}
            reasoning.append(record)
            try:
                evidence = self._evidence(ctx)
                r = self._task("chipmind_reason", {**common, "evidence": evidence, "aspects": loop.clauses},
                               Reasoning, GENERATIVE_TEMPERATURE)
                loop.notes, loop.cited = r.notes, r.cited
                record.update(notes=r.notes[:500], cited=r.cited)
                u = self._task("chipmind_uncertainty", {
                    **common, "notes": r.notes, "evidence": evidence, "identifiers": loop.identifiers,
                    "clauses": loop.clauses, "asked": loop.asked, "asked_aspects": loop.asked_aspects,
                    "cover_threshold": cfg.cover_threshold}, Uncertainty, EVALUATION_TEMPERATURE)
                record.update(uncertain=u.uncertain, missing=u.missing)
                if not u.uncertain:
                    return "sufficient"
                s = self._task("chipmind_subquery", {
                    "question": query, "missing": u.missing, "notes": r.notes, "asked": loop.asked,
                    "identifiers": loop.identifiers, "known_entities": loop.known}, SubQuery,
                    GENERATIVE_TEMPERATURE)
            except LLMError as exc:
                record["error"] = str(exc)
                ctx.model_fallbacks.append(f"the reasoning loop stopped: {exc.one_line()}")
                return "llm_error"
            target = self._target(s.anchor_type, s.anchor_entity)
            record.update(sub_query=s.query, aspect=s.aspect, target_anchor=list(target))
            if s.aspect in vec_of:  # a clause of the question: its contextual vector
                vec = vec_of[s.aspect]
            elif s.aspect in loop.identifiers and s.query.endswith(query):
                vec = vec_of[query]
            else:  # the model's own wording
                if s.query not in vec_of:
                    vec_of[s.query] = self.search.snapshot.base.encode([s.query])[0]
                vec = vec_of[s.query]
            loop.asked_aspects.append(s.aspect)
            loop.asked.append(s.query)
            record["new"], spent = self._retrieve(ctx, s.query, vec, target, k, it, f"chipmind:sub{it}")
            loop.graph_s += spent
        return "max_iterations"

    def run(self, query: str, k: int) -> Retrieval:
        cfg, search = self.cfg, self.search
        t0 = time.perf_counter()
        clauses = question_clauses(query) if cfg.iterate else []
        vec_of = encode_question(search, query, clauses)
        t_enc = time.perf_counter()
        known = [e for e in query_entities(query) if search.known(e)]
        identifiers = [i for i in query_identifiers(query) if identifier_kind(i) in GAP_KINDS]
        ctx = _Context()
        reasoning: list[dict[str, Any]] = []
        graph_s = 0.0
        try:
            anchor = self._task("chipmind_anchor", {"query": query, "known_entities": known}, AnchorOut,
                                EVALUATION_TEMPERATURE)
            target = self._target(anchor.anchor_type, anchor.anchor_entity)
        except LLMError as exc:
            target = ("any", "")
            reasoning.append({"iteration": 0, "error": str(exc)})
            ctx.model_fallbacks.append(f"no target anchor (any passage is compatible): {exc.one_line()}")
        graph_s += self._retrieve(ctx, query, vec_of[query], target, k, 0, "chipmind")[1]
        loop = _Loop(query=query, clauses=clauses, identifiers=identifiers, known=known)
        stop = self._iterate(ctx, loop, vec_of, k, reasoning) if cfg.iterate else "no_iteration"
        graph_s += loop.graph_s
        notes, cited = loop.notes, loop.cited
        common = {"question": query, "evidence_chars": cfg.evidence_chars, "m": cfg.summary_sentences}
        answer = AnswerOut()
        try:
            answer = self._task("chipmind_synthesize", {**common, "notes": notes, "cited": cited,
                                                        "evidence": self._evidence(ctx)},
                                AnswerOut, GENERATIVE_TEMPERATURE)
        except LLMError as exc:
            reasoning.append({"synthesize_error": str(exc)})
            ctx.model_fallbacks.append(f"no synthesized answer: {exc.one_line()}")
        items = tuple(search.item(n, ctx.scores[n], ctx.paths[n]) for n in ctx.gathered[:k])
        all_ids = list(dict.fromkeys(c for s in ctx.trace_steps for c in s["candidates"]))
        trace = {
            "method": self.name, "iterations": len(ctx.trace_steps), "retrieved_set_sizes": ctx.sizes,
            "sub_queries": [s["query"] for s in ctx.trace_steps[1:]],
            "target_anchor": ctx.trace_steps[0]["target_anchor"], "steps": ctx.trace_steps,
            "reasoning": reasoning, "stop_reason": stop, "answer": answer.answer, "answer_cited": answer.cited,
            "llm_provider": search.llm.provider, "all_retrieved": all_ids,
            "n_all_retrieved": len(all_ids), "returned": len(items),
            "model_fallbacks": list(dict.fromkeys(ctx.model_fallbacks)),
        }
        total = (time.perf_counter() - t0) * 1000
        timings = {"encode": (t_enc - t0) * 1000, "graph": graph_s * 1000, "llm": self.llm_ms, "total": total}
        trace["timings_ms"] = {k: round(v, 3) for k, v in timings.items()}  # also in results.jsonl
        draft = None
        if search.uses_model and answer.answer.strip():  # the loop's own answer, to be verified
            node_of = {search.graph.node_ids[n]: n for n in ctx.gathered[:k]}
            cited = [search.item(node_of[c], 0.0, "").evidence_id for c in answer.cited if c in node_of]
            draft = Draft(answer.answer, tuple(dict.fromkeys(cited or (i.evidence_id for i in items))))
        return Retrieval(method=self.name, query=query, items=items, steps=tuple(ctx.steps),
                         trace=trace, timings_ms=timings, draft=draft)
