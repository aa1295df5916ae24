"""One entry point for every source format: bytes -> document row + blocks.

Checks that apply to any file (size limit, format by suffix) live here, so each format parser
only deals with its own syntax. Every refusal is a ``DocumentError`` naming the file.
"""

from __future__ import annotations

from typing import Any

from edaqa_pipeline.parsing.errors import DocumentError
from edaqa_pipeline.parsing.markdown import parse_markdown


def parse_document(
    data: bytes, document: str, max_mb: float = 20.0
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Parse one document by its suffix (.md/.markdown or .pdf)."""
    size_mb = len(data) / (1 << 20)
    if size_mb > max_mb:
        raise DocumentError(
            document,
            f"file is {size_mb:.1f} MiB, larger than the {max_mb:g} MiB limit "
            "(raise EDAQA_MAX_DOCUMENT_MB to index it)",
        )
    lower = document.lower()
    if lower.endswith((".md", ".markdown")):
        return parse_markdown(data, document)
    if lower.endswith(".pdf"):
        from edaqa_pipeline.parsing.pdf import parse_pdf  # pymupdf loads only when needed

        return parse_pdf(data, document)
    raise DocumentError(document, "unsupported file type (expected .md, .markdown or .pdf)")
