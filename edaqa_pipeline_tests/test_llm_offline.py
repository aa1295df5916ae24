"""The offline provider, the task registry, stats, prompt delimiting and env-based selection."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from edaqa_pipeline.llm import (
    LLMError,
    LLMStats,
    LLMTask,
    OfflineClient,
    OpenAICompatibleClient,
    client_from_env,
    delimit,
    get_task,
    register_task,
)
from edaqa_pipeline_tests.llm_servers import ChunkPick, DocFacts, register_sample_tasks

ENV_VARS = (
    "EDAQA_LLM_PROVIDER",
    "EDAQA_LLM_BASE_URL",
    "EDAQA_LLM_API_KEY",
    "EDAQA_LLM_MODEL",
    "EDAQA_LLM_CACHE_DIR",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
)


@pytest.fixture(autouse=True)
def _tasks() -> None:
    register_sample_tasks()


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_offline_is_deterministic_and_counts_calls():
    client = OfflineClient()
    inputs = {"text": "Clock gating\nuse set_clock_gating_style to choose cells"}
    a = client.complete_structured("test_doc_facts", inputs, DocFacts)
    b = client.complete_structured("test_doc_facts", inputs, DocFacts)
    assert type(a) is DocFacts and a == b and a.title == "Clock gating"
    assert client.provider == "offline"
    assert client.stats.calls == 2
    assert client.stats.prompt_tokens == client.stats.completion_tokens == 0


def test_offline_output_is_checked_by_task_validation():
    def bad_rules(inputs):
        return ChunkPick(chunk_ids=["nope"], reason="bug")

    base = get_task("test_pick_chunks")
    register_task(
        LLMTask("test_bad_rules", base.system_prompt, base.render_user, bad_rules, base.validate)
    )
    client = OfflineClient()
    with pytest.raises(LLMError, match=r"test_bad_rules.*not among the given chunks"):
        client.complete_structured(
            "test_bad_rules", {"question": "q", "chunks": [{"id": "c1", "text": "t"}]}, ChunkPick
        )
    assert client.stats.errors == 1


def test_task_without_offline_rules_raises_llm_error():
    register_task(LLMTask("test_no_rules", "s", lambda i: "u"))
    with pytest.raises(LLMError, match="no offline implementation"):
        OfflineClient().complete_structured("test_no_rules", {}, DocFacts)


def test_offline_coerces_to_the_requested_model():
    class Narrow(BaseModel):
        title: str

    out = OfflineClient().complete_structured("test_doc_facts", {"text": "T\nx"}, DocFacts)
    assert type(out) is DocFacts
    with pytest.raises(LLMError):  # rules return a record that is not a ChunkPick
        OfflineClient().complete_structured("test_doc_facts", {"text": "T"}, ChunkPick)
    assert OfflineClient().complete_structured("test_doc_facts", {"text": "T"}, Narrow).title == "T"


def test_unknown_task_lists_known_ones():
    with pytest.raises(KeyError, match="test_doc_facts"):
        get_task("does_not_exist")


def test_stats_merge_and_metadata():
    a = LLMStats(calls=2, cache_hits=1, prompt_tokens=10, completion_tokens=5, seconds=0.5)
    b = LLMStats(calls=1, errors=1, seconds=0.25, retries=1)
    assert a.merge(b) is a
    assert (a.calls, a.errors, a.retries, a.seconds) == (3, 1, 1, 0.75)
    meta = a.as_metadata()
    assert meta["llm_calls"] == 3 and meta["llm_cache_hits"] == 1 and meta["llm_seconds"] == 0.75
    assert all(isinstance(v, int | float) for v in meta.values())


def test_delimit_escapes_closing_tags():
    text = delimit("a </document> b </DOCUMENT > c", id='x"y')
    assert text.startswith('<document id="x&quot;y">') and text.endswith("</document>")
    assert text.lower().count("</document") == 1
    with pytest.raises(ValueError):
        delimit("a", tag="bad tag")


def test_env_selects_offline_by_default(clean_env):
    assert isinstance(client_from_env(), OfflineClient)
    clean_env.setenv("EDAQA_LLM_PROVIDER", "offline")
    clean_env.setenv("EDAQA_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    assert isinstance(client_from_env(), OfflineClient)


def test_env_selects_openai_compatible(clean_env, tmp_path):
    clean_env.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    clean_env.setenv("EDAQA_LLM_MODEL", "smollm2")
    clean_env.setenv("EDAQA_LLM_API_KEY", "sk-env-SECRET-42")
    client = client_from_env(cache_dir=tmp_path, fallback_offline=True)
    assert isinstance(client, OpenAICompatibleClient)
    assert (client.provider, client.model, client.base_url) == (
        "openai",
        "smollm2",
        "http://127.0.0.1:9/v1",
    )
    assert isinstance(client.fallback, OfflineClient)
    assert client.cache is not None and client.cache.root == tmp_path
    assert "SECRET" not in repr(client)


def test_env_misconfiguration_is_a_clear_error(clean_env):
    clean_env.setenv("EDAQA_LLM_PROVIDER", "openai")
    with pytest.raises(LLMError, match="EDAQA_LLM_API_KEY"):
        client_from_env()
    clean_env.setenv("EDAQA_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    with pytest.raises(LLMError, match="EDAQA_LLM_MODEL"):
        client_from_env()
    clean_env.setenv("EDAQA_LLM_PROVIDER", "anthropic")
    with pytest.raises(LLMError, match="auto, offline, openai"):
        client_from_env()


def test_plain_openai_key_defaults_model(clean_env):
    clean_env.setenv("OPENAI_API_KEY", "sk-x")
    client = client_from_env()
    assert isinstance(client, OpenAICompatibleClient) and client.model == "gpt-4o-mini"
