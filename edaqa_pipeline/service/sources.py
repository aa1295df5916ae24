"""The source lines behind a citation, read from what the storage root indexed.

A citation such as ``cts.md:L73-L75`` is only useful if the reader can see those lines, and
the lines must be the ones that were indexed: the corpus folder may have changed since, or
not be reachable from the server at all. The ``parsed_documents`` blocks of the storage root
keep each Markdown block's exact source lines (``raw``) with its 1-based span, so the text of
a document is rebuilt from them (an HTML page's lines are those of its indexed Markdown
rendition, and a view names the element anchor to open in the published page). Lines between blocks that the parser did not keep (blank
lines, HTML comments, link definitions) come back as empty strings, so line numbers stay
those of the file. PDF documents cite pages, not lines, and are refused.

A reader judges cited lines by what surrounds them, so a view of a citation (``view_json``)
adds up to ``CONTEXT_LINES`` lines before and after, marking which lines are the cited ones.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edaqa_pipeline.service.errors import BAD_REQUEST, NOT_FOUND, ServiceError

MAX_LINES = 200  # lines one request may read: a section, never a whole manual
CONTEXT_LINES = 5  # lines shown around cited lines
BLOCKS_TABLE = "parsed_documents"


@dataclass(frozen=True)
class SourceLines:
    """Lines ``start``..``end`` (1-based, inclusive) of ``document`` as indexed."""

    document: str
    start: int
    end: int
    lines: tuple[str, ...]
    n_lines: int  # the last indexed line of the document
    anchor: str = ""  # HTML: the element id the cited lines sit under (``cts.html#options``)

    @property
    def citation(self) -> str:
        span = f"L{self.start}" if self.start == self.end else f"L{self.start}-L{self.end}"
        return f"{self.document}:{span}"

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    @property
    def opens(self) -> str:
        """What a reader opens to see the lines in the published page: ``cts.html#options``
        for an HTML manual (its lines are those of the page's indexed rendition), else ''."""
        return f"{self.document}#{self.anchor}" if self.anchor else ""

    def to_json(self) -> dict[str, Any]:
        out = {"document": self.document, "start_line": self.start, "end_line": self.end,
               "citation": self.citation, "n_lines": self.n_lines, "lines": list(self.lines)}
        if self.opens:
            out["opens"] = self.opens
        return out


def document_lines(storage: Path, document: str) -> tuple[list[str], list[str]]:
    """The indexed text of ``document`` (Markdown, or an HTML page's rendition) as a list of
    lines (index 0 = line 1), and per line the HTML anchor of its block ('' for Markdown)."""
    from edaqa_pipeline.storage.tables import read_partitions

    blocks = read_partitions(storage / "tables", BLOCKS_TABLE, [document])
    if blocks is None or blocks.is_empty():
        raise ServiceError(f"{document!r} has no stored blocks under {storage}; re-index it",
                           status=NOT_FOUND, param="document")
    spans = blocks.filter(blocks["start_line"].is_not_null())
    if spans.is_empty():
        raise ServiceError(f"{document!r} is a PDF: its evidence cites pages, not lines",
                           param="document")
    lines = [""] * int(spans["end_line"].max())  # type: ignore[arg-type]
    anchors = [""] * len(lines)
    for start, raw, meta in spans.select("start_line", "raw", "meta").iter_rows():
        anchor = str(json.loads(meta or "{}").get("anchor", ""))
        for offset, line in enumerate(raw.split("\n")):
            lines[start - 1 + offset] = line
            anchors[start - 1 + offset] = anchor
    return lines, anchors


def check_range(document: str, start: Any, end: Any, n_lines: int) -> tuple[int, int]:
    """``(start, end)``; 400 unless 1 <= start <= end <= ``n_lines`` and the range holds at
    most ``MAX_LINES`` lines."""
    for name, value in (("start", start), ("end", end)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise ServiceError(f"'{name}' must be an integer line number", param=name)
    if not 1 <= start <= end <= n_lines:
        raise ServiceError(f"lines {start}-{end} are out of range: {document} has lines 1-{n_lines}",
                           status=BAD_REQUEST, param="start")
    if end - start + 1 > MAX_LINES:
        raise ServiceError(f"lines {start}-{end} are {end - start + 1} lines; read at most "
                           f"{MAX_LINES} at a time", param="end")
    return start, end


def context_window(start: int, end: int, n_lines: int, context: int = CONTEXT_LINES) -> tuple[int, int]:
    """The lines to show for cited lines ``start``..``end``: up to ``context`` more on each side,
    within the document and within ``MAX_LINES`` in all (the cited lines always fit)."""
    spare = max(0, MAX_LINES - (end - start + 1))
    before = min(context, start - 1, spare // 2 + spare % 2)
    after = min(context, n_lines - end, spare - before)
    return start - before, end + after


def view_json(cited: SourceLines, window: SourceLines) -> dict[str, Any]:
    """``cited``'s location and the numbered lines of ``window`` around it, each marked
    ``cited`` or not (what the answer page shows for a citation)."""
    return {**cited.to_json(), "lines": [
        {"number": number, "text": text, "cited": cited.start <= number <= cited.end}
        for number, text in enumerate(window.lines, window.start)]}
