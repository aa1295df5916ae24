"""Output budgets: derived from the response schema, capped, sent as max_tokens, enforced.

The scripted server records every request body, so these tests read the ``max_tokens`` that
went over the wire, and a server that ignores it is cut off by the client."""

from __future__ import annotations

import importlib

import pytest
from pydantic import BaseModel, Field

from edaqa_pipeline.llm import (
    LLMTask,
    OpenAICompatibleClient,
    get_task,
    output_budget,
    register_task,
    registered_tasks,
    schema_tokens,
)
from edaqa_pipeline.llm.budget import ARRAY_ITEMS, DEFAULT_CAP_TOKENS, STRING_TOKENS
from edaqa_pipeline_tests.llm_servers import DocFacts, generating, ok, register_sample_tasks

GOOD = {"title": "Clock gating", "keywords": ["clock", "gating"]}

# Every module that registers an LLM task, so the registry is complete for the cap test.
TASK_MODULES = (
    "edaqa_pipeline.generation.grounded",
    "edaqa_pipeline.evaluation.judge",
    "edaqa_pipeline.extraction.semantic_llm",
    "edaqa_pipeline.training.query_task",
    "edaqa_pipeline.graphs.hwkg.kg",
    "edaqa_pipeline.graphs.hwkg.faithfulness",
    "edaqa_pipeline.extraction.datasheets.properties",
)


class Bounded(BaseModel):
    """A record whose size the schema fixes."""

    name: str = Field(max_length=40)
    tags: list[str] = Field(max_length=3)
    count: int


class Unbounded(BaseModel):
    name: str
    tags: list[str]


@pytest.fixture(autouse=True)
def _tasks() -> None:
    register_sample_tasks()


def test_schema_tokens_follow_the_documented_rules():
    # object 2 + "name" (4/4+2=3) + 40/4+2=12 + "tags" (3) + 2 + 3 x (12 + 1)... strings in
    # the array are unbounded: 2 + 3 * (STRING_TOKENS + 1); "count" (5/4 -> 2+2=4) + 6.
    expected = 2 + (3 + 12) + (3 + 2 + 3 * (STRING_TOKENS + 1)) + (4 + 6)
    assert schema_tokens(Bounded.model_json_schema()) == expected
    unbounded = schema_tokens(Unbounded.model_json_schema())
    assert unbounded == 2 + (3 + STRING_TOKENS) + (3 + 2 + ARRAY_ITEMS * (STRING_TOKENS + 1))


def test_budget_is_capped_and_has_a_floor():
    schema = Unbounded.model_json_schema()
    assert output_budget(schema) > output_budget(Bounded.model_json_schema())
    assert output_budget(schema, cap=50) == 50
    assert output_budget(schema, override=10) == 32  # the floor
    assert output_budget(schema, cap=20, override=10) == 20  # the cap wins over the floor


def test_every_registered_task_has_a_budget_within_the_cap():
    for module in TASK_MODULES:
        importlib.import_module(module)
    assert {"grounded_answer", "llm_score", "fact_match"} <= set(registered_tasks())
    for name in registered_tasks():
        if name.startswith("test_"):
            continue  # registered by the tests of this file (any order), not the project's
        task = get_task(name)
        # the response models are not in the registry; check the schema rule on each task's
        # own largest plausible record instead: a generic unbounded one
        assert 32 <= task.budget(Unbounded, {"failed": [1, 2]}, DEFAULT_CAP_TOKENS) <= DEFAULT_CAP_TOKENS


def _client(server, tmp_path, **kw) -> OpenAICompatibleClient:
    params = {"base_url": server.base_url, "api_key": None, "model": "scripted",
              "cache_dir": tmp_path / "cache", "timeout_s": 5.0, "max_retries": 1,
              "validation_retries": 1, "backoff_s": 0.01}
    params.update(kw)
    return OpenAICompatibleClient(**params)


def test_every_request_carries_the_task_budget(scripted_server, tmp_path):
    server = scripted_server([ok(GOOD)])
    client = _client(server, tmp_path, max_tokens=4096)
    client.complete_structured("test_doc_facts", {"text": "Clock gating"}, DocFacts)
    body = server.requests[0]
    assert body["stream"] is True
    assert body["max_tokens"] == output_budget(DocFacts.model_json_schema())
    assert body["max_tokens"] == client.budget("test_doc_facts", DocFacts, {"text": "x"})


def test_global_cap_and_task_override(scripted_server, tmp_path):
    register_task(LLMTask(name="test_tiny", system_prompt="s", render_user=lambda i: "u",
                          max_output_tokens=lambda inputs: 40 * len(inputs["items"])))
    server = scripted_server([ok(GOOD), ok(GOOD)])
    capped = _client(server, tmp_path, max_tokens=60, cache_dir=None)
    capped.complete_structured("test_doc_facts", {"text": "a"}, DocFacts)
    capped.complete_structured("test_tiny", {"items": [1, 2, 3]}, DocFacts)
    assert [b["max_tokens"] for b in server.requests] == [60, 60]  # min(120, cap 60)
    assert _client(server, tmp_path).budget("test_tiny", DocFacts, {"items": [1, 2]}) == 80


def test_a_server_that_ignores_max_tokens_is_cut_off_and_the_answer_reasked(scripted_server, tmp_path):
    runaway = generating('{"title": "' + "x" * 600 + '"', pieces=300, token_delay_s=0.002)
    server = scripted_server([runaway, ok(GOOD)])
    client = _client(server, tmp_path, max_tokens=64, cache_dir=None)

    out = client.complete_structured("test_doc_facts", {"text": "Clock gating"}, DocFacts)

    assert out.model_dump() == GOOD
    assert server.request_count == 2
    assert server.disconnects == 1  # the client closed the runaway stream
    # the runaway stopped one token past budget + guard; then the good answer's usage (7)
    assert client.stats.max_completion_tokens == 64 + 16 + 1
    assert client.stats.completion_tokens == 64 + 16 + 1 + 7
    reask = server.requests[1]["messages"][-1]
    assert reask["role"] == "tool" and "output budget of 64 tokens" in reask["content"]
