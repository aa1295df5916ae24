"""Evidence bundles a reader needs, cut from a chunk: the lines that answer, with their frame.

A chunk holds up to 400 tokens; under a 2,048-token budget five whole chunks fill the context.
When a lower-ranked chunk is long, EDAQA keeps only the bundle around its best-matching line:

* a table row comes with the table's header row (when the header is close enough for the
  bundle to stay one contiguous span of lines);
* a line inside a fenced code block brings the whole block (up to ``MAX_CODE_LINES``);
* a prose line brings its paragraph (or list), plus the heading just above it.

A bundle is always a contiguous span of the source lines and its text is exactly those lines,
so its citation (``doc:Lx-Ly``) shows everything it claims to. Which lines form a code block,
a table or a paragraph is read from the chunk's stored line kinds (``parsing.lines``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from edaqa_pipeline.parsing.lines import CODE_KINDS, PROSE_KINDS, TABLE_KINDS
from edaqa_pipeline.text.tokens import content_terms

MAX_CODE_LINES = 40
MAX_HEADER_GAP = 12  # rows between a table's header and the matched row still shown together
# the block a line belongs to, for cutting: its code block, its table, its run of prose
_FAMILY = {**dict.fromkeys(CODE_KINDS, "code"), **dict.fromkeys(TABLE_KINDS, "table"),
           **dict.fromkeys(PROSE_KINDS | {"html", "caption"}, "prose"), "heading": "heading"}


@dataclass(frozen=True)
class Bundle:
    start_line: int
    end_line: int
    text: str
    line_kinds: tuple[str, ...]


def line_score(line: str, terms: set[str], identifiers: list[str]) -> float:
    """How much one line answers: query identifiers it names (3 each) + shared content terms."""
    low = line.lower()
    ident_hits = sum(1 for ident in identifiers if ident.split(" -")[-1].lower() in low)
    term_hits = len(terms & set(content_terms(line)))
    return 3.0 * ident_hits + term_hits


def _blocks(kinds: Sequence[str]) -> list[tuple[str, int, int]]:
    """(kind, first, last) index ranges of the chunk's code blocks, tables, prose runs and
    headings, from the parser's line kinds (``parsing.lines``)."""
    out: list[tuple[str, int, int]] = []
    i, n = 0, len(kinds)
    while i < n:
        kind = kinds[i]
        family = _FAMILY.get(kind, "")
        if not family:
            i += 1
            continue
        j = i
        if family == "code" and kind == "code_fence":  # the fenced block through its close
            j += 1
            while j < n and kinds[j] == "code":
                j += 1
            j = min(j, n - 1) if j < n and kinds[j] == "code_fence" else j - 1
        elif family != "heading":
            while j + 1 < n and _FAMILY.get(kinds[j + 1], "") == family and kinds[j + 1] != "code_fence":
                j += 1
        out.append((family, i, j))
        i = j + 1
    return out


def bundle(record: dict[str, Any], query: str, identifiers: list[str]) -> Bundle | None:
    """The bundle around the chunk's best-matching line, or None when no line matches or the
    chunk's text is not line-for-line its source span (then it stays whole)."""
    start, end = record.get("start_line"), record.get("end_line")
    lines = record["text"].split("\n")
    kinds = record.get("line_kinds") or ()
    if start is None or end is None or len(lines) != end - start + 1 or len(kinds) != len(lines):
        return None  # PDF evidence, or a sentence-split block: no line-exact cut possible
    terms = set(content_terms(query))
    scores = [line_score(ln, terms, identifiers) for ln in lines]
    best = max(range(len(lines)), key=lambda i: (scores[i], -i)) if lines else 0
    if not lines or scores[best] <= 0:
        return None
    first, last = best, best
    for kind, a, b in _blocks(kinds):
        if not a <= best <= b:
            continue
        if kind == "code":
            first, last = a, min(b, a + MAX_CODE_LINES - 1)
        elif kind == "table":
            header = a if best - a <= MAX_HEADER_GAP else best
            first, last = header, min(b, best + 1)
        elif kind == "prose":
            first, last = a, b
        break
    if first > 0 and kinds[first - 1] == "heading":
        first -= 1
    elif first > 1 and kinds[first - 1] == "blank" and kinds[first - 2] == "heading":
        first -= 2
    kinds = kinds[first : last + 1]
    text = "\n".join(lines[first : last + 1])
    return Bundle(int(start) + first, int(start) + last, text, tuple(kinds))
