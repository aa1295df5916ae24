"""Which model answers and which model judges, chosen from the environment.

Every surface offers the same choice (``extractive`` quotes the evidence offline, ``llm`` asks
the configured OpenAI-compatible model), so the choice and its error messages live here: a
user who asks for a model that is not configured gets the same sentence from ``edaqa ask``,
``edaqa eval`` and ``edaqa serve``.
"""

from __future__ import annotations

import os
from typing import Any

from edaqa_pipeline.service.errors import CONFLICT, ServiceError

ANSWERERS = ("extractive", "llm")


def _setting(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def answer_client(choice: str | None) -> Any:
    """The LLM client that writes answers (None = extractive), or ``ServiceError``.

    ``choice`` None picks ``llm`` when a model is configured (``EDAQA_LLM_*``), else
    ``extractive``. No offline fallback inside the client: ``answer_question`` falls back
    itself and says so in the record."""
    from edaqa_pipeline.llm import LLMError, client_from_env, llm_configured

    if choice is None:
        choice = "llm" if llm_configured() else "extractive"
    if choice == "extractive":
        return None
    if choice != "llm":
        raise ServiceError(f"unknown answerer {choice!r}; choose from {', '.join(ANSWERERS)}",
                           param="answers")
    if not llm_configured():
        raise ServiceError("--answers llm needs a model: set EDAQA_LLM_BASE_URL and "
                           "EDAQA_LLM_MODEL (or EDAQA_LLM_API_KEY for api.openai.com); see "
                           "docs/llm.md", status=CONFLICT)
    try:
        return client_from_env(fallback_offline=False)
    except LLMError as exc:
        raise ServiceError(str(exc), status=CONFLICT) from None


_SETTING_PARAMS = {"EDAQA_ANSWER_FORMAT": "answer_format", "EDAQA_MODEL_UNITS": "model_units",
                   "EDAQA_ANSWER_QUOTES": "answer_quotes"}


def answer_settings() -> Any:
    """How a model answers (``generation.answer_settings.AnswerSettings`` from the
    ``EDAQA_ANSWER_FORMAT``, ``EDAQA_MODEL_UNITS`` and ``EDAQA_ANSWER_QUOTES`` variables);
    ``ServiceError`` naming the variable and its value for a bad one."""
    from edaqa_pipeline.generation.answer_settings import AnswerSettingError, AnswerSettings

    try:
        return AnswerSettings.from_env()
    except AnswerSettingError as exc:
        raise ServiceError(str(exc), param=_SETTING_PARAMS[exc.variable]) from None


def answerer_name(llm: Any) -> str:
    """How records and logs name the answerer: ``llm:MODEL`` or ``extractive``."""
    return f"llm:{llm.model}" if llm is not None else "extractive"


def make_judge(choice: str) -> Any:
    """The answer judge for ``auto | llm | none`` (None = offline rules), or ``ServiceError``.

    ``auto`` judges with a model only when one is configured (``EDAQA_JUDGE_*``, else
    ``EDAQA_LLM_*``), so an offline evaluation never fails for lack of a key."""
    from edaqa_pipeline.evaluation.judge import AnswerJudge
    from edaqa_pipeline.llm import LLMError, judge_from_env, llm_configured

    configured = llm_configured() or bool(_setting("EDAQA_JUDGE_BASE_URL") or
                                          _setting("EDAQA_JUDGE_API_KEY"))
    if choice == "none" or (choice == "auto" and not configured):
        return None
    if not configured:
        raise ServiceError("--judge llm needs a model: set EDAQA_JUDGE_BASE_URL and "
                           "EDAQA_JUDGE_MODEL (or the EDAQA_LLM_* settings); see docs/llm.md",
                           status=CONFLICT)
    try:
        return AnswerJudge(judge_from_env())
    except LLMError as exc:
        raise ServiceError(str(exc), status=CONFLICT) from None
