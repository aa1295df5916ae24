"""Evidence bundles a reader needs, cut from a chunk: the lines that answer, with their frame.

A chunk holds up to 400 tokens; under a 2,048-token budget five whole chunks fill the context.
When a lower-ranked chunk is long, EDAQA keeps only the bundle around its best-matching line:

* a table row comes with the table's header row (when the header is close enough for the
  bundle to stay one contiguous span of lines);
* a line inside a fenced code block brings the whole block (up to ``MAX_CODE_LINES``);
* a prose line brings its paragraph (or list), plus the heading just above it.

A bundle is always a contiguous span of the source lines and its text is exactly those lines,
so its citation (``doc:Lx-Ly``) shows everything it claims to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from edaqa_pipeline.text.tokens import content_terms

MAX_CODE_LINES = 40
MAX_HEADER_GAP = 12  # rows between a table's header and the matched row still shown together
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Bundle:
    start_line: int
    end_line: int
    text: str


def line_score(line: str, terms: set[str], identifiers: list[str]) -> float:
    """How much one line answers: query identifiers it names (3 each) + shared content terms."""
    low = line.lower()
    ident_hits = sum(1 for ident in identifiers if ident.split(" -")[-1].lower() in low)
    term_hits = len(terms & set(content_terms(line)))
    return 3.0 * ident_hits + term_hits


def _blocks(lines: list[str]) -> list[tuple[str, int, int]]:
    """(kind, first, last) index ranges: code fences, tables, paragraphs, headings."""
    out: list[tuple[str, int, int]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            j = i + 1
            while j < len(lines) and not _FENCE.match(lines[j]):
                j += 1
            out.append(("code", i, min(j, len(lines) - 1)))
            i = j + 1
        elif line.lstrip().startswith("|"):
            j = i
            while j + 1 < len(lines) and lines[j + 1].lstrip().startswith("|"):
                j += 1
            out.append(("table", i, j))
            i = j + 1
        elif line.lstrip().startswith("#"):
            out.append(("heading", i, i))
            i += 1
        elif not line.strip():
            i += 1
        else:
            j = i
            while j + 1 < len(lines) and lines[j + 1].strip() and not _FENCE.match(lines[j + 1]) \
                    and not lines[j + 1].lstrip().startswith(("|", "#")):
                j += 1
            out.append(("prose", i, j))
            i = j + 1
    return out


def bundle(record: dict[str, Any], query: str, identifiers: list[str]) -> Bundle | None:
    """The bundle around the chunk's best-matching line, or None when no line matches or the
    chunk's text is not line-for-line its source span (then it stays whole)."""
    start, end = record.get("start_line"), record.get("end_line")
    lines = record["text"].split("\n")
    if start is None or end is None or len(lines) != end - start + 1:
        return None  # PDF evidence, or a sentence-split block: no line-exact cut possible
    terms = set(content_terms(query))
    scores = [line_score(ln, terms, identifiers) for ln in lines]
    best = max(range(len(lines)), key=lambda i: (scores[i], -i)) if lines else 0
    if not lines or scores[best] <= 0:
        return None
    first, last = best, best
    for kind, a, b in _blocks(lines):
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
    if first > 0 and lines[first - 1].lstrip().startswith("#"):
        first -= 1
    elif first > 1 and not lines[first - 1].strip() and lines[first - 2].lstrip().startswith("#"):
        first -= 2
    text = "\n".join(lines[first : last + 1])
    return Bundle(int(start) + first, int(start) + last, text)
