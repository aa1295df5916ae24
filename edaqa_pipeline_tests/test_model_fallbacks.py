"""A model that answers every task with malformed output never breaks a question: `edaqa ask`
answers (extractively) and says in one line which model step fell back and why.

The model is the scripted OpenAI-compatible server on loopback, replying with text that is not
the JSON any task asks for; the question path's model steps are the `edaqa` retriever's query
analysis (`query_intent`) and the grounded answer (with its one re-ask)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from edaqa_pipeline_tests.llm_servers import ok

QUESTION = "What is the default of -sink_clustering_size in clock_tree_synthesis?"


def _ask(storage, server, *extra: str) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EDAQA_LLM_", "OPENAI_"))}
    env.update({"EDAQA_LLM_BASE_URL": server.base_url, "EDAQA_LLM_MODEL": "scripted",
                "EDAQA_LLM_PROVIDER": "openai", "EDAQA_LLM_MAX_RETRIES": "0",
                "EDAQA_LLM_CACHE_DIR": str(storage.parent / "llm_cache_fallbacks"),
                "HF_HUB_OFFLINE": "1"})
    return subprocess.run([sys.executable, "-m", "edaqa_pipeline.cli", "ask", QUESTION,
                           "--storage", str(storage), *extra],
                          capture_output=True, text=True, env=env, timeout=600)


def test_malformed_model_output_on_every_task_gives_an_answer_and_one_line_reasons(
    sample_index, scripted_server
) -> None:
    _, storage, _ = sample_index
    server = scripted_server([], default=ok("this is not the JSON you asked for {"))
    done = _ask(storage, server, "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    record = json.loads(done.stdout)
    assert record["answerer"] == "extractive" and record["claims"]
    assert all(c["citations"] for c in record["claims"])
    (analysis,) = record["retrieval_fallbacks"]
    assert analysis.startswith("query analysis by rules: the model failed") and "\n" not in analysis
    # the JSON answer fails to parse, the text answer cites nothing: the extractive claims show
    reason = record["fallback_reason"]
    assert reason.startswith("the JSON answer failed (JSONDecodeError), answered in the text format")
    assert "the model did not answer" in reason and "\n" not in reason
    assert server.request_count >= 3  # query analysis, the JSON answer and the text answer

    printed = _ask(storage, server)
    assert printed.returncode == 0 and "Traceback" not in printed.stderr
    notes = [line for line in printed.stderr.splitlines() if line.startswith("note: ")]
    assert len(notes) == 2 and notes[0].startswith("note: query analysis by rules"), printed.stderr
