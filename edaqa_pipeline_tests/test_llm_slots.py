"""Request slots, cancellation and progress, measured at a scripted server.

The server counts the requests it handles at once (``max_in_flight``) and the streams the
client hung up on (``disconnects``); it stops "generating" when the client closes the
connection, as llama.cpp and vLLM do between two tokens."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from edaqa_pipeline.llm import BatchProgress, LLMError, OpenAICompatibleClient, client_from_env
from edaqa_pipeline.llm.slots import ServerSlots, SlotTimeout
from edaqa_pipeline_tests.llm_servers import DocFacts, generating, ok, register_sample_tasks

GOOD = {"title": "Clock gating", "keywords": ["clock", "gating"]}


@pytest.fixture(autouse=True)
def _tasks(tmp_path, monkeypatch) -> None:
    register_sample_tasks()
    monkeypatch.setenv("EDAQA_LLM_LOCK_DIR", str(tmp_path / "slots"))


def _client(server, **kw) -> OpenAICompatibleClient:
    params = {"base_url": server.base_url, "api_key": None, "model": "scripted",
              "timeout_s": 5.0, "max_retries": 2, "validation_retries": 0, "backoff_s": 0.01}
    params.update(kw)
    return OpenAICompatibleClient(**params)


def _parallel(client: OpenAICompatibleClient, n: int) -> list[BaseException]:
    errors: list[BaseException] = []

    def call(i: int) -> None:
        try:
            client.complete_structured("test_doc_facts", {"text": f"text {i}"}, DocFacts)
        except BaseException as exc:  # collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return errors


def test_single_slot_server_never_sees_two_requests_at_once(scripted_server):
    server = scripted_server([], default=generating(GOOD, pieces=6, token_delay_s=0.03))
    client = _client(server)  # a base URL: concurrency 1 by default
    assert client.concurrency == 1
    assert _parallel(client, 4) == []
    assert server.request_count == 4 and server.max_in_flight == 1


def test_configured_concurrency_is_the_bound(scripted_server, monkeypatch):
    server = scripted_server([], default=generating(GOOD, pieces=20, token_delay_s=0.05))
    monkeypatch.setenv("EDAQA_LLM_BASE_URL", server.base_url)
    monkeypatch.setenv("EDAQA_LLM_MODEL", "scripted")
    monkeypatch.setenv("EDAQA_LLM_CONCURRENCY", "2")
    client = client_from_env()
    assert client.concurrency == 2
    assert _parallel(client, 6) == []
    assert server.max_in_flight == 2


_CHILD = """
import sys
from edaqa_pipeline.llm import OpenAICompatibleClient
from edaqa_pipeline_tests.llm_servers import DocFacts, register_sample_tasks
register_sample_tasks()
client = OpenAICompatibleClient(base_url=sys.argv[1], api_key=None, model="scripted", timeout_s=20)
for i in range(2):
    client.complete_structured("test_doc_facts", {"text": sys.argv[2] + str(i)}, DocFacts)
"""


def test_the_bound_holds_across_processes(scripted_server, tmp_path):
    server = scripted_server([], default=generating(GOOD, pieces=8, token_delay_s=0.05))
    env = {"EDAQA_LLM_LOCK_DIR": str(tmp_path / "slots"), "PATH": "/usr/bin:/bin"}
    children = [subprocess.Popen([sys.executable, "-c", _CHILD, server.base_url, f"p{i}"], env=env)
                for i in range(2)]
    for child in children:
        assert child.wait(timeout=120) == 0
    assert server.request_count == 4 and server.max_in_flight == 1


def test_idle_request_is_cancelled_not_duplicated(scripted_server):
    # The first reply stalls 3 s between tokens; the client's idle timeout is 0.5 s.
    server = scripted_server([generating(GOOD, pieces=4, token_delay_s=3.0), ok(GOOD)])
    client = _client(server, timeout_s=0.5)

    out = client.complete_structured("test_doc_facts", {"text": "Clock gating"}, DocFacts)

    assert out.model_dump() == GOOD
    assert server.request_count == 2
    assert server.disconnects == 1  # the abandoned stream was closed by the client ...
    assert server.max_in_flight == 1  # ... before its retry was sent
    assert client.stats.cancelled == 1 and client.stats.retries == 1


def test_cancelled_requests_exhaust_into_a_clear_error(scripted_server):
    server = scripted_server([], default=generating(GOOD, pieces=4, token_delay_s=3.0))
    client = _client(server, timeout_s=0.3, max_retries=1)
    with pytest.raises(LLMError, match="RequestCancelled"):
        client.complete_structured("test_doc_facts", {"text": "x"}, DocFacts)
    assert server.request_count == 2 and server.max_in_flight == 1
    time.sleep(0.1)
    assert server.disconnects == 2


def test_progress_events_and_measured_rate(scripted_server):
    server = scripted_server([], default=generating(GOOD, pieces=20, token_delay_s=0.03))
    client = _client(server)
    events = []
    batch = BatchProgress("facts", total=3, throughput=client.throughput)
    assert batch.eta_s() is None  # nothing measured yet
    with client.listening(events.append):
        client.complete_structured("test_doc_facts", {"text": "a"}, DocFacts)
        batch.advance()
    assert events and events[-1].done
    tokens = [e.tokens for e in events]
    assert tokens == sorted(tokens) and tokens[-1] >= 19
    assert all(e.budget == client.budget("test_doc_facts", DocFacts, {"text": "a"}) for e in events)
    rate = client.throughput.tokens_per_s
    assert rate is not None and 5 < rate < 200  # about 33 tokens/s scripted
    eta = batch.eta_s()
    assert eta is not None and 0.2 < eta < 10  # two more calls of ~0.6 s
    assert "facts 1/3" in batch.line() and "tok/s" in batch.line() and "ETA" in batch.line()
    assert "tok/s" in events[-1].line()
    client.complete_structured("test_doc_facts", {"text": "b"}, DocFacts)
    assert len(events) == len([e for e in events])  # no events once the listener is gone


def test_slot_wait_limit():
    slots = ServerSlots("http://example.invalid/v1", 1)
    with slots.hold():
        errors: list[BaseException] = []

        def other() -> None:
            try:
                with slots.hold(wait_s=0.2):
                    pass
            except SlotTimeout as exc:
                errors.append(exc)

        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert errors and "no free LLM request slot" in str(errors[0])
