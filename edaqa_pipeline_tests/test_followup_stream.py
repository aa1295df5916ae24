"""Follow-up rewriting and claim-by-claim streaming, in process against the scripted
OpenAI-compatible server (a real HTTP server on 127.0.0.1)."""

from __future__ import annotations

import time

from edaqa_pipeline.generation.answer import answer_question
from edaqa_pipeline.generation.followup import Turn, standalone_question
from edaqa_pipeline.generation.text_answer import finished_claims
from edaqa_pipeline.llm import OpenAICompatibleClient
from edaqa_pipeline.llm.scope import request_scope
from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline_tests.llm_servers import http_error, ok
from edaqa_pipeline_tests.scripted_llm import generating

CTS = EvidenceItem(
    chunk_id="c1", doc="cts.md", score=1.0, path="test", start_line=72, end_line=75,
    text=("| Switch Name | Description |\n| ----- | ----- |\n"
          "| `-sink_clustering_enable` | Enables sink clustering. |\n"
          "| `-sink_clustering_size` | Maximum number of sinks per cluster. The default value is `20`. |"))
QUESTION = "What is the default of -sink_clustering_size in clock_tree_synthesis?"
EARLIER = (Turn("user", "What does -sink_clustering_size of clock_tree_synthesis do?"),
           Turn("assistant", "It sets the maximum number of sinks per cluster [cts.md:L75]."))


def _client(server, **kw) -> OpenAICompatibleClient:  # type: ignore[no-untyped-def]
    params = {"base_url": server.base_url, "api_key": None, "model": "scripted", "timeout_s": 5.0,
              "max_retries": 0, "validation_retries": 0, "backoff_s": 0.01}
    return OpenAICompatibleClient(**{**params, **kw})


def test_a_follow_up_takes_the_earlier_subject_by_rule() -> None:
    rewrite = standalone_question("and what is its default?", EARLIER)
    assert rewrite.by == "rule"
    assert rewrite.question == "About -sink_clustering_size of clock_tree_synthesis: what is its default?"
    # a question with its own identifier, or without earlier turns, is kept
    assert standalone_question("What is the default of -sink_clustering_size?", EARLIER).by == ""
    assert standalone_question("and what is its default?", ()).question == "and what is its default?"
    # no identifier in the earlier question: its words follow the question
    plain = standalone_question("and how long does it take?", (Turn("user", "How is clock tree synthesis run?"),))
    assert plain.question == "how long does it take? (following: How is clock tree synthesis run?)"


def test_the_model_rewrites_and_a_failed_rewrite_falls_back_to_the_rule(scripted_server) -> None:  # type: ignore[no-untyped-def]
    server = scripted_server([ok("What is the default of -sink_clustering_size in clock_tree_synthesis?"),
                              http_error(400), ok("line one\nline two"), ok("and its default?")])
    client = _client(server)
    by_model = standalone_question("and its default?", EARLIER, client)
    assert by_model.by == "llm:scripted"
    assert by_model.question == "What is the default of -sink_clustering_size in clock_tree_synthesis?"
    assert "Conversation" in server.requests[0]["messages"][1]["content"]
    failed = standalone_question("and its default?", EARLIER, client)
    assert failed.by == "rule" and "failed" in failed.reason and failed.question.startswith("About ")
    unusable = standalone_question("and its default?", EARLIER, client)
    assert unusable.by == "rule" and "one short line" in unusable.reason
    kept = standalone_question("and its default?", EARLIER, client)  # judged standalone by the model
    assert kept.by == "" and kept.question == "and its default?"
    long_turn = standalone_question("and how long does it take?", (Turn("user", "word " * 5000),))
    assert len(long_turn.question) < 1000


def test_finished_claims_leave_out_the_sentence_still_being_written() -> None:
    assert finished_claims("The default is `20` [E1]") == []
    assert finished_claims("The default is `20` [E1].") == []  # more ids may follow
    assert [c.text for c in finished_claims("The default is `20` [E1]. It")] == ["The default is `20`"]
    claims = finished_claims("The default is `20` [E1]. Sink clustering is enabled with `-sink_clustering_enable` [E1")
    assert [c.evidence for c in claims] == [["E1"]]


def test_claims_stream_while_the_model_writes_and_match_the_final_answer(scripted_server) -> None:  # type: ignore[no-untyped-def]
    written = ("The default value of `-sink_clustering_size` is `20` [E1]. "
               "The default value of `-sink_clustering_size` is `50` [E1]. "
               "Sink clustering is enabled with `-sink_clustering_enable` [E1].")
    server = scripted_server([generating(written, pieces=40, token_delay_s=0.05)])
    received: list[tuple[float, str]] = []
    answer = answer_question(QUESTION, [CTS], _client(server),
                             on_claim=lambda c: received.append((time.monotonic(), c.text)))
    # what went out early is the final answer's first claims; the last sentence waits for the end
    assert [c.text for c in answer.claims] == [
        "The default value of `-sink_clustering_size` is `20`",
        "Sink clustering is enabled with `-sink_clustering_enable`"]
    assert [text for _, text in received] == [answer.claims[0].text]
    assert all("50" not in text for _, text in received)  # the wrong default never went out
    assert [d["text"] for d in answer.dropped] == ["The default value of `-sink_clustering_size` is `50`"]
    assert received[0][0] < server.streams_finished_at[0] - 0.5  # before the model's last token
    assert server.requests[0].get("tools") is None  # streamed answers are asked as text


def test_max_tokens_caps_only_the_answer_tasks(scripted_server) -> None:  # type: ignore[no-untyped-def]
    server = scripted_server([ok("About it: what is its default?"),
                              ok("The default value of `-sink_clustering_size` is `20` [E1].")])
    client = _client(server)
    with request_scope(max_tokens=7, answer_tasks=frozenset({"grounded_answer_text"})):
        standalone_question("and its default?", EARLIER, client)
        answer_question(QUESTION, [CTS], client, answer_format="text")
    assert server.requests[0]["max_tokens"] > 7 and server.requests[1]["max_tokens"] == 7

