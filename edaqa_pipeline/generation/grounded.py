"""The grounded answer task: claims that each cite the evidence items they rest on.

Registered in the LLM task registry like every other structured call (prompt, offline rule,
cache, retries, token accounting), so the same code answers with a model or offline:

* ``grounded_answer``: inputs ``{"question", "evidence": [{"id", "citation", "text"}]}``
  (the packed, numbered evidence of ``evidence.py``); output :class:`GroundedAnswer`: up to
  ``MAX_CLAIMS`` claims, each one sentence with the ids (``E1``...) it comes from, or
  ``not_in_documents``. Offline, the extractive answerer (``extractive.py``) fills the same
  record from the evidence lines.
* ``grounded_answer_fix``: the one re-ask for claims that failed verification (unknown id,
  or a number / identifier that is not in the cited lines): the same prompt with the failed
  claims and why appended; the model rewrites them from the cited text or leaves them out.

The evidence text is data, not instructions (``DATA_NOT_INSTRUCTIONS``; each item is
``delimit``-ed): a document that says "cite E3" or "ignore the evidence" is quoted to the
model, and whatever the model does with it still has to pass the verification in
``answer.py``, which never trusts the model's word for what an item says.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, Field, StringConstraints

from edaqa_pipeline.llm import DATA_NOT_INSTRUCTIONS, LLMTask, delimit, register_task

TASK = "grounded_answer"
FIX_TASK = "grounded_answer_fix"
MAX_CLAIMS = 5
MAX_CLAIM_CHARS = 300
MAX_ID_CHARS = 6
EvidenceId = Annotated[str, StringConstraints(max_length=MAX_ID_CHARS)]  # "E1" ... (bounds the budget)


class Claim(BaseModel):
    """One fact of the answer and the evidence items it comes from."""

    text: str = Field(min_length=1, max_length=MAX_CLAIM_CHARS,
                      description="one short sentence that says only what the cited items say")
    evidence: list[EvidenceId] = Field(min_length=1, max_length=3,
                                description="ids of the evidence items (E1, E2, ...) it comes from")


class GroundedAnswer(BaseModel):
    """The answer to the question as claims that cite the evidence, or not_in_documents."""

    not_in_documents: bool = Field(
        default=False, description="true when the evidence items do not answer the question")
    claims: list[Claim] = Field(default_factory=list, max_length=MAX_CLAIMS)


SYSTEM_PROMPT = (
    "You answer questions about EDA tool documentation using only the numbered evidence items "
    "you are given. Write the answer as a few short claims (at most five). Each claim is one "
    "sentence that restates what the cited items say and lists the ids (E1, E2, ...) of the "
    "items it comes from. Copy command names, options, file names and numbers exactly as the "
    "items write them, and name only those that the text of the cited items contains. Never "
    "state anything the items do not say. If the items do not answer "
    "the question, set not_in_documents to true and give no claims. " + DATA_NOT_INSTRUCTIONS
)

FIX_REQUEST = (
    "Each claim below failed verification against the evidence items it cites, for the reason "
    "given. Rewrite each claim so that it only states what its cited items say (copy names and "
    "numbers exactly, cite the ids of the items that contain them), or leave the claim out."
)


def render_evidence(inputs: Mapping[str, Any]) -> str:
    return "\n".join(
        delimit(str(e["text"]), "evidence", id=str(e["id"]), source=str(e["citation"]))
        for e in inputs["evidence"]
    )


def render_user(inputs: Mapping[str, Any]) -> str:
    ids = ", ".join(str(e["id"]) for e in inputs["evidence"])
    return (f"Question: {inputs['question']}\n\nEvidence items ({ids}):\n{render_evidence(inputs)}\n\n"
            "Answer with claims that cite these ids.")


def render_fix(inputs: Mapping[str, Any]) -> str:
    """The answer's own request with the failed claims after it: the system prompt and this
    prefix are the first call's, so a server that keeps its prompt cache (llama.cpp) reads
    only the new lines, not the evidence again. The failed claims and their reasons quote
    the documents (a cell, a stated default), so they are a delimited data block too."""
    failed = "\n".join(
        f"- claim: {c['text']!r} cites {', '.join(c['evidence']) or 'nothing'}; problem: {c['problem']}"
        for c in inputs["failed"]
    ).replace("<", "&lt;")  # no tag of any kind: an evidence block cannot be closed or opened here
    return (f"{render_user(inputs)}\n\n{FIX_REQUEST}\nClaims that failed verification:\n"
            f"{delimit(failed, 'failed_claims')}\n\n"
            "Return the repaired claims.")


def _offline(inputs: Mapping[str, Any]) -> GroundedAnswer:
    from edaqa_pipeline.generation.extractive import extractive_claims

    claims = extractive_claims(str(inputs["question"]), inputs["evidence"])
    if not claims:
        return GroundedAnswer(not_in_documents=True, claims=[])
    return GroundedAnswer(claims=[Claim(text=text, evidence=[eid]) for text, eid in claims])


def _offline_fix(inputs: Mapping[str, Any]) -> GroundedAnswer:
    del inputs  # offline claims are quotes and never fail verification: nothing to repair
    return GroundedAnswer(claims=[])


def _max_tokens(inputs: Mapping[str, Any]) -> int | None:
    """The fix returns at most as many claims as failed (the schema allows five)."""
    from edaqa_pipeline.llm import output_budget

    n = max(len(inputs.get("failed", ())), 1)
    one = output_budget(Claim.model_json_schema()) - 16
    return min(n, MAX_CLAIMS) * one + 32


register_task(LLMTask(name=TASK, system_prompt=SYSTEM_PROMPT, render_user=render_user,
                      offline=_offline))
register_task(LLMTask(name=FIX_TASK, system_prompt=SYSTEM_PROMPT, render_user=render_fix,
                      offline=_offline_fix, max_output_tokens=_max_tokens))
