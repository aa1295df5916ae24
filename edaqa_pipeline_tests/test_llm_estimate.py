"""The pre-build token estimate (the project's one token count: characters / 4)."""

from __future__ import annotations

from edaqa_pipeline.llm import estimate_tokens


def test_estimate_counts_calls_and_tokens():
    prompts = [("s" * 40, "u" * 400), ("s" * 40, "u" * 4)]
    est = estimate_tokens(prompts, completion_tokens_per_call=100, tool_schema_tokens=0)
    assert est["calls"] == 2
    assert est["completion_tokens_est"] == 200
    assert est["method"] == "chars/4"
    # 10 + 100 + 10 + 1 text tokens, plus 11 framing tokens per call
    assert est["prompt_tokens"] == 121 + 2 * 11


def test_estimate_of_nothing_is_zero():
    assert estimate_tokens(iter(())) | {"method": ""} == {
        "calls": 0,
        "prompt_tokens": 0,
        "completion_tokens_est": 0,
        "method": "",
    }
