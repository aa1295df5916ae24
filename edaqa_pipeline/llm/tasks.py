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
    """

    name: str
    system_prompt: str
    render_user: Callable[[Mapping[str, Any]], str]
    offline: Callable[[Mapping[str, Any]], BaseModel] | None = None
    validate: Callable[[BaseModel, Mapping[str, Any]], None] | None = None


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
