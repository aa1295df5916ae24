"""Text patterns the element-graph rules match on, and the small helpers built on them:
numbered headings, captions, notes, list steps, table cells, links, option references and
version statements.

Identifier patterns (commands, options, labels, ...) are not here: they come from
``edaqa_pipeline.text.identifiers``, the one definition every extractor shares.
"""

from __future__ import annotations

import json
import re
from typing import Any

from edaqa_pipeline.text import identifiers

NUMBERED = re.compile(
    r"^(?:(?:Section|Clause|Chapter|Article|Rule)\s+)?(?P<num>\d+(?:\.\d+)*)[.)]?\s+\S"
    r"|^(?:Annex|Appendix)\s+(?P<annex>[A-Z](?:\.\d+)*)\b"
    r"|^(?P<letter>[A-Z](?:\.\d+)+)[.)]?\s+\S"
)
# "Figure 3: ...", "Fig. 1.1.2: ...", "Table 2-1 Access ..." (the number is taken whole, then a
# separator or a capitalised title must follow: "Figure 6-5 depicts ..." is prose, not a caption)
CAPTION = re.compile(
    r"^\s*[*_]*\s*(?P<kind>Figure|Fig\.|Table|Tab\.)\s*(?P<num>\d+(?:[.\-]\d+)*)(?![.\-]?\d)"
    r"\s*(?:[:.\-–—]|(?=[A-Z(\"']))",
)
EMPHASIS_LINE = re.compile(r"^\s*([*_])[^*_\n].{0,200}\1\s*$")
NOTE_PREFIX = re.compile(
    r"^\s*(?:\*\*|__)?(?P<label>Note|Warning|Caution|Important|Attention|Danger|Tip)s?\b\s*:?",
    re.IGNORECASE,
)
STEP = re.compile(r"^(?P<indent>\s*)(?P<num>\d{1,3})[.)](?:\s+|$)")
MD_LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
OPTION_OF = re.compile(
    r"`(?P<opt>--?[A-Za-z]\w*)`\s+(?:option|flag|switch|argument|parameter|keyword)s?\s+"
    r"(?:of|for|to|in)\s+(?:the\s+)?`(?P<cmd>[a-z]\w*)`",
    re.IGNORECASE,
)
CMD_OPTION_SPAN = re.compile(r"`(?P<cmd>[a-z][a-z0-9]*(?:_[a-z0-9]+)+)\s+(?P<opt>-[A-Za-z]\w*)[^`]*`")
VERSION_TEXT = re.compile(
    r"\b(?:version|revision|rev\.|release)\s*[:#]?\s*(?P<v>v?\d+(?:\.\d+)*[a-z]?|[A-Z](?:\.\d+)*)\b",
    re.IGNORECASE,
)
YEAR = re.compile(r"(19|20)\d\d")
AUX_HEADINGS = frozenset(
    """options option arguments argument parameters parameter switches flags usage synopsis
    example examples description return returns notes note syntax""".split()
)


def slug(heading: str) -> str:
    """GitHub-style anchor of a heading: lower case, punctuation dropped, spaces -> dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def clause_label(heading: str) -> str:
    """``section:3.2`` for a numbered heading, ``section:a.1`` for an annex; else ''."""
    match = NUMBERED.match(heading.strip())
    if not match:
        return ""
    num = match.group("num") or match.group("annex") or match.group("letter")
    return identifiers.canonical_label("section", num)


def is_auxiliary_heading(heading: str) -> bool:
    """Generic subheadings ("Options", "Example") name no clause of their own: their content
    belongs to the parent clause when bundling."""
    words = re.sub(r"[^a-z ]", " ", heading.lower()).split()
    return bool(words) and len(words) <= 3 and all(w in AUX_HEADINGS for w in words)


def block_meta(block: dict[str, Any]) -> dict[str, Any]:
    """A parsed block's ``meta`` JSON as a dict ({} when absent or malformed)."""
    try:
        value = json.loads(block.get("meta") or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}



def first_word(text: str) -> str:
    """The first word of a cell, markup stripped (``-density`` of "`-density` value")."""
    words = re.split(r"[\s,;/]+", text.strip())
    return words[0].strip("`*[]") if words else ""


def row_key(row: dict[str, Any]) -> str:
    """The first cell of a table row, backticks and brackets stripped."""
    try:
        key = json.loads(row.get("meta") or "{}").get("key", "")
    except json.JSONDecodeError:
        key = ""
    return key.strip().strip("`[]*").strip()



def document_version(blocks: list[dict[str, Any]]) -> str:
    """A version label the document states about itself: in its first heading ("Wishbone
    B3 Specification, Revision B.3") or in one of its first five blocks that starts with it
    ("Version: 1.9"). A version mentioned in running text ("DEF version 5.6") is not one."""
    for n, block in enumerate(sorted(blocks, key=lambda b: b["ordinal"])[:5]):
        text = block["text"][:300]
        match = VERSION_TEXT.search(text) if block["kind"] == "heading" and n < 2 else VERSION_TEXT.match(text.strip())
        if match:
            return match.group("v")
    return ""


