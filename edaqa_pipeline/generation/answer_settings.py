"""How a model answers, read once from the environment and passed to every answer path.

Three settings shape a model's answer: the format it writes (``EDAQA_ANSWER_FORMAT``), how
much of the evidence it reads (``EDAQA_MODEL_UNITS``) and whether its claims are followed by
the extractive quotes they do not state (``EDAQA_ANSWER_QUOTES``). ``edaqa ask``, ``edaqa
eval``, ``edaqa serve``, the ``eval_reports`` asset and the benchmarks all read them here, so
one environment gives one answer whichever surface asked; the offline (extractive) answer
reads none of them.

``evidence_answerer`` is the evaluation runner's answerer with these settings applied: it
also takes a retrieval method's draft (ChipMind's synthesized answer with a model), which
is verified like any model answer.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from edaqa_pipeline.generation.answer import ANSWER_FORMATS, Answer, answer_question
from edaqa_pipeline.generation.model_evidence import MODEL_UNITS
from edaqa_pipeline.llm import LLMClient
from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.retrieval.record import Draft

FORMAT_VARIABLE = "EDAQA_ANSWER_FORMAT"
UNITS_VARIABLE = "EDAQA_MODEL_UNITS"
QUOTES_VARIABLE = "EDAQA_ANSWER_QUOTES"


class AnswerSettingError(ValueError):
    """A setting with a value it cannot take; ``variable`` names it, the message says why."""

    def __init__(self, variable: str, message: str) -> None:
        super().__init__(message)
        self.variable = variable


@dataclass(frozen=True)
class AnswerSettings:
    """What ``answer_question`` is told besides the question, the evidence and the model."""

    answer_format: str = "auto"
    model_units: int = MODEL_UNITS
    quotes: bool = True

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> AnswerSettings:
        """The settings of ``environ`` (default ``os.environ``); unset or blank means the
        default. ``AnswerSettingError`` names the first variable with a bad value."""
        env = os.environ if environ is None else environ

        def read(name: str) -> str | None:
            return env.get(name, "").strip() or None

        fmt = (read(FORMAT_VARIABLE) or "auto").lower()
        if fmt not in ANSWER_FORMATS:
            raise AnswerSettingError(FORMAT_VARIABLE,
                                     f"{FORMAT_VARIABLE}={fmt!r}: choose from {', '.join(ANSWER_FORMATS)}")
        units = read(UNITS_VARIABLE)
        if units is not None and not (units.isascii() and units.isdigit()):
            raise AnswerSettingError(UNITS_VARIABLE,
                                     f"{UNITS_VARIABLE}={units!r}: give a count of units (0 = the whole pack)")
        quotes = (read(QUOTES_VARIABLE) or "on").lower()
        if quotes not in {"on", "off"}:
            raise AnswerSettingError(QUOTES_VARIABLE, f"{QUOTES_VARIABLE}={quotes!r}: choose on or off")
        return cls(fmt, MODEL_UNITS if units is None else int(units), quotes == "on")

    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``answer_question`` these settings give."""
        return {"answer_format": self.answer_format, "model_units": self.model_units, "quotes": self.quotes}


Answerer = Callable[..., Answer]


def evidence_answerer(llm: LLMClient | None, settings: AnswerSettings) -> Answerer:
    """``answer(question, packed_evidence, draft=None)`` with ``llm`` (None: extractive) and
    ``settings``: the answerer the evaluation runner calls for every method."""

    def answer(question: str, evidence: list[EvidenceItem], draft: Draft | None = None) -> Answer:
        return answer_question(question, evidence, llm, packed=True, draft=draft, **settings.kwargs())

    return answer
