"""Raw evidence bundling over the element graph (TechDocRAG equations 12-13).

A **bundle** is a core element plus the members its roles ask for, in priority order, each
member being an element's exact raw text (or a table's header lines only). Roles (the
paper's Table 1 "bundle composition"; ``intent.Policy.bundle`` lists each intent's):

==================  ========================================================================
role                members
==================  ========================================================================
section_title       the heading of the core's section
defining_paragraph  the first plain paragraph of the core's clause scope
notes               warnings / notes / cautions of the core's section and clause scope
table_header        the header lines of the core's table, and of tables the core refers to
neighbour_steps     the steps linked to a step core by ``step_next`` (previous and next)
procedure_steps     every step of the core's procedure (its ``step_next`` chain, in order)
caption             captions of the core (or its table); the target of a caption core
referring           elements referring to the core (or its table) by label
cited               elements the core cites, with their local context (first paragraph,
                    table header, caption)
prior_revision      the corresponding element of the previous version (``version_of``)
scope               the core's clause scope: its heading, elements and subsections
==================  ========================================================================

``assemble`` builds a bundle and trims it to ``max_chars`` (members another member already
shows are dropped; a table that no longer fits keeps its header). ``evidence_items`` lays a
bundle out as ``EvidenceItem``s: members contiguous in the document become one item (its text
the members' raw text, its citation the covered lines or page, its ``element_ids`` the
members, its line kinds the parser's); ``pack`` packs bundles under a character budget with
the shared ``retrieval.packing.pack_shrinking``, the core's item first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from edaqa_pipeline.graphs.elements.index import SECTION_TYPES, ElementIndex
from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.parsing.lines import pdf_line_kinds
from edaqa_pipeline.retrieval.line_structure import source_lines
from edaqa_pipeline.retrieval.packing import pack_shrinking

NOTE_BUNDLE_LABELS = frozenset({"warning", "caution", "important", "attention", "danger", "note", "error"})
REFERENCES = frozenset({"clause_ref", "table_ref", "figure_ref"})
ROLES: tuple[str, ...] = (
    "section_title", "defining_paragraph", "notes", "table_header", "neighbour_steps",
    "procedure_steps", "caption", "referring", "cited", "prior_revision", "scope",
)  # fmt: skip


@dataclass(frozen=True)
class Member:
    node: int
    role: str  # "core" or one of ROLES
    relation: str  # the relation that links it to the core ("recall", "contains", ...)
    header_only: bool = False


@dataclass
class Bundle:
    core: int
    score: float
    relation: str  # how the core was found: recall or the relation that expanded it
    members: list[Member] = field(default_factory=list)


def procedure_chain(index: ElementIndex, step: int) -> list[int]:
    """Every step of ``step``'s procedure in order (the ``step_next`` chain through it)."""
    def follow(node: int, outgoing: bool) -> list[int]:
        out, seen = [], {node}
        while True:
            nxt = [b for b, r, o in index.adj[node] if r == "step_next" and o == outgoing and b not in seen]
            if not nxt:
                return out
            node = nxt[0]
            seen.add(node)
            out.append(node)
    return [*reversed(follow(step, False)), step, *follow(step, True)]


def role_members(index: ElementIndex, core: int, role: str) -> list[Member]:
    """The members ``role`` adds to a bundle around ``core`` (module docstring)."""
    idx = index
    section = core if idx.type[core] in SECTION_TYPES else idx.section[core]
    scope = idx.clause_scope(core)
    table = core if idx.type[core] == "table" else idx.table_of[core]
    out: list[Member] = []

    def add(node: int, rel: str, header_only: bool = False) -> None:
        if node >= 0:
            out.append(Member(node, role, rel, header_only))

    def linked(node: int, relations: frozenset[str], outgoing: bool) -> list[tuple[int, str]]:
        return [(b, r) for b, r, o in idx.adj[node] if o == outgoing and r in relations]

    if role == "section_title" and section != core:
        add(section, "contains")
    elif role == "defining_paragraph" and scope != -1:
        prose = [c for c in idx.children[scope] if idx.type[c] == "paragraph" and not idx.note[c]]
        if prose:
            add(prose[0], "contains")
    elif role == "notes":
        for s in {section, scope} - {-1}:
            for c in idx.children[s]:
                if idx.type[c] == "paragraph" and idx.note[c] in NOTE_BUNDLE_LABELS:
                    add(c, "same_section")
    elif role == "table_header":
        if table != -1 and table != core:
            add(table, "contains", header_only=True)
        for b, r in linked(core, frozenset({"table_ref", "clause_ref"}), True)[:2]:
            t = b if idx.type[b] == "table" else idx.table_of[b]
            if t != -1:
                add(t, r, header_only=True)
    elif role == "neighbour_steps" and idx.type[core] == "step":
        for b, r, _ in idx.adj[core]:
            if r == "step_next":
                add(b, r)
    elif role == "procedure_steps" and idx.type[core] == "step":
        for b in procedure_chain(idx, core):
            if b != core:
                add(b, "step_next")
    elif role == "caption":
        for target in {core, table} - {-1}:
            for c in idx.captions.get(target, []):
                add(c, "caption_of")
        if idx.type[core] == "caption":
            for b, r in linked(core, frozenset({"caption_of"}), True):
                add(b, r)
    elif role == "referring":
        for target in {core, table} - {-1}:
            for b, r in linked(target, REFERENCES, False)[:2]:
                add(b, r)
    elif role == "cited":
        for b, r in linked(core, REFERENCES, True)[:3]:
            add(b, r)
            if idx.type[b] in SECTION_TYPES:
                prose = [c for c in idx.children[b] if idx.type[c] == "paragraph"]
                if prose:
                    add(prose[0], r)
            elif idx.type[b] == "table_row" and idx.table_of[b] != -1:
                add(idx.table_of[b], r, header_only=True)
            for c in idx.captions.get(b, []):
                add(c, "caption_of")
    elif role == "prior_revision":
        for b, r, _ in idx.adj[core]:
            if r in ("version_of", "supersedes"):
                add(b, r)
    elif role == "scope" and scope != -1:
        for c in idx.scope_members(scope):
            add(c, "contains")
    return out


def trim(index: ElementIndex, members: Sequence[Member], max_chars: int) -> list[Member]:
    """Drop repeats and members another member already shows; cut at ``max_chars``
    (members in priority order; a table that does not fit keeps its header)."""
    kept: list[Member] = []
    shown: set[int] = set()
    used = 0
    for m in members:
        cover = index.coverage(m.node, m.header_only)
        if cover <= shown:
            continue
        cost = len(index.text(m.node, m.header_only)) + 1
        if kept and used + cost > max_chars:
            if index.type[m.node] != "table" or m.header_only:
                continue
            m = replace(m, header_only=True)
            cover = index.coverage(m.node, True)
            cost = len(index.text(m.node, True)) + 1
            if cover <= shown or used + cost > max_chars:
                continue
        kept.append(m)
        shown |= cover
        used += cost
    # a member shown inside a later whole table (header, row) is dropped
    covers = [index.coverage(m.node, m.header_only) for m in kept]
    return [m for m, c in zip(kept, covers, strict=True)
            if not any(o is not m and c < oc for o, oc in zip(kept, covers, strict=True))]


def assemble(index: ElementIndex, core: int, score: float, relation: str, roles: Sequence[str],
             max_chars: int) -> Bundle:
    """The bundle of ``core``: the core, then each role's members in ``roles`` order, trimmed
    to ``max_chars``. ``roles=()`` gives the element alone."""
    unknown = [r for r in roles if r not in ROLES]
    if unknown:
        raise ValueError(f"unknown bundle roles {unknown}; known: {', '.join(ROLES)}")
    members = [Member(core, "core", relation)]
    for role in roles:
        members += role_members(index, core, role)
    return Bundle(core, score, relation, trim(index, members, max_chars))


# -- packing -----------------------------------------------------------------------------


def _contiguous(index: ElementIndex, group: list[Member], m: Member) -> bool:
    """True when nothing unshown lies between the group and ``m`` in reading order."""
    last = group[-1]
    if index.doc[last.node] != index.doc[m.node] or index.page[last.node] != index.page[m.node]:
        return False
    shown: set[int] = set()
    for g in group:
        shown |= index.coverage(g.node, g.header_only)
    shown |= index.coverage(m.node, m.header_only)
    lo = max(index.ordinal[g.node] if g.header_only
             else max(index.ordinal[x] for x in index.coverage(g.node)) for g in group)
    doc = index.doc[m.node]
    for pos in range(lo + 1, index.ordinal[m.node]):
        node = index.node_at(doc, pos)
        if node != -1 and node not in shown:
            return False
    return True


def evidence_items(index: ElementIndex, bundle: Bundle, members: Sequence[Member], path_prefix: str) -> list[EvidenceItem]:
    """A bundle's members as evidence items in reading order, contiguous members merged;
    ``path`` is ``<path_prefix>:<relation>`` (the core's relation for the core's item)."""
    ordered = sorted(members, key=lambda m: (index.doc[m.node], index.ordinal[m.node], m.header_only is False))
    groups: list[list[Member]] = []
    for m in ordered:
        if groups and _contiguous(index, groups[-1], m):
            groups[-1].append(m)
        else:
            groups.append([m])
    out = []
    for n, group in enumerate(groups):
        first = group[0]
        spans = [index.span(m.node, m.header_only) for m in group]
        starts = [s for s, _ in spans if s is not None]
        ends = [e for _, e in spans if e is not None]
        relation = bundle.relation if any(m.role == "core" for m in group) else first.relation
        texts = [index.text(m.node, m.header_only) for m in group]
        item = EvidenceItem(
            chunk_id="",
            doc=index.doc[first.node],
            text="\n".join(texts),
            score=float(bundle.score) - 1e-6 * n,
            path=f"{path_prefix}:{relation}",
            start_line=min(starts) if starts else None,
            end_line=max(ends) if ends else None,
            page=index.page[first.node] if not starts else None,
            element_ids=tuple(dict.fromkeys(index.ids[m.node] for m in group)),
            line_numbers=_line_numbers(texts, spans),
            section=tuple(index.section_path[first.node] or ()),
        )
        # Markdown: the stored kinds of its source lines; a PDF page: from the element types
        kinds = index.lines.kinds(item.doc, source_lines(item)) if starts else _page_line_kinds(index, group, texts)
        subjects = index.lines.subjects(item.doc, source_lines(item)) if starts else ()
        out.append(replace(item, line_kinds=kinds, line_subjects=subjects))
    return out


def _page_line_kinds(index: ElementIndex, group: Sequence[Member], texts: Sequence[str]) -> tuple[str, ...]:
    """The line kinds of a bundle of PDF elements (no source lines to look them up by), from
    each element's type: a table row stays a row (under its header when the bundle holds
    it), so the answer quotes it as a row, not as a sentence with pipes in it."""
    kinds: list[str] = []
    for member, text in zip(group, texts, strict=True):
        count = text.count("\n") + 1
        kind = "table" if member.header_only else index.type[member.node]
        if kind == "table":
            kinds.extend(pdf_line_kinds("table", text))
        else:
            line = {"table_row": "table_row", "section": "heading", "clause": "heading",
                    "caption": "caption", "figure": "caption"}.get(kind, "text")
            kinds.extend([line] * count)
    return tuple(kinds)


def _line_numbers(texts: Sequence[str], spans: Sequence[tuple[int | None, int | None]]) -> tuple[int, ...]:
    """The source line of every line of the joined texts, when each member's text is exactly
    its span; () when some member is not (its lines are then cited by the whole span)."""
    numbers: list[int] = []
    for text, (start, end) in zip(texts, spans, strict=True):
        if start is None or end is None or text.count("\n") != end - start:
            return ()
        numbers.extend(range(start, end + 1))
    return tuple(numbers)


def pack(index: ElementIndex, bundles: Sequence[Bundle], k: int, budget_chars: int,
         path_prefix: str) -> list[EvidenceItem]:
    """Bundles in rank order under ``budget_chars`` characters, at most ``k`` items
    (``retrieval.packing.pack_shrinking``: a bundle that does not fit loses its
    lowest-priority members first); each bundle's items in reading order, its core's first."""

    def render(n: int, members: Sequence[Member]) -> list[EvidenceItem]:
        bundle = bundles[n]
        core_id = index.ids[bundle.core]
        items = evidence_items(index, bundle, members, path_prefix)
        return sorted(items, key=lambda it: core_id not in it.element_ids)

    return pack_shrinking([b.members for b in bundles], render, k, budget_chars)
