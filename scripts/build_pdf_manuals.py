"""Render a corpus folder of Markdown manuals to PDF with real text layout: one PDF per manual
and all of them as one book, each with a bookmark per heading.

Markdown goes to HTML with the parser's own dialect (markdown-it, GFM tables), HTML to pages
with pymupdf's Story API (A5 by default, 11 pt body text, ruled tables with header rows, monospaced code
blocks). Every block and table row of the HTML carries its Markdown line as an element id,
so the layout reports the page and rectangle each line landed on. ``OUT/<corpus>.line_map.json``
maps every manual to its PDF (``OUT/manuals/<corpus>/``) and ``[markdown line, page, x0, y0,
x1, y1]`` rows, the form ``benchmarks/format_parity.py`` reads; ``OUT/book.line_map.json`` does
the same for ``OUT/book/book.pdf``, which holds every manual of every ``--corpus`` in order.

    .venv/bin/python scripts/build_pdf_manuals.py --corpus ../shared/corpus/openroad-2024 \\
        --corpus ../shared/corpus/openroad --out /tmp/pdfs

The PDFs are a test corpus built from what the repo already reads: never commit them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pymupdf

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PAGE = pymupdf.paper_rect("a5")  # --paper
WHERE = PAGE + (56, 56, -56, -56)  # noqa: RUF005 (a pymupdf Rect plus a tuple moves its edges)
CSS = """
body { font-family: sans-serif; font-size: 11pt; line-height: 1.35; }
h1 { font-size: 20pt; margin-top: 12pt; } h2 { font-size: 16pt; margin-top: 10pt; }
h3 { font-size: 13pt; } h4, h5, h6 { font-size: 11pt; }
pre { font-family: monospace; font-size: 9pt; background-color: #f4f4f4; white-space: pre-wrap; }
code { font-family: monospace; }
table { border-collapse: collapse; } th, td { border: 1px solid #444; padding: 2pt; font-size: 9pt; }
th { font-weight: bold; }
"""
LINE_ID = "L"  # element ids: L<line> (per manual) or <n>L<line> (book: n = manual number)


def manuals(corpus: Path) -> list[Path]:
    return [p for p in sorted(corpus.rglob("*.md"))
            if not any(part.startswith(".") for part in p.relative_to(corpus).parts)
            and p.name.upper() not in ("SOURCE.MD", "SOURCES.MD")]


MAX_PART_PAGES = 400  # one manual; more means the layout cannot place something
TABLE_PART_CHARS = 900  # a table is set in parts of about this much text, the header repeated
CELL_CHAR_PT = 5.4  # width of a 9 pt monospaced character, the widest text a cell sets
CELL_PADDING_PT = 6  # a cell's padding and rules
LINE_BREAK = "\ue000"  # stands for <br> in token text until the HTML is rendered


def _split_tables(tokens: list[Any]) -> list[Any]:
    """Long tables as several tables, each under the header row, as printed manuals set them:
    a Story table never breaks across pages, so one taller than a page could not be placed."""
    out: list[Any] = []
    i = 0
    while i < len(tokens):
        if tokens[i].type != "table_open":
            out.append(tokens[i])
            i += 1
            continue
        close = next(j for j in range(i, len(tokens)) if tokens[j].type == "table_close")
        table = tokens[i:close + 1]
        head_end = next(j for j, t in enumerate(table) if t.type == "thead_close")
        head = table[1:head_end + 1]
        rows: list[list[Any]] = []
        for token in table[head_end + 1:]:
            if token.type == "tr_open":
                rows.append([])
            if rows and token.type not in ("tbody_open", "tbody_close", "table_close"):
                rows[-1].append(token)
        parts: list[list[list[Any]]] = [[]]
        size = 0
        for row in rows:
            length = sum(len(t.content) for t in row if t.type == "inline")
            if parts[-1] and size + length > TABLE_PART_CHARS:
                parts.append([])
                size = 0
            parts[-1].append(row)
            size += length
        body_open = next((t for t in table if t.type == "tbody_open"), None)
        body_close = next((t for t in table if t.type == "tbody_close"), None)
        for part in parts:
            out += [table[0], *head]
            if body_open is not None and part:
                out += [body_open, *[t for row in part for t in row], body_close]
            out.append(table[-1])
        i = close + 1
    return out


def _break_long_words(text: str, limit: int) -> str:
    """``text`` with a line break after an underscore in every word longer than ``limit``
    characters, where a letter or digit stands on both sides ("-branching_point_" /
    "buffers_distance"), the last such underscore that keeps the piece within the limit. A
    Story table cell never breaks inside a word, so a long option name widened its column until
    the table ran past the page edge and the text beyond it was not drawn. Only underscores:
    the parser joins a name broken there (``parsing.dehyphenation``), and a word with no such
    underscore is left whole."""
    def cut_at(word: str) -> int:
        return max((i for i in range(1, min(limit, len(word) - 1))
                    if word[i] == "_" and word[i - 1].isalnum() and word[i + 1].isalnum()), default=-1)

    def pieces(word: str) -> str:
        out = []
        while len(word) > limit and (cut := cut_at(word)) > 0:
            out.append(word[:cut + 1])
            word = word[cut + 1:]
        return LINE_BREAK.join([*out, word])

    return " ".join(pieces(word) for word in text.split(" "))


def _breakable_cells(tokens: list[Any]) -> None:
    """Long words of every table cell made breakable (``_break_long_words``), the limit set by
    the column count (the header row's cells, counted before any cell is read): the page's
    text width shared evenly between the columns."""
    columns = 0  # of the table being read; 0 outside tables
    for i, token in enumerate(tokens):
        if token.type == "table_open":
            head_end = next(j for j in range(i, len(tokens)) if tokens[j].type in ("thead_close", "table_close"))
            columns = sum(1 for t in tokens[i:head_end] if t.type == "th_open") or 1
        elif token.type == "table_close":
            columns = 0
        elif token.type == "inline" and columns and token.children:
            limit = max(8, int((WHERE.width / columns - CELL_PADDING_PT) / CELL_CHAR_PT))
            for child in token.children:
                if child.type in ("text", "code_inline"):
                    child.content = _break_long_words(child.content, limit)


def to_html(text: str, prefix: str) -> str:
    """The manual as HTML whose block elements and table rows have id ``<prefix>L<line>``."""
    from edaqa_pipeline.parsing.lines import MARKDOWN

    tokens = MARKDOWN.parse(text)
    for token in tokens:
        if token.map and token.nesting >= 0 and token.type not in ("inline",):
            token.attrSet("id", f"{prefix}{LINE_ID}{token.map[0] + 1}")
    _breakable_cells(tokens)
    html = MARKDOWN.renderer.render(_split_tables(tokens), MARKDOWN.options, {})
    return html.replace(LINE_BREAK, "<br>")


def render(chunks: list[tuple[str, str]], out: Path) -> dict[str, list[list[float]]]:
    """Lay ``(prefix, html)`` parts out into one PDF at ``out``; {element id: [page, rect]}.
    Each part starts on a new page; headings become bookmarks."""
    writer = pymupdf.DocumentWriter(str(out))
    positions: dict[str, list[float]] = {}
    toc: list[list[Any]] = []
    page = 0

    def record(pos: Any) -> None:
        if pos.open_close & 1 == 0:
            return
        if pos.heading:
            toc.append([pos.heading, pos.text.strip() or "(untitled)", pos.page + 1])
        if pos.id and pos.id not in positions:
            positions[pos.id] = [pos.page + 1, *[round(v, 1) for v in pos.rect]]

    for prefix, part in chunks:
        story = pymupdf.Story(html=part, user_css=CSS)
        more = True
        first = page
        while more:
            if page - first > MAX_PART_PAGES:
                raise SystemExit(f"part {prefix or out.name} does not fit in {MAX_PART_PAGES} pages: "
                                 "an element taller than a page?")
            device = writer.begin_page(PAGE)
            more, _ = story.place(WHERE)
            story.element_positions(record, {"page": page})
            story.draw(device)
            writer.end_page()
            page += 1
    writer.close()
    doc = pymupdf.open(str(out))
    levels_ok: list[list[Any]] = []
    for level, title, number in toc:  # an outline may not skip levels downwards
        top = levels_ok[-1][0] + 1 if levels_ok else 1
        levels_ok.append([min(level, top), title, number])
    doc.set_toc(levels_ok)
    doc.save(str(out) + ".tmp", garbage=3, deflate=True)
    doc.close()
    Path(str(out) + ".tmp").replace(out)
    return positions


def line_rows(positions: dict[str, list[float]], prefix: str) -> list[list[float]]:
    rows = []
    for element, where in positions.items():
        if element.startswith(prefix + LINE_ID) and element[len(prefix) + 1:].isdigit():
            rows.append([int(element[len(prefix) + 1:]), *where])
    return sorted(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, action="append", required=True,
                        help="folder of Markdown manuals (repeat: the book holds them all)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--paper", default="a5", help="page size (pymupdf.paper_rect name)")
    parser.add_argument("--no-book", action="store_true", help="per-manual PDFs only")
    args = parser.parse_args(argv)
    global PAGE, WHERE
    PAGE = pymupdf.paper_rect(args.paper)
    WHERE = PAGE + (56, 56, -56, -56)  # noqa: RUF005 (2 cm margins)
    parts, book_sources = [], []
    for corpus in args.corpus:
        per_manual: dict[str, Any] = {}
        total_pages = 0
        folder = args.out / "manuals" / corpus.name
        for path in manuals(corpus):
            rel = path.relative_to(corpus).as_posix()
            text = path.read_text(encoding="utf-8")
            target = folder / (rel[:-3] + ".pdf")
            target.parent.mkdir(parents=True, exist_ok=True)
            positions = render([("", to_html(text, ""))], target)
            per_manual[rel] = {"pdf": rel[:-3] + ".pdf", "lines": line_rows(positions, "")}
            with pymupdf.open(str(target)) as doc:
                total_pages += doc.page_count
            prefix = f"m{len(parts)}"
            parts.append((prefix, to_html(text, prefix)))
            book_sources.append(f"{corpus.name}/{rel}")
        (args.out / f"{corpus.name}.line_map.json").write_text(json.dumps(per_manual, sort_keys=True))
        print(f"{corpus.name}: {len(per_manual)} manuals -> {total_pages} pages in {folder}")
    if not args.no_book:
        book = args.out / "book" / "book.pdf"
        book.parent.mkdir(parents=True, exist_ok=True)
        positions = render(parts, book)
        book_map = {source: {"pdf": "book.pdf", "lines": line_rows(positions, prefix)}
                    for source, (prefix, _) in zip(book_sources, parts, strict=True)}
        (args.out / "book.line_map.json").write_text(json.dumps(book_map, sort_keys=True))
        with pymupdf.open(str(book)) as doc:
            print(f"book: {len(parts)} manuals, {doc.page_count} pages, {len(doc.get_toc())} bookmarks, "
                  f"{book.stat().st_size / (1 << 20):.1f} MiB -> {book}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
