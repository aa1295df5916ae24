"""The element graph, per document: node rows (``ELEMENTS_SCHEMA``) and in-document edges.

``build_document`` turns one parsed document's blocks into element nodes (clause, section,
paragraph, table + rows, figure, caption, step, code) and the structural and referential edges
that stay inside it. The node types and edge rules are listed in ``elements/graph.py``.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import polars as pl

from edaqa_pipeline.graphs.elements import summaries
from edaqa_pipeline.model import stable_id
from edaqa_pipeline.text import identifiers

ELEMENT_TYPES: tuple[str, ...] = (
    "clause", "section", "paragraph", "table", "table_row", "figure", "caption", "step", "code",
)  # fmt: skip
STRUCTURAL: tuple[str, ...] = ("contains", "precedes", "same_section", "step_next")
REFERENTIAL: tuple[str, ...] = (
    "clause_ref", "table_ref", "figure_ref", "caption_of", "same_identifier", "version_of",
    "supersedes",
)  # fmt: skip
RELATIONS: tuple[str, ...] = STRUCTURAL + REFERENTIAL
NOTE_LABELS = frozenset(
    {"note", "warning", "caution", "important", "attention", "danger", "tip", "error", "hint"}
)
SAME_SECTION_WINDOW = 3
MAX_IDENTIFIER_FANOUT = 40
MAX_IDENTIFIER_DOCS = 12
LINKABLE_KINDS = frozenset({"command", "qualified", "variable", "message", "file", "api"})

EDGE_STRUCT = pl.Struct({"dst": pl.String(), "relation": pl.String(), "rule": pl.String()})
ELEMENTS_SCHEMA: dict[str, pl.DataType] = {
    "element_id": pl.String(),
    "document": pl.String(),
    "element_type": pl.String(),  # one of ELEMENT_TYPES
    "block_id": pl.String(),
    "part": pl.String(),  # "" for a whole block, "row:3", "step:2", "caption", "caption:1"
    "ordinal": pl.Int64(),  # reading order within the document
    "label": pl.String(),  # own label: "section:3.2", "table:3", "figure:2" ("" if none)
    "heading": pl.String(),  # section / clause title
    "level": pl.Int64(),  # heading level (sections), else 0
    "section_path": pl.List(pl.String()),
    "section_id": pl.String(),  # nearest enclosing section element ("" at top level)
    "scope_command": pl.String(),  # the command the enclosing section documents
    "note_label": pl.String(),  # note / warning / ... for admonitions and "Note:" paragraphs
    "raw": pl.String(),  # verbatim evidence (source lines; PDF: block text)
    "header_raw": pl.String(),  # tables and rows: the header lines of the table
    "header_start": pl.Int64(),
    "header_end": pl.Int64(),
    "identifiers": pl.List(pl.String()),
    "summary": pl.String(),
    "id_view": pl.String(),  # what the identifier (BM25 / full-text) index sees
    "version": pl.String(),  # version label ("" when the corpus gives none)
    "start_line": pl.Int64(),
    "end_line": pl.Int64(),
    "page": pl.Int64(),
    "bbox": pl.List(pl.Float64()),
    "pending": pl.List(pl.String()),  # cross-document references to resolve: link|..., option|...
    "meta": pl.String(),
    "out_edges": pl.List(EDGE_STRUCT),  # in-document edges leaving this node
}
EDGES_SCHEMA: dict[str, pl.DataType] = {
    "edge_id": pl.String(),
    "src": pl.String(),
    "dst": pl.String(),
    "relation": pl.String(),
    "rule": pl.String(),
    "src_document": pl.String(),
    "dst_document": pl.String(),
    "scope": pl.String(),  # document | corpus
}

_NUMBERED = re.compile(
    r"^(?:(?:Section|Clause|Chapter|Article|Rule)\s+)?(?P<num>\d+(?:\.\d+)*)[.)]?\s+\S"
    r"|^(?:Annex|Appendix)\s+(?P<annex>[A-Z](?:\.\d+)*)\b"
    r"|^(?P<letter>[A-Z](?:\.\d+)+)[.)]?\s+\S"
)
# "Figure 3: ...", "Fig. 1.1.2: ...", "Table 2-1 Access ..." (the number is taken whole, then a
# separator or a capitalised title must follow: "Figure 6-5 depicts ..." is prose, not a caption)
_CAPTION = re.compile(
    r"^\s*[*_]*\s*(?P<kind>Figure|Fig\.|Table|Tab\.)\s*(?P<num>\d+(?:[.\-]\d+)*)(?![.\-]?\d)"
    r"\s*(?:[:.\-–—]|(?=[A-Z(\"']))",
)
_EMPHASIS_LINE = re.compile(r"^\s*([*_])[^*_\n].{0,200}\1\s*$")
_NOTE_PREFIX = re.compile(
    r"^\s*(?:\*\*|__)?(?P<label>Note|Warning|Caution|Important|Attention|Danger|Tip)s?\b\s*:?",
    re.IGNORECASE,
)
_STEP = re.compile(r"^(?P<indent>\s*)(?P<num>\d{1,3})[.)](?:\s+|$)")
_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_MD_LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
_OPTION_OF = re.compile(
    r"`(?P<opt>--?[A-Za-z]\w*)`\s+(?:option|flag|switch|argument|parameter|keyword)s?\s+"
    r"(?:of|for|to|in)\s+(?:the\s+)?`(?P<cmd>[a-z]\w*)`",
    re.IGNORECASE,
)
_CMD_OPTION_SPAN = re.compile(r"`(?P<cmd>[a-z][a-z0-9]*(?:_[a-z0-9]+)+)\s+(?P<opt>-[A-Za-z]\w*)[^`]*`")
_VERSION_TEXT = re.compile(
    r"\b(?:version|revision|rev\.|release)\s*[:#]?\s*(?P<v>v?\d+(?:\.\d+)*[a-z]?|[A-Z](?:\.\d+)*)\b",
    re.IGNORECASE,
)
YEAR = re.compile(r"(19|20)\d\d")
_AUX_HEADINGS = frozenset(
    """options option arguments argument parameters parameter switches flags usage synopsis
    example examples description return returns notes note syntax""".split()
)


def slug(heading: str) -> str:
    """GitHub-style anchor of a heading: lower case, punctuation dropped, spaces -> dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def clause_label(heading: str) -> str:
    """``section:3.2`` for a numbered heading, ``section:a.1`` for an annex; else ''."""
    match = _NUMBERED.match(heading.strip())
    if not match:
        return ""
    num = match.group("num") or match.group("annex") or match.group("letter")
    return identifiers.canonical_label("section", num)


def is_auxiliary_heading(heading: str) -> bool:
    """Generic subheadings ("Options", "Example") name no clause of their own: their content
    belongs to the parent clause when bundling."""
    words = re.sub(r"[^a-z ]", " ", heading.lower()).split()
    return bool(words) and len(words) <= 3 and all(w in _AUX_HEADINGS for w in words)


def split_cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [c.strip() for c in re.split(r"(?<!\\)\|", body)]


def _meta(block: dict[str, Any]) -> dict[str, Any]:
    try:
        value = json.loads(block.get("meta") or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass
class _El:
    """A node under construction."""

    row: dict[str, Any]
    text: str  # what views are computed from (raw without markup for some types)
    children: list[str]
    block_ordinal: int


class _DocumentBuilder:
    def __init__(self, document: str, version: str) -> None:
        self.document = document
        self.version = version
        self.nodes: dict[str, _El] = {}
        self.order: list[str] = []  # every node in reading order
        self.top: list[str] = []  # block-level nodes in reading order
        self.edges: list[tuple[str, str, str, str]] = []  # (src, dst, relation, rule)
        self.sections: list[str] = []
        self.own_command: set[str] = set()  # sections that name or invoke their command

    # -- nodes --------------------------------------------------------------------------

    def add(
        self, block: dict[str, Any], element_type: str, raw: str, *, part: str = "",
        section: str = "", start: int | None = None, end: int | None = None, text: str | None = None,
        top: bool = True, **extra: Any,
    ) -> str:
        element_id = stable_id("el", self.document, block["block_id"], part)
        is_pdf = block.get("page") is not None
        row = {
            "element_id": element_id,
            "document": self.document,
            "element_type": element_type,
            "block_id": block["block_id"],
            "part": part,
            "ordinal": len(self.order),
            "label": extra.pop("label", ""),
            "heading": extra.pop("heading", ""),
            "level": extra.pop("level", 0),
            "section_path": list(block.get("section_path") or []),
            "section_id": section,
            "scope_command": "",
            "note_label": extra.pop("note_label", ""),
            "raw": raw,
            "header_raw": extra.pop("header_raw", ""),
            "header_start": extra.pop("header_start", None),
            "header_end": extra.pop("header_end", None),
            "identifiers": [],
            "summary": "",
            "id_view": "",
            "version": self.version,
            "start_line": None if is_pdf else (start if start is not None else block.get("start_line")),
            "end_line": None if is_pdf else (end if end is not None else block.get("end_line")),
            "page": block.get("page"),
            "bbox": block.get("bbox"),
            "pending": [],
            "meta": json.dumps(extra.pop("meta", {}), sort_keys=True, ensure_ascii=False),
            "out_edges": [],
        }
        self.nodes[element_id] = _El(row, raw if text is None else text, [], int(block["ordinal"]))
        self.order.append(element_id)
        if top:
            self.top.append(element_id)
        if section and (top or element_type == "caption"):
            self.nodes[section].children.append(element_id)
        return element_id

    def edge(self, src: str, dst: str, relation: str, rule: str) -> None:
        if src != dst:
            self.edges.append((src, dst, relation, rule))

    # -- block kinds --------------------------------------------------------------------

    def table(self, block: dict[str, Any], section: str) -> None:
        meta = _meta(block)
        is_pdf = block.get("page") is not None
        raw = block["raw"] if not is_pdf else block["text"]
        if "<img" in raw.lower():
            self.figure_table(block, section, raw)
            return
        if is_pdf:
            rows = list(csv.reader(io.StringIO(raw)))
            lines = raw.split("\n")
            same = len(lines) == len(rows)
            header_raw = lines[0] if lines else ""
            body = [(lines[i] if same else ", ".join(rows[i]), rows[i], None) for i in range(1, len(rows))]
            header_span = (None, None)
        else:
            lines = raw.split("\n")
            header_n = 2 if len(lines) > 1 and _SEPARATOR.match(lines[1]) else 1
            header_raw = "\n".join(lines[:header_n])
            start = int(block["start_line"])
            header_span = (start, start + header_n - 1)
            body = [
                (line, split_cells(line), start + i)
                for i, line in enumerate(lines)
                if i >= header_n and line.strip()
            ]
        table_id = self.add(
            block, "table", raw, section=section, header_raw=header_raw,
            header_start=header_span[0], header_end=header_span[1],
            meta={"header": meta.get("header", []), "n_rows": len(body),
                  "caption": meta.get("caption", "")},
        )
        previous = ""
        for i, (line, cells, line_no) in enumerate(body):
            row_id = self.add(
                block, "table_row", line, part=f"row:{i}", section=section, start=line_no,
                end=line_no, top=False, header_raw=header_raw, header_start=header_span[0],
                header_end=header_span[1], text=" | ".join(cells),
                meta={"cells": cells, "key": cells[0] if cells else "", "table": table_id},
            )
            self.nodes[table_id].children.append(row_id)
            self.edge(table_id, row_id, "contains", "contains.row")
            if previous:
                self.edge(previous, row_id, "precedes", "precedes.row")
            previous = row_id
        caption = meta.get("caption", "")
        if is_pdf and caption:
            self.synthetic_caption(block, section, table_id, caption)

    def figure_table(self, block: dict[str, Any], section: str, raw: str) -> None:
        """A table of ``<img>`` cells is a figure; its "Figure N: ..." cells are captions."""
        figure_id = self.add(block, "figure", raw, section=section,
                             meta={"src": re.findall(r"src=\"([^\"]+)\"", raw)})
        start = block.get("start_line")
        labels = []
        for i, line in enumerate(raw.split("\n")):
            for j, cell in enumerate(split_cells(line)):
                match = _CAPTION.match(cell)
                if match and match.group("kind").lower().startswith("fig"):
                    label = identifiers.canonical_label("figure", match.group("num"))
                    labels.append(label)
                    line_no = start + i if start is not None else None
                    cap = self.add(block, "caption", cell, part=f"caption:{i}:{j}", section=section,
                                   start=line_no, end=line_no, top=False, label=label)
                    self.edge(cap, figure_id, "caption_of", "caption_of.cell")
        if labels:
            self.nodes[figure_id].row["label"] = labels[0]
            self.nodes[figure_id].row["meta"] = json.dumps({"labels": labels}, sort_keys=True)

    def synthetic_caption(self, block: dict[str, Any], section: str, target: str, caption: str) -> None:
        label = ""
        match = _CAPTION.match(caption)
        if match:
            kind = "figure" if match.group("kind").lower().startswith("fig") else "table"
            label = identifiers.canonical_label(kind, match.group("num"))
            self.nodes[target].row["label"] = label
        cap = self.add(block, "caption", caption, part="caption", section=section, top=False,
                       label=label)
        self.edge(cap, target, "caption_of", "caption_of.pdf_meta")

    def steps(self, block: dict[str, Any], section: str) -> list[tuple[str, int]]:
        is_pdf = block.get("page") is not None
        raw = block["text"] if is_pdf else block["raw"]
        lines = raw.split("\n")
        starts: list[tuple[int, int]] = []  # (line index, number)
        base = None
        for i, line in enumerate(lines):
            match = _STEP.match(line)
            if not match:
                continue
            indent = len(match.group("indent").expandtabs(4))
            if base is None:
                base = indent
            if indent <= (base or 0) + 1:
                starts.append((i, int(match.group("num"))))
        if not starts:
            starts = [(0, 1)]
        out = []
        for k, (i, number) in enumerate(starts):
            j = starts[k + 1][0] if k + 1 < len(starts) else len(lines)
            while j - 1 > i and not lines[j - 1].strip():
                j -= 1
            text = "\n".join(lines[i:j])
            first = block.get("start_line")
            start, end = (None, None) if is_pdf or first is None else (first + i, first + j - 1)
            step_id = self.add(block, "step", text, part=f"step:{k}", section=section, start=start,
                               end=end, meta={"number": number})
            if out:
                self.edge(out[-1][0], step_id, "step_next", "step_next.list")
            out.append((step_id, number))
        return out

    # -- the document -------------------------------------------------------------------

    def build(self, blocks: list[dict[str, Any]]) -> None:
        stack: list[tuple[int, str]] = []
        previous_steps: dict[str, list[tuple[str, int]]] = {}  # section -> last list's steps
        for block in sorted(blocks, key=lambda b: b["ordinal"]):
            kind = block["kind"]
            meta = _meta(block)
            if kind == "heading":
                level = int(block.get("heading_level") or 1)
                while stack and stack[-1][0] >= level:
                    stack.pop()
                parent = stack[-1][1] if stack else ""
                label = clause_label(block["text"])
                sec = self.add(block, "clause" if label else "section", block["raw"] or block["text"],
                               section=parent, text=block["text"], heading=block["text"],
                               level=level, label=label)
                if parent:
                    self.edge(parent, sec, "contains", "contains.subsection")
                stack.append((level, sec))
                self.sections.append(sec)
                continue
            section = stack[-1][1] if stack else ""
            raw = block["raw"] or block["text"]
            if kind == "table":
                self.table(block, section)
            elif kind in ("image", "figure") or (kind == "html" and "<img" in raw.lower()):
                fig = self.add(block, "figure", raw, section=section, text=block["text"],
                               meta={"src": meta.get("src") or meta.get("source", "")})
                if kind == "figure" and (meta.get("caption") or block["text"]).strip():
                    self.synthetic_caption(block, section, fig, meta.get("caption") or block["text"])
            elif kind == "code":
                self.add(block, "code", raw, section=section, text=block["text"],
                         meta={"language": block.get("language", "")})
            elif kind == "ordered_list":
                steps = self.steps(block, section)
                before = previous_steps.get(section)
                if before and steps and steps[0][1] == before[-1][1] + 1 and steps[0][1] > 1:
                    self.edge(before[-1][0], steps[0][0], "step_next", "step_next.continued")
                previous_steps[section] = steps
            else:
                note = (meta.get("label") or "").lower() if kind == "admonition" else ""
                match = _NOTE_PREFIX.match(block["text"])
                if not note and match:
                    note = match.group("label").lower()
                self.add(block, "paragraph", raw, section=section, text=block["text"],
                         note_label=note if note in NOTE_LABELS else ("note" if note else ""),
                         meta={"block_kind": kind})
        self.captions()
        self.structure()

    def captions(self) -> None:
        """An adjacent "Figure N:" / "Table N:" paragraph, or an emphasised line right under a
        figure, is the caption of that figure / table (one caption per target)."""
        captioned = {dst for _, dst, rel, _ in self.edges if rel == "caption_of"}
        for i, eid in enumerate(self.top):
            el = self.nodes[eid]
            if el.row["element_type"] != "paragraph" or el.row["note_label"]:
                continue
            text = el.text.strip()
            match = _CAPTION.match(text)
            emphasised = bool(_EMPHASIS_LINE.match(text))
            if not match and not emphasised:
                continue
            want = None
            if match:
                want = "figure" if match.group("kind").lower().startswith("fig") else "table"
            for j, rule in ((i - 1, "caption_of.after"), (i + 1, "caption_of.before")):
                if not 0 <= j < len(self.top) or self.top[j] in captioned:
                    continue
                target = self.nodes[self.top[j]]
                ttype = target.row["element_type"]
                if ttype not in ("figure", "table") or (want and ttype != want):
                    continue
                if not match and (ttype != "figure" or rule != "caption_of.after"):
                    continue
                if target.row["section_id"] != el.row["section_id"]:
                    continue
                el.row["element_type"] = "caption"
                if match:
                    label = identifiers.canonical_label(ttype, match.group("num"))
                    el.row["label"] = label
                    target.row["label"] = target.row["label"] or label
                self.edge(eid, self.top[j], "caption_of", rule)
                captioned.add(self.top[j])
                break

    def structure(self) -> None:
        for sec in self.sections:
            kids = [k for k in self.nodes[sec].children
                    if self.nodes[k].row["element_type"] not in ("section", "clause")]
            for kid in self.nodes[sec].children:
                if self.nodes[kid].row["element_type"] not in ("section", "clause"):
                    self.edge(sec, kid, "contains", "contains.section")
            for a in range(len(kids)):
                for b in range(a + 1, min(len(kids), a + SAME_SECTION_WINDOW + 1)):
                    self.edge(kids[a], kids[b], "same_section", "same_section.window")
        for a, b in pairwise(self.top):
            self.edge(a, b, "precedes", "precedes.reading_order")

    # -- identifiers, summaries, references ---------------------------------------------

    def scope_commands(self) -> None:
        for sec in self.sections:
            el = self.nodes[sec]
            command = next(iter(identifiers.SNAKE.findall(el.row["heading"])), "")
            if not command:
                for kid in el.children:
                    if self.nodes[kid].row["element_type"] == "code":
                        found = identifiers.code_commands(self.nodes[kid].text)
                        if found:
                            command = found[0]
                            break
            parent = el.row["section_id"]
            if command:
                self.own_command.add(sec)
            elif parent:
                command = self.nodes[parent].row["scope_command"]
            el.row["scope_command"] = command
        for el in self.nodes.values():
            if el.row["element_type"] not in ("section", "clause") and el.row["section_id"]:
                el.row["scope_command"] = self.nodes[el.row["section_id"]].row["scope_command"]

    def views(self) -> None:
        for eid in self.order:
            el = self.nodes[eid]
            row = el.row
            etype = row["element_type"]
            scope = row["scope_command"] if etype == "table_row" else ""
            ids = identifiers.extract_identifiers(el.text, code=etype == "code", scope_command=scope)
            if etype == "table_row":
                key = identifiers.canonical(first_word(row_key(row)))
                if key.startswith("-") and row["scope_command"]:
                    ids.append(f"{row['scope_command']} {key}")
            if eid in self.own_command:
                ids.insert(0, row["scope_command"])
            if row["label"]:
                ids.append(row["label"])
            row["identifiers"] = list(dict.fromkeys(ids))
        for eid in self.order:
            el = self.nodes[eid]
            row = el.row
            context = ""
            if row["element_type"] in ("section", "clause"):
                prose = [k for k in el.children if self.nodes[k].row["element_type"] == "paragraph"]
                context = self.nodes[prose[0]].text if prose else ""
            elif row["element_type"] == "table_row":
                context = row["header_raw"]
            row["summary"] = summaries.offline_summary(
                row["element_type"], row["section_path"], el.text, row["identifiers"], context
            )
            path = " ".join(row["section_path"][-2:])
            row["id_view"] = " ".join([*row["identifiers"], path, summaries.plain_text(el.text)])

    def references(self) -> None:
        labelled: dict[str, list[str]] = defaultdict(list)
        by_type: dict[str, list[str]] = defaultdict(list)
        slugs: dict[str, str] = {}
        for eid in self.order:
            row = self.nodes[eid].row
            if row["label"] and row["element_type"] != "caption":
                labelled[row["label"]].append(eid)
            if row["element_type"] in ("table", "figure"):
                by_type[row["element_type"]].append(eid)
            if row["element_type"] in ("section", "clause"):
                slugs.setdefault(slug(row["heading"]), eid)
        has_labels = {t: any(self.nodes[e].row["label"] for e in by_type[t]) for t in by_type}
        captioned: dict[str, set[str]] = defaultdict(set)
        for src, dst, rel, _ in self.edges:
            if rel == "caption_of":
                captioned[src].add(dst)
        relation = {"table": "table_ref", "figure": "figure_ref", "section": "clause_ref"}
        for eid in self.order:
            el = self.nodes[eid]
            etype = el.row["element_type"]
            if etype in ("section", "clause", "code", "table", "figure", "caption"):
                continue
            own_target = captioned.get(eid, set())
            for kind, label, _, _ in identifiers.label_refs(el.text):
                here = el.row["ordinal"]
                same = labelled.get(label, [])
                # a label used twice in a document (two "Figure 1") means the nearest one
                target = min(same, key=lambda t: (abs(self.nodes[t].row["ordinal"] - here), t)) if same else None
                rule = f"{relation[kind]}.label"
                if target is None and kind in by_type and not has_labels.get(kind):
                    number = label.split(":", 1)[1]
                    if number.isdigit() and 1 <= int(number) <= len(by_type[kind]):
                        target, rule = by_type[kind][int(number) - 1], f"{relation[kind]}.ordinal"
                if target and target not in own_target and target != eid:
                    self.edge(eid, target, relation[kind], rule)
            for match in _MD_LINK.finditer(el.row["raw"]):
                target = match.group("target")
                if target.startswith(("http:", "https:", "mailto:", "ftp:")):
                    continue
                if target.startswith("#"):
                    dst = slugs.get(target[1:].lower())
                    if dst:
                        self.edge(eid, dst, "clause_ref", "markdown_link.anchor")
                else:
                    el.row["pending"].append(f"link|{target}")
            for pattern in (_OPTION_OF, _CMD_OPTION_SPAN):
                for match in pattern.finditer(el.row["raw"]):
                    qualified = f"{match.group('cmd').lower()} -{match.group('opt').lstrip('-').lower()}"
                    el.row["pending"].append(f"option|{qualified}")
            el.row["pending"] = list(dict.fromkeys(el.row["pending"]))
        rows_by_option = option_rows(r.row for r in self.nodes.values())
        for eid in self.order:
            row = self.nodes[eid].row
            keep = []
            for ref in row["pending"]:
                kind, _, value = ref.partition("|")
                if kind == "option" and value in rows_by_option:
                    for dst in rows_by_option[value]:
                        if dst != eid:
                            self.edge(eid, dst, "table_ref", "option_of_command")
                else:
                    keep.append(ref)
            row["pending"] = keep

    def identifier_edges(self) -> None:
        rows = [self.nodes[e].row for e in self.order]
        for src, dst, rule in identifier_links(rows):
            self.edge(src, dst, "same_identifier", rule)

    def rows(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        seen: set[tuple[str, str, str]] = set()
        edges = []
        for src, dst, relation, rule in self.edges:
            if (src, dst, relation) in seen:
                continue
            seen.add((src, dst, relation))
            self.nodes[src].row["out_edges"].append({"dst": dst, "relation": relation, "rule": rule})
            edges.append(edge_row(src, dst, relation, rule, self.document, self.document, "document"))
        return [self.nodes[e].row for e in self.order], edges


def first_word(text: str) -> str:
    words = re.split(r"[\s,;/]+", text.strip())
    return words[0].strip("`*[]") if words else ""


def row_key(row: dict[str, Any]) -> str:
    """The first cell of a table row, backticks and brackets stripped."""
    try:
        key = json.loads(row.get("meta") or "{}").get("key", "")
    except json.JSONDecodeError:
        key = ""
    return key.strip().strip("`[]*").strip()


def option_rows(rows: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """``cmd -opt`` -> the table rows whose first cell is ``-opt`` under command ``cmd``."""
    out: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        if row["element_type"] != "table_row" or not row["scope_command"]:
            continue
        key = identifiers.canonical(first_word(row_key(row)))
        if key.startswith("-"):
            out[f"{row['scope_command']} {key}"].append(row["element_id"])
    return out


def definition_rank(row: dict[str, Any], ident: str) -> int:
    """Lower = better place to define ``ident``: its options-table row, a code block invoking
    it, a section named after it, anything else."""
    etype = row["element_type"]
    if etype == "table_row":
        key = identifiers.canonical(first_word(row_key(row)))
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


def edge_row(src: str, dst: str, relation: str, rule: str, src_doc: str, dst_doc: str, scope: str) -> dict[str, Any]:
    return {
        "edge_id": stable_id("edge", src, dst, relation),
        "src": src, "dst": dst, "relation": relation, "rule": rule,
        "src_document": src_doc, "dst_document": dst_doc, "scope": scope,
    }  # fmt: skip


def document_version(blocks: list[dict[str, Any]]) -> str:
    """A version label the document states about itself: in its first heading ("Wishbone
    B3 Specification, Revision B.3") or in one of its first five blocks that starts with it
    ("Version: 1.9"). A version mentioned in running text ("DEF version 5.6") is not one."""
    for n, block in enumerate(sorted(blocks, key=lambda b: b["ordinal"])[:5]):
        text = block["text"][:300]
        match = _VERSION_TEXT.search(text) if block["kind"] == "heading" and n < 2 else _VERSION_TEXT.match(text.strip())
        if match:
            return match.group("v")
    return ""


def build_document(blocks: list[dict[str, Any]], version: str | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Nodes (``ELEMENTS_SCHEMA`` rows, in reading order) and in-document edges of one
    document's parsed blocks. ``version``: a label to record (default: stated in the text)."""
    if not blocks:
        return [], []
    builder = _DocumentBuilder(blocks[0]["document"], document_version(blocks) if version is None else version)
    builder.build(blocks)
    builder.scope_commands()
    builder.views()
    builder.references()
    builder.identifier_edges()
    return builder.rows()
