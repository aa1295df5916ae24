"""One entry point for every source format: file or bytes -> document row + blocks.

Checks that apply to any file (size limit, format by suffix) live here, so each format parser
only deals with its own syntax. Every refusal is a ``DocumentError`` naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edaqa_pipeline.model import document_format, readable_suffixes
from edaqa_pipeline.parsing.errors import DocumentError
from edaqa_pipeline.parsing.markdown import parse_markdown
from edaqa_pipeline.parsing.pdf_limits import PdfLimits


def _check_size(n_bytes: int, document: str, max_mb: float) -> None:
    size_mb = n_bytes / (1 << 20)
    if size_mb > max_mb:
        raise DocumentError(
            document,
            f"file is {size_mb:.1f} MiB, larger than the {max_mb:g} MiB limit "
            "(raise EDAQA_MAX_DOCUMENT_MB to index it)",
        )


def parse_file(path: Path, document: str, max_mb: float = 20.0,
               pdf_limits: PdfLimits | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Parse the file at ``path``; the size limit is checked before a byte is read, so an
    oversized file costs nothing."""
    _check_size(path.stat().st_size, document, max_mb)
    return parse_document(path.read_bytes(), document, max_mb, pdf_limits)


def parse_document(
    data: bytes, document: str, max_mb: float = 20.0, pdf_limits: PdfLimits | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Parse one document by its suffix (.md/.markdown, .html/.htm or .pdf)."""
    _check_size(len(data), document, max_mb)
    fmt = document_format(document)
    if fmt == "markdown":
        return parse_markdown(data, document)
    if fmt == "html":
        from edaqa_pipeline.parsing.html import parse_html  # lxml loads only when needed

        return parse_html(data, document)
    if fmt == "pdf":
        from edaqa_pipeline.parsing.pdf import parse_pdf  # pymupdf loads only when needed

        return parse_pdf(data, document, pdf_limits)
    raise DocumentError(document, f"unsupported file type (expected {readable_suffixes()})")
