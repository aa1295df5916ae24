"""The ``semantic_spans`` LLM task and the extractor that uses it.

The paper has an LLM mark procedures, constraints and diagnostics among a region's
sentences. This module registers that task with the LLM layer: its prompt (document text
delimited as data), its offline rule implementation (``semantic.offline_semantic_spans``) and
its validator (every sentence id must exist in the input). ``LLMSemanticExtractor`` calls it
for each prose block; offline and LLM modes therefore produce the same artifact records, and
only the ``rule`` column tells them apart (``llm:semantic_spans`` vs the rule names).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from edaqa_pipeline.extraction.semantic import SemanticSpans, offline_semantic_spans, validate_spans
from edaqa_pipeline.llm import DATA_NOT_INSTRUCTIONS, LLMClient, LLMTask, delimit, register_task

TASK = "semantic_spans"

SYSTEM_PROMPT = (
    "You label sentences of EDA tool documentation. For each run of consecutive sentences that "
    "is a procedure (ordered actions), a constraint (a requirement, limit, default range or "
    "prohibition) or a diagnostic (an error/warning message or its cause), return a span with "
    "the sentence ids and the type. Sentences that are plain description get no span. Use only "
    "the given sentence ids. " + DATA_NOT_INSTRUCTIONS
)


def _render(inputs: Mapping[str, Any]) -> str:
    sentences = "\n".join(f"{s['id']}: {s['text']}" for s in inputs["sentences"])
    return (
        f"Document: {inputs['document']}\nSection: {inputs['section']}\n"
        f"Sentences (id: text):\n{delimit(sentences)}"
    )


def _offline(inputs: Mapping[str, Any]) -> BaseModel:
    spans, _ = offline_semantic_spans(list(inputs["sentences"]))
    return spans


def _validate(result: BaseModel, inputs: Mapping[str, Any]) -> None:
    assert isinstance(result, SemanticSpans)
    validate_spans(result, [s["id"] for s in inputs["sentences"]])


register_task(
    LLMTask(name=TASK, system_prompt=SYSTEM_PROMPT, render_user=_render, offline=_offline,
            validate=_validate)
)


class LLMSemanticExtractor:
    """Semantic spans from the LLM layer (offline client -> the same rules as offline mode)."""

    def __init__(self, client: LLMClient) -> None:
        self.client = client
        self.name = "offline" if client.provider == "offline" else "llm"

    def __call__(
        self, block: dict[str, Any], sentences: list[dict[str, str]]
    ) -> tuple[SemanticSpans, dict[str, str]]:
        if self.client.provider == "offline" or not sentences:
            return offline_semantic_spans(sentences)
        inputs = {
            "document": block["document"],
            "section": " > ".join(block["section_path"]),
            "sentences": sentences,
        }
        result = self.client.complete_structured(TASK, inputs, SemanticSpans)
        rules = {sid: f"llm:{TASK}" for span in result.spans for sid in span.sentence_ids}
        return result, rules


def prompt_pairs(blocks: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The (system, user) prompts a full LLM build would send for these blocks (estimates)."""
    from edaqa_pipeline.extraction.artifacts import PROSE_KINDS
    from edaqa_pipeline.text.sentences import split_sentences

    pairs = []
    for block in blocks:
        if block["kind"] not in PROSE_KINDS:
            continue
        sentences = [{"id": f"s{i}", "text": p} for i, p in enumerate(split_sentences(block["text"]))]
        if sentences:
            inputs = {"document": block["document"], "section": " > ".join(block["section_path"]),
                      "sentences": sentences}
            pairs.append((SYSTEM_PROMPT, _render(inputs)))
    return pairs


__all__ = ["TASK", "LLMSemanticExtractor", "prompt_pairs"]
