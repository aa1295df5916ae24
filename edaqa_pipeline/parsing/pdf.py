"""PDF parser: the text layer of a datasheet or specification -> a document row and blocks.

Why it is built this way (each pass has its module):

* ``pdf_page``: one read of each page into records -- visual text lines with font size and
  boldness, visible drawings as stroke counts, images;
* ``pdf_tables``: EDA datasheets keep their facts in ruled tables (limits, pin lists, register
  maps); each table becomes ONE ``table`` block whose text is a Markdown pipe table
  (``text.markup.pipe_table``: header row, delimiter, one line per row), the shape Markdown and
  HTML tables have, so that a question about a maximum meets the whole row together with its
  header and an answer quotes a readable row, never CSV;
* ``pdf_unruled``: tables drawn without ruling lines (columns of aligned, mostly numeric cells)
  are found by layout analysis of the text lines and become ``table`` blocks too (meta
  ``ruling: "none"``);
* ``pdf_figures``: raster images and vector art become ``figure`` blocks with their caption;
  their labels leave the prose;
* ``pdf_headers``: running headers and footers are dropped; headings, paragraphs and lists are
  recognised; ``dehyphenation`` rejoins words split at line ends.

Every refusal is a ``DocumentError`` naming the document and the problem (not a PDF,
encrypted, no pages, no text layer), and ids are content-derived (``stable_id``): parsing the
same bytes twice gives identical rows.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from itertools import pairwise
from typing import Any

import pymupdf

from edaqa_pipeline.model import normalise_ws, sha256_bytes, stable_id
from edaqa_pipeline.parsing.dehyphenation import join_lines, vocabulary
from edaqa_pipeline.parsing.errors import DocumentError
from edaqa_pipeline.parsing.lines import pdf_line_kinds
from edaqa_pipeline.parsing.pdf_figures import attach_figure_text
from edaqa_pipeline.parsing.pdf_headers import (
    Run,
    body_size,
    cover_title,
    demote_heading_lists,
    drop_running_lines,
    heading_kind,
    heading_levels,
    paragraph_runs,
    run_text,
)
from edaqa_pipeline.parsing.pdf_layout import Box, PdfPage, center_in, clean_text, grow_box
from edaqa_pipeline.parsing.pdf_limits import PdfLimits, page_time_bound
from edaqa_pipeline.parsing.pdf_outline import apply_outline, outline_levels
from edaqa_pipeline.parsing.pdf_page import scan_page
from edaqa_pipeline.parsing.pdf_tables import table_captions
from edaqa_pipeline.text.markup import pipe_table

# metadata titles that are not titles: empty, placeholders, notices, file names
_JUNK_TITLE = re.compile(
    r"^$|^<?(?:untitled|title|document|slide \d+)>?$|^(?:copyright|©|\(c\)|microsoft word)"
    r"|\.(?:docx?|odt|rtf|tex|dvi|pdf|indd)$",
    re.IGNORECASE,
)

Element = tuple[int, Box, str, str, int, dict[str, Any]]  # page, box, kind, text, level, meta


def _open(data: bytes, document: str) -> pymupdf.Document:
    if not data:
        raise DocumentError(document, "not a readable PDF: the file is empty")
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:  # FileDataError, RuntimeError, ... depending on the damage
        reason = normalise_ws(f"{exc} ({exc.__cause__})" if exc.__cause__ else str(exc))
        raise DocumentError(document, f"not a readable PDF: {reason}") from exc
    if not doc.is_pdf:  # pymupdf sniffs the content: HTML, XPS, images open as other formats
        kind = (doc.metadata or {}).get("format") or "another format"
        doc.close()
        raise DocumentError(document, f"not a readable PDF: the content is {kind}, not PDF")
    if doc.needs_pass:
        doc.close()
        raise DocumentError(document, "PDF is encrypted (password required); decrypt it first")
    if doc.page_count == 0:
        doc.close()
        raise DocumentError(document, "not a readable PDF: it has no pages")
    return doc


def _scan(data: bytes, document: str, limits: PdfLimits) -> tuple[list[PdfPage], str, list[dict[str, Any]]]:
    """Every readable page scanned (one pymupdf page open at a time), the metadata title, and
    the pages that could not be read (page, error): a damaged page, or one that took longer
    than ``limits.page_seconds``, is left out and reported, and the rest of the file indexes."""
    doc = _open(data, document)
    try:
        if doc.page_count > limits.max_pages:
            raise DocumentError(document, f"PDF has {doc.page_count} pages, more than the limit of "
                                          f"{limits.max_pages} (raise EDAQA_MAX_PDF_PAGES to index it)")
        metadata_title = clean_text((doc.metadata or {}).get("title") or "")
        outline = doc.get_toc(simple=True)
        pages: list[PdfPage] = []
        failed: list[dict[str, Any]] = []
        for number in range(doc.page_count):
            try:
                with page_time_bound(limits.page_seconds):
                    scanned = scan_page(doc.load_page(number), number)
                pages.append(scanned)  # only a page that finished within the bound
            except Exception as exc:  # a damaged content stream, an unsupported object, ...
                reason = normalise_ws(str(exc)) or type(exc).__name__
                failed.append({"page": number + 1, "error": reason})
    finally:
        doc.close()
    if not pages:
        first = failed[0] if failed else {"page": 1, "error": "unknown"}
        raise DocumentError(document, f"no page could be read (page {first['page']}: {first['error']})")
    if not any(p.sizes for p in pages):
        raise DocumentError(document, "PDF has no text layer (scanned images?); OCR is not configured")
    if outline:
        apply_outline(pages, outline)
    return pages, metadata_title, failed


def _headings(page_runs: list[tuple[PdfPage, list[Run]]], body: float) -> dict[int, int]:
    """Heading level per heading run (keyed by ``id(run)``), from font size, weight and
    numbering; where the PDF has an outline that fits its text (``pdf_outline``), the lines it
    names are headings at its levels, whatever their font, and a line it does not name that is
    a heading only by its size is one only below the outline's deepest level: an outline that
    fits names every heading down to that level, so such a line is a paragraph set large (a
    one-line paragraph at a page end, in a manual whose tables and code make the body size
    small). Bold run-in labels the outline does not list ("RULE 3.05", glossary terms) stay."""
    flat = [run for _, runs in page_runs for run in runs]
    kinds = demote_heading_lists(flat, [heading_kind(run, body) for run in flat])
    headings = [
        run
        for i, run in enumerate(flat)
        # a bold line is a heading when the next one is not bold as well (a list in bold)
        if kinds[i] == "size" or (kinds[i] == "bold" and (i + 1 == len(flat) or kinds[i + 1] != "bold"))
    ]
    fonts = heading_levels(headings)
    outline = outline_levels(page_runs)
    if not outline:
        return fonts
    deepest = max(outline.values())
    by_size = {id(run) for i, run in enumerate(flat) if kinds[i] == "size"}
    kept = {run: level for run, level in fonts.items() if level > deepest or run not in by_size}
    return {**kept, **outline}


def _left_header_rows(pages: list[PdfPage]) -> dict[int, list[str]]:
    """The header row a table left at the end of the page before, keyed by ``id(table)``.

    The layout may set a table's header row as the last thing on a page and its rows on the
    next: a one-row grid (``PdfPage.header_rows``) below every live line of its page, holding
    live words (a ruled running footer's were dropped as running lines), and the next page
    starting with a table of as many columns and no caption. Its lines then leave the prose
    (they are the table's header, not a paragraph)."""
    carried: dict[int, list[str]] = {}
    for before, page in pairwise(pages):
        if not before.header_rows or not page.tables or page.number != before.number + 1:
            continue
        stub = max(before.header_rows, key=lambda t: t.bbox[3])
        first = min(page.tables, key=lambda t: t.bbox[1])
        live = [ln for ln in before.lines if not ln.drop]
        if (first.caption or len(first.rows[0]) != len(stub.rows[0]) or first.rows[0] == stub.rows[0]
                or any(ln.bbox[1] > stub.bbox[3] for ln in live)
                or any(t.bbox[1] > stub.bbox[3] for t in before.tables)
                or any(ln.bbox[3] < first.bbox[1] for ln in page.lines if not ln.drop)):
            continue
        inside = [ln for ln in live if center_in(ln.bbox, grow_box(stub.bbox, 1))]
        if not inside:
            continue  # its words were dropped as a running footer: a ruled footer, no header
        for ln in inside:
            ln.drop = True
        carried[id(first)] = stub.rows[0]
    return carried


def _continued_tables(page_runs: list[tuple[PdfPage, list[Run]]],
                      carried: dict[int, list[str]]) -> dict[int, list[str]]:
    """The header each continued table inherits, keyed by ``id(table)``.

    A table the layout broke at a page end goes on at the top of the next page without its
    header row, so that page's rows would read under a data row. A table continues the one
    before when it is the first thing on its page, the previous page ends with a table of the
    same number of columns, it has no caption of its own (a caption starts a new table) and
    its first row is not that header again. ``carried``: the headers already found
    (:func:`_left_header_rows`), extended here."""
    carried = dict(carried)
    for (before, before_runs), (page, runs) in pairwise(page_runs):
        if not before.tables or not page.tables or page.number != before.number + 1:
            continue
        last = max(before.tables, key=lambda t: t.bbox[3])
        first = min(page.tables, key=lambda t: t.bbox[1])
        header = carried.get(id(last), last.rows[0])
        if (id(first) in carried or first.caption or len(first.rows[0]) != len(header)
                or first.rows[0] == header
                or any(r.bbox[1] > last.bbox[3] for r in before_runs)
                or any(r.bbox[3] < first.bbox[1] for r in runs)
                or any(f.bbox[1] > last.bbox[3] for f in before.figures)
                or any(f.bbox[3] < first.bbox[1] for f in page.figures)):
            continue
        carried[id(first)] = header
    return carried


def _cell_texts(row: list[str], vocab: set[str]) -> list[str]:
    """A table row's cells, each cell's lines joined as cell text (``join_lines``)."""
    return [join_lines(cell.split("\n"), vocab, cell=True) for cell in row]


def _elements(page: PdfPage, runs: list[Run], levels: dict[int, int], vocab: set[str],
              carried: dict[int, list[str]]) -> list[Element]:
    """The page's headings, paragraphs, tables and figures in reading order (top, then left)."""
    items: list[tuple[Box, str, str, int, dict[str, Any]]] = []
    for run in runs:
        if id(run) in levels:
            heading = join_lines((ln.text for ln in run.lines), vocab)  # wrapped: "OpenROAD-" / "flow"
            items.append((run.bbox, "heading", heading, levels[id(run)], {}))
        else:
            kind, text = run_text(run, vocab)
            items.append((run.bbox, kind, text, 0, {}))
    for table in page.tables:
        rows = [_cell_texts(row, vocab) for row in table.rows]
        meta: dict[str, Any] = {}
        if id(table) in carried:  # its rows read under the header of the page before
            rows = [_cell_texts(carried[id(table)], vocab), *rows]
            meta["continued"] = page.number  # the 1-based number of the page it goes on from
        meta.update({"header": rows[0], "n_rows": len(rows) - 1})
        if table.caption:
            meta["caption"] = join_lines(table.caption.split("\n"), vocab)
        if not table.ruled:
            meta["ruling"] = "none"
        items.append((table.bbox, "table", pipe_table(rows), 0, meta))
    for fig in page.figures:
        meta = {"source": fig.source}
        if fig.caption:
            meta["caption"] = fig.caption
        if fig.labels:
            meta["labels"] = fig.labels
        items.append((fig.bbox, "figure", fig.caption, 0, meta))
    items.sort(key=lambda it: (round(it[0][1], 1), round(it[0][0], 1)))
    return [(page.number + 1, *item) for item in items]


def _blocks(elements: list[Element], document: str) -> list[dict[str, Any]]:
    """Block rows with section paths and content-derived ids."""
    blocks: list[dict[str, Any]] = []
    section: list[tuple[int, str]] = []
    seen: Counter[tuple[int, str, str]] = Counter()
    for page_no, box, kind, text, level, meta in elements:
        if kind == "heading":
            while section and section[-1][0] >= level:
                section.pop()
            section.append((level, text))
        norm = normalise_ws(text)
        dup = seen[(page_no, kind, norm)]
        seen[(page_no, kind, norm)] += 1
        blocks.append({
            "block_id": stable_id("blk", document, kind, norm, page_no, dup),
            "document": document, "ordinal": len(blocks), "kind": kind,
            "section_path": [h for _, h in section], "heading_level": level, "language": "",
            "text": text, "raw": text, "start_line": None, "end_line": None, "page": page_no,
            "bbox": [round(v, 2) for v in box],
            "meta": json.dumps(meta, sort_keys=True, ensure_ascii=False),
            "line_kinds": pdf_line_kinds(kind, text),
        })
    return blocks


def parse_pdf(data: bytes, document: str,
              limits: PdfLimits | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Returns (document_row matching DOCUMENTS_SCHEMA, block rows matching BLOCKS_SCHEMA).

    Blocks come in reading order per page (top to bottom, then left to right); kinds are
    heading, paragraph, list, ordered_list, table (pipe-table text, meta header / n_rows / caption,
    ``ruling: "none"`` for an unruled table, ``continued``: the page it began on, when it goes
    on from a page break and repeats that header) and figure (caption text, meta source / caption /
    labels). Raises ``DocumentError`` for input that is not a readable, unencrypted PDF with a
    text layer, or has more pages than ``limits.max_pages``; the document row's
    ``failed_pages`` lists the pages left out (page, error).
    """
    pages, metadata_title, failed_pages = _scan(data, document, limits or PdfLimits())
    drop_running_lines(pages)
    left_headers = _left_header_rows(pages)
    cover = cover_title(pages[0])
    for page in pages:
        attach_figure_text(page)
        table_captions(page)
    body = body_size(pages)
    vocab = vocabulary(pages)
    page_runs = [(page, paragraph_runs(page, body)) for page in pages]
    levels = _headings(page_runs, body)
    carried = _continued_tables(page_runs, left_headers)
    elements = [e for page, runs in page_runs for e in _elements(page, runs, levels, vocab, carried)]
    blocks = _blocks(elements, document)
    title = "" if _JUNK_TITLE.search(metadata_title) else metadata_title
    title = title or cover or next((b["text"] for b in blocks if b["kind"] == "heading"), document)
    doc_row = {
        "document": document, "format": "pdf", "source_sha256": sha256_bytes(data),
        "n_bytes": len(data), "n_lines": 0, "n_pages": len(pages) + len(failed_pages), "title": title,
        "failed_pages": json.dumps(failed_pages, ensure_ascii=False),
    }
    return doc_row, blocks
