"""Retrieval summaries S(e) of functional units, serialised by artifact type.

The paper serialises S(e) by artifact type so that the unit embedding retains the type
composition T(e). The offline summary is deterministic: a header with the anchor, the unit
kind, the section and the type set, then one line per artifact type in schema order holding
the most informative bits of that type (synopsis line of code, table header and first-column
keys, procedure steps, constraint and diagnostic sentences, first text sentences). It is
bounded so that it fits the encoder's 256-token window. The generator never sees it: it only
serves unit retrieval; evidence is always the original chunks reached through chunks(e).

Identifiers. A user names the command, ``-option``, ORFS variable, message id or file she asks
about, and the encoder can only match what it sees; the per-type snippets are bounded, so a long
option table or a diagnostic list loses most of its names. The summary therefore lists, right
after the header, every identifier of the unit's artifacts (``text.identifiers``, the project's
one definition) that the serialised lines do not already show; a unit whose identifiers are all
visible keeps exactly the serialisation above. The list is capped (``ID_CHARS``) and the type
lines make room for it, so the whole summary stays within ``MAX_CHARS`` (about the encoder's
256-token window).
"""

from __future__ import annotations

import re
from typing import Any

from edaqa_pipeline.model import ARTIFACT_TYPES, normalise_ws
from edaqa_pipeline.text.identifiers import extract_identifiers, identifier_kind
from edaqa_pipeline.text.markup import is_table_rule, table_cells

MAX_CHARS = 1000
PER_TYPE_CHARS = 220
ID_CHARS = 300
# Identifier kinds listed (qualified "cmd -opt" pairs and label references are left out: the
# command and the option are listed on their own, labels are not names a user types).
LISTED_KINDS = ("command", "option", "variable", "message", "file", "api")


def _table_keys(table: str) -> str:
    lines = [ln for ln in table.split("\n") if ln.strip()]
    if not lines:
        return ""
    header = normalise_ws(lines[0].strip("|").replace("|", ";"))
    keys = []
    for line in lines[2:] if len(lines) > 2 and is_table_rule(lines[1]) else lines[1:]:
        cells = table_cells(line)
        if cells and cells[0]:
            keys.append(cells[0].strip("`"))
    return f"{header}: {', '.join(keys)}"


def _snippet(artifact_type: str, content: str) -> str:
    if artifact_type == "table":
        return _table_keys(content)
    if artifact_type == "codeblock":
        return normalise_ws(" ".join(content.split("\n")[:6]))
    if artifact_type == "procedure":
        steps = re.findall(r"^\s*\d+[.)]\s*(.+)$", content, flags=re.M)
        return "; ".join(normalise_ws(s) for s in steps) if steps else normalise_ws(content)
    return normalise_ws(content)


def unit_identifiers(anchor: str, anchor_kind: str, artifacts: list[dict[str, Any]]) -> list[str]:
    """Canonical identifiers named by the unit's artifacts, in first-seen order (the anchor
    excluded: the header names it). Options are scoped by a command anchor, as in the element
    identifier view."""
    scope = anchor if anchor_kind == "command" else ""
    found: dict[str, None] = {}
    for art in artifacts:
        code = art["artifact_type"] == "codeblock"
        for ident in extract_identifiers(art["content"] or "", code=code, scope_command=scope):
            if ident != anchor and identifier_kind(ident) in LISTED_KINDS:
                found.setdefault(ident, None)
    return list(found)


def _visible(ident: str, text_lower: str) -> bool:
    """``ident`` is shown as a whole name (``via_layer`` is shown by ``-via_layer``, not by
    ``via_layer_top``)."""
    return re.search(rf"(?<!\w){re.escape(ident.lower())}(?![\w-])", text_lower) is not None


def _capped(items: list[str], limit: int) -> str:
    out: list[str] = []
    size = 0
    for item in items:
        if size + len(item) + 2 > limit:
            break
        out.append(item)
        size += len(item) + 2
    return ", ".join(out)


def offline_summary(
    anchor: str, anchor_kind: str, kind: str, section_path: list[str], artifacts: list[dict[str, Any]]
) -> str:
    types = sorted({a["artifact_type"] for a in artifacts}, key=ARTIFACT_TYPES.index)
    label = anchor if anchor_kind != "section" else ""
    head = [f"{anchor_kind}: {label}".strip() if label else "",
            f"section: {' > '.join(section_path)}" if section_path else "",
            f"types: {', '.join(types)}"]
    if kind == "cross_document":
        docs = sorted({a["document"] for a in artifacts})
        head.append(f"documents: {', '.join(docs)}")
    lines = [h for h in head if h]
    for artifact_type in types:
        pieces: list[str] = []
        seen: set[str] = set()
        for art in artifacts:
            if art["artifact_type"] != artifact_type:
                continue
            snippet = _snippet(artifact_type, art["content"])
            if snippet and snippet not in seen:
                seen.add(snippet)
                pieces.append(snippet)
        body = " | ".join(pieces)
        if len(body) > PER_TYPE_CHARS:
            body = body[:PER_TYPE_CHARS].rsplit(" ", 1)[0] + " ..."
        lines.append(f"[{artifact_type}] {body}")
    text = "\n".join(lines)[:MAX_CHARS]
    lower = text.lower()
    missing = [i for i in unit_identifiers(anchor, anchor_kind, artifacts) if not _visible(i, lower)]
    if not missing:
        return text
    n_head = len([h for h in head if h])
    ids_line = f"identifiers: {_capped(missing, ID_CHARS)}"
    return "\n".join([*lines[:n_head], ids_line, *lines[n_head:]])[:MAX_CHARS]
