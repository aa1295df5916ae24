"""The parser's line kinds, and the command each line's section documents, looked up for
any evidence item.

Every chunk row stores the kind of each of its lines (``chunks.line_kinds``, decided by the
parser: ``parsing.lines``). An evidence item built from a chunk carries them; an item built
another way (an element bundle: a table header joined to one row, a whole code block) names
its source lines, and :class:`LineStructure` maps (document, line) back to the stored kind.
:func:`line_kinds_of` is what a consumer calls: the item's stored kinds, or, for text that no
stored row covers (PDF items, text cut from a sentence), the parser's own classification of
that text. No consumer looks at a line's characters to decide what the line is.

The command a line's section documents is the element graph's ``scope_command`` (its one
definition: named by the heading, else first invoked by the section's code, else the parent
section's). An item carries it per line (``EvidenceItem.line_subjects``), so the claim
verifier knows that an options row shown without its heading belongs to ``repair_timing``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.parsing.lines import markdown_line_kinds


class LineStructure:
    """(document, source line) -> the kind the parser gave that line (Markdown documents),
    its text where a stored chunk holds it line for line (``render``: the exact source text
    of any set of lines, so two items of one document can be shown as one), and the command
    its section documents (``subjects``) where the element graph is stored."""

    def __init__(self, kinds: dict[str, dict[int, str]], texts: dict[str, dict[int, str]] | None = None,
                 subjects: dict[str, dict[int, str]] | None = None) -> None:
        self._kinds = kinds
        self._texts = texts or {}
        self._subjects = subjects or {}

    def with_subjects(self, elements: Iterable[Mapping[str, Any]]) -> LineStructure:
        """This structure with the command each line's section documents, from element rows
        (``document``, ``element_type``, ``start_line``, ``end_line``, ``scope_command``: the
        element graph's one definition of it); sections and clauses, which span their
        subsections, are left out."""
        subjects: dict[str, dict[int, str]] = {}
        for row in elements:
            start, end, command = row.get("start_line"), row.get("end_line"), row.get("scope_command")
            if start is None or end is None or not command or row.get("element_type") in ("section", "clause"):
                continue
            doc = subjects.setdefault(row["document"], {})
            for line in range(int(start), int(end) + 1):
                doc.setdefault(line, str(command))
        return LineStructure(self._kinds, self._texts, subjects)

    def subjects(self, doc: str, lines: Iterable[int]) -> tuple[str, ...]:
        """The command the section of each of ``lines`` of ``doc`` documents ("" where none);
        () when the document has none at all."""
        known = self._subjects.get(doc)
        return tuple(known.get(line, "") for line in lines) if known else ()

    @classmethod
    def from_chunks(cls, records: Iterable[Mapping[str, Any]]) -> LineStructure:
        """From chunk rows (``document``, ``start_line``, ``line_kinds``); PDF rows (no
        lines) are skipped: their items carry their kinds or are classified by their text."""
        kinds: dict[str, dict[int, str]] = {}
        texts: dict[str, dict[int, str]] = {}
        for rec in records:
            start = rec.get("start_line")
            if start is None or not rec.get("line_kinds"):
                continue
            doc = kinds.setdefault(rec["document"], {})
            for offset, kind in enumerate(rec["line_kinds"]):
                doc.setdefault(int(start) + offset, kind)
            lines = str(rec.get("text") or "").split("\n")
            if rec.get("end_line") is not None and len(lines) == int(rec["end_line"]) - int(start) + 1:
                known = texts.setdefault(rec["document"], {})
                for offset, line in enumerate(lines):
                    known.setdefault(int(start) + offset, line)
        return cls(kinds, texts)

    def kinds(self, doc: str, lines: Sequence[int]) -> tuple[str, ...]:
        """The kinds of ``lines`` of ``doc``; () when one of them is not in a stored chunk."""
        known = self._kinds.get(doc)
        if not known or not lines:
            return ()
        out = tuple(known.get(line, "") for line in lines)
        return () if "" in out else out

    def render(self, doc: str, lines: Sequence[int]) -> tuple[str, tuple[str, ...]] | None:
        """The source text of ``lines`` of ``doc`` joined by newlines, with their kinds; None
        when a line is not held line for line by a stored chunk."""
        known = self._texts.get(doc)
        if not known or not lines or any(line not in known for line in lines):
            return None
        kinds = self.kinds(doc, lines)
        if not kinds:
            return None
        return "\n".join(known[line] for line in lines), kinds


def source_lines(item: EvidenceItem) -> list[int]:
    """The source line of each line of ``item.text``; [] when they are not known (PDF text,
    or a text that is not its span line for line)."""
    count = item.text.count("\n") + 1
    if item.page is not None or item.start_line is None or item.end_line is None:
        return []
    if item.line_numbers and len(item.line_numbers) == count:
        return list(item.line_numbers)
    if count == item.end_line - item.start_line + 1:
        return list(range(item.start_line, item.end_line + 1))
    return []


def line_kinds_of(item: EvidenceItem) -> tuple[str, ...]:
    """One kind per line of ``item.text``: the stored kinds it carries, else the parser's
    classification of its text (``parsing.lines.markdown_line_kinds``)."""
    count = item.text.count("\n") + 1
    if len(item.line_kinds) == count:
        return item.line_kinds
    return tuple(markdown_line_kinds(item.text))
