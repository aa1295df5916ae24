"""Retrieval chunks: section-aligned, table-aware, sentence-preserving, token-bounded.

A chunk is a run of consecutive blocks of one section (the heading line starts it), cut when
the next block would push it past ``max_tokens``. Tables are never split (an oversize table is
a chunk of its own); oversize prose is split at sentence-ending lines, oversize code at line
boundaries. Chunk ``text`` is the exact source lines (so a citation ``file.md:L12-L18`` shows
precisely what the chunk says); ``embed_text`` prefixes the section path, which is what the
encoders see. Ids derive from the blocks' content, not from line numbers, so equivalent
Markdown gives the same chunk ids. PDF chunks never cross a page.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from edaqa_pipeline.model import normalise_ws, stable_id
from edaqa_pipeline.text.counting import approx_tokens

DEFAULT_MAX_TOKENS = 400
_SENTENCE_LINE_END = re.compile(r"[.:;!?)]\s*$|^\s*$")


def _pieces(block: dict[str, Any], max_tokens: int) -> list[dict[str, Any]]:
    """A block, or its parts when it alone exceeds ``max_tokens`` (tables stay whole)."""
    if block["kind"] == "table" or approx_tokens(block["text"]) <= max_tokens:
        return [block]
    lines = block["text"].split("\n")
    start = block["start_line"]
    if start is None or len(lines) == 1:
        # One long line (or PDF text): split at sentence ends inside it.
        sentences = re.split(r"(?<=[.!?])\s+", block["text"])
        groups, current = [], ""
        for sentence in sentences:
            if current and approx_tokens(current + " " + sentence) > max_tokens:
                groups.append(current)
                current = sentence
            else:
                current = f"{current} {sentence}".strip()
        groups.append(current)
        kind = block["line_kinds"][0] if block["line_kinds"] else "text"
        return [dict(block, text=g, raw=g, part=i, line_kinds=[kind] * (g.count("\n") + 1))
                for i, g in enumerate(groups) if g]
    lines = block["raw"].split("\n")
    parts: list[dict[str, Any]] = []
    buf: list[str] = []
    buf_start = start
    prefer_sentence = block["kind"] != "code"
    for offset, line in enumerate(lines):
        buf.append(line)
        size = approx_tokens("\n".join(buf))
        at_boundary = not prefer_sentence or _SENTENCE_LINE_END.search(line)
        if (size >= max_tokens * 0.8 and at_boundary) or size >= max_tokens * 1.5:
            parts.append(_part(block, buf, buf_start, start + offset, len(parts)))
            buf, buf_start = [], start + offset + 1
    if buf and "\n".join(buf).strip():
        parts.append(_part(block, buf, buf_start, block["end_line"], len(parts)))
    return parts


def _part(block: dict[str, Any], lines: list[str], start: int, end: int, n: int) -> dict[str, Any]:
    raw = "\n".join(lines)
    offset = start - block["start_line"]
    kinds = list(block["line_kinds"][offset : offset + len(lines)])
    text = raw
    if block["kind"] == "code":  # fence lines are formatting, not content
        text = "\n".join(line for line, kind in zip(lines, kinds, strict=True) if kind != "code_fence")
    return dict(block, text=text, raw=raw, start_line=start, end_line=end, part=n, line_kinds=kinds)


def _semantic_text(piece: dict[str, Any]) -> str:
    """Content used for the chunk id: what the block says, not how it is fenced or spaced."""
    if piece["kind"] == "code":
        return f"code[{piece['language']}]:{piece['text']}"
    return f"{piece['kind']}:{piece['text']}"


def _source_text(pieces: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """Exact source lines of consecutive pieces and the kind of each; lines between blocks
    (blank lines, rules, comments) become empty lines so that line numbers stay aligned with
    the file."""
    if pieces[0]["start_line"] is None:
        return "\n".join(p["text"] for p in pieces), [k for p in pieces for k in p["line_kinds"]]
    out: list[str] = []
    kinds: list[str] = []
    line = pieces[0]["start_line"]
    for piece in pieces:
        if piece["end_line"] < line:  # its lines are written: blocks of one paragraph (images)
            continue
        if piece["start_line"] > line:
            out.extend([""] * (piece["start_line"] - line))
            kinds.extend(["blank"] * (piece["start_line"] - line))
        written = max(0, line - piece["start_line"])  # lines an earlier block of them wrote
        out.extend(piece["raw"].split("\n")[written:])
        kinds.extend(piece["line_kinds"][written:])
        line = piece["end_line"] + 1
    return "\n".join(out), kinds


def build_chunks(
    blocks: list[dict[str, Any]], max_tokens: int = DEFAULT_MAX_TOKENS
) -> list[dict[str, Any]]:
    """Chunk one document's blocks (Markdown or PDF)."""
    if not blocks:
        return []
    document = blocks[0]["document"]
    chunks: list[dict[str, Any]] = []
    seen: Counter[str] = Counter()
    current: list[dict[str, Any]] = []

    def flush() -> None:
        if not current:
            return
        pieces = list(current)
        current.clear()
        section = pieces[-1]["section_path"]
        first, last = pieces[0], pieces[-1]
        text, kinds = _source_text(pieces)
        semantic = "\n".join(_semantic_text(p) for p in pieces)
        # the counter keys on what the id hashes (whitespace-normalised), so two chunks that
        # differ only in spacing get distinct ids
        dup = seen[normalise_ws(semantic)]
        seen[normalise_ws(semantic)] += 1
        bbox = None
        boxes = [p["bbox"] for p in pieces if p["bbox"]]
        if boxes:
            bbox = [min(b[0] for b in boxes), min(b[1] for b in boxes),
                    max(b[2] for b in boxes), max(b[3] for b in boxes)]
        heading = " > ".join(section)
        # What the encoders see: the section path and the blocks' content (no fence or heading
        # markup), so equivalent Markdown embeds identically.
        body = "\n".join(p["text"] for p in pieces if p["kind"] != "heading")
        chunks.append(
            {
                "chunk_id": stable_id("chk", document, semantic, dup),
                "document": document,
                "ordinal": len(chunks),
                "section_path": list(section),
                "text": text,
                "embed_text": f"{heading}\n{body}" if heading else body,
                "block_ids": sorted({p["block_id"] for p in pieces}),
                "n_tokens": approx_tokens(text),
                "start_line": first["start_line"],
                "end_line": last["end_line"],
                "page": first["page"],
                "bbox": bbox,
                "line_kinds": kinds,
            }
        )

    def size() -> int:
        return sum(approx_tokens(p["text"]) for p in current)

    for block in blocks:
        if not block["text"].strip():
            continue  # e.g. a PDF figure without caption: recorded in parsed_documents, nothing to retrieve
        new_section = block["kind"] == "heading"
        new_page = bool(current) and block["page"] != current[-1]["page"]
        if new_section or new_page:
            flush()
        for piece in _pieces(block, max_tokens):
            only_heading = all(p["kind"] == "heading" for p in current)
            if current and not only_heading and size() + approx_tokens(piece["text"]) > max_tokens:
                flush()
            elif current and piece["kind"] == "table" and not only_heading and size() > max_tokens // 4:
                flush()  # keep tables with little around them: a table row answers precisely
            current.append(piece)
    flush()
    return chunks


def block_chunk_map(chunks: list[dict[str, Any]]) -> dict[str, list[str]]:
    """block_id -> ids of the chunks holding (parts of) it, in chunk order."""
    mapping: dict[str, list[str]] = {}
    for chunk in chunks:
        for block_id in chunk["block_ids"]:
            mapping.setdefault(block_id, []).append(chunk["chunk_id"])
    return mapping
