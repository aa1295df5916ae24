"""The Dagster resource: config picks the provider, the key comes only from the environment."""

from __future__ import annotations

import dagster as dg
import pytest

from edaqa_pipeline.llm import OfflineClient, OpenAICompatibleClient
from edaqa_pipeline.resources import LLMResource
from edaqa_pipeline_tests.llm_servers import DocFacts, http_error, ok, register_sample_tasks


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("EDAQA_LLM_BASE_URL", "EDAQA_LLM_API_KEY", "EDAQA_LLM_MODEL", "OPENAI_BASE_URL",
                 "OPENAI_API_KEY", "EDAQA_LLM_PROVIDER"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    register_sample_tasks()


def test_auto_without_configuration_is_offline():
    assert isinstance(LLMResource().get_client(), OfflineClient)


def test_key_is_read_from_named_env_var_and_never_stored(monkeypatch, tmp_path):
    monkeypatch.setenv("MY_LLM_KEY", "sk-resource-SECRET-77")
    resource = LLMResource(
        provider="openai",
        base_url="http://127.0.0.1:9/v1",
        model="smollm2",
        api_key_env="MY_LLM_KEY",
        cache_dir=str(tmp_path),
    )
    client = resource.get_client()
    assert isinstance(client, OpenAICompatibleClient)
    assert isinstance(client.fallback, OfflineClient)
    assert "SECRET" not in repr(client) and "SECRET" not in str(resource.model_dump())


def test_asset_reports_stats_through_the_resource(scripted_server, tmp_path):
    good = {"title": "T", "keywords": ["k"]}
    server = scripted_server([ok(good)], default=http_error(500))

    @dg.asset
    def facts(llm: LLMResource) -> dg.MaterializeResult:
        client = llm.get_client()
        out = [client.complete_structured("test_doc_facts", {"text": t}, DocFacts) for t in "ab"]
        return dg.MaterializeResult(
            metadata={**client.stats.as_metadata(), "titles": ",".join(o.title for o in out)}
        )

    resource = LLMResource(
        provider="openai",
        base_url=server.base_url,
        model="scripted",
        cache_dir=str(tmp_path),
        max_retries=0,
    )
    result = dg.materialize([facts], resources={"llm": resource})

    assert result.success
    (mat,) = result.asset_materializations_for_node("facts")
    meta = {k: v.value for k, v in mat.metadata.items()}
    # first text answered by the server, second fell back to the offline rules after a 500
    assert meta["llm_calls"] == 2 and meta["llm_errors"] == 1 and meta["llm_fallbacks"] == 1
    assert meta["titles"] == "T,b"
