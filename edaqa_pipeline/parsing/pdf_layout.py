"""What the PDF parser's passes share: page records, boxes, caption patterns, text clean-up.

A page is read once (``pdf_page.scan_page``) into plain records -- text lines outside tables,
ruled and unruled tables, figure regions -- and the later passes (running headers, figure
labels and captions, headings, paragraphs) only mark or regroup those records. Geometry works on
plain ``(x0, y0, x1, y1)`` tuples: ``pymupdf.Rect`` is slow in the inner loops.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from edaqa_pipeline.model import normalise_ws

Box = tuple[float, float, float, float]
Drawing = tuple[Box, int, int, int]  # bbox, horizontal strokes, vertical strokes, diagonal+curves

# ligatures split into letters ("ﬁ" -> "fi") so that words can be searched
LIGATURES = str.maketrans(
    {
        "\ufb00": "ff",
        "\ufb01": "fi",
        "\ufb02": "fl",
        "\ufb03": "ffi",
        "\ufb04": "ffl",
        "\ufb05": "st",
        "\ufb06": "st",
        "\u00ad": "",  # soft hyphen
        "\u200b": "",  # zero-width space (a break opportunity inside a long name)
        "\u2060": "",  # word joiner
    }
)
WHITESPACE = frozenset(" \t\n\r\x0b\x0c")

# A Symbol font (SymbolMT, Symbol) without a Unicode map gives its glyphs as private-use
# code points U+F020-U+F0FF (0xF000 + the byte of Adobe's Symbol encoding): "235 \uf057" is
# "235 Ω" of a sheet resistance, "\uf062" the β of a current gain. Mapped back by that
# encoding, only for fonts named Symbol (icon fonts such as Marlett reuse the same code points).
_SYMBOL_ENCODING = {
    **{c: chr(c) for c in range(0x20, 0x7F) if c != 0x60},  # ASCII where Symbol agrees with it
    **dict(zip(range(0x41, 0x5B), "ΑΒΧΔΕΦΓΗΙϑΚΛΜΝΟΠΘΡΣΤΥςΩΞΨΖ", strict=True)),
    **dict(zip(range(0x61, 0x7B), "αβχδεφγηιϕκλµνοπθρστυϖωξψζ", strict=True)),  # µ: the micro sign units use
    0x22: "∀", 0x24: "∃", 0x27: "∋", 0x2A: "∗", 0x2D: "−", 0x40: "≅", 0x5C: "∴", 0x5E: "⊥", 0x7E: "∼",
    0xA2: "′", 0xA3: "≤", 0xA5: "∞", 0xAC: "←", 0xAD: "↑", 0xAE: "→", 0xAF: "↓", 0xB0: "°",
    0xB1: "±", 0xB2: "″", 0xB3: "≥", 0xB4: "×", 0xB5: "∝", 0xB6: "∂", 0xB7: "•", 0xB8: "÷",
    0xB9: "≠", 0xBA: "≡", 0xBB: "≈", 0xBC: "…", 0xC5: "⊕", 0xC6: "∅", 0xC7: "∩", 0xC8: "∪",
    0xD6: "√", 0xD7: "⋅", 0xE5: "∑",
}  # fmt: skip
SYMBOL_PRIVATE_USE = str.maketrans({0xF000 + code: char for code, char in _SYMBOL_ENCODING.items()})


def font_text(text: str, font: str) -> str:
    """``text`` of a span in ``font``, a Symbol font's private-use glyphs read as Unicode."""
    return text.translate(SYMBOL_PRIVATE_USE) if font.lower().startswith("symbol") else text


# "Table 3-1. TAG TYPEs", "Table A-2 ...", "Fig. 1.1.2: ..." but not "Figure 1-1 depicts ...".
_CAPTION_NUMBER = r"\s*(?:[A-Z]\s*[.\-–]?\s*)?\d+(?:\s*[.\-–:]\s*\d+)*\s*[.:\-–]?\s*(?![a-z])"
TABLE_CAPTION = re.compile(r"^(?i:table|tab\.)" + _CAPTION_NUMBER)
FIGURE_CAPTION = re.compile(r"^(?i:figure|fig\.)" + _CAPTION_NUMBER)


@dataclass
class TextLine:
    """One visual text line outside tables (spans on one baseline joined)."""

    page: int
    block: int  # index of the pymupdf text block on the page
    bbox: Box
    text: str
    size: float  # font size of most of its characters, to 0.5 pt
    bold: bool
    drop: bool = False  # running header/footer, figure label or figure caption


@dataclass
class PdfTable:
    bbox: Box
    rows: list[list[str]]  # cell lines joined with "\n" until the document's words are known
    caption: str = ""
    ruled: bool = True  # False: found by layout analysis of text lines (pdf_unruled)


@dataclass
class PdfFigure:
    bbox: Box
    source: str  # image | vector | image+vector
    caption: str = ""
    labels: list[str] = field(default_factory=list)


@dataclass
class PdfPage:
    number: int  # 0-based
    rect: Box
    lines: list[TextLine]
    tables: list[PdfTable]
    figures: list[PdfFigure]
    sizes: Counter[float]  # characters per font size over the whole text layer, tables included
    outline: list[tuple[int, str]] = field(default_factory=list)  # (level, title) bookmarks here
    # one-row ruled grids of filled cells: a table's header row the layout left at a page end
    # (its text stays prose unless the next page's table goes on under it: ``parsing.pdf``)
    header_rows: list[PdfTable] = field(default_factory=list)


def box_area(b: Box) -> float:
    return max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1])


def intersect(a: Box, b: Box) -> Box:
    return (max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3]))


def union_box(a: Box, b: Box) -> Box:
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def grow_box(b: Box, d: float) -> Box:
    return (b[0] - d, b[1] - d, b[2] + d, b[3] + d)


def touches(a: Box, b: Box) -> bool:
    """Closed-box intersection (degenerate boxes such as lines count)."""
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


def center_in(b: Box, outer: Box) -> bool:
    cx, cy = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
    return outer[0] <= cx <= outer[2] and outer[1] <= cy <= outer[3]


def x_overlap(a: Box, b: Box) -> float:
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0]))


def as_box(r: Any) -> Box:
    return (float(r[0]), float(r[1]), float(r[2]), float(r[3]))


def clean_text(text: str) -> str:
    return normalise_ws(text.translate(LIGATURES))


def clusters(boxes: Sequence[Box], gap: float) -> list[list[int]]:
    """Groups of boxes connected by gaps smaller than ``gap`` (union-find over a grid)."""
    parent = list(range(len(boxes)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    grown = [grow_box(b, gap / 2) for b in boxes]
    cell = 40.0
    buckets: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, g in enumerate(grown):
        for gx in range(int(g[0] // cell), int(g[2] // cell) + 1):
            for gy in range(int(g[1] // cell), int(g[3] // cell) + 1):
                for j in buckets[(gx, gy)]:
                    if find(i) != find(j) and touches(g, grown[j]):
                        parent[find(i)] = find(j)
                buckets[(gx, gy)].append(i)
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(len(boxes)):
        groups[find(i)].append(i)
    return sorted(groups.values())


def text_width(page: PdfPage) -> float:
    live = [ln for ln in page.lines if not ln.drop]
    return max(ln.bbox[2] for ln in live) - min(ln.bbox[0] for ln in live) if live else 1.0


def wraps_into(prev: TextLine, line: TextLine, text_width: float) -> bool:
    """``line`` continues ``prev`` (same style, next line down) because ``prev`` is full or
    both are centred (a title set over several lines)."""
    height = prev.bbox[3] - prev.bbox[1]
    gap = line.bbox[1] - prev.bbox[3]
    if abs(prev.size - line.size) > 0.5 or prev.bold != line.bold or not -2 <= gap <= 0.6 * height:
        return False
    full = prev.bbox[2] - prev.bbox[0] >= 0.6 * text_width
    centred = (
        abs((prev.bbox[0] + prev.bbox[2]) - (line.bbox[0] + line.bbox[2])) <= 6
        and abs(prev.bbox[0] - line.bbox[0]) > 3
    )
    return full or centred
