"""The provider-neutral client contract plus the checks every provider applies to outputs.

Stage code depends only on ``LLMClient``; whether a real model or the offline rules answered is
visible in ``client.provider`` and in ``client.stats``, never in the record shapes.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from edaqa_pipeline.llm.stats import LLMStats
from edaqa_pipeline.llm.tasks import LLMTask

T = TypeVar("T", bound=BaseModel)


@runtime_checkable
class LLMClient(Protocol):
    """Anything that turns (task, inputs) into a validated instance of ``response_model``, or,
    for a task whose answer is prose (``complete_text``), into text."""

    provider: str
    model: str
    stats: LLMStats

    def complete_structured(
        self,
        task: str,
        inputs: Mapping[str, Any],
        response_model: type[T],
        *,
        temperature: float = 0.0,
    ) -> T: ...

    def complete_text(
        self, task: str, inputs: Mapping[str, Any], *, temperature: float = 0.0
    ) -> str: ...


class TextAnswer(BaseModel):
    """What a text task returns: plain text (the offline rules return it in this record)."""

    text: str


def freeze_inputs(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """A private deep copy of the caller's inputs, taken once per call.

    Prompt rendering, offline rules and validation all see this copy, so nothing the model
    returns (and no task code) can rewrite the caller's data. It is a plain dict so task code
    can ``json.dumps`` it.
    """
    return copy.deepcopy(dict(inputs))


def coerce_output(result: BaseModel, response_model: type[T]) -> T:
    """Return ``result`` as exactly ``response_model`` (round-tripped through JSON)."""
    return response_model.model_validate_json(result.model_dump_json())


def check_output(task: LLMTask, output: BaseModel, inputs: Mapping[str, Any]) -> None:
    """Run the task's input-aware validation; raises ``ValueError`` on a bad output."""
    if task.validate is not None:
        task.validate(output, inputs)
