"""Answering a question from retrieved evidence: claims, verified citations, one record.

``answer_question(question, items, llm)`` is the one entry point (``edaqa ask``, ``edaqa
eval``, ``edaqa serve``):

1. the items are packed under the 2,048-token budget and numbered E1..En (``evidence.py``);
2. the ``grounded_answer`` task runs on ``llm`` (the offline rules when None: the extractive
   answer through the same interface); a model reads the lines of the best units of the
   items (``model_evidence.py``), the offline rules the whole items;
3. every claim is verified (``answer_claims.py`` on ``verify.py``) against the whole items:
   each cited id must be one of the items given, and one sentence, table row or code line of
   a cited item must state every identifier, number (with its unit) and quoted value the
   claim names; a claim with key terms that
   another item of the same document states is shown cited by that item, marked ``recited``
   (``claim_verdicts.recited``);
4. claims that fail are sent back once (``grounded_answer_fix``) with the reason; those that
   fail again are dropped and reported in ``Answer.dropped``, never shown;
5. a model's verified claims are followed by the extractive claims they do not state
   (``quoted``), five claims at most;
6. the answer is rendered with citations inline, narrowed to the lines of the unit that
   states the claim: ``... defaults to 20 [cts.md:L73]``.

A model failure (``LLMError``) falls back to the extractive answer and says why in
``Answer.reason``; ``Answer.answerer`` says which answerer produced the text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from edaqa_pipeline.generation.answer_claims import (
    AnswerClaim,
    ClaimListener,
    ClaimStream,
    verified_claim,
    verify_all,
)
from edaqa_pipeline.generation.claim_verdicts import stated_elsewhere
from edaqa_pipeline.generation.claims import (
    clean_claim,
    same_claim_key,
    ungrounded_terms,
    unsaid_claims,
)
from edaqa_pipeline.generation.evidence import NumberedEvidence, number_evidence
from edaqa_pipeline.generation.extractive import question_frame
from edaqa_pipeline.generation.grounded import FIX_TASK, MAX_CLAIMS, TASK, Claim, GroundedAnswer
from edaqa_pipeline.generation.model_evidence import MODEL_UNITS, model_inputs
from edaqa_pipeline.generation.text_answer import TEXT_TASK, parse_text_answer
from edaqa_pipeline.generation.verify import verify_claim
from edaqa_pipeline.llm import LLMClient, LLMError, OfflineClient, Usage, track_usage
from edaqa_pipeline.llm.scope import request_scope
from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.retrieval.record import Draft
from edaqa_pipeline.text.sentences import split_sentences

NOT_FOUND = "Not in the documents: the retrieved evidence does not answer this question."
ANSWER_FORMATS = ("auto", "json", "text")
ANSWER_TASKS = frozenset({TASK, FIX_TASK, TEXT_TASK})  # the model calls that write the answer
# what a model's unusable JSON answer fails with (not a server that is down)
OUTPUT_FAILURES = frozenset({"JSONDecodeError", "ValidationError", "OutputInvalid"})


@dataclass(frozen=True)
class Answer:
    """What an answerer returns; ``text`` carries inline citations, ``plain`` has none."""

    question: str
    claims: tuple[AnswerClaim, ...]
    answerer: str  # "extractive" | "llm:<model>"
    evidence: tuple[NumberedEvidence, ...] = ()
    not_in_documents: bool = False
    dropped: tuple[dict[str, Any], ...] = ()
    reason: str = ""  # why the LLM answer was not used (fallback), else ""
    usage: Usage = field(default_factory=Usage)
    lead: str = ""  # the extractive answer's frame from the question (no claim, no citation)

    def _joined(self, parts: Sequence[str]) -> str:
        return " ".join([self.lead, *parts] if self.lead else parts)

    @property
    def text(self) -> str:
        if self.not_in_documents or not self.claims:
            return NOT_FOUND
        return self._joined([c.rendered() for c in self.claims])

    @property
    def plain(self) -> str:
        """The answer without citation markers (what ROUGE-L / BLEU score)."""
        if self.not_in_documents or not self.claims:
            return NOT_FOUND
        return self._joined([c.text if c.text.endswith((".", "!", "?", ":", "`")) else c.text + "."
                             for c in self.claims])

    def __str__(self) -> str:
        return self.text

    def to_json(self) -> dict[str, Any]:
        return {
            "answer": self.text,
            "answerer": self.answerer,
            **({"lead": self.lead} if self.lead else {}),
            "not_in_documents": self.not_in_documents or not self.claims,
            "claims": [c.to_json() for c in self.claims],
            "dropped_claims": list(self.dropped),
            **({"fallback_reason": self.reason} if self.reason else {}),
            "tokens": self.usage.to_json(),
        }


def _evidence_inputs(question: str, numbered: Sequence[NumberedEvidence], model_units: int = 0) -> dict[str, Any]:
    """The question and what a model reads of the evidence (``model_evidence``: the lines of
    the best ``model_units`` units; 0, as the offline rules read it: the whole items)."""
    return {"question": question, "evidence": model_inputs(question, numbered, model_units)}


def _fix_problem(claim: Claim, problem: str, by_id: dict[str, NumberedEvidence]) -> str:
    """The re-ask's reason for ``claim``, with the items of other documents that state it."""
    elsewhere = stated_elsewhere(claim, by_id)
    return f"{problem}; {' and '.join(elsewhere)} states it" if elsewhere else problem


def _llm_answer(
    question: str, numbered: list[NumberedEvidence], llm: LLMClient, temperature: float = 0.0,
    model_units: int = 0,
) -> tuple[bool, list[AnswerClaim], list[dict[str, Any]]]:
    inputs = _evidence_inputs(question, numbered, model_units)
    by_id = {n.id: n for n in numbered}
    out = llm.complete_structured(TASK, inputs, GroundedAnswer, temperature=temperature)
    if out.not_in_documents or not out.claims:
        return True, [], []
    kept, failed, final = verify_all(out.claims, by_id)
    dropped = [{"text": c.text, "evidence": list(c.evidence), "reason": p} for c, p in final]
    if failed:
        fix_inputs = {**inputs, "failed": [
            {"text": c.text, "evidence": list(c.evidence), "problem": _fix_problem(c, p, by_id)}
            for c, p in failed]}
        try:
            fixed = llm.complete_structured(FIX_TASK, fix_inputs, GroundedAnswer, temperature=temperature)
        except LLMError as exc:  # the first answer's valid claims stand; the rest are dropped
            reason = f"; the re-ask failed ({exc.cause or 'error'})"
            return not kept, kept, dropped + [{"text": c.text, "evidence": list(c.evidence),
                                               "reason": p + reason} for c, p in failed]
        again, still, final = verify_all(fixed.claims, by_id, kept)
        still += final
        kept += again
        dropped += [{"text": c.text, "evidence": list(c.evidence), "reason": p} for c, p in still]
        if len(fixed.claims) < len(failed):  # the rest the model left out
            dropped += [{"text": c.text, "evidence": list(c.evidence), "reason": p}
                        for c, p in failed[len(fixed.claims):]]
    return not kept, kept, dropped


def _text_answer(
    question: str, numbered: list[NumberedEvidence], llm: LLMClient, temperature: float = 0.0,
    on_claim: ClaimListener | None = None, model_units: int = 0,
) -> tuple[bool, list[AnswerClaim], list[dict[str, Any]]]:
    """The model's answer in the text format (``text_answer.py``), verified claim by claim;
    what fails is dropped (a re-ask costs a small model as much as the answer). With
    ``on_claim``, each claim that verifies is handed on as soon as its sentence is written."""
    inputs = _evidence_inputs(question, numbered, model_units)
    if on_claim is None:
        text = llm.complete_text(TEXT_TASK, inputs, temperature=temperature)
    else:
        stream = ClaimStream({n.id: n for n in numbered}, on_claim)
        with request_scope(on_text=stream.feed):
            text = llm.complete_text(TEXT_TASK, inputs, temperature=temperature)
    abstain, claims, unmarked = parse_text_answer(text)
    if abstain:
        return True, [], []
    kept, failed, final = verify_all(claims, {n.id: n for n in numbered})
    dropped = [{"text": c.text, "evidence": list(c.evidence), "reason": p} for c, p in failed + final]
    unattributed = _draft_answer(Draft(" ".join(unmarked), ()), numbered)  # against every item
    known = {same_claim_key(c.text) for c in kept}
    kept += [c for c in unattributed[1] if same_claim_key(c.text) not in known][: max(MAX_CLAIMS - len(kept), 0)]
    dropped += unattributed[2]
    return not kept, kept, dropped


def _draft_answer(
    draft: Draft, numbered: list[NumberedEvidence]
) -> tuple[bool, list[AnswerClaim], list[dict[str, Any]]]:
    """A method's own answer (ChipMind's synthesis), sentence by sentence through the verifier
    against the items it cites; a sentence that does not verify is dropped."""
    by_id = {n.id: n for n in numbered}
    cited = [n for n in numbered if n.item.evidence_id in set(draft.cited)] or numbered
    kept: list[AnswerClaim] = []
    dropped: list[dict[str, Any]] = []
    for sentence in split_sentences(draft.text)[:2 * MAX_CLAIMS]:
        verdict = verify_claim(sentence, [(n.id, n.units()) for n in cited])
        if verdict.verified and len(kept) < MAX_CLAIMS:
            kept.append(verified_claim(sentence, verdict, by_id))
        elif not verdict.verified:
            dropped.append({"text": clean_claim(sentence), "evidence": [n.id for n in cited],
                            "reason": verdict.reason})
    return not kept, kept, dropped


def _model_answer(
    question: str, numbered: list[NumberedEvidence], llm: LLMClient, answer_format: str,
    temperature: float, on_claim: ClaimListener | None, model_units: int,
) -> tuple[bool, list[AnswerClaim], list[dict[str, Any]], str]:
    """The model's answer in ``answer_format`` (``json``, ``text``, or ``auto``: JSON, then
    text when the JSON call fails or none of its claims verifies); the last element says why
    a format was given up ("")."""
    if answer_format == "text":
        return (*_text_answer(question, numbered, llm, temperature, on_claim, model_units), "")
    try:
        abstain, kept, dropped = _llm_answer(question, numbered, llm, temperature, model_units)
    except LLMError as exc:
        if answer_format != "auto" or exc.cause not in OUTPUT_FAILURES:  # a server that fails
            raise  # would fail the text request too
        note = f"the JSON answer failed ({exc.cause or 'error'}), answered in the text format"
        return (*_text_answer(question, numbered, llm, temperature, on_claim, model_units), note)
    if not (abstain and dropped and answer_format == "auto"):
        return abstain, kept, dropped, ""
    # every claim of the JSON answer failed verification (the re-ask included): the text
    # format, a small model's easier one, gets one try before the extractive claims
    try:
        again, more, lost = _text_answer(question, numbered, llm, temperature, on_claim, model_units)
    except LLMError:  # the JSON answer's verdicts stand
        return abstain, kept, dropped, ""
    if again:
        return abstain, kept, dropped + lost, ""
    return again, more, dropped + lost, "every claim of the JSON answer failed verification; answered in the text format"


def _grounded_lead(lead: str, claims: Sequence[AnswerClaim], numbered: Sequence[NumberedEvidence]) -> str:
    """``lead`` when every number and identifier it restates from the question occurs in the
    items the claims cite, else "": the frame never asserts what the evidence does not say."""
    if not lead or not claims:
        return ""
    by_id = {n.id: n for n in numbered}
    cited = "\n".join(by_id[i].item.text for c in claims for i in c.evidence_ids if i in by_id)
    return "" if ungrounded_terms(lead, cited) else lead


def _extractive(question: str, numbered: list[NumberedEvidence]
                ) -> tuple[bool, list[AnswerClaim], list[dict[str, Any]]]:
    """The extractive answer of the whole items (what the offline rules answer)."""
    return _llm_answer(question, numbered, OfflineClient())


def _with_quotes(question: str, numbered: list[NumberedEvidence], kept: list[AnswerClaim]) -> list[AnswerClaim]:
    """A model's claims, then the extractive claims of the same evidence that say what they do
    not (marked ``quoted``), up to ``MAX_CLAIMS``: a small model states one or two facts of a
    many-part answer, and the quotes carry the rest the evidence holds. A quote of lines the
    model's claims cite already is left out (the user sees those lines behind the citation)."""
    cited = {citation for claim in kept for citation in claim.citations}
    quotes = [c for c in _extractive(question, numbered)[1] if not set(c.citations) <= cited]
    picked = unsaid_claims([c.text for c in kept], [c.text for c in quotes], MAX_CLAIMS - len(kept))
    return kept + [replace(quotes[i], quoted=True) for i in picked]


def answer_question(
    question: str,
    items: Sequence[EvidenceItem],
    llm: LLMClient | None = None,
    *,
    packed: bool = False,
    answer_format: str = "auto",
    draft: Draft | None = None,
    temperature: float = 0.0,
    on_claim: ClaimListener | None = None,
    model_units: int = MODEL_UNITS,
    quotes: bool = True,
) -> Answer:
    """The answer to ``question`` from ``items`` (ranked; packed here unless ``packed``).

    With a model: ``answer_format`` is ``json`` (claims as a tool call), ``text`` (sentences
    with evidence ids, ``text_answer.py``) or ``auto`` (JSON, then text when the JSON is
    unusable or nothing of it verifies). A model that fails,
    abstains, or writes no claim that verifies does not have the last word: the extractive
    claims of the same evidence are shown when there are any, and ``reason`` says so. A
    ``draft`` (an answer the retrieval method wrote with the model) is verified instead of
    asking the model again. ``temperature`` is the model's sampling temperature.

    ``on_claim`` streams a model's answer: it is called with each claim that verifies as soon
    as the model has written its sentence (the answer is then asked in the text format, whose
    sentences can be checked one by one; ``auto`` means text here). The returned ``Answer``
    is the final word: claims handed on are its first claims, in order. A model reads the
    lines of the best ``model_units`` units of the evidence (``model_evidence``; 0: the whole
    items); its claims are verified against the whole items. With ``quotes``, a model's
    answer is followed by the extractive claims it does not state (``AnswerClaim.quoted``)."""
    if answer_format not in ANSWER_FORMATS:
        raise ValueError(f"answer format {answer_format!r}: choose from {', '.join(ANSWER_FORMATS)}")
    numbered = number_evidence(items, packed=packed)
    client = llm if llm is not None else OfflineClient()
    offline = client.provider == "offline"
    answerer = "extractive" if offline else f"llm:{client.model}"
    reason = ""
    with track_usage() as usage:
        if not numbered:
            return Answer(question, (), answerer, (), True, usage=usage)
        if offline:
            abstain, kept, dropped = _llm_answer(question, numbered, client)
        else:
            failure = ""
            try:
                if draft is not None:
                    abstain, kept, dropped = _draft_answer(draft, numbered)
                else:
                    streamed_format = "text" if on_claim is not None and answer_format == "auto" else answer_format
                    abstain, kept, dropped, reason = _model_answer(question, numbered, client, streamed_format,
                                                                   temperature, on_claim, model_units)
            except LLMError as exc:
                abstain, kept, dropped, failure = True, [], [], exc.one_line()
            if usage.fallbacks:  # a client's offline fallback answered the model's view: read it all
                abstain, kept, dropped = _extractive(question, numbered)
                answerer, reason = "extractive", "the model failed; the client answered with its offline rules"
            elif abstain:  # the model gave nothing that verifies: the extractive claims, labelled
                why = "every claim it wrote failed verification" if dropped else "it abstained"
                extracted, claims, _ = _extractive(question, numbered)
                answerer = "extractive" if failure or not extracted else answerer
                shown = f"the model did not answer ({why}); the extractive claims of the same evidence are shown"
                reason = failure or "; ".join(r for r in (reason, shown if not extracted else "") if r)
                if not extracted:
                    abstain, kept = False, claims
            elif quotes and kept:
                kept = _with_quotes(question, numbered, kept[:MAX_CLAIMS])
    kept = kept[:MAX_CLAIMS]  # an answer is read at a glance (a model's sentences split may exceed it)
    lead = _grounded_lead(question_frame(question), kept, numbered) if answerer == "extractive" and not abstain else ""
    return Answer(question, tuple(kept), answerer, tuple(numbered), abstain, tuple(dropped),
                  reason, usage, lead)


def extractive_answer(question: str, evidence: list[EvidenceItem]) -> str:
    """The offline answer text (the evaluation runner's plain ``Answerer`` signature)."""
    return answer_question(question, evidence, packed=True).text
