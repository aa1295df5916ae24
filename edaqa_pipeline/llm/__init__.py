"""The LLM layer: every LLM-backed stage goes through ``LLMClient.complete_structured``.

Two providers share one contract: an OpenAI-compatible server (streamed forced tool calls,
bounded output budgets and request slots, cached, retried, validated) and deterministic
offline rules (the default). See docs/llm.md.
"""

from edaqa_pipeline.llm.budget import output_budget, schema_tokens
from edaqa_pipeline.llm.cache import ResponseCache, cache_key
from edaqa_pipeline.llm.client import LLMClient
from edaqa_pipeline.llm.config import build_client, client_from_env, judge_from_env, llm_configured
from edaqa_pipeline.llm.errors import LLMError
from edaqa_pipeline.llm.estimate import estimate_tokens
from edaqa_pipeline.llm.offline import OfflineClient
from edaqa_pipeline.llm.openai_client import OpenAICompatibleClient
from edaqa_pipeline.llm.progress import BatchProgress, RequestProgress, Throughput
from edaqa_pipeline.llm.prompting import DATA_NOT_INSTRUCTIONS, delimit
from edaqa_pipeline.llm.stats import LLMStats, Usage, track_usage
from edaqa_pipeline.llm.tasks import LLMTask, get_task, register_task, registered_tasks

__all__ = [
    "DATA_NOT_INSTRUCTIONS",
    "BatchProgress",
    "LLMClient",
    "LLMError",
    "LLMStats",
    "LLMTask",
    "OfflineClient",
    "OpenAICompatibleClient",
    "RequestProgress",
    "ResponseCache",
    "Throughput",
    "Usage",
    "build_client",
    "cache_key",
    "client_from_env",
    "delimit",
    "estimate_tokens",
    "get_task",
    "judge_from_env",
    "llm_configured",
    "output_budget",
    "register_task",
    "registered_tasks",
    "schema_tokens",
    "track_usage",
]
