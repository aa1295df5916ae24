"""Answer metrics in the evaluation: citation precision/recall (ALCE), abstention by whether
the gold evidence was in the context, answers scored without their citation markers, and
result rows that keep the claims."""

from __future__ import annotations

import pytest

from edaqa_pipeline.evaluation.citations import abstention_scores, citation_scores
from edaqa_pipeline.evaluation.judge import AnswerJudge
from edaqa_pipeline.evaluation.qa import QAItem
from edaqa_pipeline.evaluation.runner import run_evaluation
from edaqa_pipeline.generation.answer import answer_question
from edaqa_pipeline.llm import OpenAICompatibleClient
from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.retrieval.record import Retrieval, retrieval
from edaqa_pipeline_tests.llm_servers import ok

CTS = EvidenceItem("c1", "cts.md", "| `-sink_clustering_size` | The default value is `20`. |", 1.0,
                   "t", 72, 72)
GRT = EvidenceItem("c2", "grt.md", "The `global_route` command routes the design.", 0.9, "t", 5, 5)
ITEMS = [
    QAItem(id="a", question="What is the default of -sink_clustering_size?",
           answer="The default of -sink_clustering_size is 20.", gold_docs=("cts.md",),
           gold_spans=(("cts.md", 72, 72, None),)),
    QAItem(id="b", question="What does detailed_placement legalize?",
           answer="detailed_placement legalizes.", gold_docs=("dpl.md",),
           gold_spans=(("dpl.md", 1, 3, None),)),
]


class Fixed:
    name = "fixed"

    def retrieve(self, query: str, k: int) -> Retrieval:
        return retrieval(self.name, query, [CTS, GRT][:k])


def test_citation_scores_follow_alce():
    from edaqa_pipeline.generation.evidence import NumberedEvidence

    texts = {"E1": "The default is 20.", "E2": "The global_route command routes the design."}
    items = {i: NumberedEvidence(i, EvidenceItem("", "x.md", t, 1.0, "t", 1, 1)) for i, t in texts.items()}
    claims = [{"text": "The default is 20.", "evidence_ids": ["E1"]},  # supported, precise
              {"text": "The default is 20.", "evidence_ids": ["E1", "E2"]},  # E2 superfluous
              {"text": "The default is 30.", "evidence_ids": ["E1"]}]  # not supported
    scores = citation_scores(claims, items)
    assert scores == {"citation_recall": pytest.approx(2 / 3), "citation_precision": pytest.approx(2 / 4)}
    assert citation_scores([], items) is None
    assert abstention_scores(True, True) == {"abstain_gold_in_context": 1.0}
    assert abstention_scores(False, False) == {"abstain_gold_missing": 0.0}
    assert abstention_scores(True, None) == {}


def test_runner_scores_answers_and_keeps_claims():
    def answer(question, evidence):  # type: ignore[no-untyped-def]
        return answer_question(question, evidence, packed=True)

    metrics, rows = run_evaluation(ITEMS, {"fixed": Fixed()}, answer, k=2, progress=False)
    got = metrics["methods"]["fixed"]
    assert got["citation_recall"] == 1.0 and got["citation_precision"] == 1.0
    # q "a": gold span in context, answered; q "b": gold not in context, nothing matches -> abstains
    assert got["abstain_gold_in_context"] == 0.0 and got["abstain_gold_missing"] == 1.0
    first = rows[0]
    assert first["answerer"] == "extractive"
    assert first["claims"][0]["citations"] == ["cts.md:L72"]
    assert "[cts.md:L72]" in first["answer"] and "[" not in first["answer_plain"]
    assert first["scores"]["rougeL"] > 0.5  # scored on the plain text, not the markers
    assert rows[1]["answer"].startswith("Not in the documents")


def test_llm_answers_and_judge_in_the_runner(scripted_server):
    answer_server = scripted_server([
        ok({"not_in_documents": False, "claims": [
            {"text": "The default of `-sink_clustering_size` is 20.", "evidence": ["E1"]}]}),
        ok({"not_in_documents": True, "claims": []}),
    ])
    rating = {"correctness": 20, "completeness": 20, "relevance": 20, "professionalism": 20,
              "conciseness": 20}
    judge_server = scripted_server([ok(rating), ok({"supported": True}), ok(rating)])
    llm = OpenAICompatibleClient(base_url=answer_server.base_url, api_key=None, model="answerer",
                                 max_retries=0)
    judge = AnswerJudge(OpenAICompatibleClient(base_url=judge_server.base_url, api_key=None,
                                               model="judge", max_retries=0))

    def answer(question, evidence):  # type: ignore[no-untyped-def]
        return answer_question(question, evidence, llm, packed=True)

    metrics, rows = run_evaluation(ITEMS, {"fixed": Fixed()}, answer, k=2, judge=judge, progress=False)
    got = metrics["methods"]["fixed"]
    assert got["llm_score"] == 100.0 and got["citation_recall"] == 1.0
    assert got["abstain_gold_missing"] == 1.0 and got["abstain_gold_in_context"] == 0.0
    assert rows[0]["answerer"] == "llm:answerer" and rows[0]["tokens"]["requests"] == 1
    assert judge_server.request_count == 3  # score a, support a's one claim, score b
    names = [r["tools"][0]["function"]["name"] for r in judge_server.requests]
    assert names == ["LLMScore", "Support", "LLMScore"]
