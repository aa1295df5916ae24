"""The LLM layer: every LLM-backed stage goes through ``LLMClient.complete_structured``.

Two providers share one contract: an OpenAI-compatible server (instructor, cached, retried,
validated) and deterministic offline rules (the default). See docs/llm.md.
"""

from edaqa_pipeline.llm.cache import ResponseCache, cache_key
from edaqa_pipeline.llm.client import LLMClient
from edaqa_pipeline.llm.config import build_client, client_from_env
from edaqa_pipeline.llm.errors import LLMError
from edaqa_pipeline.llm.estimate import estimate_tokens
from edaqa_pipeline.llm.offline import OfflineClient
from edaqa_pipeline.llm.openai_client import OpenAICompatibleClient
from edaqa_pipeline.llm.prompting import DATA_NOT_INSTRUCTIONS, delimit
from edaqa_pipeline.llm.stats import LLMStats
from edaqa_pipeline.llm.tasks import LLMTask, get_task, register_task, registered_tasks

__all__ = [
    "DATA_NOT_INSTRUCTIONS",
    "LLMClient",
    "LLMError",
    "LLMStats",
    "LLMTask",
    "OfflineClient",
    "OpenAICompatibleClient",
    "ResponseCache",
    "build_client",
    "cache_key",
    "client_from_env",
    "delimit",
    "estimate_tokens",
    "get_task",
    "register_task",
    "registered_tasks",
]
