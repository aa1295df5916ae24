"""The ChipKG's structural checks (the ``chip_kg`` asset's blocking checks): no orphan triple,
every node has provenance, every normalisation target is an entity node."""

from __future__ import annotations

import polars as pl


def _only_pdf(documents: list[str]) -> bool:
    """Whether every document is a PDF: located by page + bbox of its chunks, not by lines."""
    return all(d.lower().endswith(".pdf") for d in documents)


def kg_problems(nodes: pl.DataFrame, triples: pl.DataFrame) -> dict[str, list[str]]:
    """The first 20 offenders of each check, and in ``_counts`` the number of all of them:
    orphan triples (an end or the statement missing), nodes without provenance (no document
    or chunk, or no line span outside PDFs), normalisation triples whose object is not an
    entity."""
    node_ids = set(nodes["node_id"].to_list())
    kinds = dict(zip(nodes["node_id"].to_list(), nodes["kind"].to_list(), strict=True))
    triple_ids = set(triples["triple_id"].to_list())
    orphans = []
    for t in triples.iter_rows(named=True):
        for end, kind in ((t["subject"], t["subject_kind"]), (t["object"], t["object_kind"])):
            if end not in (triple_ids if kind == "triple" else node_ids):
                orphans.append(f"{t['triple_id']} -> {end}")
        if t["statement_id"] not in node_ids:
            orphans.append(f"{t['triple_id']} statement {t['statement_id']}")
    no_prov = [
        n["node_id"] for n in nodes.select("node_id", "kind", "documents", "chunk_ids", "line_spans").iter_rows(named=True)
        if not n["documents"] or not n["chunk_ids"]
        or (not n["line_spans"] and n["kind"] != "passage" and not _only_pdf(n["documents"]))
    ]
    norm = triples.filter(pl.col("kind") == "normalisation")
    missing = [t for t in norm["object"].to_list() if kinds.get(t) != "entity"]
    return {"orphan_triples": orphans[:20], "nodes_without_provenance": no_prov[:20],
            "missing_normalisation_targets": missing[:20],
            "_counts": [str(len(orphans)), str(len(no_prov)), str(len(missing))]}
