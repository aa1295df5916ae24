"""The summary view of an element: an offline summary (section path + first sentence +
identifiers) and, with an LLM configured, the ``element_summary`` task that rewrites it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from edaqa_pipeline.text.sentences import split_sentences

MD_NOISE = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


def plain_text(text: str) -> str:
    """Markdown markup removed: links keep their text, table pipes and list markers go."""
    text = MD_NOISE.sub(r"\1", text)
    text = re.sub(r"^\s*(?:[-*+]|\d+[.)]|#+|>)\s*", "", text, flags=re.MULTILINE)
    text = re.sub(r"^\s*\|?(?:\s*:?-{2,}:?\s*\|)+\s*:?-*:?\s*$", "", text, flags=re.MULTILINE)
    text = text.replace("|", " ").replace("`", "").replace("**", "").replace("<br>", " ")
    return re.sub(r"\s+", " ", text).strip()


def first_sentence(text: str, limit: int = 200) -> str:
    sentences = split_sentences(plain_text(text))
    first = sentences[0] if sentences else ""
    return first[:limit]


def offline_summary(
    element_type: str, section_path: list[str], text: str, identifiers: list[str],
    context: str = "",
) -> str:
    """Section path + first sentence (of ``context`` when the element has no prose of its own,
    e.g. a section heading summarised by its first paragraph) + up to 8 identifiers."""
    path = " > ".join(section_path)
    own = first_sentence(text) if element_type not in ("section", "clause") else ""
    sentence = own or first_sentence(context)
    ids = [i for i in identifiers if not i.startswith(("table:", "figure:", "section:"))][:8]
    parts = [f"{path} ({element_type})" if path else f"({element_type})"]
    if sentence:
        parts.append(sentence.rstrip(" .:;"))
    if ids:
        parts.append("Identifiers: " + ", ".join(ids))
    return ". ".join(parts)


class ElementSummary(BaseModel):
    """Response record of the ``element_summary`` LLM task."""

    summary: str = Field(min_length=1, max_length=600)


SUMMARY_TASK = "element_summary"


SUMMARY_PROMPT = (
    "You write a one-sentence summary of an element of a technical document (a clause, "
    "paragraph, table row, figure, procedure step or code block) for a search index: what it "
    "defines, requires or instructs, naming the commands, options, variables and labels it "
    "is about. Use only the given text."
)


def summary_render(inputs: Mapping[str, Any]) -> str:
    from edaqa_pipeline.llm import delimit

    return (
        f"Element type: {inputs['element_type']}\nSection: {' > '.join(inputs['section_path'])}\n"
        f"{delimit(inputs['text'][:3000])}"
    )


def summary_offline(inputs: Mapping[str, Any]) -> BaseModel:
    return ElementSummary(
        summary=offline_summary(
            inputs["element_type"], list(inputs["section_path"]), inputs["text"],
            list(inputs.get("identifiers", [])), inputs.get("context", ""),
        )[:600]
        or inputs["element_type"]
    )


def register_summary_task() -> None:
    """Register ``element_summary`` with the LLM layer (idempotent)."""
    from edaqa_pipeline.llm import DATA_NOT_INSTRUCTIONS, LLMTask, register_task

    register_task(
        LLMTask(name=SUMMARY_TASK, system_prompt=SUMMARY_PROMPT + " " + DATA_NOT_INSTRUCTIONS,
                render_user=summary_render, offline=summary_offline)
    )


LLM_SUMMARY_TYPES = frozenset({"clause", "section", "paragraph", "table", "figure", "step", "code"})


def llm_summaries(rows: list[dict[str, Any]], client: Any) -> int:
    """Replace the offline summaries of ``rows`` by the LLM's (``element_summary`` task) when
    ``client`` is a real provider; table rows and captions keep theirs. Returns calls made."""
    if getattr(client, "provider", "offline") == "offline":
        return 0
    register_summary_task()
    calls = 0
    for row in rows:
        if row["element_type"] not in LLM_SUMMARY_TYPES:
            continue
        inputs = {"element_type": row["element_type"], "section_path": row["section_path"],
                  "text": row["raw"], "identifiers": row["identifiers"]}
        row["summary"] = client.complete_structured(SUMMARY_TASK, inputs, ElementSummary).summary
        calls += 1
    return calls
