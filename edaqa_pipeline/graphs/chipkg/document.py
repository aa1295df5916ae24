"""One document -> ChipKG node and triple rows (ChipMind section 3.2).

The IR of every sentence unit (rules for tables, code and headings, whose structure is
explicit; the ``chipkg_triples`` task for prose, i.e. a model when one is configured) becomes:

* a ``statement`` node (the unit's text as the encoder sees it, its IR JSON, category and
  Circuit Semantic Anchor);
* ``entity`` nodes, global: the id comes from (type, canonical form), so the same command or
  signal mentioned in two documents is one node -- the cross-document link;
* ``value`` nodes (free text, local to the document) and ``surface`` nodes (a document's
  surface form of an entity);
* backbone, auxiliary, linking (backbone -> the auxiliary qualifying it) and normalisation
  (surface -> entity) triples, each with its document, line span, chunk and rule label.

Entity rows carry this document's provenance only; ``store.build_kg`` merges them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from edaqa_pipeline.graphs.chipkg.code import code_ir, heading_ir
from edaqa_pipeline.graphs.chipkg.context import clean_text
from edaqa_pipeline.graphs.chipkg.llm_task import block_irs
from edaqa_pipeline.graphs.chipkg.schema import ENTITY_TYPES, SentenceIR
from edaqa_pipeline.graphs.chipkg.spec_tables import spec_table_irs
from edaqa_pipeline.graphs.chipkg.tables import table_irs
from edaqa_pipeline.graphs.chipkg.units import Unit, document_units
from edaqa_pipeline.model import stable_id


@dataclass
class DocumentKG:
    document: str
    nodes: list[dict[str, Any]] = field(default_factory=list)
    triples: list[dict[str, Any]] = field(default_factory=list)
    rules: Counter[str] = field(default_factory=Counter)
    fell_back: bool = False  # a model was configured but some prose was extracted by the rules


def entity_id(entity_type: str, canonical: str) -> str:
    return stable_id("ent", entity_type, canonical)


def entity_text(canonical: str, etype: str) -> str:
    """What the encoder sees for an entity node: its name and type, e.g. ``-buf_list option of
    clock_tree_synthesis``, ``cacheabley field of mrac``."""
    if etype == "option" and " " in canonical:
        cmd, opt = canonical.split(" ", 1)
        return f"{opt} option of {cmd}"
    if etype == "field" and "." in canonical:
        register, name = canonical.split(".", 1)
        return f"{name} field of register {register}"
    return f"{canonical} ({etype.replace('_', ' ')})"


def sentence_irs(units: list[Unit], commands: set[str], client: Any = None) -> tuple[dict[str, SentenceIR], bool]:
    """(IR per sentence id, fell_back): rules for tables / code / headings, the
    ``chipkg_triples`` task for prose (one call per block)."""
    irs: dict[str, SentenceIR] = {}
    tables: dict[str, list[Unit]] = {}
    prose: dict[str, list[Unit]] = {}
    for u in units:
        if u.kind == "table_row":
            tables.setdefault(u.block["block_id"], []).append(u)
        elif u.kind == "prose":
            prose.setdefault(u.block["block_id"], []).append(u)
        else:
            ir = code_ir(u.sentence_id, u.text, u.ctx) if u.kind == "code" else heading_ir(u.sentence_id, u.text, commands, u.ctx)
            if ir is not None:
                irs[u.sentence_id] = ir
    for group in tables.values():
        u0 = group[0]
        rule = spec_table_irs if u0.ctx.kind == "spec" else table_irs
        for ir in rule([(u.sentence_id, u.cells) for u in group], u0.header, u0.ctx):
            irs[ir.sentence_id] = ir
    fell_back = False
    for group in prose.values():
        result, fb = block_irs(group[0].ctx, [(u.sentence_id, clean_text(u.text)) for u in group], client)
        fell_back |= fb
        irs.update((ir.sentence_id, ir) for ir in result.sentences)
    return irs, fell_back


def _chunk_for(block_chunks: dict[str, list[tuple[str, int | None, int | None]]], block_id: str,
               line: int | None) -> str:
    options = block_chunks.get(block_id, [])
    if not options:
        return ""
    if line is not None:
        for cid, s, e in options:
            if s is not None and e is not None and s <= line <= e:
                return cid
    return options[0][0]


def _node(node_id: str, kind: str, node_type: str, text: str, document: str, section_path: list[str],
          span: tuple[int | None, int | None], chunk_id: str, **extra: str) -> dict[str, Any]:
    return {
        "node_id": node_id, "kind": kind, "node_type": node_type, "text": text,
        "canonical": extra.get("canonical", ""), "category": extra.get("category", ""),
        "anchor_type": extra.get("anchor_type", ""), "anchor_entity": extra.get("anchor_entity", ""),
        "ir": extra.get("ir", ""), "document": document, "documents": [document],
        "chunk_ids": [chunk_id] if chunk_id else [],
        "line_spans": [list(span)] if span[0] is not None else [], "section_path": list(section_path),
    }


class _Rows:
    """Node rows of one document (merged by id) and its triple rows."""

    def __init__(self, document: str) -> None:
        self.document = document
        self.nodes: dict[str, dict[str, Any]] = {}
        self.triples: list[dict[str, Any]] = []

    def add(self, row: dict[str, Any]) -> str:
        prev = self.nodes.get(row["node_id"])
        if prev is None:
            self.nodes[row["node_id"]] = row
        else:
            for key in ("chunk_ids", "line_spans"):
                prev[key].extend(v for v in row[key] if v not in prev[key])
        return row["node_id"]

    def term(self, name: str, etype: str, u: Unit, chunk_id: str) -> str:
        path, span = list(u.block["section_path"] or []), (u.start_line, u.end_line)
        if etype == "value":
            return self.add(_node(stable_id("val", self.document, name), "value", "value", name,
                                  self.document, path, span, chunk_id))
        etype = etype if etype in ENTITY_TYPES else "concept"
        return self.add(_node(entity_id(etype, name), "entity", etype, entity_text(name, etype),
                              self.document, path, span, chunk_id, canonical=name))

    def statement(self, u: Unit, ir: SentenceIR, chunk_id: str) -> None:
        text = clean_text(u.text) if u.kind != "code" else u.text.strip()[:400]
        section = list(u.block["section_path"] or [])[-2:]
        embed = (" > ".join(section) + ": " if section else "") + text
        path, span = list(u.block["section_path"] or []), (u.start_line, u.end_line)
        stmt = self.add(_node(u.sentence_id, "statement", u.kind, embed, self.document, path, span,
                              chunk_id, category=ir.category, anchor_type=ir.anchor_type,
                              anchor_entity=ir.anchor_entity, ir=ir.model_dump_json(),
                              canonical=ir.anchor_entity))
        if ir.anchor_entity_type != "value":  # filters and normalisation targets rely on it
            self.term(ir.anchor_entity, ir.anchor_entity_type, u, chunk_id)
        base = {"statement_id": stmt, "document": self.document, "chunk_id": chunk_id,
                "start_line": u.start_line, "end_line": u.end_line, "rule": ir.rule, "qualifier": "",
                "subject_kind": "node", "object_kind": "node"}
        backbone: list[str] = []
        for i, t in enumerate(ir.backbone):
            s, o = self.term(t.subject, t.subject_type, u, chunk_id), self.term(t.object, t.object_type, u, chunk_id)
            tid = stable_id("tri", stmt, "backbone", i, s, t.relation, o)
            backbone.append(tid)
            self.triples.append({**base, "triple_id": tid, "kind": "backbone", "subject": s,
                                 "relation": t.relation, "object": o})
        for i, x in enumerate(ir.auxiliary):
            s, o = self.term(x.subject, x.subject_type, u, chunk_id), self.term(x.object, x.object_type, u, chunk_id)
            tid = stable_id("tri", stmt, "auxiliary", i, s, x.relation, o)
            self.triples.append({**base, "triple_id": tid, "kind": "auxiliary", "subject": s,
                                 "relation": x.relation, "object": o, "qualifier": x.kind})
            target = backbone[min(x.backbone, len(backbone) - 1)]
            self.triples.append({**base, "triple_id": stable_id("tri", target, "linking", tid),
                                 "kind": "linking", "subject": target, "relation": f"has_{x.kind}",
                                 "object": tid, "subject_kind": "triple", "object_kind": "triple",
                                 "qualifier": x.kind})
        for n in ir.normalisation:
            if n.surface == n.canonical:
                continue
            s = self.add(_node(stable_id("sur", self.document, n.surface), "surface", n.entity_type,
                               n.surface, self.document, path, span, chunk_id, canonical=n.canonical))
            o = self.term(n.canonical, n.entity_type, u, chunk_id)
            self.triples.append({**base, "triple_id": stable_id("tri", stmt, "normalisation", s, o),
                                 "kind": "normalisation", "subject": s, "relation": "normalises_to", "object": o})


def document_kg(blocks: list[dict[str, Any]], chunks: list[dict[str, Any]], client: Any = None) -> DocumentKG:
    """Node and triple rows of one document (see the module docstring)."""
    blocks = sorted(blocks, key=lambda b: b["ordinal"])
    document = blocks[0]["document"] if blocks else (chunks[0]["document"] if chunks else "")
    block_chunks: dict[str, list[tuple[str, int | None, int | None]]] = {}
    for c in chunks:
        for bid in c["block_ids"] or []:
            block_chunks.setdefault(bid, []).append((c["chunk_id"], c["start_line"], c["end_line"]))
    parsed = document_units(blocks)
    irs, fell_back = sentence_irs(parsed.units, parsed.commands, client)
    rows = _Rows(document)
    out = DocumentKG(document=document, fell_back=fell_back)
    for c in chunks:
        rows.add(_node(c["chunk_id"], "passage", "passage", "", c["document"], list(c["section_path"] or []),
                       (c["start_line"], c["end_line"]), c["chunk_id"]))
    for u in parsed.units:
        ir = irs.get(u.sentence_id)
        if ir is None or not ir.backbone:
            continue
        out.rules[ir.rule] += 1
        rows.statement(u, ir, _chunk_for(block_chunks, u.block["block_id"], u.start_line))
    out.nodes, out.triples = list(rows.nodes.values()), rows.triples
    return out
