"""The element graph across documents: links between manuals, cross-document
``same_identifier`` edges and versions (``version_of`` / ``supersedes``).

``corpus_edges`` takes every document's element rows (their ``pending`` references) and
returns the corpus-scope edges; ``build_corpus`` is the whole graph from blocks in one call.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable
from itertools import pairwise
from typing import Any

from edaqa_pipeline.graphs.elements.document_graph import build_document
from edaqa_pipeline.graphs.elements.link_rules import definition_rank, option_rows
from edaqa_pipeline.graphs.elements.rules import YEAR, row_key, slug
from edaqa_pipeline.graphs.elements.schema import LINKABLE_KINDS, MAX_IDENTIFIER_DOCS, edge_row
from edaqa_pipeline.model import normalise_ws
from edaqa_pipeline.text import identifiers
from edaqa_pipeline.text.markup import table_cells


def version_roots(documents: Iterable[str]) -> dict[str, str]:
    """Version label per document when the corpus holds several versions: a top-level folder
    is a version root when some document exists (same relative path) under it and under
    another top-level folder; every document under a version root gets the folder name."""
    documents = sorted(documents)  # a set's order depends on the hash seed: outputs must not
    by_rest: dict[str, set[str]] = defaultdict(set)
    for doc in documents:
        if "/" in doc:
            root, rest = doc.split("/", 1)
            by_rest[rest].add(root)
    roots = {r for rs in by_rest.values() if len(rs) > 1 for r in rs}
    return {d: d.split("/", 1)[0] for d in documents if "/" in d and d.split("/", 1)[0] in roots}


def version_rank(label: str) -> tuple[int, str]:
    """Older first: a label with a year sorts by that year; one without (``openroad``, the
    live documentation) is the newest. Labels like ``v2.1`` sort by their numbers."""
    year = YEAR.search(label)
    if year:
        return int(year.group(0)), label
    numbers = re.findall(r"\d+", label)
    if numbers:
        return int(numbers[0]), label
    return 10_000, label


def source_path_map(rows: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Original repository path -> corpus document, from a table with "file" and "original
    path" columns (a corpus ``SOURCE.md``), keyed with the folder of the document holding it."""
    out: dict[str, str] = {}
    for row in rows:
        if row["element_type"] != "table_row":
            continue
        header = [h.strip().lower() for h in table_cells(row["header_raw"].split("\n")[0])]
        if "file" not in header or "original path" not in header:
            continue
        cells = [c.strip("` ") for c in table_cells(row["raw"])]
        if len(cells) != len(header):
            continue
        folder = posixpath.dirname(row["document"])
        file = posixpath.join(folder, cells[header.index("file")])
        original = cells[header.index("original path")]
        out[posixpath.join(folder, "\0", original)] = file
        out.setdefault(file, original)
    return out


def _snake(name: str) -> str:
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def resolve_link(source_doc: str, target: str, documents: set[str], source_map: dict[str, str]) -> tuple[str, str] | None:
    """(document, anchor) a relative Markdown link points to, or None.

    Tried in order: the path relative to the source document; the path relative to the source
    document's original repository path (``source_path_map``); a document whose file name is
    the target's name in snake case (``GettingInvolved.md`` -> ``contrib_getting_involved.md``,
    ``src/grt/README.md`` -> ``grt.md``), within the source's folder.
    """
    path, _, anchor = target.partition("#")
    if not path:
        return None
    folder = posixpath.dirname(source_doc)
    direct = posixpath.normpath(posixpath.join(folder, path))
    if direct in documents:
        return direct, anchor
    original = source_map.get(source_doc)
    if original:
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(original), path))
        hit = source_map.get(posixpath.join(folder, "\0", resolved))
        if hit in documents:
            return hit, anchor
    stem = posixpath.splitext(posixpath.basename(path))[0]
    if stem.lower() in ("readme", "index", ""):
        stem = posixpath.basename(posixpath.dirname(path.rstrip("/"))) or stem
    want = _snake(stem)
    if not want:
        return None
    candidates = sorted(
        d for d in documents
        if posixpath.dirname(d) == folder
        and (posixpath.splitext(posixpath.basename(d))[0] == want
             or posixpath.splitext(posixpath.basename(d))[0].endswith("_" + want))
    )  # fmt: skip
    return (candidates[0], anchor) if len(candidates) == 1 else None


def _version_key(row: dict[str, Any], position: int) -> tuple[Any, ...]:
    path = tuple(normalise_ws(p).lower() for p in row["section_path"])
    etype = row["element_type"]
    if etype in ("section", "clause"):
        return ("section", path)
    if etype == "table_row":
        return ("row", path, row_key(row).lower())
    return (etype, path, position)


def version_edges(rows_by_doc: dict[str, list[dict[str, Any]]], labels: dict[str, str]) -> list[dict[str, Any]]:
    """``version_of`` (newer -> older) between corresponding elements of two versions of a
    document, ``supersedes`` when the element's text changed. Correspondence: sections by
    section path; rows by section path + first cell; other elements by section path + type +
    position among the elements of that type in the section."""
    groups: dict[str, list[str]] = defaultdict(list)
    for doc in sorted(labels):
        groups[doc.split("/", 1)[1]].append(doc)
    out = []
    for _, docs in sorted(groups.items()):
        ordered = sorted(docs, key=lambda d: version_rank(labels[d]), reverse=True)  # newest first
        for newer, older in pairwise(ordered):
            keyed: dict[tuple[Any, ...], dict[str, Any]] = {}
            counts: dict[tuple[Any, ...], int] = defaultdict(int)
            for row in rows_by_doc.get(older, []):
                base = (row["element_type"], tuple(row["section_path"]))
                keyed.setdefault(_version_key(row, counts[base]), row)
                counts[base] += 1
            counts.clear()
            for row in rows_by_doc.get(newer, []):
                base = (row["element_type"], tuple(row["section_path"]))
                match = keyed.get(_version_key(row, counts[base]))
                counts[base] += 1
                if match is None:
                    continue
                out.append(edge_row(row["element_id"], match["element_id"], "version_of",
                                    "version_of.correspondence", newer, older, "corpus"))
                if normalise_ws(row["raw"]) != normalise_ws(match["raw"]):
                    out.append(edge_row(row["element_id"], match["element_id"], "supersedes",
                                        "supersedes.changed_text", newer, older, "corpus"))
    return out


def corpus_edges(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Cross-document edges of the whole corpus and the version label of each document.

    ``rows``: every document's element rows (``build_document`` output, any order).
    """
    rows_by_doc: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        rows_by_doc[row["document"]].append(row)
    for doc_rows in rows_by_doc.values():
        doc_rows.sort(key=lambda r: r["ordinal"])
    documents = set(rows_by_doc)
    labels = version_roots(documents)
    out: list[dict[str, Any]] = []
    by_id = {r["element_id"]: r for r in rows}

    def add(src: str, dst: str, relation: str, rule: str) -> None:
        out.append(edge_row(src, dst, relation, rule, by_id[src]["document"], by_id[dst]["document"], "corpus"))

    # Markdown links between manuals, and option references answered in another manual
    source_map = source_path_map(rows)
    sections: dict[str, dict[str, str]] = defaultdict(dict)
    first_section: dict[str, str] = {}
    for doc, doc_rows in rows_by_doc.items():
        for row in doc_rows:
            if row["element_type"] in ("section", "clause"):
                sections[doc].setdefault(slug(row["heading"]), row["element_id"])
                first_section.setdefault(doc, row["element_id"])
    rows_by_option = option_rows(rows)
    for row in rows:
        for ref in row["pending"]:
            kind, _, value = ref.partition("|")
            if kind == "link":
                hit = resolve_link(row["document"], value, documents, source_map)
                if hit and hit[0] != row["document"]:
                    dst = sections[hit[0]].get(hit[1].lower()) or first_section.get(hit[0])
                    if dst:
                        add(row["element_id"], dst, "clause_ref", "markdown_link")
            elif kind == "option":
                targets = [t for t in rows_by_option.get(value, []) if by_id[t]["document"] != row["document"]]
                same_root = [t for t in targets if posixpath.dirname(by_id[t]["document"]) == posixpath.dirname(row["document"])]
                for dst in (same_root or targets)[:2]:
                    add(row["element_id"], dst, "table_ref", "option_of_command")
    # same identifier across documents: each document's defining element -> the corpus one
    anchors: dict[str, dict[str, tuple[int, int, str]]] = defaultdict(dict)
    for doc, doc_rows in rows_by_doc.items():
        for i, row in enumerate(doc_rows):
            for ident in row["identifiers"]:
                if identifiers.identifier_kind(ident) not in LINKABLE_KINDS:
                    continue
                rank = (definition_rank(row, ident), i, row["element_id"])
                if doc not in anchors[ident] or rank < anchors[ident][doc]:
                    anchors[ident][doc] = rank
    for ident in sorted(anchors):
        per_doc = anchors[ident]
        if not 2 <= len(per_doc) <= MAX_IDENTIFIER_DOCS:
            continue
        best_doc = min(per_doc, key=lambda d: (per_doc[d][0], d))
        for doc in sorted(per_doc):
            if doc != best_doc:
                add(per_doc[doc][2], per_doc[best_doc][2], "same_identifier", "same_identifier.cross_document")
    out += version_edges(rows_by_doc, labels)
    unique: dict[tuple[str, str, str], dict[str, Any]] = {}
    for edge in out:
        unique.setdefault((edge["src"], edge["dst"], edge["relation"]), edge)
    return list(unique.values()), labels


def document_edges(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The in-document edges stored on element rows (``out_edges``) as edge rows."""
    out = []
    for row in rows:
        for edge in row["out_edges"] or []:
            out.append(edge_row(row["element_id"], edge["dst"], edge["relation"], edge["rule"],
                                row["document"], row["document"], "document"))
    return out


def build_corpus(blocks_by_doc: dict[str, list[dict[str, Any]]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every node and every edge (in-document + cross-document) of a corpus, version labels
    filled in: the pure equivalent of the ``elements`` + ``element_graph`` assets."""
    rows: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    for doc in sorted(blocks_by_doc):
        nodes, doc_edges = build_document(blocks_by_doc[doc])
        rows += nodes
        edges += doc_edges
    cross, labels = corpus_edges(rows)
    apply_versions(rows, labels)
    return rows, edges + cross


def apply_versions(rows: list[dict[str, Any]], labels: dict[str, str]) -> None:
    """Version label of each element: its corpus folder when the corpus holds several versions
    of the document, else the label the document states (if any)."""
    for row in rows:
        if row["document"] in labels:
            row["version"] = labels[row["document"]]
