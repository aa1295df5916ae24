"""The kind of every line of a document, decided once by the parser.

The Markdown parser walks markdown-it's block tokens (with their source line maps) and gives
each source line one kind from ``LINE_KINDS``; every block row stores the kinds of its lines
(``blocks.line_kinds``) and every chunk row the kinds of its text's lines
(``chunks.line_kinds``). Focus bundles, the extractive answerer, the identifier index and
the atomic metrics read those kinds: nothing downstream detects a fence, a table row or a
heading again, so a fix to the structure reaches every consumer at once.

Kinds, and what they mean for a reader:

=================  =======================================================================
kind               line
=================  =======================================================================
``heading``        an ATX heading (``## Options``) or the text line of a setext heading
``text``           a line of a paragraph (also inside a list item, after its first line)
``list_item``      the first line of a list item (its marker and first words)
``quote``          a line of a block quote or admonition (``> **Note:** ...``)
``table_header``   a table's header row
``table_rule``     a table's delimiter row (``|---|---|``)
``table_row``      a table's data row
``code_fence``     the opening or closing fence of a code block
``code``           a line inside a code block (blank lines inside one included)
``directive``      a MyST directive's fence (```` ```{note} ````) or a non-prose directive
``caption``        a figure caption (PDF)
``html``           raw HTML
``rule``           a thematic break, or a setext heading's underline
``blank``          an empty line outside code
=================  =======================================================================

Text that never went through the parser (an answer, a model's output, a reference passage)
is classified by :func:`markdown_line_kinds`, which runs the same parse on it.
"""

from __future__ import annotations

from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.token import Token

from edaqa_pipeline.text.markup import closes_fence

# The parser's Markdown dialect: CommonMark with raw HTML and GFM pipe tables.
MARKDOWN = MarkdownIt("commonmark", {"html": True}).enable("table")

LINE_KINDS: tuple[str, ...] = (
    "heading", "text", "list_item", "quote", "table_header", "table_rule", "table_row",
    "code_fence", "code", "directive", "caption", "html", "rule", "blank",
)  # fmt: skip
PROSE_KINDS = frozenset({"text", "list_item", "quote"})
TABLE_KINDS = frozenset({"table_header", "table_rule", "table_row"})
CODE_KINDS = frozenset({"code_fence", "code"})
# MyST directives whose body is not prose (a table of contents, raw reStructuredText)
NON_PROSE_DIRECTIVES = frozenset({"tableofcontents", "toctree", "eval-rst"})


# MyST directives whose body is code (```` ```{code-block} tcl ````): a code fence, not prose
CODE_DIRECTIVES = frozenset({"code-block", "code", "sourcecode", "code-cell"})


def _directive_name(info: str) -> str:
    info = info.strip()
    return info[1:].split("}")[0].strip().lower() if info.startswith("{") else ""


def is_directive(info: str) -> bool:
    """Whether a fence's info string opens a MyST directive of prose (```` ```{note} ````);
    a code directive (```` ```{code-block} tcl ````) is a code fence."""
    return info.strip().startswith("{") and _directive_name(info) not in CODE_DIRECTIVES


def directive_label(info: str) -> str:
    """The name of a MyST directive fence (```` ```{note} ```` -> ``note``), else ""."""
    return _directive_name(info) if is_directive(info) else ""


def fence_language(info: str) -> str:
    """The language of a code fence: ```` ```tcl ```` and ```` ```{code-block} tcl ```` -> ``tcl``."""
    words = info.strip().split()
    if words and _directive_name(words[0]) in CODE_DIRECTIVES:
        words = words[1:]
    return words[0].lower() if words else ""


def line_kinds_of_tokens(tokens: Sequence[Token], lines: Sequence[str]) -> list[str]:
    """One kind per line of ``lines`` from markdown-it's block ``tokens`` of that text
    (inner blocks decide over the blocks that hold them)."""
    kinds = ["text" if line.strip() else "blank" for line in lines]
    n = len(kinds)

    def mark(first: int, last: int, kind: str) -> None:
        for i in range(max(first, 0), min(last, n)):
            kinds[i] = kind

    open_blocks: list[str] = []
    item_starts: list[int] = []
    for tok in tokens:
        if tok.nesting == -1:
            open_blocks.pop()
            continue
        if tok.nesting == 1:
            open_blocks.append(tok.type)
        if tok.map is None:
            continue
        first, last = tok.map
        kind = tok.type
        if kind == "heading_open":
            mark(first, last, "heading")
            if tok.markup in ("=", "-"):  # setext: the underline is not heading text
                mark(last - 1, last, "rule")
        elif kind == "paragraph_open":
            mark(first, last, "quote" if "blockquote_open" in open_blocks[:-1] else "text")
        elif kind == "blockquote_open":
            mark(first, last, "quote")
        elif kind == "list_item_open":
            item_starts.append(first)
        elif kind == "fence":
            closed = last - 1 > first and closes_fence(lines[last - 1], tok.markup)
            if is_directive(tok.info):
                label = directive_label(tok.info)
                mark(first, last, "directive" if label in NON_PROSE_DIRECTIVES else "text")
                fence_kind = "directive"
            else:
                mark(first, last, "code")
                fence_kind = "code_fence"
            mark(first, first + 1, fence_kind)
            if closed:
                mark(last - 1, last, fence_kind)
        elif kind == "code_block":
            mark(first, last, "code")
        elif kind == "thead_open":
            mark(first, last, "table_header")
            mark(last, last + 1, "table_rule")
        elif kind == "tr_open" and "tbody_open" in open_blocks:
            mark(first, last, "table_row")
        elif kind == "html_block":
            mark(first, last, "html")
        elif kind == "hr":
            mark(first, last, "rule")
    for first in item_starts:
        if first < n and kinds[first] in PROSE_KINDS:
            kinds[first] = "list_item"
    for i, line in enumerate(lines):
        if not line.strip() and kinds[i] != "code":
            kinds[i] = "blank"
    return kinds


def markdown_line_kinds(text: str) -> list[str]:
    """One kind per line of ``text`` (split at ``\\n``), by the parser's own block parse."""
    lines = text.split("\n")
    return line_kinds_of_tokens(MARKDOWN.parse(text), lines)


def pdf_line_kinds(block_kind: str, text: str) -> list[str]:
    """One kind per line of a PDF block's text: the PDF parser decided the block's kind from
    the page layout, and its lines share it (a table is pipe-table text: header, delimiter,
    rows)."""
    count = text.count("\n") + 1
    if block_kind == "table":
        return ["table_header", "table_rule", *["table_row"] * (count - 2)][:count]
    kind = {"heading": "heading", "figure": "caption"}.get(block_kind, "text")
    return [kind] * count


def heading_text(line: str) -> str:
    """The words of a heading line: ATX hashes (leading and closing) removed."""
    stripped = line.strip()
    return stripped.lstrip("#").rstrip("#").strip() if stripped.startswith("#") else stripped


def heading_level(line: str) -> int:
    """The level of an ATX heading line (``### x`` -> 3); 1 for a setext heading's text."""
    stripped = line.lstrip()
    return max(1, len(stripped) - len(stripped.lstrip("#")))
