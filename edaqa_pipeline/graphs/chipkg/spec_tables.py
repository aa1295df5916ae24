"""Specification tables -> IRs (rules ``spec_table.*``), chosen by the table's header.

``spec_table.register_field``
    a register's field table (columns Field, Bits, Description, Access, Reset; the VeeR
    manual's CSR tables): (register, has_field, register.field), (field, means, description),
    auxiliaries bits (range), access (requirement), reset (default). The register comes from
    the caption or the section title ("... Register (mrac, at CSR 0x7C0)").
``spec_table.register``
    a register map (columns Number/Address, Name, Description): (register, means, ...),
    address (range), privilege (requirement).
``spec_table.signal``
    a signal table (first column Signal / Signal(s), optionally Dir): (signal, means, ...),
    direction (requirement); "a and b" rows name both signals.
``spec_table.signal_value``
    a signal's value table (first column a signal with a bit range, "CTI_O(2:0)"):
    (signal, has_value, "CTI_O = '000'"), ("CTI_O = '000'", means, "Classic cycle").
``spec_table.parameter``
    a parameter table (Parameter / Symbol / Name and Min / Typ / Target / Max columns):
    (parameter, means, ...), limits (range), unit, conditions; the parameter's long name
    normalises to its symbol ("Breakdown Voltage" -> ``BVDSSN013``).
``spec_table.row``
    other tables: the first cell's entity described by the rest of the row (a cell / module
    name under a "Cell Name" / "Module" header is a module; else a concept).
"""

from __future__ import annotations

import re

from edaqa_pipeline.graphs.chipkg import qualifiers as q
from edaqa_pipeline.graphs.chipkg.context import UnitContext, clean_text, short
from edaqa_pipeline.graphs.chipkg.prose import concept, normalisations
from edaqa_pipeline.graphs.chipkg.schema import (
    IRAttribute,
    IRNormalisation,
    IRQualifier,
    IRTriple,
    SentenceIR,
    offline_rule,
)
from edaqa_pipeline.graphs.chipkg.spec_mentions import (
    NAME,
    PORT_SIGNAL,
    REGISTER_IN_TITLE,
    identifier_like,
    signal_name,
    spec_canonical,
    spec_mentions,
    vocabulary_entry,
)


def is_signal_name(name: str) -> bool:
    """A signal table's first cell names signals (``cpu_halt_req``, ``ACK_O``), not a group
    of rows ("Clock", "Reset")."""
    return bool(NAME.fullmatch(name)) and ("_" in name or bool(PORT_SIGNAL.fullmatch(name)))

_RANGED_SIGNAL = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)\s*\(\s*\d+\s*(?::|\.\.)\s*\d+\s*\)$")
_SPLIT_NAMES = re.compile(r"\s+and\s+|\s*,\s*|\s*/\s*")
_LIMITS = ("min", "typ", "target", "max", "nom")
_MODULE_HEADER = re.compile(r"\b(?:cell|module|block|instance|macro)\b", re.IGNORECASE)
_EMPTY = frozenset({"", "-", "\u2014", "\u2013", "n/a", "na"})


def _col(header: list[str], *names: str) -> int | None:
    """The first column whose header is one of ``names`` (or starts with one); a word the PDF
    hyphenated over two lines ("Tar-get") counts as one word."""
    for i, h in enumerate(header):
        low = re.sub(r"(?<=[a-z])-(?=[a-z])", "", h.lower().strip())
        if any(low == n or low.startswith(n + " ") or low.startswith(n + ".") for n in names):
            return i
    return None


def table_kind(header: list[str]) -> str:
    """Which rule of the module docstring a table's header selects."""
    if not header:
        return "row"
    first = header[0].strip()
    if _col(header, "field") is not None and any(_col(header, c) is not None for c in ("bits", "access", "reset")):
        return "register_field"
    if re.match(r"signal", first, re.IGNORECASE):
        return "signal"
    if _RANGED_SIGNAL.match(first) or PORT_SIGNAL.fullmatch(first):
        return "signal_value"
    if _col(header, "name") is not None and any(_col(header, c) is not None for c in ("number", "address", "privilege")):
        return "register"
    if (_col(header, "parameter", "symbol") is not None
            and any(_col(header, c) is not None for c in _LIMITS)):
        return "parameter"
    return "row"


def table_register(ctx: UnitContext) -> str:
    """The register a field table documents: from the caption, the section title or scope."""
    for text in (ctx.caption, *(reversed(ctx.section_path))):
        m = REGISTER_IN_TITLE.search(text or "")
        if m:
            return m.group(1).lower()
    return ctx.scope if ctx.scope_type == "register" else ""


def _cell(cells: list[str], i: int | None) -> str:
    if i is None or i >= len(cells):
        return ""
    value = clean_text(cells[i])
    return "" if value.lower() in _EMPTY else value


def _rest(cells: list[str], header: list[str], skip: set[int]) -> str:
    parts = []
    for i in range(len(cells)):
        value = _cell(cells, i)
        if i not in skip and value:
            name = header[i].strip() if i < len(header) else ""
            parts.append(f"{name}: {value}" if name and len(header) > 2 else value)
    return "; ".join(parts)


def _ir(sid: str, rule: str, anchor_type: str, entity: str, etype: str, backbone: list[IRTriple],
        aux: list[IRQualifier], norms: list[IRNormalisation]) -> SentenceIR:
    return SentenceIR(
        sentence_id=sid, category="declarative", anchor_type=anchor_type, anchor_entity=entity,
        anchor_entity_type=etype, entity=entity,
        attributes=[IRAttribute(relation=t.relation, value=t.object) for t in backbone],
        backbone=backbone, auxiliary=aux, normalisation=norms, rule=offline_rule(f"spec_table.{rule}"),
    )


def _triple(s: str, st: str, rel: str, o: str, ot: str = "value") -> IRTriple:
    return IRTriple(subject=s, subject_type=st, relation=rel, object=o, object_type=ot)


def _refers(lead: str, etype: str, text: str, ctx: UnitContext) -> list[IRTriple]:
    return [_triple(lead, etype, "refers_to", m.canonical, m.entity_type)
            for m in spec_mentions(text, ctx.vocabulary)[:6] if (m.entity_type, m.canonical) != (etype, lead)]


def _row_ir(sid: str, kind: str, cells: list[str], header: list[str], ctx: UnitContext) -> SentenceIR | None:
    if kind == "register_field":
        f, d = _col(header, "field"), _col(header, "description")
        field, desc = _cell(cells, f), _cell(cells, d)
        bits, access, reset = (_cell(cells, _col(header, c)) for c in ("bits", "access", "reset"))
        if not field or field.lower() == "reserved" or not (desc or bits):
            return None
        register = table_register(ctx)
        canon = spec_canonical(field, "field", register)
        backbone = [_triple(canon, "field", "means", short(desc) or field)]
        if register:
            backbone.append(_triple(register, "register", "has_field", canon, "field"))
        aux = [q.qualifier(canon, "field", k, rel, v) for k, rel, v in
               (("range", "bits", bits), ("requirement", "access", access), ("default", "reset", reset)) if v]
        aux += q.qualifiers(desc, canon, "field")
        norms = [IRNormalisation(surface=field, canonical=canon, entity_type="field")] if field != canon else []
        return _ir(sid, kind, "configuration", canon, "field", backbone + _refers(canon, "field", desc, ctx), aux, norms)
    if kind == "register":
        name = _cell(cells, _col(header, "name"))
        if not NAME.fullmatch(name) or name.lower() == "reserved" or (not identifier_like(name) and not name.islower()):
            return None
        reg = spec_canonical(name, "register")
        used = {i for i in (_col(header, "name"), _col(header, "number", "address"), _col(header, "privilege")) if i is not None}
        desc = _rest(cells, header, used)
        aux = [q.qualifier(reg, "register", k, rel, v) for k, rel, v in
               (("range", "address", _cell(cells, _col(header, "number", "address"))),
                ("requirement", "access", _cell(cells, _col(header, "privilege")))) if v]
        return _ir(sid, kind, "configuration", reg, "register",
                   [_triple(reg, "register", "means", short(desc) or name), *_refers(reg, "register", desc, ctx)], aux, [])
    if kind == "signal":
        names = [signal_name(n) for n in _SPLIT_NAMES.split(_cell(cells, 0)) if signal_name(n)]
        names = [n for n in names if is_signal_name(n)]
        if not names:
            return None
        lead, dcol = names[0], _col(header, "description")
        desc = _cell(cells, dcol) if dcol is not None else _rest(cells, header, {0})
        backbone = [_triple(lead, "signal", "means", short(desc) or lead)]
        backbone += [_triple(lead, "signal", "paired_with", other, "signal") for other in names[1:]]
        direction = _cell(cells, _col(header, "dir", "direction"))
        aux = [q.qualifier(lead, "signal", "requirement", "direction", direction)] if direction else []
        return _ir(sid, kind, "definition", lead, "signal", backbone + _refers(lead, "signal", desc, ctx), aux,
                   normalisations([]))
    if kind == "signal_value":
        sig, value = signal_name(header[0]), _cell(cells, 0)
        desc = _rest(cells, header, {0})
        if not value:
            return None
        node = f"{sig} = {value}"
        backbone = [_triple(sig, "signal", "has_value", node), _triple(node, "value", "means", short(desc) or value)]
        return _ir(sid, kind, "definition", sig, "signal", backbone, [], [])
    if kind == "parameter":
        pcol, scol = _col(header, "parameter"), _col(header, "symbol", "name")
        long_name, symbol = _cell(cells, pcol), _cell(cells, scol)
        name = symbol if symbol and identifier_like(symbol) else long_name
        if not name:
            return None
        canon = spec_canonical(name, "parameter")
        used = {i for i in (pcol, scol) if i is not None}
        limits = [(c, _col(header, c)) for c in _LIMITS]
        used |= {i for _, i in limits if i is not None}
        aux = [q.qualifier(canon, "parameter", "range", c, _cell(cells, i)) for c, i in limits if _cell(cells, i)]
        unit, cond = _cell(cells, _col(header, "unit", "units")), _cell(cells, _col(header, "conditions", "condition", "meas"))
        used |= {i for i in (_col(header, "unit", "units"), _col(header, "conditions", "condition", "meas")) if i is not None}
        aux += [q.qualifier(canon, "parameter", "unit", "unit", unit)] if unit else []
        aux += [q.qualifier(canon, "parameter", "condition", "when", cond)] if cond else []
        desc = "; ".join(x for x in (long_name if name != long_name else "", _rest(cells, header, used)) if x)
        norms = ([IRNormalisation(surface=long_name, canonical=canon, entity_type="parameter")]
                 if long_name and long_name != canon else [])
        return _ir(sid, kind, "configuration", canon, "parameter",
                   [_triple(canon, "parameter", "means", short(desc) or name)], aux, norms)
    first = _cell(cells, 0)
    if not first:
        return None
    found = spec_mentions(first, ctx.vocabulary)
    if found:
        lead, etype = found[0].canonical, found[0].entity_type
    elif _MODULE_HEADER.search(header[0]) and identifier_like(first):  # "Cell Name": a cell
        lead, etype = first, "module"
    else:
        lead, etype = concept(first), "concept"
    desc = _rest(cells, header, {0})
    if not lead or not desc:
        return None
    return _ir(sid, "row", "definition", lead, etype,
               [_triple(lead, etype, "described_as", short(desc)), *_refers(lead, etype, desc, ctx)], [],
               normalisations(found[:1]))


def spec_table_irs(rows: list[tuple[str, list[str]]], header: list[str], ctx: UnitContext) -> list[SentenceIR]:
    """IRs for the rows ``(sentence_id, cells)`` of one specification table."""
    kind = table_kind(header)
    return [ir for sid, cells in rows if (ir := _row_ir(sid, kind, cells, header, ctx)) is not None]


def defined_entities(header: list[str], rows: list[list[str]], ctx: UnitContext) -> dict[str, tuple[str, str]]:
    """The entities a specification table defines (the document vocabulary of
    ``spec_mentions``): registers, identifier-like fields, signals, parameter symbols."""
    kind = table_kind(header)
    out: dict[str, tuple[str, str]] = {}

    def add(name: str, etype: str, register: str = "") -> None:
        if name and name.lower() != "reserved" and NAME.fullmatch(signal_name(name)):
            key, value = vocabulary_entry(name, etype, register)
            out.setdefault(key, value)

    if kind == "register_field":
        register = table_register(ctx)
        add(register, "register")
        for cells in rows:
            field = _cell(cells, _col(header, "field"))
            if identifier_like(field):
                add(field, "field", register)
    elif kind == "register":
        for cells in rows:
            add(_cell(cells, _col(header, "name")), "register")
    elif kind == "signal":
        for cells in rows:
            for n in _SPLIT_NAMES.split(_cell(cells, 0)):
                if is_signal_name(signal_name(n)):
                    add(n, "signal")
    elif kind == "signal_value":
        add(header[0], "signal")
    elif kind == "parameter":
        for cells in rows:
            symbol = _cell(cells, _col(header, "symbol", "name"))
            if identifier_like(symbol):
                add(symbol, "parameter")
    return out
