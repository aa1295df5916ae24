"""Validation of the values every surface passes to the service.

The CLI, the HTTP routes and an MCP tool receive the same three values (a question, a method
name, an evidence count k) from different kinds of input: argparse, JSON bodies, tool calls.
Checking them here, once, means every surface refuses the same requests with the same message
and status, and the answering code below can assume well-formed values.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from edaqa_pipeline.service.errors import NOT_FOUND, ServiceError

MAX_K = 50  # evidence items one request may ask for: the answer packs ~2k tokens anyway
MAX_QUESTION_CHARS = 2000  # a question, not a document: longer text is pasted by mistake
DEFAULT_DEADLINE_S = 600.0  # per request: a 1.5B model on two CPU cores takes minutes an answer


def check_question(question: Any) -> str:
    """``question`` stripped; 400 unless it is a non-empty string of at most
    ``MAX_QUESTION_CHARS`` characters."""
    if not isinstance(question, str) or not question.strip():
        raise ServiceError("'question' must be a non-empty string", param="question")
    if len(question.strip()) > MAX_QUESTION_CHARS:
        raise ServiceError(f"'question' is {len(question.strip())} characters; at most "
                           f"{MAX_QUESTION_CHARS}", param="question")
    check_encodable(question, "question")
    return question.strip()


def check_encodable(text: str, name: str) -> None:
    """400 unless ``text`` is writable as UTF-8: a lone surrogate (``"\\ud800"`` in JSON, a
    non-UTF-8 byte of a command line) would fail later, in a log, an answer or a vote file."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ServiceError(f"'{name}' holds {text[exc.start]!r} at character {exc.start}, which is not "
                           "Unicode text (a lone surrogate or an undecodable byte)", param=name) from None


def check_k(k: Any) -> int:
    """``k``; 400 unless it is an integer (not a bool) from 1 to ``MAX_K``."""
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
        raise ServiceError(f"'k' must be an integer from 1 to {MAX_K}", param="k")
    return k


def check_method(method: Any, built: Sequence[str], storage: Path) -> str:
    """``method``; 404 unless it is one of the methods ``built`` under ``storage``.

    A registered method that is not built also gets the registry's sentence on how to build
    it, so the user learns the ``--with`` option, not only the list of what exists."""
    from edaqa_pipeline.registry import METHOD_NAMES, how_to_build

    if isinstance(method, str) and method in built:
        return method
    message = f"unknown or unbuilt method {method!r}; available: {', '.join(built)}"
    if isinstance(method, str) and method in METHOD_NAMES:
        message += f" ({how_to_build(method, storage)})"
    raise ServiceError(message, status=NOT_FOUND, param="model", code="model_not_found")
