"""The registry of LLM tasks: one place that knows each task's prompt, offline rule and checks.

A task bundles everything provider-independent about one kind of structured call, so the same
stage code runs against a real model or the deterministic offline implementation, and the
cache key covers the exact prompt text that was sent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel


@dataclass(frozen=True)
class LLMTask:
    """One kind of structured LLM call.

    ``system_prompt`` must tell the model that document text is data, not instructions
    (see ``prompting.DATA_NOT_INSTRUCTIONS``); ``render_user`` must put document text between
    delimiters (``prompting.delimit``). ``offline`` is the deterministic rule-based stand-in;
    ``validate`` raises ``ValueError`` when an output refers to things not in the inputs
    (unknown ids, spans outside the text...). A failed ``validate`` makes a real model re-ask.
    ``max_output_tokens`` overrides the schema-derived output budget (``budget.py``): a number,
    or a function of the inputs for tasks whose answer grows with the input; the client's
    global cap still applies.
    """

    name: str
    system_prompt: str
    render_user: Callable[[Mapping[str, Any]], str]
    offline: Callable[[Mapping[str, Any]], BaseModel] | None = None
    validate: Callable[[BaseModel, Mapping[str, Any]], None] | None = None
    max_output_tokens: int | Callable[[Mapping[str, Any]], int] | None = None

    def budget(self, response_model: type[BaseModel], inputs: Mapping[str, Any], cap: int) -> int:
        """``max_tokens`` for one call of this task (see ``budget.output_budget``)."""
        from edaqa_pipeline.llm.budget import output_budget

        override = self.max_output_tokens
        if callable(override):
            override = int(override(inputs))
        return output_budget(response_model.model_json_schema(), cap=cap, override=override)


_REGISTRY: dict[str, LLMTask] = {}
_LOCK = threading.Lock()


def register_task(task: LLMTask) -> None:
    """Register ``task`` under ``task.name``; a later registration of the same name wins.

    Re-registration is allowed because code locations reload their modules.
    """
    if not task.name or not task.name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"task name must be a simple identifier, got {task.name!r}")
    with _LOCK:
        _REGISTRY[task.name] = task


def get_task(name: str) -> LLMTask:
    """Return the registered task; ``KeyError`` names the known tasks if it is missing."""
    with _LOCK:
        try:
            return _REGISTRY[name]
        except KeyError:
            known = ", ".join(sorted(_REGISTRY)) or "none"
            raise KeyError(f"unknown LLM task {name!r} (registered: {known})") from None


def registered_tasks() -> list[str]:
    with _LOCK:
        return sorted(_REGISTRY)
