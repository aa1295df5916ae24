"""Markdown markup rules that more than one layer reads: the fence, list markers, table cells.

Document structure is decided once, by the parser (``parsing.lines``), and stored with every
chunk as one kind per line; consumers read those kinds instead of looking at the text again.
What is left for text that never went through the parser (a model's output, an answer, a
reference passage) and for the parser itself are the few rules below, defined here once so
that a fence or a table row means the same thing everywhere (``test_layering`` holds it).
"""

from __future__ import annotations

import re

# CommonMark's code fence: three or more backticks or tildes (any indentation: inside a list
# item a fence is indented with the item). The info string (``tcl``, ``{note}``) follows.
FENCE = re.compile(r"^(?P<indent>\s*)(?P<mark>`{3,}|~{3,})(?P<info>.*)$")
# A list item's marker: ``-``, ``*``, ``+``, ``1.`` or ``1)`` followed by a space.
LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
# strong emphasis written with underscores: "__verbose_level__" reads (and renders) "verbose_level"
UNDERSCORE_STRONG = re.compile(r"(?<![\w`])__(\S(?:[^`\n]{0,200}?\S)?)__(?![\w`])")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def fence_mark(line: str) -> str:
    """The fence marker that opens or closes a code block on ``line`` (```` ``` ````,
    ``~~~~``), or "" when the line is not a fence."""
    match = FENCE.match(line)
    return match.group("mark") if match else ""


def fence_for(code: str) -> str:
    """A fence that cannot close inside ``code``: backticks unless the code holds them."""
    return "~~~~" if "```" in code else "```"


def closes_fence(line: str, opening: str) -> bool:
    """Whether ``line`` closes a block opened by ``opening``: the same character, at least as
    many of them, and nothing after them (CommonMark)."""
    match = FENCE.match(line)
    if not match or match.group("info").strip():
        return False
    mark = match.group("mark")
    return mark[0] == opening[:1] and len(mark) >= len(opening)


def strip_fences(text: str) -> str:
    """``text`` without the fence a model may wrap it in (```` ```json ... ``` ````): the
    opening line goes, and everything from the last run of the fence's character on."""
    stripped = text.strip()
    mark = fence_mark(stripped.split("\n", 1)[0])
    if not mark:
        return stripped
    body = stripped.split("\n", 1)[1] if "\n" in stripped else ""
    end = body.rfind(mark[0] * 3)
    return (body[:end] if end >= 0 else body).strip()


def table_cells(line: str) -> list[str]:
    """The cells of a pipe-table line, stripped; an escaped ``\\|`` stays inside its cell."""
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [cell.strip() for cell in _CELL_SPLIT.split(body)]


def pipe_row(cells: list[str]) -> str:
    """One pipe-table line of ``cells``: whitespace (line breaks included) collapsed, a ``|``
    inside a cell escaped, an empty cell kept as a space so the columns stay countable."""
    texts = [" ".join(cell.split()).replace("|", "\\|") or " " for cell in cells]
    return "| " + " | ".join(texts) + " |"


def pipe_table(rows: list[list[str]]) -> str:
    """A table as Markdown pipe-table text: the first row is the header, then the delimiter
    row, then one line per data row; short rows are padded to the widest. Every table the
    parsers read (Markdown, HTML, PDF) reaches evidence in this one shape, so a row is one
    line that is read, cited and verified together with its header."""
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    padded = [list(row) + [""] * (width - len(row)) for row in rows]
    return "\n".join([pipe_row(padded[0]), "|" + "---|" * width, *(pipe_row(r) for r in padded[1:])])


def pipe_table_rows(text: str) -> list[list[str]]:
    """The rows of :func:`pipe_table` text (header first, the delimiter row skipped), each
    cell stripped and unescaped: what the table held before it was written out."""
    lines = text.split("\n") if text.strip() else []
    if len(lines) > 1 and is_table_rule(lines[1]):
        lines = [lines[0], *lines[2:]]  # a data row of dashes ("| - | - |") is still a row
    return [[cell.replace("\\|", "|") for cell in table_cells(line)] for line in lines]


def is_table_rule(line: str) -> bool:
    """A table's delimiter row (``|---|:--:|``): dashes, colons and pipes only."""
    stripped = line.strip()
    return "-" in stripped and set(stripped) <= set("|-: ")
