"""The response cache: stable keys, atomic sharded files, and zero requests on a re-run."""

from __future__ import annotations

import json

from edaqa_pipeline.llm import OpenAICompatibleClient, ResponseCache, cache_key
from edaqa_pipeline_tests.llm_servers import (
    ChunkPick,
    DocFacts,
    http_error,
    ok,
    register_sample_tasks,
)

KEY_PARTS = {
    "provider": "openai",
    "model": "m",
    "task": "t",
    "system_prompt": "s",
    "user_prompt": "u",
    "schema": DocFacts.model_json_schema(),
    "temperature": 0.0,
}


def test_key_covers_every_part():
    base = cache_key(**KEY_PARTS)
    assert len(base) == 64 and base == cache_key(**KEY_PARTS)
    variants = {
        "provider": "offline",
        "model": "m2",
        "task": "t2",
        "system_prompt": "s2",
        "user_prompt": "u2",
        "schema": ChunkPick.model_json_schema(),
        "temperature": 0.7,
    }
    for name, value in variants.items():
        assert cache_key(**{**KEY_PARTS, name: value}) != base, name


def test_entries_are_sharded_atomic_and_tolerate_corruption(tmp_path):
    cache = ResponseCache(tmp_path)
    key = cache_key(**KEY_PARTS)
    path = cache.put(key, {"title": "a", "keywords": []}, task="t")
    assert path == tmp_path / key[:2] / f"{key}.json"
    assert json.loads(path.read_text())["response"] == {"title": "a", "keywords": []}
    assert not list(path.parent.glob(".tmp-*"))  # no temporary file left behind
    assert cache.get(key) == {"title": "a", "keywords": []}
    path.write_text('{"response": {"title": "a", "keyw')  # as if a writer had been killed
    assert cache.get(key) is None
    assert cache.get("0" * 64) is None


def test_second_run_makes_zero_requests(scripted_server, tmp_path):
    register_sample_tasks()
    good = {"title": "Clock gating", "keywords": ["clock"]}
    server = scripted_server([ok(good)] * 3, default=http_error(500))
    inputs = [{"text": f"Section {i}\nbody"} for i in range(3)]

    def run() -> tuple[list[DocFacts], OpenAICompatibleClient]:
        client = OpenAICompatibleClient(
            server.base_url, None, "m", tmp_path / "cache", timeout_s=1, backoff_s=0.01
        )
        return [client.complete_structured("test_doc_facts", i, DocFacts) for i in inputs], client

    first, c1 = run()
    assert server.request_count == 3 and c1.stats.cache_hits == 0 and c1.stats.calls == 3
    second, c2 = run()
    assert server.request_count == 3  # nothing new reached the server
    assert c2.stats.calls == 0 and c2.stats.cache_hits == 3
    assert c2.stats.prompt_tokens == 0
    assert second == first


def test_stale_entry_failing_task_validation_is_refetched(scripted_server, tmp_path):
    register_sample_tasks()
    inputs = {"question": "q", "chunks": [{"id": "c1", "text": "t"}]}
    server = scripted_server([ok({"chunk_ids": ["c1"], "reason": "r"})])
    client = OpenAICompatibleClient(server.base_url, None, "m", tmp_path, timeout_s=1)
    client.complete_structured("test_pick_chunks", inputs, ChunkPick)
    (key,) = ResponseCache(tmp_path).keys()
    ResponseCache(tmp_path).put(key, {"chunk_ids": ["zz"], "reason": "tampered"})
    server.script = [*server.script, ok({"chunk_ids": ["c1"], "reason": "again"})]

    result = client.complete_structured("test_pick_chunks", inputs, ChunkPick)

    assert result.reason == "again" and server.request_count == 2
    assert ResponseCache(tmp_path).get(key) == {"chunk_ids": ["c1"], "reason": "again"}
