"""Page furniture and document structure: running headers/footers, headings, paragraphs.

* Running headers and footers (same text, page numbers aside, at the same height on more than
  half of the pages) are dropped.
* Headings are lines larger than the body text, or short bold lines followed by non-bold text.
  Numbered headings ("2.3.1 ...", "Chapter 4", "A.2") take their level from the numbering,
  others from their font size relative to the numbered ones (by size rank when none is
  numbered). Three or more unnumbered heading-like lines of one style in a row are a list.
* Lines are grouped into paragraphs (pymupdf text blocks split at wider gaps than usual) and
  list items (bullets, "1." / "a)" numbering).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from edaqa_pipeline.model import normalise_ws
from edaqa_pipeline.parsing.dehyphenation import join_lines
from edaqa_pipeline.parsing.pdf_layout import (
    FIGURE_CAPTION,
    TABLE_CAPTION,
    Box,
    PdfPage,
    TextLine,
    text_width,
    union_box,
    wraps_into,
)

_SECTION_NUMBER = re.compile(r"^(?:\d{1,2}|[A-Z](?=\.\d))((?:\.\d{1,3})*)\.?\s+\S")
_CHAPTER = re.compile(r"^(?i:chapter|appendix|part)\s+[\dA-Z]{1,3}\b")
BULLET = re.compile(r"^(?:[•·▪◦‣∙●○■□➢►✓✔\uf000-\uf0ff]\s*|[-*–]\s+)")
_ORDERED = re.compile(r"^(?:\(?\d{1,2}[.)]|\(?[a-z][.)])\s+\S")
_DIGITS = re.compile(r"\d+")
_ROMAN = re.compile(r"\b[ivxlc]{1,7}\b")  # page numbers of front matter (lower-cased text)
_PAGE_WORDS = re.compile(r"\b(?:page|of)\b|/")
LEADER_DOTS = re.compile(r"(?:\.\s?){5,}")


def drop_running_lines(pages: Sequence[PdfPage]) -> None:
    """Drop lines repeated at the same height on more than half of the pages (running titles,
    footers, page numbers: numbers, roman numerals, "page" and "of" are ignored in the
    comparison, so that "ii" and "12 of 115" footers match). In a two-page document only lines
    in the top or bottom tenth of the page count, the margins of headers and footers."""
    n = len(pages)
    if n < 2:
        return
    where: dict[str, list[tuple[int, float, TextLine]]] = defaultdict(list)
    for page in pages:
        height = page.rect[3] - page.rect[1]
        for line in page.lines:
            y = (line.bbox[1] + line.bbox[3]) / 2
            if n == 2 and 0.1 * height < y - page.rect[1] < 0.9 * height:
                continue
            text = _ROMAN.sub(" ", _DIGITS.sub(" ", line.text.lower()))
            where[normalise_ws(_PAGE_WORDS.sub(" ", text))].append((page.number, y, line))
    for occurrences in where.values():
        if len({p for p, _, _ in occurrences}) * 2 <= n:
            continue
        for _, y, line in occurrences:
            if len({p for p, y2, _ in occurrences if abs(y2 - y) <= 3}) * 2 > n:
                line.drop = True


def cover_title(page: PdfPage) -> str:
    """The largest text on the first page (running headers aside), lines joined."""
    lines = [ln for ln in page.lines if not ln.drop and re.search(r"[A-Za-z]{2}", ln.text)]
    if not lines:
        return ""
    top = max(ln.size for ln in lines)
    return " ".join(ln.text for ln in lines if ln.size >= top - 0.5)[:200]


def body_size(pages: Iterable[PdfPage]) -> float:
    """The font size of most characters, table text included (datasheets with little prose)."""
    weight: Counter[float] = Counter()
    for page in pages:
        weight.update(page.sizes)
    return max(weight.items(), key=lambda kv: (kv[1], -kv[0]))[0] if weight else 10.0


@dataclass
class Run:
    """Consecutive lines of one paragraph or one heading."""

    lines: list[TextLine]

    @property
    def bbox(self) -> Box:
        box = self.lines[0].bbox
        for ln in self.lines[1:]:
            box = union_box(box, ln.bbox)
        return box

    @property
    def text(self) -> str:
        return " ".join(ln.text for ln in self.lines)


def _heading_candidate(line: TextLine, body: float) -> bool:
    return line.size >= body + 0.9 or (line.bold and line.size >= body - 0.6)


def paragraph_runs(page: PdfPage, body: float) -> list[Run]:
    """Lines grouped into paragraphs (pymupdf text blocks) and headings (split off the blocks;
    a heading continues on the next line only when it wrapped)."""
    live = [ln for ln in page.lines if not ln.drop]
    width = text_width(page)
    gaps: dict[int, list[float]] = defaultdict(list)
    for a, b in pairwise(live):
        if a.block == b.block:
            gaps[a.block].append(b.bbox[1] - a.bbox[3])
    usual = {block: sorted(g)[len(g) // 2] for block, g in gaps.items()}
    runs: list[Run] = []
    prev: TextLine | None = None
    for ln in live:
        candidate = _heading_candidate(ln, body)
        if prev is None or FIGURE_CAPTION.match(ln.text) or TABLE_CAPTION.match(ln.text):
            same = False
        elif candidate and _heading_candidate(prev, body):
            same = wraps_into(prev, ln, width)
        else:
            # one text block may hold several paragraphs: a wider gap than usual starts one
            height = prev.bbox[3] - prev.bbox[1]
            limit = max(0.5 * height, usual.get(ln.block, 0.0) + 0.5 * height)
            same = (
                prev.block == ln.block
                and not candidate
                and not _heading_candidate(prev, body)
                and ln.bbox[1] - prev.bbox[3] <= limit
            )
        if same:
            runs[-1].lines.append(ln)
        else:
            runs.append(Run([ln]))
        prev = ln
    return runs


def heading_kind(run: Run, body: float) -> str:
    """ "size" (larger than the body text), "bold" (a short bold line of body size) or ""."""
    text = run.text
    words = text.split()
    if len(run.lines) > 3 or not 2 <= len(text) <= 150 or len(words) > 20:
        return ""
    if not re.search(r"[A-Za-z]{2}", text) or LEADER_DOTS.search(text) or "://" in text:
        return ""  # numbers, table-of-contents lines, URLs
    if TABLE_CAPTION.match(text) or FIGURE_CAPTION.match(text) or BULLET.match(text):
        return ""
    if text.endswith((":", ",", ";")) or (text.endswith(".") and len(words) > 6):
        return ""  # the lead-in to a list, the end of a sentence
    if max(ln.size for ln in run.lines) >= body + 0.9:
        return "size"
    short = len(run.lines) <= 2 and len(text) <= 100
    if (
        short
        and all(ln.bold for ln in run.lines)
        and not text.endswith(".")
        and not text[0].islower()
    ):
        return "bold"
    return ""


def demote_heading_lists(runs: list[Run], kinds: list[str]) -> list[str]:
    """Three or more unnumbered heading-like lines of one style in a row, with nothing between
    them, are a list (a styled table of contents, a list of links), not headings."""
    out = list(kinds)

    def style(i: int) -> tuple[float, bool] | None:
        if not kinds[i] or _numbering_depth(runs[i].text):
            return None
        return (max(ln.size for ln in runs[i].lines), all(ln.bold for ln in runs[i].lines))

    i = 0
    while i < len(runs):
        j = i
        while style(i) is not None and j + 1 < len(runs) and style(j + 1) == style(i):
            j += 1
        if j - i >= 2:
            out[i : j + 1] = [""] * (j - i + 1)
        i = j + 1
    return out


def _numbering_depth(text: str) -> int:
    """1 for "3 Foo", "Chapter 3", "Appendix A"; 2 for "3.1 Foo", "A.1 Foo"; 0 when unnumbered."""
    if _CHAPTER.match(text):
        return 1
    match = _SECTION_NUMBER.match(text)
    return 1 + match.group(1).count(".") if match else 0


def heading_levels(headings: list[Run]) -> dict[int, int]:
    """Level 1-3 per heading run (keyed by id): the numbering depth when numbered; otherwise
    one below the numbered headings set larger (1 when none is larger); by size rank in a
    document without numbered headings."""
    size = {id(run): max(ln.size for ln in run.lines) for run in headings}
    depth = {id(run): _numbering_depth(run.text) for run in headings}
    numbered: dict[float, int] = {}
    for run in headings:
        if depth[id(run)]:
            s = size[id(run)]
            numbered[s] = min(numbered.get(s, 99), depth[id(run)])
    ranks = sorted(set(size.values()), reverse=True)
    levels = {}
    for run in headings:
        key = id(run)
        if depth[key]:
            level = depth[key]
        elif numbered:
            if size[key] in numbered:
                level = numbered[size[key]]
            else:
                larger = [d for s, d in numbered.items() if s > size[key]]
                level = max(larger) + 1 if larger else 1
        else:
            level = ranks.index(size[key]) + 1
        levels[key] = min(level, 3)
    return levels


def run_text(run: Run, vocab: set[str]) -> tuple[str, str]:
    """(kind, text): a paragraph's lines joined with spaces; list items start new lines."""
    first = run.lines[0].text
    starts = [bool(BULLET.match(ln.text) or _ORDERED.match(ln.text)) for ln in run.lines]
    if BULLET.match(first) and len(first) > 1:
        kind = "list"
    elif _ORDERED.match(first) and sum(starts) >= 2:
        kind = "ordered_list"
    else:
        return "paragraph", join_lines((ln.text for ln in run.lines), vocab)
    items: list[list[str]] = []
    for ln, start in zip(run.lines, starts, strict=True):
        if start or not items:
            items.append([ln.text])
        else:
            items[-1].append(ln.text)
    return kind, "\n".join(join_lines(item, vocab) for item in items)
