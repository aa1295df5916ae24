"""Link rules of the element graph: each section's scope command, the identifier and summary
views of every node, the referential edges (labels, Markdown links, option references) and
the in-document ``same_identifier`` edges. ``graph.py`` lists them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from edaqa_pipeline.graphs.elements import rules, summaries
from edaqa_pipeline.graphs.elements.builder import DocumentBuilder
from edaqa_pipeline.graphs.elements.schema import LINKABLE_KINDS, MAX_IDENTIFIER_FANOUT
from edaqa_pipeline.text import identifiers


def scope_commands(b: DocumentBuilder) -> None:
    """The command each section documents: named in its heading, else invoked first by one of
    its code blocks, else its parent's; elements take their section's."""
    for sec in b.sections:
        el = b.nodes[sec]
        command = next(iter(identifiers.SNAKE.findall(el.row["heading"])), "")
        if not command:
            for kid in el.children:
                if b.nodes[kid].row["element_type"] == "code":
                    found = identifiers.code_commands(b.nodes[kid].text)
                    if found:
                        command = found[0]
                        break
        parent = el.row["section_id"]
        if command:
            b.own_command.add(sec)
        elif parent:
            command = b.nodes[parent].row["scope_command"]
        el.row["scope_command"] = command
    for el in b.nodes.values():
        if el.row["element_type"] not in ("section", "clause") and el.row["section_id"]:
            el.row["scope_command"] = b.nodes[el.row["section_id"]].row["scope_command"]



def identifier_views(b: DocumentBuilder) -> None:
    """Identifiers (``text.identifiers``; options rows qualified by the scope command), the
    offline summary and the identifier view (identifiers + section path + plain text)."""
    for eid in b.order:
        el = b.nodes[eid]
        row = el.row
        etype = row["element_type"]
        scope = row["scope_command"] if etype == "table_row" else ""
        ids = identifiers.extract_identifiers(el.text, code=etype == "code", scope_command=scope)
        if etype == "table_row":
            key = identifiers.canonical(rules.first_word(rules.row_key(row)))
            if key.startswith("-") and row["scope_command"]:
                ids.append(f"{row['scope_command']} {key}")
        if eid in b.own_command:
            ids.insert(0, row["scope_command"])
        if row["label"]:
            ids.append(row["label"])
        row["identifiers"] = list(dict.fromkeys(ids))
    for eid in b.order:
        el = b.nodes[eid]
        row = el.row
        context = ""
        if row["element_type"] in ("section", "clause"):
            prose = [k for k in el.children if b.nodes[k].row["element_type"] == "paragraph"]
            context = b.nodes[prose[0]].text if prose else ""
        elif row["element_type"] == "table_row":
            context = row["header_raw"]
        row["summary"] = summaries.offline_summary(
            row["element_type"], row["section_path"], el.text, row["identifiers"], context
        )
        path = " ".join(row["section_path"][-2:])
        row["id_view"] = " ".join([*row["identifiers"], path, summaries.plain_text(el.text)])



def reference_edges(b: DocumentBuilder) -> None:
    """Label references (``clause_ref`` / ``table_ref`` / ``figure_ref``), in-document Markdown
    anchors, and option references resolved to options rows; links to other documents stay
    ``pending`` for ``corpus_edges``."""
    labelled: dict[str, list[str]] = defaultdict(list)
    by_type: dict[str, list[str]] = defaultdict(list)
    slugs: dict[str, str] = {}
    for eid in b.order:
        row = b.nodes[eid].row
        if row["label"] and row["element_type"] != "caption":
            labelled[row["label"]].append(eid)
        if row["element_type"] in ("table", "figure"):
            by_type[row["element_type"]].append(eid)
        if row["element_type"] in ("section", "clause"):
            slugs.setdefault(rules.slug(row["heading"]), eid)
    has_labels = {t: any(b.nodes[e].row["label"] for e in by_type[t]) for t in by_type}
    captioned: dict[str, set[str]] = defaultdict(set)
    for src, dst, rel, _ in b.edges:
        if rel == "caption_of":
            captioned[src].add(dst)
    relation = {"table": "table_ref", "figure": "figure_ref", "section": "clause_ref"}
    for eid in b.order:
        el = b.nodes[eid]
        etype = el.row["element_type"]
        if etype in ("section", "clause", "code", "table", "figure", "caption"):
            continue
        own_target = captioned.get(eid, set())
        for kind, label, _, _ in identifiers.label_refs(el.text):
            here = el.row["ordinal"]
            same = labelled.get(label, [])
            # a label used twice in a document (two "Figure 1") means the nearest one
            target = min(same, key=lambda t: (abs(b.nodes[t].row["ordinal"] - here), t)) if same else None
            rule = f"{relation[kind]}.label"
            if target is None and kind in by_type and not has_labels.get(kind):
                number = label.split(":", 1)[1]
                if number.isdigit() and 1 <= int(number) <= len(by_type[kind]):
                    target, rule = by_type[kind][int(number) - 1], f"{relation[kind]}.ordinal"
            if target and target not in own_target and target != eid:
                b.edge(eid, target, relation[kind], rule)
        for match in rules.MD_LINK.finditer(el.row["raw"]):
            target = match.group("target")
            if target.startswith(("http:", "https:", "mailto:", "ftp:")):
                continue
            if target.startswith("#"):
                dst = slugs.get(target[1:].lower())
                if dst:
                    b.edge(eid, dst, "clause_ref", "markdown_link.anchor")
            else:
                el.row["pending"].append(f"link|{target}")
        for pattern in (rules.OPTION_OF, rules.CMD_OPTION_SPAN):
            for match in pattern.finditer(el.row["raw"]):
                qualified = f"{match.group('cmd').lower()} -{match.group('opt').lstrip('-').lower()}"
                el.row["pending"].append(f"option|{qualified}")
        el.row["pending"] = list(dict.fromkeys(el.row["pending"]))
    rows_by_option = option_rows(r.row for r in b.nodes.values())
    for eid in b.order:
        row = b.nodes[eid].row
        keep = []
        for ref in row["pending"]:
            kind, _, value = ref.partition("|")
            if kind == "option" and value in rows_by_option:
                for dst in rows_by_option[value]:
                    if dst != eid:
                        b.edge(eid, dst, "table_ref", "option_of_command")
            else:
                keep.append(ref)
        row["pending"] = keep



def identifier_edges(b: DocumentBuilder) -> None:
    """In-document ``same_identifier`` edges (``identifier_links``)."""
    rows = [b.nodes[e].row for e in b.order]
    for src, dst, rule in identifier_links(rows):
        b.edge(src, dst, "same_identifier", rule)



def option_rows(rows: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """``cmd -opt`` -> the table rows whose first cell is ``-opt`` under command ``cmd``."""
    out: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        if row["element_type"] != "table_row" or not row["scope_command"]:
            continue
        key = identifiers.canonical(rules.first_word(rules.row_key(row)))
        if key.startswith("-"):
            out[f"{row['scope_command']} {key}"].append(row["element_id"])
    return out


def definition_rank(row: dict[str, Any], ident: str) -> int:
    """Lower = better place to define ``ident``: its options-table row, a code block invoking
    it, a section named after it, anything else."""
    etype = row["element_type"]
    if etype == "table_row":
        key = identifiers.canonical(rules.first_word(rules.row_key(row)))
        if key == ident or (row["scope_command"] and f"{row['scope_command']} {key}" == ident):
            return 0
    if etype == "code" and identifiers.code_commands(row["raw"])[:1] == [ident]:
        return 1
    if etype in ("section", "clause") and ident in row["identifiers"]:
        return 2
    return 3


def identifier_links(rows: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """In-document ``same_identifier`` edges: occurrence -> the identifier's defining element
    (at most MAX_IDENTIFIER_FANOUT occurrences, the nearest in reading order)."""
    occurrences: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        for ident in row["identifiers"]:
            if identifiers.identifier_kind(ident) in LINKABLE_KINDS:
                occurrences[ident].append(i)
    out = []
    for ident, where in occurrences.items():
        if len(where) < 2:
            continue
        anchor = min(where, key=lambda i: (definition_rank(rows[i], ident), i))
        others = sorted((i for i in where if i != anchor), key=lambda i: (abs(i - anchor), i))
        for i in others[:MAX_IDENTIFIER_FANOUT]:
            out.append((rows[i]["element_id"], rows[anchor]["element_id"], "same_identifier.definition"))
    return out
