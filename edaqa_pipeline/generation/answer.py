"""Answering a question from retrieved evidence: claims, verified citations, one record.

``answer_question(question, items, llm)`` is the one entry point (``edaqa ask``, ``edaqa
eval``, ``edaqa serve``):

1. the items are packed under the 2,048-token budget and numbered E1..En (``evidence.py``);
2. the ``grounded_answer`` task runs on ``llm`` (the offline rules when None: the extractive
   answer through the same interface);
3. every claim is verified (``verify.py``): each cited id must be one of the items given, and
   one sentence, table row or code line of a cited item must state every identifier,
   number (with its unit) and quoted value the claim names; a claim with key terms that
   another item of the same document states is shown cited by that item, marked ``recited``
   (``claim_verdicts.recited``);
4. claims that fail are sent back once (``grounded_answer_fix``) with the reason; those that
   fail again are dropped and reported in ``Answer.dropped``, never shown;
5. the answer is rendered with citations inline, narrowed to the lines of the unit that
   states the claim: ``... defaults to 20 [cts.md:L73]``.

A model failure (``LLMError``) falls back to the extractive answer and says why in
``Answer.reason``; ``Answer.answerer`` says which answerer produced the text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from edaqa_pipeline.generation.claim_verdicts import (
    checked,
    sentence_verdicts,
    stated_elsewhere,
    verdict_of,
)
from edaqa_pipeline.generation.claims import clean_claim, same_claim_key, ungrounded_terms
from edaqa_pipeline.generation.evidence import NumberedEvidence, number_evidence
from edaqa_pipeline.generation.extractive import question_frame
from edaqa_pipeline.generation.grounded import FIX_TASK, MAX_CLAIMS, TASK, Claim, GroundedAnswer
from edaqa_pipeline.generation.text_answer import TEXT_TASK, finished_claims, parse_text_answer
from edaqa_pipeline.generation.verify import SUPPORT_THRESHOLD, Verdict, verify_claim
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
class AnswerClaim:
    """A verified claim: its text, the items it cites and their narrowed locations."""

    text: str
    evidence_ids: tuple[str, ...]
    citations: tuple[str, ...]
    support: float  # share of the claim's words in the unit it rests on (verify.unit_support)
    recited: bool = False  # the model cited other items; these state it (``claim_verdicts``)

    @property
    def supported(self) -> bool:
        return self.support >= SUPPORT_THRESHOLD

    def rendered(self) -> str:
        text = self.text if self.text.endswith((".", "!", "?", ":", "`")) else self.text + "."
        return f"{text} [{'; '.join(self.citations)}]"

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "citations": list(self.citations),
                "evidence_ids": list(self.evidence_ids), "supported": self.supported,
                "support": round(self.support, 6), **({"recited": True} if self.recited else {})}


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


ClaimListener = Callable[[AnswerClaim], None]  # receives each verified claim as it is written


def _evidence_inputs(question: str, numbered: Sequence[NumberedEvidence]) -> dict[str, Any]:
    return {"question": question, "evidence": [n.as_input() for n in numbered]}


def check_claim(claim: Claim, by_id: dict[str, NumberedEvidence]) -> str:
    """Why ``claim`` fails verification ("" when it passes)."""
    return verdict_of(claim, by_id).reason


def verified_claim(text: str, verdict: Verdict, by_id: dict[str, NumberedEvidence],
                   recited: bool = False) -> AnswerClaim:
    """The claim as shown: cited by the items its units come from, narrowed to their lines."""
    citations = [by_id[b.evidence_id].citation(b.unit.first, b.unit.last) for b in verdict.bindings]
    ids = tuple(dict.fromkeys(b.evidence_id for b in verdict.bindings))
    return AnswerClaim(clean_claim(text), ids, tuple(dict.fromkeys(citations)), verdict.support, recited)


def _verify_all(
    claims: Sequence[Claim], by_id: dict[str, NumberedEvidence], shown: Sequence[AnswerClaim] = ()
) -> tuple[list[AnswerClaim], list[tuple[Claim, str]], list[tuple[Claim, str]]]:
    """The claims that verify, on the items they cite or re-cited to the item that states them,
    and are not among ``shown`` already (of a claim of several sentences that fails whole, each
    sentence that verifies: ``claim_verdicts.py``), the failed
    ones a re-ask may repair, and the failed sentences that continue another (dropped: re-asked
    alone they would lose their subject), each with the verifier's reason."""
    kept: list[AnswerClaim] = []
    failed: list[tuple[Claim, str]] = []
    final: list[tuple[Claim, str]] = []
    seen: set[str] = {same_claim_key(c.text) for c in shown}

    def keep(claim: Claim, verdict: Verdict, recited: bool) -> bool:
        verified = verified_claim(claim.text, verdict, by_id, recited)
        if same_claim_key(verified.text) in seen:  # a model may repeat a claim
            return False
        seen.add(same_claim_key(verified.text))
        kept.append(verified)
        return True

    for claim in claims:
        verdict, recited = checked(claim, by_id)
        if verdict.verified:
            keep(claim, verdict, recited)
            continue
        parts = sentence_verdicts(claim, by_id)
        if not any(p.verdict.verified for p in parts):
            failed.append((claim, verdict.reason))
            continue
        shown = False  # whether the sentence before was shown right before this one
        for part in parts:
            if part.verdict.verified and (shown or not part.continues):
                shown = keep(part.claim, part.verdict, part.recited)
                continue
            shown = False
            reason = part.verdict.reason or "the sentence it continues is not shown before it"
            (final if part.continues else failed).append((part.claim, reason))
    return kept, failed, final


def _fix_problem(claim: Claim, problem: str, by_id: dict[str, NumberedEvidence]) -> str:
    """The re-ask's reason for ``claim``, with the items of other documents that state it."""
    elsewhere = stated_elsewhere(claim, by_id)
    return f"{problem}; {' and '.join(elsewhere)} states it" if elsewhere else problem


def _llm_answer(
    question: str, numbered: list[NumberedEvidence], llm: LLMClient, temperature: float = 0.0
) -> tuple[bool, list[AnswerClaim], list[dict[str, Any]]]:
    inputs = _evidence_inputs(question, numbered)
    by_id = {n.id: n for n in numbered}
    out = llm.complete_structured(TASK, inputs, GroundedAnswer, temperature=temperature)
    if out.not_in_documents or not out.claims:
        return True, [], []
    kept, failed, final = _verify_all(out.claims, by_id)
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
        again, still, final = _verify_all(fixed.claims, by_id, kept)
        still += final
        kept += again
        dropped += [{"text": c.text, "evidence": list(c.evidence), "reason": p} for c, p in still]
        if len(fixed.claims) < len(failed):  # the rest the model left out
            dropped += [{"text": c.text, "evidence": list(c.evidence), "reason": p}
                        for c, p in failed[len(fixed.claims):]]
    return not kept, kept, dropped


class ClaimStream:
    """Verifies the sentences of a text answer while the model writes it and hands each
    claim that verifies to ``on_claim`` at once, in order, each claim once. A sentence that
    fails is not sent (the answer's final verification drops it too)."""

    def __init__(self, by_id: dict[str, NumberedEvidence], on_claim: ClaimListener) -> None:
        self.by_id = by_id
        self.on_claim = on_claim
        self.checked: set[str] = set()
        self.sent: set[str] = set()

    def feed(self, text: str) -> None:
        """The answer text so far (a retried request starts again from the beginning)."""
        for claim in finished_claims(text):
            key = f"{claim.text}|{claim.evidence}"
            if key in self.checked:
                continue
            self.checked.add(key)
            kept, _, _ = _verify_all([claim], self.by_id)
            for verified in kept:  # a claim of several sentences may keep more than one
                if same_claim_key(verified.text) in self.sent or len(self.sent) >= MAX_CLAIMS:
                    break  # what follows a sentence shown earlier would land after another claim
                self.sent.add(same_claim_key(verified.text))
                self.on_claim(verified)


def _text_answer(
    question: str, numbered: list[NumberedEvidence], llm: LLMClient, temperature: float = 0.0,
    on_claim: ClaimListener | None = None,
) -> tuple[bool, list[AnswerClaim], list[dict[str, Any]]]:
    """The model's answer in the text format (``text_answer.py``), verified claim by claim;
    what fails is dropped (a re-ask costs a small model as much as the answer). With
    ``on_claim``, each claim that verifies is handed on as soon as its sentence is written."""
    inputs = _evidence_inputs(question, numbered)
    if on_claim is None:
        text = llm.complete_text(TEXT_TASK, inputs, temperature=temperature)
    else:
        stream = ClaimStream({n.id: n for n in numbered}, on_claim)
        with request_scope(on_text=stream.feed):
            text = llm.complete_text(TEXT_TASK, inputs, temperature=temperature)
    abstain, claims, unmarked = parse_text_answer(text)
    if abstain:
        return True, [], []
    kept, failed, final = _verify_all(claims, {n.id: n for n in numbered})
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
    temperature: float, on_claim: ClaimListener | None,
) -> tuple[bool, list[AnswerClaim], list[dict[str, Any]], str]:
    """The model's answer in ``answer_format`` (``json``, ``text``, or ``auto``: JSON, then
    text when the JSON call fails); the last element says why a format was given up ("")."""
    if answer_format == "text":
        return (*_text_answer(question, numbered, llm, temperature, on_claim), "")
    try:
        return (*_llm_answer(question, numbered, llm, temperature), "")
    except LLMError as exc:
        if answer_format != "auto" or exc.cause not in OUTPUT_FAILURES:  # a server that fails
            raise  # would fail the text request too
        note = f"the JSON answer failed ({exc.cause or 'error'}), answered in the text format"
    return (*_text_answer(question, numbered, llm, temperature, on_claim), note)


def _grounded_lead(lead: str, claims: Sequence[AnswerClaim], numbered: Sequence[NumberedEvidence]) -> str:
    """``lead`` when every number and identifier it restates from the question occurs in the
    items the claims cite, else "": the frame never asserts what the evidence does not say."""
    if not lead or not claims:
        return ""
    by_id = {n.id: n for n in numbered}
    cited = "\n".join(by_id[i].item.text for c in claims for i in c.evidence_ids if i in by_id)
    return "" if ungrounded_terms(lead, cited) else lead


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
) -> Answer:
    """The answer to ``question`` from ``items`` (ranked; packed here unless ``packed``).

    With a model: ``answer_format`` is ``json`` (claims as a tool call), ``text`` (sentences
    with evidence ids, ``text_answer.py``) or ``auto`` (JSON, then text). A model that fails,
    abstains, or writes no claim that verifies does not have the last word: the extractive
    claims of the same evidence are shown when there are any, and ``reason`` says so. A
    ``draft`` (an answer the retrieval method wrote with the model) is verified instead of
    asking the model again. ``temperature`` is the model's sampling temperature.

    ``on_claim`` streams a model's answer: it is called with each claim that verifies as soon
    as the model has written its sentence (the answer is then asked in the text format, whose
    sentences can be checked one by one; ``auto`` means text here). The returned ``Answer``
    is the final word: claims handed on are its first claims, in order."""
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
                                                                   temperature, on_claim)
            except LLMError as exc:
                abstain, kept, dropped, failure = True, [], [], exc.one_line()
            if usage.fallbacks:  # a client with an offline fallback answered
                answerer, reason = "extractive", "the model failed; the client answered with its offline rules"
            elif abstain:  # the model gave nothing that verifies: the extractive claims, labelled
                why = "every claim it wrote failed verification" if dropped else "it abstained"
                extracted, claims, _ = _llm_answer(question, numbered, OfflineClient())
                answerer = "extractive" if failure or not extracted else answerer
                shown = f"the model did not answer ({why}); the extractive claims of the same evidence are shown"
                reason = failure or "; ".join(r for r in (reason, shown if not extracted else "") if r)
                if not extracted:
                    abstain, kept = False, claims
    kept = kept[:MAX_CLAIMS]  # an answer is read at a glance (a model's sentences split may exceed it)
    lead = _grounded_lead(question_frame(question), kept, numbered) if answerer == "extractive" and not abstain else ""
    return Answer(question, tuple(kept), answerer, tuple(numbered), abstain, tuple(dropped),
                  reason, usage, lead)


def extractive_answer(question: str, evidence: list[EvidenceItem]) -> str:
    """The offline answer text (the evaluation runner's plain ``Answerer`` signature)."""
    return answer_question(question, evidence, packed=True).text
