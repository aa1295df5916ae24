"""Token estimate for a full LLM build, before anyone spends money on it.

``edaqa estimate --corpus DIR`` renders every prompt the build would send and passes the
(system, user) pairs here. Without a tokenizer we use the common heuristic of about four
characters per token for English/code text (OpenAI's rule of thumb; it tends to
under-count for dense code and non-English text, so treat the result as a lower-ish bound),
the project's one token count (``text.counting.approx_tokens``), plus a per-call overhead for
chat framing and the tool (JSON schema) definition that ``Mode.TOOLS`` sends with every call.
Completion tokens are a flat per-call guess: structured outputs are
short records, not essays.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from edaqa_pipeline.text.counting import CHARS_PER_TOKEN, approx_tokens

MESSAGE_OVERHEAD_TOKENS = 4  # per chat message (role, separators), per OpenAI's cookbook
TOOL_SCHEMA_TOKENS = 150  # typical size of a small response-model tool definition
COMPLETION_TOKENS_PER_CALL = 200


def _counter() -> tuple[Callable[[str], int], str]:
    return approx_tokens, f"chars/{CHARS_PER_TOKEN}"


def estimate_tokens(
    prompts: Iterable[tuple[str, str]],
    *,
    completion_tokens_per_call: int = COMPLETION_TOKENS_PER_CALL,
    tool_schema_tokens: int = TOOL_SCHEMA_TOKENS,
) -> dict:
    """``{"calls", "prompt_tokens", "completion_tokens_est", "method"}`` for the given prompts.

    Counts one call per pair; retries and cache hits are not modelled (a warm cache makes the
    real cost lower, re-asks make it higher).
    """
    count, method = _counter()
    calls = 0
    prompt_tokens = 0
    for system, user in prompts:
        calls += 1
        prompt_tokens += count(system) + count(user)
        prompt_tokens += 2 * MESSAGE_OVERHEAD_TOKENS + 3 + tool_schema_tokens
    return {
        "calls": calls,
        "prompt_tokens": prompt_tokens,
        "completion_tokens_est": calls * completion_tokens_per_call,
        "method": method,
    }
