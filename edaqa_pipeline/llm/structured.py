"""From a pydantic response model to a forced tool call and back, with re-asks.

The model is offered exactly one function whose parameters are the response model's JSON
schema (``tool_choice`` names it: vLLM's "named function calling", llama.cpp's grammar-forced
tool call, OpenAI's forced tool). Its arguments are parsed and validated three ways, and the
first failure becomes the text of a re-ask (the assistant's call plus a ``tool`` message
"Validation Error found: ..."), the shape that instructor's TOOLS mode uses:

1. the arguments are JSON (a call cut off by the output budget is reported as such, and the
   re-ask asks for a shorter answer);
2. they validate against the response model;
3. the task's ``validate(output, inputs)`` hook accepts them (ids that exist, spans inside
   the text, ...).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from edaqa_pipeline.llm.streaming import Completion
from edaqa_pipeline.llm.tasks import LLMTask
from edaqa_pipeline.text.markup import strip_fences


class OutputInvalid(ValueError):
    """The arguments failed one of the three checks; ``str(self)`` is the re-ask text."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind  # "json" | "length" | "schema" | "task"


def tool_definition(response_model: type[BaseModel]) -> dict[str, Any]:
    """The one function the model must call: name, docstring, parameters = JSON schema."""
    schema = response_model.model_json_schema()
    name = response_model.__name__
    doc = (response_model.__doc__ or "").strip()
    description = doc or f"Correctly extracted `{name}` with all the required parameters"
    parameters = {k: v for k, v in schema.items() if k not in ("title", "description")}
    return {"type": "function",
            "function": {"name": name, "description": description, "parameters": parameters}}


def parse_output(
    completion: Completion,
    response_model: type[BaseModel],
    task: LLMTask,
    inputs: Mapping[str, Any],
    budget: int,
) -> BaseModel:
    """The validated output of ``completion``, or ``OutputInvalid`` naming the problem."""
    text = strip_fences(completion.arguments)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if completion.finish_reason == "length":
            raise OutputInvalid(
                f"the answer was cut off at the output budget of {budget} tokens before the JSON "
                "was complete; give a shorter answer (fewer items, shorter strings)", "length"
            ) from exc
        raise OutputInvalid(f"the arguments are not valid JSON ({exc.msg} at column {exc.colno})",
                            "json") from exc
    try:
        output = response_model.model_validate(data)
    except ValidationError as exc:
        raise OutputInvalid(str(exc), "schema") from exc
    if task.validate is not None:
        try:
            task.validate(output, inputs)
        except ValueError as exc:
            raise OutputInvalid(f"1 validation error for {response_model.__name__}\n  {exc}",
                                "task") from exc
    return output


def reask_messages(completion: Completion, error: OutputInvalid, name: str) -> list[dict[str, Any]]:
    """The assistant's failed call and the tool message that tells it what to fix."""
    return [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{
                "id": completion.tool_call_id,
                "type": "function",
                "function": {"name": name, "arguments": completion.arguments},
            }],
        },
        {
            "role": "tool",
            "tool_call_id": completion.tool_call_id,
            "content": f"Validation Error found:\n{error}\nRecall the function correctly, fix the errors",
        },
    ]
