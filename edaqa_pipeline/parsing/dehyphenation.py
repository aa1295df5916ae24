"""Joining PDF text lines into paragraphs, and rejoining words hyphenated at a line end.

A word split by a hyphen at the end of a line ("mea-" + "surements") is rejoined unless the
document spells it with the hyphen elsewhere or both halves are words of their own
("machine-" + "mode"). The document's own vocabulary decides, so the rule needs no dictionary.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from edaqa_pipeline.parsing.pdf_layout import PdfPage

_WORD = re.compile(r"[a-z][a-z\-]*[a-z]")
_HYPHEN_END = re.compile(r"([A-Za-z]+)-$")
_WORD_START = re.compile(r"^([a-z]+)")
# a line that ends in a word-initial hyphen, and a line that starts with a snake_case name: an
# option the layout broke after its dash ("... the -" + "starts_with option"); a dash before
# a plain word is a dash ("VDD = 1.8 V -" + "typical")
_DASH_END = re.compile(r"(?:^|[\s\[(|])-$")
_NAME_START = re.compile(r"^[A-Za-z][A-Za-z0-9]*_\w")
# an identifier the layout broke after an underscore to fit a narrow table column
# ("-branching_point_buffers_" + "distance"); only in cells: prose and code lines end in an
# underscore of their own ("-inst _614_" + "This command", "a flags_" + "struct")
_UNDERSCORE_END = re.compile(r"[A-Za-z0-9]_$")
_WORD_CHAR_START = re.compile(r"^[a-z0-9]")


def join_lines(lines: Iterable[str], vocab: set[str], *, cell: bool = False) -> str:
    """Join text lines with spaces. A word split by a hyphen at a line end is rejoined
    ("mea-" + "surements" -> "measurements") unless the document spells it with the hyphen
    elsewhere or both halves are words of their own ("machine-" + "mode" -> "machine-mode").
    A dash that starts a word is joined to a snake_case name after it ("-" + "starts_with" ->
    "-starts_with", "[-" + "ground_net net]" -> "[-ground_net net]"): the layout broke a line
    inside an option name. In a table ``cell``, a name broken after an underscore is rejoined
    too ("max_" + "diameter" -> "max_diameter")."""
    out = ""
    for line in lines:
        if not line:
            continue
        end = _HYPHEN_END.search(out)
        start = _WORD_START.match(line)
        if (_DASH_END.search(out) and _NAME_START.match(line)) or \
                (cell and _UNDERSCORE_END.search(out) and _WORD_CHAR_START.match(line)):
            out += line  # "-" + "starts_with" -> "-starts_with", "max_" + "diameter"
        elif end and start:
            left, right = end.group(1).lower(), start.group(1)
            compound = f"{left}-{right}" in vocab or (left in vocab and right in vocab)
            if left + right not in vocab and compound:
                out += line
            else:
                out = out[:-1] + line
        else:
            out = f"{out} {line}" if out else line
    return out


def vocabulary(pages: Iterable[PdfPage]) -> set[str]:
    words: set[str] = set()
    for page in pages:
        for ln in page.lines:
            words.update(_WORD.findall(ln.text.lower()))
        for table in page.tables:
            for row in table.rows:
                for cell in row:
                    words.update(_WORD.findall(cell.lower()))
    return words
