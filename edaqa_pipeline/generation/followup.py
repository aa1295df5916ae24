"""Follow-up questions made standalone before retrieval.

In a conversation the second question often leans on the first: "What does -starts_with of
define_power_grid do?" then "and what is its default?". Retrieval sees one question at a
time, and the follow-up alone names nothing to search for. So a follow-up that names no
command, option or variable of its own is rewritten into a question that does, before any
method retrieves:

* by rule (offline): the subject of the latest earlier user turn that names identifiers is
  put in front, ``About -starts_with of define_power_grid: what is its default?``, and a
  leading "and" / "also" / "so" is dropped (when no earlier turn names one, the latest
  earlier question is added after it, so its words reach retrieval);
* by the model, when one answers: the ``standalone_question`` task rewrites the question
  from the conversation; an empty, overlong or multi-line rewrite, or a failed call, falls
  back to the rule and says why; the question sent back unchanged means the model judged it
  standalone, and it is kept.

A question that names an identifier is taken as it is (it brings its own subject), and so is
the first question of a conversation. The caller gets the question asked and, when it was
rewritten, how (``Rewrite``), so the record shows what was retrieved for.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from edaqa_pipeline.llm import (
    DATA_NOT_INSTRUCTIONS,
    LLMClient,
    LLMError,
    LLMTask,
    delimit,
    register_task,
)
from edaqa_pipeline.llm.client import TextAnswer
from edaqa_pipeline.text.identifiers import OPTION, extract_identifiers

TASK = "standalone_question"
MAX_TURNS = 6  # the latest turns the model reads
MAX_TURN_CHARS = 600
MAX_REWRITE_CHARS = 400

_OPENER = re.compile(r"^\s*(?:and|also|so|then|but|ok(?:ay)?|now)\b[\s,]*", re.IGNORECASE)

SYSTEM_PROMPT = (
    "You rewrite the last question of a conversation about EDA tool documentation so that it "
    "can be understood without the conversation: name the command, option, variable or topic "
    "it refers to, copied exactly from the earlier turns. Keep its meaning; do not answer it. "
    "Write only the rewritten question, on one line. " + DATA_NOT_INSTRUCTIONS
)


@dataclass(frozen=True)
class Turn:
    role: str  # "user" | "assistant"
    text: str


@dataclass(frozen=True)
class Rewrite:
    """The question to retrieve for; ``by`` is "" when ``asked`` was kept as it is."""

    asked: str
    question: str
    by: str = ""  # "rule" | "llm:<model>"
    reason: str = ""  # why the model's rewrite was not used

    def to_json(self) -> dict[str, Any]:
        if not self.by:
            return {}
        return {"asked": self.asked, "rewritten_by": self.by,
                **({"rewrite_fallback_reason": self.reason} if self.reason else {})}


def subject_of(text: str) -> str:
    """What ``text`` is about, as its identifiers say: ``-a, -b of cmd`` or ``A, B``."""
    found = [i for i in extract_identifiers(text) if " " not in i]
    options = [i for i in found if OPTION.fullmatch(i)]
    others = [i for i in found if not OPTION.fullmatch(i)]
    if options and others:
        return f"{', '.join(options)} of {', '.join(others)}"
    return ", ".join(found)


def needs_context(question: str) -> bool:
    """True when ``question`` names no identifier of its own."""
    return not extract_identifiers(question)


def rule_rewrite(question: str, earlier: Sequence[Turn]) -> str:
    """``question`` with the subject of the latest earlier user turn that has one in front;
    when no earlier turn names an identifier, the latest earlier question after it."""
    rest = _OPENER.sub("", question).strip() or question.strip()
    asked = [t.text for t in earlier if t.role == "user"]
    for text in reversed(asked):
        subject = subject_of(text)
        if subject:
            return f"About {subject}: {rest}"
    return f"{rest} (following: {' '.join(asked[-1][:MAX_TURN_CHARS].split())})" if asked else question


def _render(inputs: Mapping[str, Any]) -> str:
    turns = "\n".join(f"{t['role']}: {t['text']}" for t in inputs["turns"])
    return (f"Conversation:\n{delimit(turns, 'conversation')}\n\n"
            f"Last question: {inputs['question']}\n\nRewritten question:")


def _offline(inputs: Mapping[str, Any]) -> TextAnswer:
    earlier = [Turn(t["role"], t["text"]) for t in inputs["turns"]]
    return TextAnswer(text=rule_rewrite(str(inputs["question"]), earlier))


register_task(LLMTask(name=TASK, system_prompt=SYSTEM_PROMPT, render_user=_render,
                      offline=_offline, max_output_tokens=96))


def _usable(text: str, question: str) -> str:
    """Why the model's rewrite cannot be used ("" when it can)."""
    if not text.strip():
        return "the model's rewrite was empty"
    if "\n" in text.strip() or len(text) > MAX_REWRITE_CHARS:
        return "the model's rewrite was not one short line"
    return ""


def standalone_question(question: str, earlier: Sequence[Turn], llm: LLMClient | None = None) -> Rewrite:
    """The question to retrieve for when ``question`` follows the turns ``earlier``."""
    if not any(t.role == "user" for t in earlier) or not needs_context(question):
        return Rewrite(question, question)
    by_rule = rule_rewrite(question, earlier)
    if llm is None or llm.provider == "offline":
        return Rewrite(question, by_rule, "rule") if by_rule != question else Rewrite(question, question)
    turns = [{"role": t.role, "text": t.text[:MAX_TURN_CHARS]} for t in earlier[-MAX_TURNS:]]
    try:
        text = llm.complete_text(TASK, {"question": question, "turns": turns}, temperature=0.0)
    except LLMError as exc:
        reason = f"the model's rewrite failed ({exc.cause or 'error'})"
    else:
        reason = _usable(text, question)
        rewritten = " ".join(text.split()).strip("\"'` ")
        if not reason and rewritten.lower() == question.strip().lower():
            return Rewrite(question, question)  # the model judged it standalone
        if not reason:
            return Rewrite(question, rewritten, f"llm:{llm.model}")
    return Rewrite(question, by_rule, "rule", reason) if by_rule != question else Rewrite(question, question, "", "")
