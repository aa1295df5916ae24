"""Property extraction from datasheet chunks (the paper's section I-B): the entry point.

Two extractors produce the same rows (``property_rows``):

* **offline (default)**, deterministic, so the graph is useful without a model (``rules``):
  table rules by kind (``spec_rules``: spec and register tables; ``grid_rules``: matrix and
  text tables) and prose rules (``prose_rules``: ranges, limits, "X is N unit", "X = N",
  counts, mentions); every row names the rule that produced it;
* **LLM** (``property_llm``, task ``datasheet_properties``): one call per chunk with the
  paper's general and category descriptions, at the paper's temperature (0.2, configurable);
  a chunk whose call fails (or is answered by the fallback) takes the offline rows, ``rule =
  offline-fallback``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

from edaqa_pipeline.extraction.datasheets.property_llm import (
    TASK,
    PropertyList,
    llm_inputs,
    prompt_pair,
)
from edaqa_pipeline.extraction.datasheets.property_rows import (
    DATASHEET_PROPERTIES_SCHEMA,
    finish_rows,
    property_frame,
)
from edaqa_pipeline.extraction.datasheets.rules import offline_chunk_properties, skip_chunk
from edaqa_pipeline.llm import LLMClient, LLMError

# The paper runs every LLM stage at temperature 0.2 (section IV).
PAPER_TEMPERATURE = 0.2


def extract_properties(
    chunks: list[dict[str, Any]],
    category: str,
    client: LLMClient | None = None,
    *,
    temperature: float = PAPER_TEMPERATURE,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Properties of one document's chunks: (rows of DATASHEET_PROPERTIES_SCHEMA, counters).

    Offline rules when ``client`` is None or offline; otherwise one ``datasheet_properties``
    call per chunk, falling back to the offline rules for a chunk whose call failed.
    """
    rows: list[dict[str, Any]] = []
    stats = Counter({"chunks": len(chunks), "llm_chunks": 0, "fallback_chunks": 0})
    use_llm = client is not None and client.provider != "offline"
    for chunk in chunks:
        if not use_llm or skip_chunk(chunk):
            rows.extend(finish_rows(offline_chunk_properties(chunk), chunk, category))
            continue
        assert client is not None
        before = client.stats.fallbacks
        try:
            result = client.complete_structured(TASK, llm_inputs(chunk, category), PropertyList,
                                                temperature=temperature)
        except LLMError:
            result = None
        if result is None or client.stats.fallbacks > before:
            stats["fallback_chunks"] += 1
            rows.extend(finish_rows(offline_chunk_properties(chunk), chunk, category, "offline-fallback"))
            continue
        stats["llm_chunks"] += 1
        raw = [{**p.model_dump(), "row": i, "rule": f"llm:{TASK}", "extra": ""}
               for i, p in enumerate(result.properties)]
        rows.extend(finish_rows(raw, chunk, category))
    stats["properties"] = len(rows)
    return rows, dict(stats)


def offline_document_properties(chunks: list[dict[str, Any]], category: str) -> list[dict[str, Any]]:
    """The rule extractor over the whole document at once (the offline one-shot baseline): the
    same rules, no chunk boundaries, every property cited to the first chunk of its page."""
    if not chunks:
        return []
    by_page: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        by_page.setdefault(int(chunk["page"]), chunk)
    rows = []
    for chunk in chunks:
        anchor = by_page[int(chunk["page"])]
        rows.extend(finish_rows(offline_chunk_properties(chunk), anchor, category, "oneshot:rules"))
    return rows


def llm_prompt_pairs(chunks: list[dict[str, Any]], category: str) -> list[tuple[str, str]]:
    """The (system, user) prompts an LLM build would send (for ``estimate_tokens``)."""
    return [prompt_pair(c, category) for c in chunks if not skip_chunk(c)]


def rule_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    return dict(Counter(r["rule"] for r in rows))


def as_json(row: Mapping[str, Any]) -> str:
    return json.dumps({k: row[k] for k in ("name", "value", "unit", "conditions")}, ensure_ascii=False)


__all__ = [
    "DATASHEET_PROPERTIES_SCHEMA",
    "PAPER_TEMPERATURE",
    "TASK",
    "extract_properties",
    "llm_prompt_pairs",
    "offline_chunk_properties",
    "offline_document_properties",
    "property_frame",
    "rule_counts",
]
