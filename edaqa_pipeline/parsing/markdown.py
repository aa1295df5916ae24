"""Deterministic Markdown parser: source bytes -> document row + typed blocks with line spans.

Why markdown-it-py: it is a CommonMark-compliant, well-kept parser that reports the source
line range of every block token, so every block we emit keeps an exact 1-based line span for
citations, and edge cases (tilde fences, closing heading hashes, lazy continuation lines,
unterminated fences) follow the spec instead of ad-hoc regexes. GFM pipe tables are enabled.

The parser is where formatting variants are absorbed: a UTF-8 BOM is dropped, CRLF becomes LF,
heading text loses closing hashes, a code block's content excludes its fence markers, so two
equivalent sources give blocks with the same content (only line numbers may differ).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from markdown_it.token import Token

from edaqa_pipeline.model import normalise_ws, sha256_bytes, stable_id
from edaqa_pipeline.parsing.errors import DocumentError
from edaqa_pipeline.parsing.lines import (
    MARKDOWN,
    NON_PROSE_DIRECTIVES,
    directive_label,
    fence_language,
    is_directive,
    line_kinds_of_tokens,
)
from edaqa_pipeline.text.markup import closes_fence

# a MyST directive's options: ":caption: ..." lines, or a YAML block between "---" lines
_DIRECTIVE_OPTIONS = re.compile(r"\A(?:(?:[ \t]*:[\w-]+:.*(?:\n|\Z))+|---[ \t]*\n(?:.*\n)*?---[ \t]*(?:\n|\Z))\n?")
_QUOTE_MARKERS = re.compile(r"^[ \t]*(?:>[ \t]?)+")
_BARE_MARKER = re.compile(r"\s*(?:[-+*]|\d{1,9}[.)])\s*")
_ADMONITION = re.compile(
    r"^\s*>\s*(?:\[!(?P<gh>[A-Za-z]+)\]|\*\*(?P<bold>[A-Za-z ]+?):?\*\*:?|(?P<plain>Note|Warning|Caution|Important|Tip):)",
)


def decode_markdown(data: bytes, document: str) -> str:
    """Decode a Markdown file's bytes, refusing input that is not Markdown text.

    Empty files, binary content (NUL bytes) and invalid UTF-8 raise ``DocumentError`` naming
    the document and the offending byte offset; a UTF-8 BOM is removed and line endings are
    normalised to LF.
    """
    if not data.strip():
        raise DocumentError(document, "file is empty (no Markdown content)")
    head = data[:8192]
    if b"\x00" in head:
        offset = head.index(b"\x00")
        raise DocumentError(document, f"binary content: NUL byte at offset {offset}; not a text file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentError(
            document,
            f"invalid UTF-8 at byte {exc.start} ({data[exc.start:exc.start + 1]!r}): {exc.reason}; "
            "re-encode the file as UTF-8",
        ) from None
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise DocumentError(document, "file is empty (no Markdown content)")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _span(lines: list[str], token_map: list[int] | None) -> tuple[int, int]:
    """1-based inclusive line span of a token map, trailing blank lines trimmed."""
    assert token_map is not None
    start, end = token_map[0], token_map[1]
    while end - 1 > start and not lines[end - 1].strip():
        end -= 1
    return start + 1, end


def _inline_text(token: Token) -> str:
    return token.content.strip()


def _close_index(tokens: list[Token], open_index: int) -> int:
    """Index of the token closing the block opened at ``open_index``."""
    depth = 0
    for i in range(open_index, len(tokens)):
        depth += tokens[i].nesting
        if depth == 0:
            return i
    return len(tokens) - 1


def _table_header(tokens: list[Token]) -> list[str]:
    header: list[str] = []
    in_head = False
    for tok in tokens:
        if tok.type == "thead_open":
            in_head = True
        elif tok.type == "thead_close":
            break
        elif in_head and tok.type == "inline":
            header.append(tok.content.strip())
    return header


def _images(tokens: list[Token]) -> list[dict[str, str]]:
    found = []
    for tok in tokens:
        for child in tok.children or []:
            if child.type == "image":
                found.append({"src": str(child.attrGet("src") or ""), "alt": child.content})
    return found


def parse_markdown(data: bytes, document: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Parse Markdown bytes into a document row and block rows (see ``BLOCKS_SCHEMA``)."""
    text = decode_markdown(data, document)
    lines = text.split("\n")
    tokens = MARKDOWN.parse(text)
    kinds = line_kinds_of_tokens(tokens, lines)
    blocks: list[dict[str, Any]] = []
    section: list[tuple[int, str]] = []  # (level, heading text)
    seen: Counter[tuple[str, str]] = Counter()

    def emit(kind: str, content: str, span: tuple[int, int], **extra: Any) -> None:
        if not content.strip():  # empty fence / directive / heading: nothing to cite
            return
        key = (kind, normalise_ws(content))
        dup = seen[key]
        seen[key] += 1
        meta = extra.pop("meta", {})
        blocks.append(
            {
                "block_id": stable_id("blk", document, kind, content, dup),
                "document": document,
                "ordinal": len(blocks),
                "kind": kind,
                "section_path": [h for _, h in section],
                "heading_level": extra.get("heading_level", 0),
                "language": extra.get("language", ""),
                "text": content,
                "raw": "\n".join(lines[span[0] - 1 : span[1]]),
                "start_line": span[0],
                "end_line": span[1],
                "page": None,
                "bbox": None,
                "meta": json.dumps(meta, sort_keys=True, ensure_ascii=False),
                "line_kinds": kinds[span[0] - 1 : span[1]],
            }
        )

    def emit_code(tok: Token, span: tuple[int, int]) -> None:
        # the closing fence of a block inside a quote is written after the quote's markers
        closed = closes_fence(_QUOTE_MARKERS.sub("", lines[span[1] - 1]), tok.markup)
        unterminated = tok.type == "fence" and not closed
        unterminated = unterminated or (tok.type == "fence" and span[1] - span[0] < 1)
        meta = {"fence": tok.markup[:1] if tok.markup else "indent"}
        if unterminated:
            meta["unterminated_fence"] = True
        content = tok.content.rstrip("\n")
        if tok.info.strip().startswith("{"):  # a MyST code directive's option lines are not code
            content = _DIRECTIVE_OPTIONS.sub("", content)
        emit("code", content, span, language=fence_language(tok.info), meta=meta)

    def emit_list(kind: str, inner: list[Token], span: tuple[int, int]) -> None:
        """A list, cut around the code blocks its items hold.

        A fenced or indented code block inside a list item is code like any other: it becomes
        its own ``code`` block (so it is chunked, typed and cited as code), and the list lines
        before and after it stay ``kind`` blocks. Every line is written once, in order.
        """
        def part(first: int, last: int) -> None:  # list lines first..last, blank edges trimmed
            while first < last and not lines[first - 1].strip():
                first += 1
            while last > first and not lines[last - 1].strip():
                last -= 1
            text = "\n".join(lines[first - 1 : last])
            if not _BARE_MARKER.fullmatch(text):  # an item whose only content is the code
                emit(kind, text, (first, last))

        start = span[0]
        for tok in inner:
            if tok.type not in ("fence", "code_block") or not tok.map or is_directive(tok.info):
                continue
            code_span = _span(lines, tok.map)
            if code_span[0] < start:  # inside a code block already cut out
                continue
            if code_span[0] > start:
                part(start, code_span[0] - 1)
            emit_code(tok, code_span)
            start = code_span[1] + 1
        if start <= span[1]:
            part(start, span[1])

    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.level != 0 or tok.nesting == -1:
            i += 1
            continue
        close = _close_index(tokens, i) if tok.nesting == 1 else i
        inner = tokens[i : close + 1]
        span = _span(lines, tok.map) if tok.map else None
        if span is None:
            i = close + 1
            continue
        raw = "\n".join(lines[span[0] - 1 : span[1]])
        if tok.type == "heading_open":
            level = int(tok.tag[1])
            heading = _inline_text(tokens[i + 1])
            while section and section[-1][0] >= level:
                section.pop()
            section.append((level, heading))
            emit("heading", heading, span, heading_level=level)
        elif tok.type == "paragraph_open":
            images = _images(inner)
            plain = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", raw).strip()
            for image in images:
                emit("image", f"{image['alt']} ({image['src']})".strip(), span, meta=image)
            if plain or not images:
                emit("paragraph", raw, span)
        elif tok.type == "fence" and is_directive(tok.info):
            # MyST directive fence (```{note}, ```{warning}, ```{seealso}): prose, not code.
            label = directive_label(tok.info)
            if label not in NON_PROSE_DIRECTIVES:
                emit("admonition", tok.content.rstrip("\n"), span, meta={"label": label})
        elif tok.type in ("fence", "code_block"):
            emit_code(tok, span)
        elif tok.type == "table_open":
            header = _table_header(inner)
            n_rows = sum(1 for t in inner if t.type == "tr_open") - 1
            emit("table", raw, span, meta={"header": header, "n_rows": max(n_rows, 0)})
        elif tok.type in ("bullet_list_open", "ordered_list_open"):
            emit_list("list" if tok.type == "bullet_list_open" else "ordered_list", inner, span)
        elif tok.type == "blockquote_open":
            match = _ADMONITION.match(lines[span[0] - 1])
            if match:
                label = (match.group("gh") or match.group("bold") or match.group("plain")).strip()
                emit("admonition", raw, span, meta={"label": label.lower()})
            else:
                emit("blockquote", raw, span)
        elif tok.type == "html_block" and not raw.lstrip().startswith("<!--"):
            emit("html", raw, span)
        i = close + 1

    if not blocks:
        raise DocumentError(document, "no Markdown content (only comments or blank lines)")
    title = next((b["text"] for b in blocks if b["kind"] == "heading"), document)
    doc_row = {
        "document": document,
        "format": "markdown",
        "source_sha256": sha256_bytes(data),
        "n_bytes": len(data),
        "n_lines": len(lines) - (1 if lines and lines[-1] == "" else 0),
        "n_pages": 0,
        "title": title,
        "failed_pages": "[]",
    }
    return doc_row, blocks
