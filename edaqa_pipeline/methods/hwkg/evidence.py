"""What an ``hwkg`` hit shows: the property lines it stands for, then their source chunk.

A datasheet chunk is the unit the answer cites (``file.pdf:pN``), so the retriever returns one
evidence item per source chunk, with the ranked properties read from it listed first. Long
chunks (a 60-row timing table) are cut to their first two lines (table title and header) and
the lines that carry those properties' values, and at most two property lines are shown: an
item stays under about 1,000 characters, so a 2,048-token budget holds about eight pages
instead of four.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from edaqa_pipeline.extraction.datasheets.textutil import number_variants
from edaqa_pipeline.text.markup import is_table_rule
from edaqa_pipeline.text.tokens import words

MAX_EVIDENCE_CHARS = 900
MAX_ROWS = 4
MAX_PROPERTY_LINES = 2


def property_line(prop: Mapping[str, Any]) -> str:
    """``[Root > Block] name (symbol) = value unit; conditions: ...``."""
    value = " ".join(x for x in (prop.get("value") or "", prop.get("unit") or "") if x)
    line = str(prop["name"])
    if prop.get("symbol"):
        line += f" ({prop['symbol']})"
    line += f" = {value}" if value else ""
    if prop.get("conditions"):
        line += f"; conditions: {prop['conditions']}"
    return f"[{' > '.join(prop.get('path') or [])}] {line}"


_CASE = re.compile(r"(?<=[a-z])(?=[A-Z][a-z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[A-Za-z])(?=\d)|"
                   r"(?<=\d)(?=[A-Za-z])|_")


# Abbreviations of datasheet headers and cell names, spelled out for indexing ("Max Cap(pf)"
# is what "maximum load capacitance" asks for; "InOut" is a bidirectional pad).
ABBREVIATIONS = {
    "max": "maximum", "min": "minimum", "typ": "typical", "avg": "average", "cap": "capacitance",
    "temp": "temperature", "freq": "frequency", "tri": "tristate", "inout": "bidirectional",
    "clk": "clock", "addr": "address", "reg": "register", "ctrl": "control", "cfg": "configuration",
}  # fmt: skip
_ABBREVIATION = re.compile(r"\b(" + "|".join(ABBREVIATIONS) + r")\b", re.IGNORECASE)


def expand_identifiers(text: str) -> str:
    """``text`` plus the parts of its camel-case and digit-glued identifiers and the spelled-out
    datasheet abbreviations, for indexing: "sg13g2_IOPadTriOut4mA Max Cap" also reads "IO Pad
    Tri Out 4 mA", "tristate", "maximum capacitance", so "maximum capacitance of the 4 mA
    tristate pad" finds it (the shared tokenizer keeps such identifiers whole and splits only
    at _ - : .)."""
    parts = [" ".join(_CASE.split(w)) for w in re.findall(r"\w*[a-z][A-Z0-9]\w*|\w*\d[A-Za-z]\w*", text)]
    spelled = [ABBREVIATIONS[m.lower()] for m in _ABBREVIATION.findall(" ".join([text, *parts]))]
    extra = " ".join([*parts, *dict.fromkeys(spelled)])
    return f"{text} {extra}" if extra else text


def _value_terms(prop: Mapping[str, Any]) -> set[str]:
    out: set[str] = set()
    for key in ("value", "value_min", "value_typ", "value_max"):
        for term in words(str(prop.get(key) or "")):
            out.update(number_variants(term) if term[:1].isdigit() else {term})
    return out


def excerpt(chunk_text: str, props: Sequence[Mapping[str, Any]], limit: int = MAX_EVIDENCE_CHARS) -> str:
    """The chunk, or for a long one its head (a table's title, header and delimiter row, so
    the rows kept still read as rows of that table; a prose chunk's first two lines) and the
    lines that hold the properties' values and name words (at most ``MAX_ROWS``), in order."""
    if len(chunk_text) <= limit:
        return chunk_text
    lines = chunk_text.split("\n")
    wanted: set[str] = set()
    names: set[str] = set()
    for prop in props:
        wanted |= _value_terms(prop)
        names |= set(words(str(prop.get("original_name") or prop.get("name") or "")))
    head = 3 if len(lines) > 2 and is_table_rule(lines[2]) else 2
    scored = []
    for i, line in enumerate(lines[head:], start=head):
        terms = set(words(line))
        hit = 2 * len(terms & wanted) + len(terms & names)
        if hit:
            scored.append((hit, i))
    keep = sorted(i for _, i in sorted(scored, key=lambda t: (-t[0], t[1]))[:MAX_ROWS])
    text = "\n".join([*lines[:head], *(lines[i] for i in keep)])
    return text[:limit]


def evidence_text(props: Sequence[Mapping[str, Any]], chunk: Mapping[str, Any] | None,
                  max_lines: int = MAX_PROPERTY_LINES) -> str:
    """Property lines (best first) followed by the source chunk excerpt with its page."""
    head = "\n".join(property_line(p) for p in props[:max_lines])
    if chunk is None:
        return head
    body = excerpt(chunk["text"], props[:max_lines])
    source = f"Source ({chunk['document']} p{chunk['page']}):\n{body}"
    return f"{head}\n{source}" if head else source
