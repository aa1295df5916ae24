"""Shared records of the pipeline, their table schemas and content-derived ids.

Every stage is a pure function from records to records; between stages the records travel as
Polars DataFrames (one row per record) so that Dagster can store them as Parquet. The schemas
below are the single source of truth for column names and types: stages build rows as plain
dicts and call :func:`frame` so that an empty result still has the right columns.

Ids are derived from content, never from positions or run time, so that the same corpus gives
byte-identical outputs and that equivalent Markdown (extra blank lines, other fence style)
gives the same ids. See :func:`stable_id`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import polars as pl

# The paper's artifact schema T (section "EDA Functional Unit Organization").
ARTIFACT_TYPES: tuple[str, ...] = (
    "codeblock",
    "inline_command",
    "table",
    "figure",
    "procedure",
    "text",
    "constraint",
    "diagnostic",
    "file",
)

BLOCK_KINDS: tuple[str, ...] = (
    "heading",
    "paragraph",
    "list",
    "ordered_list",
    "code",
    "table",
    "blockquote",
    "admonition",
    "image",
    "html",
    "figure",
)

# The formats a parser reads, by file suffix; a corpus file with any other suffix is listed in
# the index manifest as skipped (with its type), never dropped silently.
DOCUMENT_SUFFIXES: dict[str, tuple[str, ...]] = {
    "markdown": (".md", ".markdown"),
    "html": (".html", ".htm"),
    "pdf": (".pdf",),
}


def readable_suffixes() -> str:
    """``.md, .markdown, .html, .htm, .pdf``: what a message about unreadable files lists."""
    return ", ".join(s for suffixes in DOCUMENT_SUFFIXES.values() for s in suffixes)


def document_format(name: str) -> str | None:
    """The format (``markdown``, ``html``, ``pdf``) of a file name by suffix, else None."""
    lower = name.lower()
    return next((fmt for fmt, suffixes in DOCUMENT_SUFFIXES.items() if lower.endswith(suffixes)), None)


WHITESPACE_RUN = r"[\s\x1c-\x1f]+"  # one definition: normalise_ws here, the semantic table hash in
# Polars (Rust's \s lacks the separators \x1c-\x1f that Python's \s has)
_WS = re.compile(WHITESPACE_RUN)


def normalise_ws(text: str) -> str:
    """Collapse every run of whitespace to one space and strip the ends."""
    return _WS.sub(" ", text).strip()


def stable_id(prefix: str, *parts: object) -> str:
    """A short content-derived id: ``prefix`` + 16 hex chars of SHA-256 over the parts.

    Parts are joined with an unambiguous separator; strings are whitespace-normalised so that
    formatting-only changes to a source do not change ids.
    """
    h = hashlib.sha256()
    for part in parts:
        text = normalise_ws(part) if isinstance(part, str) else repr(part)
        h.update(text.encode("utf-8"))
        h.update(b"\x1f")
    return f"{prefix}_{h.hexdigest()[:16]}"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


BBOX = pl.List(pl.Float64)
STRS = pl.List(pl.String)

DOCUMENTS_SCHEMA: dict[str, pl.DataType] = {
    "document": pl.String(),  # partition key = path relative to the corpus root (posix)
    "format": pl.String(),  # markdown | html | pdf
    "source_sha256": pl.String(),
    "n_bytes": pl.Int64(),
    "n_lines": pl.Int64(),  # Markdown: lines; PDF: 0
    "n_pages": pl.Int64(),  # PDF: pages; Markdown: 0
    "title": pl.String(),
    "failed_pages": pl.String(),  # PDF: JSON [{page, error}] of the pages left out; else "[]"
}

BLOCKS_SCHEMA: dict[str, pl.DataType] = {
    "block_id": pl.String(),
    "document": pl.String(),
    "ordinal": pl.Int64(),  # order within the document, 0-based
    "kind": pl.String(),  # one of BLOCK_KINDS
    "section_path": STRS,  # heading texts from the top down to this block's section
    "heading_level": pl.Int64(),  # for kind == heading, else 0
    "language": pl.String(),  # code fence info string ("" if none)
    "text": pl.String(),  # block content (code: inside the fences; heading: its text)
    "raw": pl.String(),  # exact source lines of the span (Markdown); same as text for PDF
    "start_line": pl.Int64(),  # 1-based inclusive, Markdown only (null for PDF)
    "end_line": pl.Int64(),
    "page": pl.Int64(),  # 1-based, PDF only (null for Markdown)
    "bbox": BBOX,  # [x0, y0, x1, y1] in PDF points, PDF only
    "meta": pl.String(),  # JSON object with parser details (e.g. unterminated fence, table header)
    "line_kinds": STRS,  # one kind (parsing.lines.LINE_KINDS) per line of raw (Markdown) / text (PDF)
}

ARTIFACTS_SCHEMA: dict[str, pl.DataType] = {
    "artifact_id": pl.String(),
    "document": pl.String(),
    "block_id": pl.String(),
    "artifact_type": pl.String(),  # one of ARTIFACT_TYPES
    "content": pl.String(),
    "section_path": STRS,
    "start_line": pl.Int64(),
    "end_line": pl.Int64(),
    "page": pl.Int64(),
    "bbox": BBOX,
    "rule": pl.String(),  # extraction rule name (deterministic rule or "llm:<task>")
}

CHUNKS_SCHEMA: dict[str, pl.DataType] = {
    "chunk_id": pl.String(),
    "document": pl.String(),
    "ordinal": pl.Int64(),
    "section_path": STRS,
    "text": pl.String(),  # raw source lines, for evidence and citations
    "embed_text": pl.String(),  # section path + text, what the encoders see
    "block_ids": STRS,
    "n_tokens": pl.Int64(),  # approx tokens = ceil(chars / 4)
    "start_line": pl.Int64(),
    "end_line": pl.Int64(),
    "page": pl.Int64(),
    "bbox": BBOX,
    "line_kinds": STRS,  # one kind (parsing.lines.LINE_KINDS) per line of text, from the parser
}

OCCURRENCES_SCHEMA: dict[str, pl.DataType] = {
    "occurrence_id": pl.String(),
    "document": pl.String(),
    "anchor": pl.String(),  # canonical (normalised) anchor; "" when none found
    "anchor_kind": pl.String(),  # command | file | section
    "anchor_rule": pl.String(),
    "section_path": STRS,
    "artifact_ids": STRS,
    "artifact_types": STRS,  # sorted distinct types
    "chunk_ids": STRS,
    "block_ids": STRS,
    "line_spans": pl.List(pl.List(pl.Int64())),  # [[start, end], ...] of its blocks
    "pages": pl.List(pl.Int64()),
    "content_hash": pl.String(),  # hash of the occurrence's artifact contents
}


def frame(rows: list[dict[str, Any]], schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """Build a DataFrame with exactly ``schema``'s columns, also when ``rows`` is empty.

    Column by column: Polars' row constructor takes 2-3x the memory for list columns (the
    16x corpus's unit table: +246 MiB for 9 MiB of data, column-wise +94)."""
    if not rows:
        return pl.DataFrame(schema=schema)
    columns = {c: [r.get(c) for r in rows] for c in schema}
    for name, values in columns.items():
        _refuse_mistyped(name, schema[name], values)
    return pl.DataFrame(columns, schema=schema, strict=False)


def _refuse_mistyped(name: str, dtype: pl.DataType, values: list[Any]) -> None:
    """A string in a list column or a list in a string column is a producer's bug: the row
    constructor refused or nulled it, column-wise Polars would split the string into letters."""
    wanted: type | tuple[type, ...] | None = (
        (list, tuple) if isinstance(dtype, pl.List) else str if dtype == pl.String else None
    )
    if wanted is None:
        return
    for value in values:
        if value is not None and not isinstance(value, wanted):
            raise TypeError(f"column {name!r} ({dtype}): got {type(value).__name__} {value!r:.80}")


@dataclass(frozen=True)
class EvidenceItem:
    """One ranked piece of evidence, the record every method returns and every answer cites.

    ``doc`` is relative to the corpus root; Markdown evidence has a 1-based inclusive line span
    and ``page`` None, PDF evidence has ``page`` and no lines. ``path`` names the retrieval
    path that found it (``dense``, ``bm25``, ``unit``, ``techdoc:recall``, ...).

    Each id field means one thing: ``chunk_id`` is a row of the ``chunks`` table and is set
    only when the item is exactly that chunk; ``element_ids`` are rows of ``elements`` (an item
    assembled from TechDocRAG elements); ``datasheet_chunk_id`` / ``property_ids`` are rows of
    ``datasheet_chunks`` / ``datasheet_properties``. ``evidence_id`` identifies the item
    itself (document, span and text), whatever built it. ``line_numbers`` maps the lines of a
    non-contiguous text back to the source, so an answer can cite the exact line, and
    ``line_kinds`` says what each line is (heading, table row, code line, ...), as the parser
    decided it.
    """

    chunk_id: str
    doc: str
    text: str
    score: float
    path: str
    start_line: int | None = None
    end_line: int | None = None
    page: int | None = None
    element_ids: tuple[str, ...] = ()
    datasheet_chunk_id: str = ""
    property_ids: tuple[str, ...] = ()
    # the source line of each line of ``text`` when the text is not one contiguous span (an
    # element bundle: a table's header joined to one of its rows); empty = contiguous
    line_numbers: tuple[int, ...] = ()
    # the parser's kind (``parsing.lines.LINE_KINDS``) of each line of ``text``; empty = not
    # known yet (``retrieval.line_structure`` fills it in from the stored chunk rows)
    line_kinds: tuple[str, ...] = ()
    # the headings above the item (its chunk's section path), outermost first: a page of a
    # book-length PDF is found by page and section, so a PDF item's location names both
    section: tuple[str, ...] = ()
    # the command the section of each line of ``text`` documents (the element graph's
    # ``scope_command``: the options rows under ``### Repair Timing`` are ``repair_timing``'s;
    # "" where none); empty = not known. It names the command of a row that does not name it.
    line_subjects: tuple[str, ...] = ()

    @property
    def evidence_id(self) -> str:
        return stable_id("ev", self.doc, self.start_line, self.end_line, self.page, self.text)

    def citation(self) -> str:
        """``doc:Lx-Ly`` (Markdown) or ``doc.pdf:pN`` (PDF)."""
        if self.page is not None:
            return f"{self.doc}:p{self.page}"
        if self.start_line == self.end_line:
            return f"{self.doc}:L{self.start_line}"
        return f"{self.doc}:L{self.start_line}-L{self.end_line}"

    def location(self) -> str:
        """The citation as a reader finds the place: a PDF page with its section
        (``book.pdf:p412, Clock Tree Synthesis > Options``); lines alone say where Markdown is."""
        if self.page is not None and self.section:
            return f"{self.citation()}, {' > '.join(self.section)}"
        return self.citation()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "evidence_id": self.evidence_id,
            "doc": self.doc,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "page": self.page,
            "citation": self.citation(),
            "location": self.location(),
            "text": self.text,
            "score": round(float(self.score), 6),
            "path": self.path,
        }
        for name in ("chunk_id", "datasheet_chunk_id"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        for name in ("element_ids", "property_ids"):
            if getattr(self, name):
                out[name] = list(getattr(self, name))
        return out
