"""The settings of how a model answers: read from the environment, bad values named."""

from __future__ import annotations

import pytest

from edaqa_pipeline.generation.model_evidence import MODEL_UNITS
from edaqa_pipeline.service.clients import answer_quotes, model_units
from edaqa_pipeline.service.errors import ServiceError


def test_model_units_and_quotes_default_and_read_the_environment(monkeypatch):
    monkeypatch.delenv("EDAQA_MODEL_UNITS", raising=False)
    monkeypatch.delenv("EDAQA_ANSWER_QUOTES", raising=False)
    assert model_units() == MODEL_UNITS and answer_quotes() is True
    monkeypatch.setenv("EDAQA_MODEL_UNITS", "0")
    monkeypatch.setenv("EDAQA_ANSWER_QUOTES", "OFF")
    assert model_units() == 0 and answer_quotes() is False


@pytest.mark.parametrize(("name", "value", "read"), [
    ("EDAQA_MODEL_UNITS", "-3", model_units), ("EDAQA_MODEL_UNITS", "all", model_units),
    ("EDAQA_ANSWER_QUOTES", "maybe", answer_quotes)])
def test_a_bad_setting_is_named_with_its_value(monkeypatch, name, value, read):
    monkeypatch.setenv(name, value)
    with pytest.raises(ServiceError, match=f"{name}='{value.lower() if read is answer_quotes else value}'"):
        read()
