"""A PDF's outline (its bookmarks) as the source of its headings.

A book-length manual usually carries an outline: one bookmark per chapter and section, with its
level and page. Where it does, it is a better account of the structure than font sizes, so
the heading lines it names become the headings, at the outline's levels. It is used only
when it fits the text: at least ``MIN_ENTRIES`` bookmarks and ``MIN_MATCHED`` of them found
as a line on their page. Outlines that are only "Page 1", "Page 2", ... (a scanner's or a
converter's) match nothing and leave the font-based headings in place.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from edaqa_pipeline.parsing.pdf_headers import Run
from edaqa_pipeline.parsing.pdf_layout import LIGATURES, PdfPage

MIN_ENTRIES = 3
MIN_MATCHED = 0.8
MAX_LEVEL = 6
_PAGE_SUFFIX = re.compile(r"[\t .]+\d+$")


def _key(text: str) -> str:
    """Comparable form of a heading: case, spacing and a trailing page number ignored. Spaces
    are dropped, not only collapsed: an outline may join the lines of a wrapped heading
    without one ("LEF Grammar Railroad" / "Diagrams" -> "LEF Grammar RailroadDiagrams").
    Ligatures, soft hyphens and zero-width spaces are cleaned as in the page text."""
    text = _PAGE_SUFFIX.sub("", text.translate(LIGATURES).strip())
    return re.sub(r"\s+", "", text).lower()


def apply_outline(pages: Sequence[PdfPage], outline: Sequence[Sequence[object]]) -> None:
    """Give each page the (level, title) bookmarks that point at it."""
    by_number = {page.number + 1: page for page in pages}
    for entry in outline:
        level, title, number = int(entry[0]), str(entry[1]), int(entry[2])  # type: ignore[call-overload]
        page = by_number.get(number)
        if page is not None and _key(title):
            page.outline.append((level, _key(title)))


def outline_levels(page_runs: Sequence[tuple[PdfPage, list[Run]]]) -> dict[int, int] | None:
    """Heading level per run (keyed by ``id(run)``) from the outline, or None when the
    document has no outline that fits its text."""
    entries = sum(len(page.outline) for page, _ in page_runs)
    if entries < MIN_ENTRIES:
        return None
    levels: dict[int, int] = {}
    matched = 0
    for page, runs in page_runs:
        for level, title in page.outline:
            for run in runs:
                if id(run) not in levels and _key(run.text) == title:
                    levels[id(run)] = min(level, MAX_LEVEL)
                    matched += 1
                    break
    return levels if matched >= MIN_MATCHED * entries else None
