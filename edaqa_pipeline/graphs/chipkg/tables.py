"""Table rows as sentence units, and the tool-manual table rules.

Every parser stores a table as pipe-table text (``| a | b |``, delimiter line second; a PDF
table also keeps its header in the block's meta, ``edaqa_pipeline.parsing.pdf``).
:func:`table_rows` reads it into (header, rows of cells); a PDF row's statement names its
columns (``Parameter: VDD; Max: 1.32``), since its table may have been cut at a page break.

Tool-manual rules (``table.*``):

``table.option_row``
    ``| `-opt` | description |`` under a command's section -> (cmd, has_option, cmd -opt),
    (cmd -opt, means, description) + auxiliaries found in the description.
``table.variable_row`` / ``table.command_row`` / ``table.row``
    variables (+ a default column), commands, other rows with an identifier in the first cell.

Specification tables (register maps, signal and parameter tables) have their own rules in
``spec_tables``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from edaqa_pipeline.graphs.chipkg import qualifiers as q
from edaqa_pipeline.graphs.chipkg.context import UnitContext, clean_text, short
from edaqa_pipeline.graphs.chipkg.mentions import Mention, manual_mentions, scoped_option
from edaqa_pipeline.graphs.chipkg.prose import normalisations
from edaqa_pipeline.graphs.chipkg.schema import IRAttribute, IRTriple, SentenceIR, offline_rule
from edaqa_pipeline.text.identifiers import OPTION
from edaqa_pipeline.text.markup import pipe_table_rows, table_cells

_OPTION_HEADERS = ("switch", "option", "argument", "parameter", "flag", "arg")
_VARIABLE_HEADERS = ("variable", "configuration variable", "env")
_COMMAND_HEADERS = ("command", "function", "tcl command", "api")
_NUMBER = re.compile(r"^[-+]?\d+(?:[.,]\d+)?$")


@dataclass(frozen=True)
class TableRow:
    offset: int  # line offset inside the block
    cells: list[str]
    text: str  # what the statement node shows: the pipe line, or "header: cell; ..." for a PDF row


def labelled_row_text(header: list[str], cells: list[str]) -> str:
    """A PDF table row with its column names, so its statement embeds with the table's
    meaning even where the header is on an earlier page."""
    parts = []
    for i, cell in enumerate(cells):
        cell = " ".join(cell.split())
        if cell:
            name = header[i].strip() if i < len(header) else ""
            parts.append(f"{name}: {cell}" if name else cell)
    return "; ".join(parts)


def looks_like_data(header: list[str]) -> bool:
    """A header row that is a data row (a table continued after a page break repeats no
    header): one of its cells is a number."""
    return any(_NUMBER.match(c.strip()) for c in header)


def is_pipe_table(block: dict[str, Any]) -> bool:
    """A pipe table with a header: the parser marked its second line as the delimiter row."""
    kinds = block.get("line_kinds") or ()
    return len(kinds) > 1 and kinds[1] == "table_rule"


def table_rows(block: dict[str, Any], carried_header: list[str] | None = None
               ) -> tuple[list[str], list[TableRow]]:
    """(header, data rows) of a table block. ``carried_header``: the header of the previous
    table of the section, used when this PDF table starts with a data row (a table continued
    after a page break repeats no header)."""
    text = block.get("text") or ""
    if block.get("page") is not None:
        rows = pipe_table_rows(text)  # header, then data rows: line 0, then lines 2, 3, ...
        if not rows:
            return [], []
        header = rows[0]
        body = [(k + 1, cells) for k, cells in enumerate(rows[1:], start=1)]
        if carried_header and len(carried_header) == len(header) and looks_like_data(header):
            header, body = carried_header, [(0, header), *body]
        return header, [TableRow(offset, cells, labelled_row_text(header, cells))
                        for offset, cells in body if any(c.strip() for c in cells)]
    if not is_pipe_table(block):
        return [], []
    lines = text.split("\n")
    if len(lines) < 3:
        return [], []
    kinds = block["line_kinds"]
    out = [TableRow(i, table_cells(line), line) for i, line in enumerate(lines[2:], start=2)
           if kinds[i] == "table_row"]
    return table_cells(lines[0]), out


def _row_ir(sid: str, cells: list[str], header: list[str], ctx: UnitContext) -> SentenceIR | None:
    head = " ".join(h.lower().strip("*` ") for h in header[:1])
    default_cols = [i for i, h in enumerate(header) if "default" in h.lower()]
    if len(cells) < 2 or not cells[0]:
        return None
    scope = ctx.scope if ctx.scope_type == "command" else ""
    first = clean_text(cells[0])
    desc = clean_text(" ".join(c for i, c in enumerate(cells[1:], 1) if i not in default_cols))
    ents = manual_mentions(first, scope)
    if not ents:
        return None
    lead = ents[0]
    is_option = lead.entity_type == "option" or any(h in head for h in _OPTION_HEADERS)
    if is_option and lead.entity_type != "option":
        opt = (first.strip("`").split() or [""])[0]
        if OPTION.fullmatch(opt):
            lead = Mention(opt, "option", scoped_option(opt, scope), 0)
        else:
            is_option = False
    meaning = short(desc) or "(no description)"
    backbone: list[IRTriple] = []
    norms = normalisations(ents)
    if is_option:
        rule, anchor_type = "table.option_row", "configuration"
        backbone.append(IRTriple(subject=lead.canonical, subject_type="option", relation="means",
                                 object=meaning, object_type="value"))
        if scope:
            backbone += [IRTriple(subject=scope, subject_type="command", relation="has_option",
                                  object=m.canonical, object_type="option")
                         for m in ([m for m in ents if m.entity_type == "option"] or [lead])]
    else:
        if lead.entity_type == "variable" or any(h in head for h in _VARIABLE_HEADERS):
            rule, anchor_type, relation = "table.variable_row", "configuration", "means"
        elif any(h in head for h in _COMMAND_HEADERS) or lead.entity_type == "command":
            rule, anchor_type, relation = "table.command_row", "definition", "means"
        else:
            rule, anchor_type, relation = "table.row", "definition", "described_as"
            meaning = short(desc) or first
        backbone.append(IRTriple(subject=lead.canonical, subject_type=lead.entity_type,
                                 relation=relation, object=meaning, object_type="value"))
    for mt in manual_mentions(desc, scope)[:6]:
        if (mt.entity_type, mt.canonical) != (lead.entity_type, lead.canonical):
            backbone.append(IRTriple(subject=lead.canonical, subject_type=lead.entity_type,
                                     relation="refers_to", object=mt.canonical, object_type=mt.entity_type))
            norms += normalisations([mt])
    aux = q.qualifiers(desc, lead.canonical, lead.entity_type)
    for i in default_cols:
        if i < len(cells) and clean_text(cells[i]):
            aux.insert(0, q.qualifier(lead.canonical, lead.entity_type, "default", "default",
                                      clean_text(cells[i]), limit=80))
    return SentenceIR(
        sentence_id=sid, category="declarative", anchor_type=anchor_type,
        anchor_entity=lead.canonical, anchor_entity_type=lead.entity_type, entity=lead.canonical,
        attributes=[IRAttribute(relation=t.relation, value=t.object) for t in backbone],
        backbone=backbone, auxiliary=aux, normalisation=norms, rule=offline_rule(rule),
    )


def table_irs(rows: list[tuple[str, list[str]]], header: list[str], ctx: UnitContext) -> list[SentenceIR]:
    """IRs for the rows ``(sentence_id, cells)`` of one tool-manual table (rules ``table.*``)."""
    return [ir for sid, cells in rows if (ir := _row_ir(sid, cells, header, ctx)) is not None]
