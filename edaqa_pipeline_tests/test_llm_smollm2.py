"""Happy path against a real model: SmolLM2-135M served by llama.cpp, through instructor.

The model is tiny and often wrong, so these tests check shape and plumbing (a validated record
of the right class, tokens counted, the cache answering the repeat), never content.
"""

from __future__ import annotations

import pytest

from edaqa_pipeline.llm import OfflineClient, OpenAICompatibleClient, ResponseCache
from edaqa_pipeline_tests.llm_servers import DocFacts, register_sample_tasks

pytestmark = pytest.mark.llm

SNIPPET = (
    "Clock Gating\n"
    "The set_clock_gating_style command selects the integrated clock gating cell and "
    "the minimum bank width used by insert_clock_gating."
)


@pytest.fixture
def client(smollm2_base_url, tmp_path) -> OpenAICompatibleClient:
    register_sample_tasks()
    return OpenAICompatibleClient(
        base_url=smollm2_base_url,
        api_key=None,
        model="smollm2",
        cache_dir=tmp_path / "cache",
        timeout_s=120,
        max_retries=1,
        validation_retries=3,
        max_tokens=256,
        fallback=None,
    )


def test_structured_extraction_validates_and_is_cached(client, tmp_path):
    out = client.complete_structured("test_doc_facts", {"text": SNIPPET}, DocFacts)

    assert type(out) is DocFacts
    assert isinstance(out.title, str) and all(isinstance(k, str) for k in out.keywords)
    stats = client.stats
    assert stats.calls >= 1 and stats.errors == 0
    assert stats.prompt_tokens > 0 and stats.completion_tokens > 0
    assert len(ResponseCache(tmp_path / "cache")) == 1

    calls_before = stats.calls
    again = client.complete_structured("test_doc_facts", {"text": SNIPPET}, DocFacts)
    assert again == out
    assert client.stats.calls == calls_before and client.stats.cache_hits == 1


def test_real_and_offline_records_have_the_same_shape(client):
    inputs = {"text": "Placement\nUse place_opt to run timing-driven placement."}
    real = client.complete_structured("test_doc_facts", inputs, DocFacts)
    offline = OfflineClient().complete_structured("test_doc_facts", inputs, DocFacts)
    assert real.model_dump().keys() == offline.model_dump().keys()
