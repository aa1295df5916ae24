"""What a model reads of the evidence: the lines that answer, each with the frame it needs.

A small local model on a CPU reads the whole 2,048-token pack slowly (Qwen2.5-Coder-1.5B
processes about 60 prompt tokens a second on two cores, so 40 s pass before it writes a word),
and from whole sections it cites the item next to the one that states a fact or restates what
no line says. So a model is shown, of each packed item, only the lines that the extractive
scorer ranks highest for the question (``extractive.scored_units``: the same question-term
weights and the same best ``MAX_ITEMS`` items the offline answer quotes from), at most
``MODEL_UNITS`` units in all, each with its frame: the heading above it in its item and, for a
table row, the table's header and rule lines. Runs of an item that are not adjacent in it are
shown with ``...`` between them. Items without such a line are left out; an item keeps its id
(``E2`` shows lines of E2).

This is a view for the prompt only: a claim is verified against the whole item it cites
(``verify.py``), so what the model was not shown can never make a claim pass that the item
does not state, and a claim is cited by the source lines of the unit that states it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from edaqa_pipeline.generation.evidence import NumberedEvidence
from edaqa_pipeline.generation.extractive import scored_units
from edaqa_pipeline.parsing.lines import TABLE_KINDS

MODEL_UNITS = 15
"""Units a model reads (0: the whole pack). Chosen on dev26 questions outside the reported
samples with Qwen2.5-Coder-1.5B (docs/answers.md, "What a model reads")."""
GAP = "..."  # between two runs of one item that are not adjacent in it
GAP_KIND = "rule"  # its line kind: it ends a paragraph and keeps a table's header in force


def frame_offsets(kinds: Sequence[str], first: int, last: int) -> set[int]:
    """The lines ``first..last`` of an item whose lines have ``kinds``, the nearest heading
    above them, and, for a table row, its table's header and rule lines."""
    keep = set(range(first, last + 1))
    if kinds[first] == "table_row":
        j = first - 1
        while j >= 0 and kinds[j] in TABLE_KINDS:
            if kinds[j] != "table_row":
                keep.add(j)
            j -= 1
    heading = next((j for j in range(first - 1, -1, -1) if kinds[j] == "heading"), None)
    if heading is not None:
        keep.add(heading)
    return keep


def shown_lines(lines: Sequence[str], kinds: Sequence[str], offsets: Sequence[int]
                ) -> tuple[str, list[str]]:
    """(text, line kinds) of the lines at ``offsets``, ``GAP`` between runs that are apart."""
    text: list[str] = []
    shown_kinds: list[str] = []
    for n, offset in enumerate(offsets):
        if n and offset != offsets[n - 1] + 1:
            text.append(GAP)
            shown_kinds.append(GAP_KIND)
        text.append(lines[offset])
        shown_kinds.append(kinds[offset])
    return "\n".join(text), shown_kinds


def model_inputs(question: str, numbered: Sequence[NumberedEvidence],
                 max_units: int = MODEL_UNITS) -> list[dict[str, Any]]:
    """The evidence inputs a model's prompt shows for ``question`` (``id``, ``citation``,
    ``text``, ``line_kinds``, as ``NumberedEvidence.as_input``): the whole pack when
    ``max_units`` is 0 or no line states a question term, else each item cut to the lines
    of the best ``max_units`` units with their frame (module docstring)."""
    whole = [n.as_input() for n in numbered]
    if max_units <= 0:
        return whole
    _, _, scored = scored_units(question, whole)
    keep: dict[str, set[int]] = {}
    kinds_of = {e["id"]: e["line_kinds"] for e in whole}
    taken: set[tuple[str, int, int]] = set()  # a long row's sentence pieces are one unit
    for _, _, unit in scored:
        if unit.source is None:
            continue
        place = (unit.evidence_id, unit.source.first, unit.source.last)
        if place in taken:
            continue
        if len(taken) == max_units:
            break
        taken.add(place)
        offsets = frame_offsets(kinds_of[unit.evidence_id], unit.source.first, unit.source.last)
        keep.setdefault(unit.evidence_id, set()).update(offsets)
    if not keep:
        return whole
    shown: list[dict[str, Any]] = []
    for entry in whole:
        offsets = sorted(keep.get(entry["id"], ()))
        if not offsets:
            continue
        text, kinds = shown_lines(str(entry["text"]).split("\n"), entry["line_kinds"], offsets)
        shown.append({**entry, "text": text, "line_kinds": kinds})
    return shown
