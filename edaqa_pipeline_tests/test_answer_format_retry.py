"""A model whose JSON claims all fail verification gets one more try in the text format
before the extractive claims are shown: a small model that joins facts of two rows in a tool
call often writes them one to a sentence when asked for plain sentences.

The model is the scripted OpenAI-compatible server: a JSON answer and its re-ask that state
a wrong default, then a text answer."""

from __future__ import annotations

from edaqa_pipeline.generation.answer import answer_question
from edaqa_pipeline_tests.llm_servers import ok
from edaqa_pipeline_tests.scripted_llm import client_of
from edaqa_pipeline_tests.test_model_evidence import OPTIONS, QUESTION

WRONG = {"not_in_documents": False, "claims": [
    {"text": "The default value of `-sink_clustering_size` is `30`.", "evidence": ["E1"]}]}


def test_a_json_answer_that_fails_verification_is_asked_again_as_text(scripted_server):
    server = scripted_server([ok(WRONG), ok(WRONG),
                              ok("The default value of `-sink_clustering_size` is `20` [E1].")])
    answer = answer_question(QUESTION, [OPTIONS], client_of(server), quotes=False)
    assert server.request_count == 3
    assert server.requests[2].get("tools") is None  # the third request asks for text
    assert answer.answerer == "llm:scripted"
    assert [c.text for c in answer.claims] == ["The default value of `-sink_clustering_size` is `20`"]
    assert answer.reason == "every claim of the JSON answer failed verification; answered in the text format"
    assert any("`30`" in d["text"] for d in answer.dropped)  # the JSON claims stay on the record


def test_when_the_text_answer_fails_too_the_extractive_claims_are_shown_labelled(scripted_server):
    server = scripted_server([ok(WRONG), ok(WRONG),
                              ok("The default value of `-sink_clustering_size` is `30` [E1].")])
    answer = answer_question(QUESTION, [OPTIONS], client_of(server), quotes=False)
    assert server.request_count == 3
    assert answer.answerer == "extractive"
    assert "the model did not answer (every claim it wrote failed verification)" in answer.reason
    assert answer.claims and all("`30`" not in c.text for c in answer.claims)
    assert len(answer.dropped) == 2  # the re-asked JSON claim and the text sentence


def test_a_json_only_setting_never_asks_for_text(scripted_server):
    server = scripted_server([ok(WRONG), ok(WRONG)])
    answer = answer_question(QUESTION, [OPTIONS], client_of(server), answer_format="json", quotes=False)
    assert server.request_count == 2
    assert "the model did not answer" in answer.reason


def test_a_failing_text_request_leaves_the_json_verdicts(scripted_server):
    server = scripted_server([ok(WRONG), ok(WRONG)])  # then HTTP 500 for the text request
    answer = answer_question(QUESTION, [OPTIONS], client_of(server), quotes=False)
    assert server.request_count == 3
    assert answer.answerer == "extractive" and answer.claims
    assert answer.reason.startswith("the model did not answer (every claim it wrote failed verification)")
