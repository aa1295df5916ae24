"""``edaqa serve`` as a real subprocess on a free loopback port, asked with the real ``openai``
client (and plain HTTP for ``/ask`` and the error paths). Stopped by PID."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import openai
import pytest

from edaqa_pipeline_tests.llm_servers import _default_signals, free_port, stop_process, wait_ready

pytestmark = pytest.mark.slow

QUESTION = "What is the default value of the -starts_with option of define_power_grid?"
CITATION = r"\[[\w./-]+\.(md|pdf):(L\d+(-L\d+)?|p\d+)"


@contextmanager
def serve(storage: Path, *extra: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """Start ``edaqa serve`` and yield its base URL (``http://127.0.0.1:PORT``)."""
    port = free_port()
    log = storage.parent / f"serve-{port}.log"
    # the model and the token of the shell running the tests are not the test's
    child_env = {k: v for k, v in os.environ.items()
                 if not k.startswith(("EDAQA_LLM", "OPENAI", "EDAQA_API_TOKEN"))}
    child_env.update(env or {})
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "edaqa_pipeline.cli", "serve", "--storage", str(storage),
             "--port", str(port), *extra],
            stdout=out, stderr=subprocess.STDOUT, env=child_env, preexec_fn=_default_signals)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_ready(proc, f"{base}/health", 180, log, what="edaqa serve")
            yield base
        finally:
            stop_process(proc)


def _post(url: str, body: bytes, timeout_s: float = 120) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_openai_client_gets_cited_answers(sample_index) -> None:  # type: ignore[no-untyped-def]
    _, storage, _ = sample_index
    with serve(storage, "--answers", "extractive", "--method", "bm25") as base:
        client = openai.OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0)
        models = [m.id for m in client.models.list()]
        assert {"bm25", "dense", "hybrid_rrf", "fa_hybrid"} <= set(models)

        reply = client.chat.completions.create(
            model="bm25", messages=[{"role": "system", "content": "be brief"},
                                    {"role": "user", "content": QUESTION}])
        content = reply.choices[0].message.content
        assert reply.model == "bm25" and reply.choices[0].finish_reason == "stop"
        assert "GROUND" in content
        assert re.search(CITATION, content) and "Sources:" in content and "pdn.md" in content

        chunks = list(client.chat.completions.create(
            model="dense", messages=[{"role": "user", "content": QUESTION}], stream=True))
        streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert re.search(CITATION, streamed)

        with pytest.raises(openai.NotFoundError, match="unknown or unbuilt method"):
            client.chat.completions.create(model="nope", messages=[{"role": "user", "content": "x"}])
        with pytest.raises(openai.BadRequestError, match="no user message"):
            client.chat.completions.create(model="bm25", messages=[{"role": "system", "content": "x"}])

        status, record = _post(f"{base}/ask", json.dumps({"question": QUESTION, "k": 3}).encode())
        assert status == 200
        assert record["method"] == "bm25" and record["answerer"] == "extractive"
        assert len(record["evidence"]) == 3 and record["evidence"][0]["id"] == "E1"
        ids = {e["id"] for e in record["evidence"] if "id" in e}
        assert record["claims"] and all(set(c["evidence_ids"]) <= ids for c in record["claims"])
        assert set(record["tokens"]) == {"requests", "prompt_tokens", "completion_tokens", "cache_hits"}

        assert _post(f"{base}/ask", b"{not json")[0] == 400
        status, body = _post(f"{base}/ask", json.dumps({"question": ""}).encode())
        assert status == 400 and "question" in body["error"]
        assert _post(f"{base}/ask", json.dumps({"question": "q", "k": 0}).encode())[0] == 400
        assert _post(f"{base}/ask", json.dumps({"question": "q", "method": "nope"}).encode())[0] == 404


@pytest.mark.llm
def test_serve_with_the_local_model(sample_index, smollm2_base_url) -> None:  # type: ignore[no-untyped-def]
    _, storage, _ = sample_index
    env = {"EDAQA_LLM_BASE_URL": smollm2_base_url, "EDAQA_LLM_MODEL": "smollm2",
           "EDAQA_LLM_TIMEOUT_S": "120"}
    with serve(storage, "--method", "bm25", env=env) as base:
        # the answer may take several model requests (JSON, a re-ask, the text format), each up
        # to EDAQA_LLM_TIMEOUT_S: on a loaded CPU one answer can outlast a single request's limit
        status, record = _post(f"{base}/ask", json.dumps({"question": QUESTION}).encode(), timeout_s=600)
        assert status == 200
        # the model answered (or failed and said why); every shown claim cites a given item
        assert record["answerer"] == "llm:smollm2" or record.get("fallback_reason")
        ids = {e["id"] for e in record["evidence"] if "id" in e}
        for claim in record["claims"]:
            assert claim["evidence_ids"] and set(claim["evidence_ids"]) <= ids
        if record["answerer"] == "llm:smollm2":
            assert record["tokens"]["requests"] >= 1 and record["tokens"]["completion_tokens"] > 0


def test_several_workers_answer_and_refuse_a_bad_setting_before_starting(sample_index) -> None:  # type: ignore[no-untyped-def]
    _, storage, _ = sample_index
    with serve(storage, "--answers", "extractive", "--method", "bm25", "--workers", "2") as base:
        records = [_post(f"{base}/ask", json.dumps({"question": QUESTION, "k": 3}).encode()) for _ in range(4)]
        assert all(status == 200 and "GROUND" in record["answer"] for status, record in records)
        assert _post(f"{base}/ask", json.dumps({"question": ""}).encode())[0] == 400
    refused = subprocess.run(
        [sys.executable, "-m", "edaqa_pipeline.cli", "serve", "--storage", str(storage), "--workers", "2",
         "--method", "no_such_method", "--port", str(free_port())],
        capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "no_such_method" in refused.stderr and "not built" in refused.stderr
    bad_k = subprocess.run(
        [sys.executable, "-m", "edaqa_pipeline.cli", "serve", "--storage", str(storage), "--workers", "2",
         "--k", "0", "--port", str(free_port())], capture_output=True, text=True, timeout=120)
    assert bad_k.returncode == 2 and "'k'" in bad_k.stderr
