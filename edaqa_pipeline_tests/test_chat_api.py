"""The chat API of ``edaqa serve`` as a chat client uses it: streamed claim by claim, follow-up
questions, ``max_tokens`` and ``temperature``, and the per-request deadline.

``edaqa serve`` runs as a real subprocess on loopback, asked with the real ``openai`` client.
Model answers come from the scripted OpenAI-compatible server (``scripted_llm.py``, a real
HTTP server on 127.0.0.1 that streams its reply token by token at a set pace), so the test
knows what the model writes and when its last token goes out.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import openai
import pytest

from edaqa_pipeline_tests.scripted_llm import ScriptedServer, generating, ok
from edaqa_pipeline_tests.test_serve import QUESTION, _post, serve

pytestmark = pytest.mark.slow

FIRST_TURN = "What does the -starts_with option of define_power_grid do?"


def _client(base: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0)


def _stream(client: openai.OpenAI, **kw: Any) -> tuple[list[str], Any, list[float]]:
    """(the content pieces, the final chunk, the arrival time of each piece)."""
    pieces, arrivals, final = [], [], None
    for chunk in client.chat.completions.create(stream=True, **kw):
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
            arrivals.append(time.monotonic())
        if chunk.choices and chunk.choices[0].finish_reason:
            final = chunk
    return pieces, final, arrivals


def _model_env(scripted: ScriptedServer, tmp: Path) -> dict[str, str]:
    return {"EDAQA_LLM_BASE_URL": scripted.base_url, "EDAQA_LLM_MODEL": "scripted",
            "EDAQA_LLM_TIMEOUT_S": "30", "EDAQA_LLM_MAX_RETRIES": "0",
            "EDAQA_LLM_LOCK_DIR": str(tmp / "slots")}


def _extractive_claims(storage: Path, question: str) -> list[dict[str, Any]]:
    from edaqa_pipeline.service import EdaqaService

    return EdaqaService.open(storage).answer(question, "bm25", 5)["claims"]


def test_extractive_stream_sends_each_claim_and_structured_citations(sample_index) -> None:  # type: ignore[no-untyped-def]
    _, storage, _ = sample_index
    with serve(storage, "--answers", "extractive", "--method", "bm25") as base:
        client = _client(base)
        messages = [{"role": "user", "content": QUESTION}]
        whole = client.chat.completions.create(model="bm25", messages=messages)
        pieces, final, _ = _stream(client, model="bm25", messages=messages)
        record = final.model_extra["edaqa"]
        assert len(record["claims"]) >= 2
        # one piece per claim, then the sources; together they are the non-streamed reply
        assert len(pieces) == len(record["claims"]) + 1
        assert "".join(pieces) == whole.choices[0].message.content
        for piece, claim in zip(pieces, record["claims"], strict=False):
            assert claim["text"] in piece and all(c in piece for c in claim["citations"])
        citations = final.model_extra["citations"]
        assert [c["claim"] for c in citations] == [c["text"] for c in record["claims"]]
        assert all(e["doc"] and e["citation"] for c in citations for e in c["evidence"])
        assert final.choices[0].finish_reason == "stop" and final.usage is not None

        # max_tokens shows the whole claims that fit, and says the reply was cut
        first = record["claims"][0]
        cut = client.chat.completions.create(model="bm25", messages=messages,
                                             max_tokens=len(first["text"]) // 4 + 20)
        assert cut.choices[0].finish_reason == "length"
        assert first["text"] in cut.choices[0].message.content
        assert record["claims"][-1]["text"] not in cut.choices[0].message.content

        for bad, param in (({"temperature": 5}, "temperature"), ({"temperature": "hot"}, "temperature"),
                           ({"max_tokens": 0}, "max_tokens"), ({"max_tokens": "many"}, "max_tokens"),
                           ({"n": 3}, "n"), ({"stream": "yes"}, "stream")):
            status, body = _post(f"{base}/v1/chat/completions",
                                 json.dumps({"model": "bm25", "messages": messages, **bad}).encode())
            assert status == 400 and body["error"]["param"] == param, (bad, body)


def test_follow_up_is_answered_with_the_first_turns_subject(sample_index) -> None:  # type: ignore[no-untyped-def]
    _, storage, _ = sample_index
    with serve(storage, "--answers", "extractive", "--method", "bm25") as base:
        client = _client(base)
        first = client.chat.completions.create(model="bm25", messages=[{"role": "user", "content": FIRST_TURN}])
        follow_up = client.chat.completions.create(model="bm25", messages=[
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": FIRST_TURN},
            {"role": "assistant", "content": first.choices[0].message.content},
            {"role": "user", "content": "And what is its default?"}])
        record = follow_up.model_extra["edaqa"]
        assert record["asked"] == "And what is its default?" and record["rewritten_by"] == "rule"
        assert "-starts_with" in record["question"] and "define_power_grid" in record["question"]
        assert "GROUND" in follow_up.choices[0].message.content
        assert record["ignored"] == ["system message"]


def test_model_stream_sends_the_first_claim_before_the_model_finishes(sample_index, tmp_path) -> None:  # type: ignore[no-untyped-def]
    _, storage, _ = sample_index
    claims = _extractive_claims(storage, QUESTION)[:2]
    assert len(claims) == 2
    written = " ".join(f"{c['text']} [{c['evidence_ids'][0]}]." for c in claims)
    written += " The option has no other documented values [E1]."  # fails verification: never sent
    rewrite = "What is the default value of the -starts_with option of define_power_grid?"
    script = [generating(written, pieces=60, token_delay_s=0.1),  # ~6 s of "generation"
              ok(rewrite), ok({"claims": [{"text": claims[0]["text"], "evidence": claims[0]["evidence_ids"]}],
                               "not_in_documents": False})]
    with ScriptedServer(script) as scripted, \
            serve(storage, "--method", "bm25", env=_model_env(scripted, tmp_path)) as base:
        client = _client(base)
        started = time.monotonic()
        pieces, final, arrivals = _stream(client, model="bm25", messages=[{"role": "user", "content": QUESTION}])
        record = final.model_extra["edaqa"]
        assert record["answerer"] == "llm:scripted"
        # the model's claims, then the extractive quotes they do not state, marked
        assert [c["text"] for c in record["claims"] if not c.get("quoted")] == [c["text"] for c in claims]
        assert record["claims"][:2] == [c for c in record["claims"] if not c.get("quoted")]
        assert len(record["claims"]) <= 5
        assert record["dropped_claims"] and "no other documented values" in record["dropped_claims"][0]["text"]
        # the first claim went out while the model was still writing: before its last token
        assert claims[0]["text"] in pieces[0]
        last_token = scripted.streams_finished_at[0]
        assert started < arrivals[0] < last_token - 1.0, (arrivals[0] - started, last_token - started)
        assert not any("no other documented values" in p for p in pieces)
        assert scripted.requests[0].get("tools") is None  # streamed answers use the text format

        # a follow-up is rewritten by the model; temperature and max_tokens reach it
        reply = client.chat.completions.create(model="bm25", temperature=0.3, max_tokens=64, messages=[
            {"role": "user", "content": FIRST_TURN}, {"role": "assistant", "content": "..."},
            {"role": "user", "content": "and its default?"}])
        record = reply.model_extra["edaqa"]
        assert record["rewritten_by"] == "llm:scripted" and record["question"] == rewrite
        answer_request = scripted.requests[2]
        assert answer_request["temperature"] == 0.3 and answer_request["max_tokens"] <= 64


def test_a_request_past_its_deadline_gets_504_and_frees_the_model_slot(sample_index, tmp_path) -> None:  # type: ignore[no-untyped-def]
    _, storage, _ = sample_index
    claim = _extractive_claims(storage, QUESTION)[0]
    script = [generating(f"{claim['text']} [{claim['evidence_ids'][0]}].", pieces=200, token_delay_s=0.2),
              ok({"claims": [{"text": claim["text"], "evidence": claim["evidence_ids"]}],
                  "not_in_documents": False})]
    with ScriptedServer(script) as scripted, \
            serve(storage, "--method", "bm25", "--deadline-s", "4", env=_model_env(scripted, tmp_path)) as base:
        started = time.monotonic()
        status, body = _post(f"{base}/ask", json.dumps({"question": QUESTION}).encode())
        assert status == 504 and "deadline" in body["error"], body
        assert time.monotonic() - started < 15
        deadline = time.monotonic() + 10
        while scripted.disconnects < 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert scripted.disconnects == 1  # the model's stream was closed: its slot is free
        # the single slot serves the next request at once
        status, record = _post(f"{base}/ask", json.dumps({"question": QUESTION, "k": 4}).encode())
        assert status == 200 and record["answerer"] == "llm:scripted", record
        assert scripted.max_in_flight == 1
