"""What a ChipKG rule knows about a sentence unit besides its text, and the text clean-up all
rules share (Markdown links and HTML removed, list markers dropped, whitespace collapsed)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from edaqa_pipeline.graphs.chipkg.schema import document_kind
from edaqa_pipeline.model import normalise_ws

_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_HTML = re.compile(r"<[^>]+>")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


@dataclass
class UnitContext:
    """The document, section, section scope and (for table rows) the table's caption.

    ``scope`` is the entity the section documents: a command in a tool manual ("Global Route"
    documents ``global_route``), a signal or register in a specification ("2.8.1 ... Register
    (mrac)" documents ``mrac``); ``scope_type`` is its entity type. ``vocabulary`` holds the
    spec entities the document defines in its tables and headings (name -> type), so that a
    prose sentence mentioning ``mrac`` links to the register: lower-case name ->
    (entity type, canonical form).
    """

    document: str
    section_path: list[str]
    scope: str = ""
    block_kind: str = "paragraph"
    scope_type: str = "command"
    caption: str = ""
    vocabulary: dict[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return document_kind(self.document)


def clean_text(text: str) -> str:
    """Markdown links -> their text, HTML tags and list markers removed, whitespace collapsed."""
    text = _MD_LINK.sub(lambda m: m.group(1), text)
    text = _HTML.sub(" ", text)
    text = _LIST_MARK.sub("", text)
    return normalise_ws(text)


def short(text: str, limit: int = 160) -> str:
    """Whitespace-collapsed, trimmed of punctuation, cut at ``limit`` characters (with …)."""
    text = normalise_ws(text).strip(" ,;:.")
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
