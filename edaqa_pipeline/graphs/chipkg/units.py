"""A document's sentence units: prose sentences, table rows, code blocks, headings.

Every unit knows its block, its source lines (Markdown; PDFs have pages, no lines), the
section's scope entity and, for table rows, the table's header and caption. Sentence ids are
content-derived (``stable_id`` of document, unit kind, text and repeat count), so re-parsing
the same document gives the same ids.

Scopes: in a tool manual, a section documents a command when its heading is the command's
snake_case form or its first code block is the command's synopsis; in a specification, when its
heading names a signal or a register. A specification's ``vocabulary`` is every entity its
tables and headings define (``spec_tables.defined_entities``).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from edaqa_pipeline.graphs.chipkg.code import (
    code_line_command,
    code_options,
    first_command,
    heading_command,
    heading_entity,
)
from edaqa_pipeline.graphs.chipkg.context import UnitContext
from edaqa_pipeline.graphs.chipkg.mentions import classify_code
from edaqa_pipeline.graphs.chipkg.schema import document_kind
from edaqa_pipeline.graphs.chipkg.spec_mentions import vocabulary_entry
from edaqa_pipeline.graphs.chipkg.spec_tables import defined_entities
from edaqa_pipeline.graphs.chipkg.tables import table_rows
from edaqa_pipeline.model import normalise_ws, stable_id
from edaqa_pipeline.text.identifiers import INLINE_CODE
from edaqa_pipeline.text.sentences import split_sentences

PROSE_KINDS = frozenset({"paragraph", "list", "ordered_list", "blockquote", "admonition"})


@dataclass
class Unit:
    sentence_id: str
    text: str
    kind: str  # prose | table_row | code | heading
    block: dict[str, Any]
    start_line: int | None
    end_line: int | None
    ctx: UnitContext
    cells: list[str] = field(default_factory=list)  # table rows
    header: list[str] = field(default_factory=list)  # table rows


@dataclass
class DocumentUnits:
    units: list[Unit]
    commands: set[str]  # tool manual: the commands the document names
    vocabulary: dict[str, tuple[str, str]]  # specification: the entities it defines


def _locator(block: dict[str, Any]):  # type: ignore[no-untyped-def]
    """Line span of each successive piece of a block's text (pieces found in order)."""
    raw: str = block.get("raw") or block["text"] or ""
    base = block["start_line"]
    cursor = 0

    def locate(piece: str) -> tuple[int | None, int | None]:
        nonlocal cursor
        if base is None:
            return None, None
        probe = piece.strip()[:40]
        idx = raw.find(probe, cursor) if probe else -1
        if idx < 0:
            idx = raw.find(probe) if probe else -1
        if idx < 0:
            return block["start_line"], block["end_line"]
        cursor = idx + len(probe)
        start = base + raw.count("\n", 0, idx)
        return start, min(start + piece.strip().count("\n"), block["end_line"] or start)

    return locate


def _caption(block: dict[str, Any]) -> str:
    return str(json.loads(block.get("meta") or "{}").get("caption") or "")


def _manual_scopes(blocks: list[dict[str, Any]]) -> tuple[dict[tuple[str, ...], tuple[str, str]], set[str]]:
    commands: set[str] = set()
    for b in blocks:
        if b["kind"] == "code":
            commands.update(c for c in (code_line_command(ln) for ln in (b["text"] or "").split("\n")) if c)
        else:
            for m in INLINE_CODE.finditer(b["text"] or ""):
                commands.update(c for _, t, c in classify_code(m.group(1)) if t == "command")
    scopes: dict[tuple[str, ...], tuple[str, str]] = {}
    for b in blocks:
        path = tuple(b["section_path"] or ())
        if b["kind"] == "heading" and path and heading_command(path[-1]) in commands:
            scopes.setdefault(path, (heading_command(path[-1]), "command"))
        if b["kind"] == "code" and path and path not in scopes:
            first = first_command(b["text"] or "")
            if first and code_options(b["text"] or ""):
                scopes[path] = (first, "command")
    return scopes, commands


def _spec_scopes(blocks: list[dict[str, Any]]) -> tuple[dict[tuple[str, ...], tuple[str, str]], dict[str, tuple[str, str]]]:
    scopes: dict[tuple[str, ...], tuple[str, str]] = {}
    vocabulary: dict[str, tuple[str, str]] = {}
    for b in blocks:
        path = tuple(b["section_path"] or ())
        if b["kind"] == "heading" and path:
            name, etype = heading_entity(path[-1])
            if name:
                scopes.setdefault(path, (name, etype))
                key, value = vocabulary_entry(name, etype)
                vocabulary.setdefault(key, value)
    carried: dict[tuple[str, ...], list[str]] = {}
    for b in blocks:
        if b["kind"] == "table":
            path = tuple(b["section_path"] or ())
            header, rows = table_rows(b, carried.get(path))
            carried[path] = header
            ctx = UnitContext(b["document"], list(path), _scope_of(path, scopes)[0],
                              caption=_caption(b), scope_type=_scope_of(path, scopes)[1])
            for key, value in defined_entities(header, [r.cells for r in rows], ctx).items():
                vocabulary.setdefault(key, value)
    return scopes, vocabulary


def _scope_of(path: tuple[str, ...], scopes: dict[tuple[str, ...], tuple[str, str]]) -> tuple[str, str]:
    for n in range(len(path), 0, -1):
        if path[:n] in scopes:
            return scopes[path[:n]]
    return "", "command"


def document_units(blocks: list[dict[str, Any]]) -> DocumentUnits:
    """The sentence units of one document, in block order."""
    document = blocks[0]["document"] if blocks else ""
    spec = document_kind(document) == "spec"
    commands: set[str] = set()
    vocabulary: dict[str, tuple[str, str]] = {}
    if spec:
        scopes, vocabulary = _spec_scopes(blocks)
    else:
        scopes, commands = _manual_scopes(blocks)
    units: list[Unit] = []
    seen: Counter[tuple[str, str]] = Counter()
    carried: dict[tuple[str, ...], list[str]] = {}

    def sid(kind: str, text: str) -> str:
        key = (kind, normalise_ws(text))
        n = seen[key]
        seen[key] += 1
        return stable_id("stm", document, kind, text, n)

    for b in blocks:
        path = tuple(b["section_path"] or ())
        scope, scope_type = _scope_of(path, scopes)
        kind, text = b["kind"], b["text"] or ""
        ctx = UnitContext(document, list(path), scope, kind, scope_type, _caption(b), vocabulary)
        if kind in PROSE_KINDS:
            locate = _locator(b)
            for piece in split_sentences(text):
                s, e = locate(piece)
                units.append(Unit(sid("prose", piece), piece, "prose", b, s, e, ctx))
        elif kind == "table":
            header, rows = table_rows(b, carried.get(path))
            carried[path] = header
            same_lines = len((b.get("raw") or text).split("\n")) == len(text.split("\n"))
            for row in rows:
                line = b["start_line"]
                if line is not None and same_lines:
                    line += row.offset
                units.append(Unit(sid("table_row", row.text), row.text, "table_row", b, line,
                                  line if line is not None else b["end_line"],
                                  ctx, cells=row.cells, header=header))
        elif kind == "code":
            units.append(Unit(sid("code", text), text, "code", b, b["start_line"], b["end_line"], ctx))
        elif kind == "heading" and path:
            units.append(Unit(sid("heading", text), text, "heading", b, b["start_line"], b["end_line"], ctx))
    return DocumentUnits(units, commands, vocabulary)
