"""The LLM judge of answers: LLM-Score, Atomic-ROUGE's decomposition and matching, entailment.

The judge is a client of its own (``llm.judge_from_env``: ``EDAQA_JUDGE_BASE_URL`` /
``EDAQA_JUDGE_MODEL`` / ``EDAQA_JUDGE_API_KEY``, falling back to the answerer's settings), so
answers can be judged by a different, stronger model than the one that wrote them. Four tasks
in the LLM task registry (cached, retried, validated, budgeted like every other):

* ``llm_score`` (primary paper): five ratings of 0-20 against the reference answer,
  correctness, completeness, relevance, professionalism and conciseness; LLM-Score is their
  sum (0-100).
* ``atomic_facts`` (ChipMind's Atomic-ROUGE): the generated answer decomposed into minimal,
  self-contained facts.
* ``fact_match``: which generated facts state which reference facts (semantic equivalence),
  one call per question instead of one per pair.
* ``claim_support`` (ALCE citation metrics): whether the cited evidence entails a claim.

None of them has offline rules: without a judge the evaluation uses the offline Atomic-ROUGE
judge (``atomic.py``) and the lexical support check (``generation.claims``), and leaves
``llm_score`` out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, Field, StringConstraints

from edaqa_pipeline.llm import DATA_NOT_INSTRUCTIONS, LLMClient, LLMTask, delimit, register_task

SCORE_TASK = "llm_score"
FACTS_TASK = "atomic_facts"
MATCH_TASK = "fact_match"
SUPPORT_TASK = "claim_support"
CRITERIA = ("correctness", "completeness", "relevance", "professionalism", "conciseness")


class LLMScore(BaseModel):
    """Five ratings of the candidate answer against the reference, each 0 to 20."""

    correctness: int = Field(ge=0, le=20, description="facts agree with the reference")
    completeness: int = Field(ge=0, le=20, description="covers what the reference covers")
    relevance: int = Field(ge=0, le=20, description="answers the question asked")
    professionalism: int = Field(ge=0, le=20, description="accurate EDA terminology")
    conciseness: int = Field(ge=0, le=20, description="no padding or repetition")

    @property
    def total(self) -> int:
        return sum(getattr(self, c) for c in CRITERIA)


class AtomicFacts(BaseModel):
    """The answer split into minimal, self-contained facts."""

    facts: list[Annotated[str, StringConstraints(max_length=200)]] = Field(
        default_factory=list, max_length=10)


class FactPair(BaseModel):
    generated: str = Field(max_length=4, description="id of a generated fact (G1, G2, ...)")
    reference: str = Field(max_length=4, description="id of the reference fact it states (R1, ...)")


class FactMatches(BaseModel):
    """Pairs of a generated fact and a reference fact that state the same thing."""

    matches: list[FactPair] = Field(default_factory=list, max_length=20)


class Support(BaseModel):
    """Whether the evidence entails the claim."""

    supported: bool


def _score_user(inputs: Mapping[str, Any]) -> str:
    return (f"Question: {inputs['question']}\n"
            + delimit(str(inputs["reference"]), "reference") + "\n"
            + delimit(str(inputs["answer"]), "candidate") + "\n"
            "Rate the candidate against the reference on each criterion from 0 to 20.")


def _facts_user(inputs: Mapping[str, Any]) -> str:
    return "Split this answer into atomic facts.\n" + delimit(str(inputs["answer"]), "answer")


def _facts_list(facts: Sequence[Mapping[str, str]], tag: str) -> str:
    return "\n".join(delimit(str(f["text"]), tag, id=str(f["id"])) for f in facts)


def _match_user(inputs: Mapping[str, Any]) -> str:
    return (f"Question: {inputs['question']}\nGenerated facts:\n{_facts_list(inputs['generated'], 'fact')}\n"
            f"Reference facts:\n{_facts_list(inputs['reference'], 'fact')}\n"
            "List every pair (generated id, reference id) that states the same fact.")


def _match_validate(output: BaseModel, inputs: Mapping[str, Any]) -> None:
    assert isinstance(output, FactMatches)
    gen = {str(f["id"]) for f in inputs["generated"]}
    ref = {str(f["id"]) for f in inputs["reference"]}
    bad = [f"{p.generated}/{p.reference}" for p in output.matches
           if p.generated not in gen or p.reference not in ref]
    if bad:
        raise ValueError(f"pairs {bad} name ids that are not given (generated {sorted(gen)}, "
                         f"reference {sorted(ref)})")


def _support_user(inputs: Mapping[str, Any]) -> str:
    evidence = "\n".join(delimit(str(t), "evidence") for t in inputs["evidence"])
    return (f"Claim: {inputs['claim']}\nEvidence:\n{evidence}\n"
            "Is the claim fully entailed by the evidence?")


_JUDGE = "You are a strict evaluator of answers about EDA tool documentation. "
register_task(LLMTask(SCORE_TASK, _JUDGE + "Score a candidate answer against a reference answer. "
                      + DATA_NOT_INSTRUCTIONS, _score_user))
register_task(LLMTask(FACTS_TASK, _JUDGE + "Decompose an answer into minimal, self-contained "
                      "atomic facts, each one short sentence. " + DATA_NOT_INSTRUCTIONS, _facts_user))
register_task(LLMTask(MATCH_TASK, _JUDGE + "Decide which generated facts are semantically "
                      "equivalent to which reference facts. " + DATA_NOT_INSTRUCTIONS, _match_user,
                      validate=_match_validate))
register_task(LLMTask(SUPPORT_TASK, _JUDGE + "Decide whether evidence entails a claim: every "
                      "part of the claim must follow from the evidence. " + DATA_NOT_INSTRUCTIONS,
                      _support_user))


class AnswerJudge:
    """The judge's operations over one client (see the module docstring)."""

    def __init__(self, client: LLMClient) -> None:
        self.client = client

    @property
    def name(self) -> str:
        return f"{self.client.provider}:{self.client.model}"

    def llm_score(self, question: str, reference: str, answer: str) -> float:
        """LLM-Score, 0-100 (sum of the five criteria)."""
        out = self.client.complete_structured(
            SCORE_TASK, {"question": question, "reference": reference, "answer": answer}, LLMScore)
        return float(out.total)

    def facts(self, answer: str) -> list[str]:
        out = self.client.complete_structured(FACTS_TASK, {"answer": answer}, AtomicFacts)
        return [f.strip() for f in out.facts if f.strip()]

    def match(self, question: str, generated: Sequence[str], reference: Sequence[str]) -> list[list[bool]]:
        """``matrix[i][j]``: generated fact i states reference fact j."""
        inputs = {"question": question,
                  "generated": [{"id": f"G{i}", "text": t} for i, t in enumerate(generated, 1)],
                  "reference": [{"id": f"R{j}", "text": t} for j, t in enumerate(reference, 1)]}
        out = self.client.complete_structured(MATCH_TASK, inputs, FactMatches)
        matrix = [[False] * len(reference) for _ in generated]
        for pair in out.matches:
            matrix[int(pair.generated[1:]) - 1][int(pair.reference[1:]) - 1] = True
        return matrix

    def entails(self, claim: str, evidence: Sequence[str]) -> bool:
        out = self.client.complete_structured(
            SUPPORT_TASK, {"claim": claim, "evidence": list(evidence)}, Support)
        return bool(out.supported)
