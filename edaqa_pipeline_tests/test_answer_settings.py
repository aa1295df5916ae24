"""The settings of how a model answers: read from the environment, bad values named, and the
evaluation's answerer applies them and verifies a method's draft."""

from __future__ import annotations

import pytest

from edaqa_pipeline.generation.answer_settings import (
    AnswerSettingError,
    AnswerSettings,
    evidence_answerer,
)
from edaqa_pipeline.generation.model_evidence import MODEL_UNITS
from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.retrieval.record import Draft
from edaqa_pipeline.service.clients import answer_settings
from edaqa_pipeline.service.errors import ServiceError
from edaqa_pipeline_tests.scripted_llm import client_of

ROW = EvidenceItem(
    chunk_id="c1", doc="cts.md", score=1.0, path="test", start_line=70, end_line=73,
    text="| Switch Name | Description |\n| ----- | ----- |\n"
         "| `-sink_clustering_size` | Maximum number of sinks per cluster. The default value is `20`. |\n"
         "| `-sink_clustering_max_diameter` | Maximum diameter of a cluster. The default value is `50`. |")


def test_defaults_and_the_environment():
    assert AnswerSettings.from_env({}) == AnswerSettings("auto", MODEL_UNITS, True)
    read = AnswerSettings.from_env({"EDAQA_ANSWER_FORMAT": "Text", "EDAQA_MODEL_UNITS": "0",
                                    "EDAQA_ANSWER_QUOTES": "OFF"})
    assert read == AnswerSettings("text", 0, False)
    assert read.kwargs() == {"answer_format": "text", "model_units": 0, "quotes": False}
    assert AnswerSettings.from_env({"EDAQA_MODEL_UNITS": "  "}).model_units == MODEL_UNITS  # blank: unset


@pytest.mark.parametrize(("name", "value", "shown"), [
    ("EDAQA_MODEL_UNITS", "-3", "-3"), ("EDAQA_MODEL_UNITS", "all", "all"),
    ("EDAQA_MODEL_UNITS", "\u0663", "\u0663"),  # a digit, but not an ASCII count
    ("EDAQA_ANSWER_QUOTES", "maybe", "maybe"), ("EDAQA_ANSWER_FORMAT", "XML", "xml")])
def test_a_bad_setting_is_named_with_its_value(name, value, shown):
    with pytest.raises(AnswerSettingError, match=f"{name}='{shown}'") as raised:
        AnswerSettings.from_env({name: value})
    assert raised.value.variable == name


def test_the_service_names_a_bad_setting_as_a_request_problem(monkeypatch):
    monkeypatch.setenv("EDAQA_ANSWER_QUOTES", "maybe")
    with pytest.raises(ServiceError, match="EDAQA_ANSWER_QUOTES='maybe'") as raised:
        answer_settings()
    assert raised.value.param == "answer_quotes"
    monkeypatch.setenv("EDAQA_ANSWER_QUOTES", "off")
    monkeypatch.setenv("EDAQA_MODEL_UNITS", "7")
    assert answer_settings() == AnswerSettings("auto", 7, False)


def test_the_evaluation_answerer_verifies_a_draft_without_asking_the_model(scripted_server):
    # the server answers nothing (every request is an HTTP 500): a draft is verified, not
    # written again, so the answer is the model's and no request reaches the server
    server = scripted_server([])
    answer = evidence_answerer(client_of(server), AnswerSettings(quotes=False))
    draft = Draft(text="The default of `-sink_clustering_size` is `20`. "
                       "The default of `-sink_clustering_max_diameter` is `20`.", cited=(ROW.evidence_id,))
    drafted = answer("What is the default of -sink_clustering_size?", [ROW], draft)
    assert server.request_count == 0
    assert drafted.answerer == "llm:scripted"
    assert [c.text for c in drafted.claims] == ["The default of `-sink_clustering_size` is `20`."]
    assert len(drafted.dropped) == 1  # the diameter's default is 50, not 20
    offline = evidence_answerer(None, AnswerSettings())("What is the default of -sink_clustering_size?", [ROW])
    assert offline.answerer == "extractive" and "`20`" in offline.claims[0].text
