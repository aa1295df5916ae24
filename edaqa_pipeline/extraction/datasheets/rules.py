"""The offline property rules of one chunk: tables by kind, prose by sentence rules.

Revision histories, reference lists, licences and tables of contents state no hardware
properties and are skipped (their section path or table title says so); so are the term ->
expansion tables of glossaries and abbreviation lists, but not a glossary's prose.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from edaqa_pipeline.extraction.datasheets.chunks import table_view
from edaqa_pipeline.extraction.datasheets.prose_rules import sentence_properties
from edaqa_pipeline.extraction.datasheets.spec_rules import table_properties

_SKIP_SECTIONS = re.compile(
    r"revision|change history|document history|reference documents|references\b|"
    r"table of contents|\bcontents\b|list of (?:tables|figures)|"
    r"copyright|licen[cs]e|trademark|disclaimer|ordering information",
    re.IGNORECASE,
)
# term -> expansion tables state no properties; a glossary's prose may ("two 100 MByte/second
# channels ... providing a 200 MByte/second transfer rate")
_SKIP_TABLE_SECTIONS = re.compile(r"abbreviations?|glossary|acronyms?|terminology", re.IGNORECASE)


def _context(chunk: Mapping[str, Any]) -> str:
    return " ".join([*(chunk.get("section_path") or []), chunk.get("title") or ""])


def skip_chunk(chunk: Mapping[str, Any]) -> bool:
    """Revision histories, reference lists, licences (and glossary tables): no properties."""
    context = _context(chunk)
    if chunk.get("kind") == "table" and _SKIP_TABLE_SECTIONS.search(context):
        return True
    return bool(_SKIP_SECTIONS.search(context))


def offline_chunk_properties(chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Raw property fields (name, symbol, value..., conditions, extra, row, rule) of a chunk."""
    if skip_chunk(chunk):
        return []
    view = table_view(dict(chunk))
    if view is not None:
        return table_properties(view)
    return sentence_properties(chunk.get("text") or "")


__all__ = ["offline_chunk_properties", "skip_chunk"]
