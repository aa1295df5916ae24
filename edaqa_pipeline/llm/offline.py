"""The deterministic, rule-based provider: the default when no model is configured.

It lets the whole pipeline (and CI) run without a network or a model, with the same record
shapes as a real model, and is the fallback after a real provider fails for good.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from edaqa_pipeline.llm.client import (
    LLMClient,
    T,
    TextAnswer,
    check_output,
    coerce_output,
    freeze_inputs,
)
from edaqa_pipeline.llm.errors import LLMError
from edaqa_pipeline.llm.stats import LLMStats
from edaqa_pipeline.llm.tasks import get_task


class OfflineClient(LLMClient):
    """Calls ``task.offline(inputs)``; counts calls, spends zero tokens, needs no cache."""

    provider = "offline"

    def __init__(self, model: str = "rules") -> None:
        self.model = model
        self.stats = LLMStats()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OfflineClient(model={self.model!r})"

    def complete_structured(
        self,
        task: str,
        inputs: Mapping[str, Any],
        response_model: type[T],
        *,
        temperature: float = 0.0,
    ) -> T:
        del temperature  # rules are deterministic
        spec = get_task(task)
        started = time.monotonic()
        try:
            if spec.offline is None:
                raise LLMError(
                    f"LLM task {task!r} has no offline implementation "
                    f"(provider=offline, model={self.model}); configure a real provider",
                    task=task,
                    provider=self.provider,
                    model=self.model,
                )
            frozen = freeze_inputs(inputs)
            with self._lock:
                self.stats.calls += 1
            try:
                output = coerce_output(spec.offline(frozen), response_model)
                check_output(spec, output, frozen)
            except (ValidationError, ValueError) as exc:
                raise LLMError(
                    f"LLM task {task!r}: offline rules produced an invalid output "
                    f"(provider=offline, model={self.model}, attempts=1): "
                    f"{type(exc).__name__}: {exc}",
                    task=task,
                    provider=self.provider,
                    model=self.model,
                    attempts=1,
                    cause=type(exc).__name__,
                ) from exc
        except LLMError:
            with self._lock:
                self.stats.errors += 1
                self.stats.seconds += time.monotonic() - started
            raise
        with self._lock:
            self.stats.seconds += time.monotonic() - started
        return output

    def complete_text(self, task: str, inputs: Mapping[str, Any], *, temperature: float = 0.0) -> str:
        """The task's offline rules, which return a ``TextAnswer``."""
        return self.complete_structured(task, inputs, TextAnswer, temperature=temperature).text
