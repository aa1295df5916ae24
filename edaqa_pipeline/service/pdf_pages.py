"""A cited PDF page as an image, with the blocks the citation rests on marked.

PDF evidence cites a page (``sheet.pdf:p3``), and a page holds many paragraphs and tables: the
reader needs to see which of them the answer rests on. The storage root keeps each PDF block's
text and bbox (``parsed_documents``); the page itself is rendered from the corpus file (the
folder ``manifest.json`` names) by pymupdf, with these blocks marked:

* the candidates are the cited chunk's blocks on that page (``chunk``: the evidence item's row
  of ``chunks`` or ``datasheet_chunks``), or every block of the page when no chunk is named;
* given a claim's text, the candidates that hold the largest share of its content words are
  marked, if that share is at least ``MIN_SHARE``: a verified claim is one sentence, table row
  or line of the evidence, so it comes from one block. Otherwise the cited chunk's blocks are
  marked (none without a chunk): the item the claim cites, if not the exact place.

The corpus file may have changed since it was indexed. A marked block whose words are no
longer in the page's text at its bbox refuses the page (409: re-index) rather than marking the
wrong place; a file that is gone is a 404 that says so (the index still answers from its text).
"""

from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edaqa_pipeline.service.errors import CONFLICT, NOT_FOUND, ServiceError
from edaqa_pipeline.service.sources import BLOCKS_TABLE

ZOOM = 2.0  # 144 dpi: table digits stay legible
MAX_PIXELS = 6_000_000  # an oversized page is rendered smaller, never larger than this
MIN_SHARE = 0.5  # of a claim's content words a block must hold to be its block
STILL_THERE = 0.8  # of a marked block's words the file's text at its bbox must still hold
MAX_CLAIM_PARAM_CHARS = 2000
CHUNK_TABLES = ("chunks", "datasheet_chunks")
FILL, EDGE = (1.0, 0.84, 0.0), (0.85, 0.4, 0.0)  # amber mark, darker outline
PAD = 2.0  # points around a marked block
_RENDER_LOCK = threading.Lock()  # MuPDF is not safe to call from several threads at once


@dataclass(frozen=True)
class PageImage:
    """A rendered page: PNG bytes, its size and the marked blocks, all in PNG pixels."""

    png: bytes
    width: int
    height: int
    boxes: tuple[tuple[float, float, float, float], ...]


def corpus_root(storage: Path) -> Path:
    """The corpus folder ``storage`` was indexed from, as its ``manifest.json`` records it."""
    try:
        corpus = json.loads((storage / "manifest.json").read_text()).get("corpus")
    except (OSError, ValueError, AttributeError):
        corpus = None
    if not isinstance(corpus, str) or not corpus:
        raise ServiceError(f"{storage}/manifest.json names no corpus folder: PDF pages cannot be "
                           "shown", status=NOT_FOUND, param="document")
    return Path(corpus)


def page_blocks(storage: Path, document: str, page: int) -> list[dict[str, Any]]:
    """The indexed blocks (``block_id``, ``text``, ``bbox``) on ``page`` of PDF ``document``."""
    import polars as pl

    from edaqa_pipeline.storage.tables import read_partitions

    blocks = read_partitions(storage / "tables", BLOCKS_TABLE, [document])
    if blocks is None or blocks.is_empty():
        raise ServiceError(f"{document!r} has no stored blocks under {storage}; re-index it",
                           status=NOT_FOUND, param="document")
    if blocks["page"].is_null().all():
        raise ServiceError(f"{document!r} is Markdown: its evidence cites lines, not pages",
                           param="document")
    on_page = blocks.filter((pl.col("page") == page) & pl.col("bbox").is_not_null())
    return on_page.select("block_id", "text", "bbox").to_dicts()


def chunk_blocks(storage: Path, document: str, chunk: str) -> set[str]:
    """The block ids of ``chunk``, a row of ``chunks`` or ``datasheet_chunks`` of ``document``."""
    import polars as pl

    from edaqa_pipeline.storage.tables import read_partitions

    for table in CHUNK_TABLES:
        rows = read_partitions(storage / "tables", table, [document])
        if rows is not None and "block_ids" in rows.columns:
            hit = rows.filter(pl.col("chunk_id") == chunk)
            if hit.height:
                return set(hit["block_ids"][0])
    raise ServiceError(f"{chunk!r} is not a chunk of {document}", status=NOT_FOUND, param="chunk")


def _share(terms: set[str], text: str) -> float:
    from edaqa_pipeline.text.tokens import content_terms

    return len(terms & set(content_terms(text))) / len(terms) if terms else 0.0


def marked_blocks(blocks: list[dict[str, Any]], chunk: set[str] | None,
                  claim: str = "") -> list[dict[str, Any]]:
    """The blocks to mark for a citation (module docstring): of ``blocks`` (one page's), those
    of ``chunk`` (block ids; None = any), narrowed to the ones that hold ``claim``."""
    from edaqa_pipeline.text.tokens import content_terms

    candidates = [b for b in blocks if chunk is None or b["block_id"] in chunk]
    terms = set(content_terms(claim))
    if terms and candidates:
        shares = [_share(terms, b["text"]) for b in candidates]
        best = max(shares)
        if best >= MIN_SHARE:
            return [b for b, share in zip(candidates, shares, strict=True) if share == best]
    return candidates if chunk is not None else []


def check_page(page: Any) -> int:
    """``page`` as a 1-based page number, or ``ServiceError`` (400)."""
    if isinstance(page, str) and page.isascii() and page.isdigit() and len(page) < 7:  # not "²"
        page = int(page)
    if not isinstance(page, int) or isinstance(page, bool) or page < 1:
        raise ServiceError("'page' must be a page number (1 or more)", param="page")
    return page


def render_page(storage: Path, document: str, page: Any, chunk: str | None = None,
                claim: str = "") -> PageImage:
    """``page`` of indexed PDF ``document`` as a PNG with the cited blocks marked (module
    docstring); ``document`` must already be checked to be indexed."""
    from edaqa_pipeline.corpus.releases import ReleaseError, Releases
    from edaqa_pipeline.corpus.scan import UnsafePathError, resolve_key

    page = check_page(page)
    if not isinstance(claim, str) or len(claim) > MAX_CLAIM_PARAM_CHARS:
        raise ServiceError(f"'claim' must be a text of at most {MAX_CLAIM_PARAM_CHARS} characters",
                           param="claim")
    blocks = page_blocks(storage, document, page)
    mark = marked_blocks(blocks, chunk_blocks(storage, document, chunk) if chunk else None, claim)
    try:
        releases = Releases.load(storage)
        root = releases.get(releases.release_of(document) or "").root if releases else corpus_root(storage)
        path = releases.path_of(document) if releases else resolve_key(root, document)
    except (UnsafePathError, ReleaseError) as exc:
        raise ServiceError(str(exc), status=NOT_FOUND, param="document") from None
    if not path.is_file():
        raise ServiceError(f"{document} is no longer in the corpus folder {root}: its pages "
                           "cannot be shown (answers still cite its indexed text)",
                           status=NOT_FOUND, param="document")
    with _RENDER_LOCK:
        return _render(path, document, page, bool(blocks), mark)


def _render(path: Path, document: str, page: int, indexed: bool,
            mark: list[dict[str, Any]]) -> PageImage:
    import pymupdf

    changed = ServiceError(f"{document} has changed since it was indexed: re-index it to see "
                           "its cited pages", status=CONFLICT, param="document")
    try:
        pdf = pymupdf.open(path)
    except Exception as exc:  # pymupdf raises its own types for unreadable files
        raise changed from exc
    with pdf:
        if page > pdf.page_count:
            if indexed:
                raise changed
            raise ServiceError(f"page {page} is out of range: {document} has pages "
                               f"1-{pdf.page_count}", param="page")
        sheet = pdf[page - 1]
        origin = sheet.rect
        rects = [_padded(b["bbox"]) for b in mark]
        for block, rect in zip(mark, rects, strict=True):
            if _share(_terms(block["text"]), sheet.get_textbox(rect)) < STILL_THERE:
                raise changed
        for rect in rects:
            sheet.draw_rect(rect, color=EDGE, fill=FILL, width=1.2, fill_opacity=0.3, overlay=True)
        zoom = min(ZOOM, math.sqrt(MAX_PIXELS / max(1.0, origin.width * origin.height)))
        pixmap = sheet.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False)
        boxes = tuple((round((r.x0 - origin.x0) * zoom, 1), round((r.y0 - origin.y0) * zoom, 1),
                       round((r.x1 - origin.x0) * zoom, 1), round((r.y1 - origin.y0) * zoom, 1))
                      for r in rects)
        return PageImage(pixmap.tobytes("png"), pixmap.width, pixmap.height, boxes)


def _padded(bbox: list[float]) -> Any:
    import pymupdf

    x0, y0, x1, y1 = bbox
    return pymupdf.Rect(x0 - PAD, y0 - PAD, x1 + PAD, y1 + PAD)


def _terms(text: str) -> set[str]:
    from edaqa_pipeline.text.tokens import content_terms

    return set(content_terms(text))
