"""The evidence an answerer sees: packed, numbered E1..En, each with its citation and lines.

Both answerers (the LLM's grounded answer and the offline extractive one) get the same list,
built once per question: the retrieved items packed under the 2,048-token budget
(``retrieval.packing.pack_to_budget``, the rule the evaluation measures) and numbered in rank
order. A claim cites items by id; the rendered answer replaces ids by locations, narrowed to
the lines of the item that hold the claim (``cts.md:L72-L74``; PDF items cite their page).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from edaqa_pipeline.generation.units import TextUnit, text_units
from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.retrieval.line_structure import line_kinds_of, source_lines
from edaqa_pipeline.retrieval.packing import pack_to_budget
from edaqa_pipeline.text.counting import EVIDENCE_BUDGET_TOKENS


@dataclass(frozen=True)
class NumberedEvidence:
    """One packed item with its id (``E1`` = the best ranked)."""

    id: str
    item: EvidenceItem

    def line_numbers(self) -> list[int | None]:
        """The source line of each line of the item's text; None where it is not known (PDF
        text, or a bundle whose members' texts are not their exact spans)."""
        known = source_lines(self.item)
        return list(known) if known else [None] * (self.item.text.count("\n") + 1)

    def lines(self) -> list[tuple[int | None, str]]:
        """(source line number or None, line text) of the item's text."""
        return list(zip(self.line_numbers(), self.item.text.split("\n"), strict=True))

    def citation(self, first: int | None = None, last: int | None = None) -> str:
        """The item's location, or lines ``first..last`` of it (offsets into its text); the
        whole span when those lines' source numbers are not known."""
        item = self.item
        if first is None:
            return item.citation()
        numbers = self.line_numbers()
        last = first if last is None else last
        start, end = numbers[first], numbers[min(last, len(numbers) - 1)]
        if start is None or end is None:
            return item.citation()
        return f"{item.doc}:L{start}" if start == end else f"{item.doc}:L{start}-L{end}"

    def units(self) -> list[TextUnit]:
        """The item's sentences, table rows and code lines (what one claim can rest on)."""
        return text_units(self.item.text, line_kinds_of(self.item), self.item.line_subjects)

    def as_input(self) -> dict[str, Any]:
        """What the prompt shows for this item (``id``, ``citation``, ``text``) and what the
        offline answerer reads besides (the parser's kind of each line, the PDF page), and the
        location a reader is shown (a PDF page with its section)."""
        return {"id": self.id, "citation": self.item.citation(), "text": self.item.text,
                "line_kinds": list(line_kinds_of(self.item)), "page": self.item.page,
                "location": self.item.location()}


def number_evidence(
    items: Sequence[EvidenceItem], budget_tokens: int = EVIDENCE_BUDGET_TOKENS, *, packed: bool = False
) -> list[NumberedEvidence]:
    """``items`` packed to the budget (unless ``packed`` says they already are), numbered."""
    chosen = list(items) if packed else pack_to_budget(items, budget_tokens)
    return [NumberedEvidence(f"E{i}", item) for i, item in enumerate(chosen, start=1)]
