"""The units of an evidence item: what one claim can rest on.

An answer's claim states one fact, and a fact sits in one place of a manual: a sentence of a
paragraph or list item, a table row (its header names the columns), a code line. The
extractive answerer quotes such units, and the claim verifier (``verify.py``) accepts a claim
only when one unit holds everything it states. Both read the units cut here, by the parser's
kind of each line (``parsing.lines``, carried by the item: ``retrieval.line_structure``), so
the answerer never quotes what the verifier would not accept and a citation narrows to the
unit's lines.

Each unit keeps the line offsets it spans within its item and its context: the headings above
it in the item (``### clock_tree_synthesis / #### Options``: the command whose options a table
lists) and, for a table row, the table's header row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from edaqa_pipeline.generation.grounded import MAX_CLAIM_CHARS
from edaqa_pipeline.parsing.lines import heading_level, heading_text
from edaqa_pipeline.text.identifiers import extract_identifiers
from edaqa_pipeline.text.markup import table_cells
from edaqa_pipeline.text.sentences import split_sentences

PROSE = frozenset({"text", "list_item", "quote", "html", "caption"})


@dataclass(frozen=True)
class TextUnit:
    """One answerable unit of an item's text."""

    kind: str  # "sentence" | "row" | "code"
    text: str  # the unit's source text (a sentence, a row line, a code line), unmodified
    first: int  # offset of its first line in the item's text
    last: int  # offset of its last line
    headings: tuple[str, ...] = ()  # the headings in force above it in the item, outermost first
    header: str = ""  # a row's table header line ("" when the item shows none)
    cells: tuple[str, ...] = ()  # a row's cells
    block: int = 0  # which paragraph, table or code block of the item it belongs to
    subject: str = ""  # the command its section documents (``EvidenceItem.line_subjects``)


def _sentences(lines: Sequence[str], first: int) -> list[tuple[str, int, int]]:
    """(sentence, first line, last line) of a paragraph whose lines start at offset ``first``."""
    joined = "\n".join(lines)
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    out = []
    cursor = 0
    for sentence in split_sentences(joined):
        at = joined.find(sentence, cursor)
        if at < 0:  # the splitter keeps sentences verbatim; guard anyway
            at = cursor
        end = at + len(sentence) - 1
        cursor = at + len(sentence)
        a = max(i for i, s in enumerate(starts) if s <= at)
        b = max(i for i, s in enumerate(starts) if s <= max(end, at))
        out.append((sentence, first + a, first + b))
    return out


def text_units(text: str, line_kinds: Sequence[str], line_subjects: Sequence[str] = ()) -> list[TextUnit]:
    """The units of an item's ``text``, one kind per line in ``line_kinds``, in reading order;
    each unit's ``subject`` is that of its first line in ``line_subjects`` (the command the
    line's section documents; none when they are not known)."""
    out: list[TextUnit] = []
    lines = text.split("\n")
    subjects = tuple(line_subjects) if len(line_subjects) == len(lines) else ("",) * len(lines)
    paragraph: list[str] = []
    paragraph_start = 0
    headings: dict[int, str] = {}
    header = ""
    block = 0
    previous = "blank"
    in_list_item = False

    def context() -> tuple[str, ...]:
        return tuple(headings[level] for level in sorted(headings))

    def flush() -> None:
        joined = " ".join(line.strip() for line in paragraph)
        if (paragraph and in_list_item and len(joined) <= MAX_CLAIM_CHARS
                and len(set(extract_identifiers(joined))) <= 1):
            # a short list item about one thing is one unit: "verbose_level [0-10, int] : Set
            # verbose level. Default: 1" gives the option's range and default, split into
            # sentences the default would be nobody's; an item naming two identifiers keeps its
            # sentences apart, so a number cannot be joined to the other identifier
            out.append(TextUnit("sentence", joined, paragraph_start,
                                paragraph_start + len(paragraph) - 1, context(), block=block,
                                subject=subjects[paragraph_start]))
        elif paragraph:
            out.extend(TextUnit("sentence", s, a, b, context(), block=block, subject=subjects[a])
                       for s, a, b in _sentences(paragraph, paragraph_start))
        paragraph.clear()

    for offset, (line, kind) in enumerate(zip(lines, line_kinds, strict=True)):
        family = "code" if kind in ("code", "code_fence") else "table" if kind.startswith("table") else kind
        if family != previous or kind in ("list_item", "code_fence"):
            block += 1
        previous = family
        if kind == "code":
            flush()
            if line.strip():
                out.append(TextUnit("code", line.strip(), offset, offset, context(), block=block,
                                    subject=subjects[offset]))
            continue
        if kind == "table_header":
            flush()
            header = line.strip()
            continue
        if kind == "table_row":
            flush()
            cells = tuple(table_cells(line.strip()))
            out.append(TextUnit("row", line.strip(), offset, offset, context(), header, cells, block,
                                subjects[offset]))
            continue
        if kind == "heading":
            flush()
            level = heading_level(line)
            headings = {lv: t for lv, t in headings.items() if lv < level}
            headings[level] = heading_text(line)
            continue
        if kind not in PROSE:  # blank, fences, a table's delimiter row, thematic breaks
            flush()
            if kind == "blank":
                header = ""
            continue
        if kind == "list_item":
            flush()
        if not paragraph:
            paragraph_start = offset
            in_list_item = kind == "list_item"
        paragraph.append(line)
    flush()
    return out
