"""Functional units: typed hyperedges e = (V(e), S(e), chunks(e), P(e)) with provenance.

Follows the primary paper ("Functional units across sources", "Validation and updates",
Appendix A lines 4-10, Appendix B):

* Every valid occurrence is a unit within its source (kind ``occurrence``).
* A unit spanning documents (kind ``cross_document``) is created for a canonical anchor ``a``
  only when O(a) holds occurrences from at least two documents and their union has at least
  two artifact types. Only command and file anchors link; placeholders and language words
  never do (``extraction.anchors.rejection_reason``); at most ``cap`` occurrences attach to
  one anchor, chosen round-robin over documents in key order (deterministic, and it keeps
  the unit as cross-document as possible).
* Structural validation rejects empty units, missing source references, invalid type labels,
  insufficient type diversity, placeholder anchors and cap overflow; every rejection is a
  record with its rule (``unit_rejections``), none is silent.
* The seven Appendix-B outputs are ``unit_hyperedges``, ``unit_nodes``, ``unit_provenance``,
  ``unit_chunk_edges``, ``unit_chunk_contents``, ``unit_type_bags`` and ``unit_rejections``.

Incremental assembly: a unit's key is a hash of its member occurrences (ids and content
hashes) and chunks. Given the previous outputs, units whose key is unchanged are copied
rather than rebuilt, only anchors touched by changed documents are re-linked, and units of
deleted documents disappear because nothing produces their key any more. Because ids and
summaries are pure functions of content, the result is identical to a full rebuild.

The table schemas live in ``unit_schema.py``, the linker rules in ``unit_linker.py``; this
module assembles the units.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from edaqa_pipeline.graphs.summaries import offline_summary
from edaqa_pipeline.graphs.unit_linker import (
    Unit,
    link_anchor,
    rejection_record,
    validate_occurrence,
)
from edaqa_pipeline.graphs.unit_schema import (
    DEFAULT_CAP,
    LINKABLE_ANCHOR_KINDS,
    SCHEMAS,
    SCHEMAS_EMPTY,
    UNIT_TABLE_NAMES,
    canonical_order,
)
from edaqa_pipeline.model import frame, stable_id

# The columns assembly reads as Python values (the rest stay in Polars): what the linker,
# the validator, the unit key, the offline summary and the provenance rows use.
ARTIFACT_COLUMNS_READ = ("artifact_id", "document", "artifact_type", "content")
OCCURRENCE_COLUMNS_READ = ("_order", "occurrence_id", "document", "anchor", "anchor_kind", "section_path",
                           "artifact_ids", "chunk_ids", "content_hash", "line_spans", "pages")


@dataclass
class AssemblyStats:
    units: int = 0
    within_source: int = 0
    cross_document: int = 0
    reused: int = 0
    rebuilt: int = 0
    deleted: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def as_metadata(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "units": self.units,
            "units_within_source": self.within_source,
            "units_cross_document": self.cross_document,
            "units_reused": self.reused,
            "units_rebuilt": self.rebuilt,
            "units_deleted": self.deleted,
            "assembly_seconds": round(self.seconds, 4),
        }
        data.update({f"rejected_{rule}": n for rule, n in sorted(self.rejected.items())})
        return data


def _build_unit_rows(
    unit: Unit,
    key: str,
    artifacts: dict[str, dict[str, Any]],
) -> dict[str, list[dict[str, Any]]]:
    unit_id = stable_id("unit", unit.kind, key)
    artifact_ids: list[str] = []
    chunk_ids: list[str] = []
    for occ in unit.occurrences:
        artifact_ids.extend(a for a in occ["artifact_ids"] if a not in artifact_ids)
        chunk_ids.extend(c for c in occ["chunk_ids"] if c not in chunk_ids)
    arts = [artifacts[a] for a in artifact_ids]
    bag: dict[str, int] = defaultdict(int)
    for art in arts:
        bag[art["artifact_type"]] += 1
    section = unit.occurrences[0]["section_path"]
    summary = offline_summary(unit.anchor, unit.anchor_kind, unit.kind, section, arts)
    return {
        "unit_hyperedges": [{
            "unit_id": unit_id,
            "kind": unit.kind,
            "anchor": unit.anchor,
            "anchor_kind": unit.anchor_kind,
            "summary": summary,
            "artifact_ids": artifact_ids,
            "artifact_types": sorted(bag),
            "chunk_ids": chunk_ids,
            "occurrence_ids": [o["occurrence_id"] for o in unit.occurrences],
            "documents": sorted({o["document"] for o in unit.occurrences}),
            "n_artifacts": len(artifact_ids),
            "n_chunks": len(chunk_ids),
            "content_hash": key,
        }],
        "unit_provenance": [
            {"unit_id": unit_id, "occurrence_id": o["occurrence_id"], "document": o["document"],
             "anchor": o["anchor"], "line_spans": o["line_spans"], "pages": o["pages"]}
            for o in unit.occurrences
        ],
        "unit_chunk_edges": [
            {"unit_id": unit_id, "chunk_id": c, "rank": i} for i, c in enumerate(chunk_ids)
        ],
        "unit_type_bags": [
            {"unit_id": unit_id, "artifact_type": t, "count": n} for t, n in sorted(bag.items())
        ],
    }


def _changed_documents(
    occurrences: pl.DataFrame, previous: dict[str, pl.DataFrame] | None
) -> set[str] | None:
    """Documents whose occurrence set differs from the previous assembly (None = rebuild all).

    Occurrence ids are content-derived (document, anchor, artifact ids, which hash content),
    so a document is unchanged exactly when its set of occurrence ids is unchanged. The
    previous sets are read back from the previous outputs: valid occurrences are in
    ``unit_provenance``, rejected ones in ``unit_rejections``.
    """
    if not previous or any(name not in previous for name in UNIT_TABLE_NAMES):
        return None
    prov = previous["unit_provenance"].select("document", "occurrence_id")
    rej = (
        previous["unit_rejections"]
        .filter(pl.col("subject_kind") == "occurrence")
        .select(pl.col("documents").list.first().alias("document"), pl.col("subject_id").alias("occurrence_id"))
    )
    before = pl.concat([prov, rej]).unique()
    now = occurrences.select("document", "occurrence_id").unique()

    def signature(df: pl.DataFrame) -> dict[str, tuple[str, ...]]:
        grouped = df.group_by("document").agg(pl.col("occurrence_id").sort())
        return {d: tuple(ids) for d, ids in grouped.iter_rows()}

    old, new = signature(before), signature(now)
    return {d for d in set(old) | set(new) if old.get(d) != new.get(d)}


def assemble_units(
    occurrences: pl.DataFrame,
    artifacts: pl.DataFrame,
    chunks: pl.DataFrame,
    *,
    cap: int = DEFAULT_CAP,
    previous: dict[str, pl.DataFrame] | None = None,
) -> tuple[dict[str, pl.DataFrame], AssemblyStats]:
    """Build the seven unit tables from all documents' occurrences, artifacts and chunks.

    With ``previous`` (the last outputs), only the documents whose occurrences changed and
    the anchors they touch (before or after the change) are recomputed; every other row is
    carried over. Without it, every document counts as changed: a full build is the same
    code path, which is why both give identical tables.
    """
    started = time.perf_counter()
    stats = AssemblyStats()
    occurrences = occurrences.with_row_index("_order")
    changed = _changed_documents(occurrences, previous)
    full = changed is None
    if changed is None:
        changed = set(occurrences["document"].unique().to_list())
        previous = None
    prev_edges = previous["unit_hyperedges"] if previous else SCHEMAS_EMPTY["unit_hyperedges"]

    # Anchors touched by the change: linkable anchors of changed documents, old and new.
    now_changed = occurrences.filter(pl.col("document").is_in(list(changed)))
    touched = set(now_changed.filter(pl.col("anchor_kind").is_in(list(LINKABLE_ANCHOR_KINDS)))["anchor"].to_list())
    if previous:
        old_prov = previous["unit_provenance"].filter(pl.col("document").is_in(list(changed)))
        touched |= set(old_prov["anchor"].to_list())
        old_rej = previous["unit_rejections"].filter(
            pl.col("documents").list.eval(pl.element().is_in(list(changed))).list.any()
        )
        touched |= set(old_rej["anchor"].to_list())
    touched.discard("")

    # Only the rows needed for the recomputation become Python dicts.
    relevant = occurrences.filter(
        pl.col("document").is_in(list(changed))
        | (pl.col("anchor").is_in(list(touched)) & pl.col("anchor_kind").is_in(list(LINKABLE_ANCHOR_KINDS)))
    )
    art_ids = set(relevant["artifact_ids"].explode().drop_nulls().to_list())
    chunk_ids_needed = set(relevant["chunk_ids"].explode().drop_nulls().to_list())
    # ... and of those only the columns assembly reads (16x corpus: +377 MiB at the peak of
    # assembly, against +425 with every column)
    art_by_id = {r["artifact_id"]: r for r in artifacts.filter(pl.col("artifact_id").is_in(list(art_ids)))
                 .select(ARTIFACT_COLUMNS_READ).iter_rows(named=True)}
    # a chunk is only looked up by id here: its text columns never become Python strings
    known_chunks = set(chunks.filter(pl.col("chunk_id").is_in(list(chunk_ids_needed)))["chunk_id"].to_list())
    # Chunk ids are derived from the chunk's content (not its formatting), so they key units.
    chunk_hash = {cid: cid for cid in known_chunks}

    rejections: list[dict[str, Any]] = []
    valid_changed: list[dict[str, Any]] = []
    valid_linkable: list[dict[str, Any]] = []
    for occ in relevant.select(OCCURRENCE_COLUMNS_READ).to_dicts():
        problem = validate_occurrence(occ, art_by_id, known_chunks)
        in_changed = occ["document"] in changed
        if problem:
            if in_changed:
                rejections.append(rejection_record("occurrence", occ["occurrence_id"], occ["anchor"],
                                             [occ["document"]], *problem))
            continue
        if in_changed:
            valid_changed.append(occ)
        if occ["anchor"] in touched:
            valid_linkable.append(occ)

    units = [Unit("occurrence", o["anchor"], o["anchor_kind"], [o]) for o in valid_changed]
    linked, link_rejections = link_anchor(valid_linkable, art_by_id, cap)
    units += linked
    rejections += link_rejections

    new_rows: dict[str, list[dict[str, Any]]] = {n: [] for n in ("unit_hyperedges", "unit_provenance",
                                                                 "unit_chunk_edges", "unit_type_bags")}
    prev_keys = set(prev_edges["content_hash"].to_list())
    for unit in units:
        key = unit.key(chunk_hash)
        rows = _build_unit_rows(unit, key, art_by_id)
        stats.rebuilt += key not in prev_keys
        for name, part in rows.items():
            new_rows[name].extend(part)

    # Carry over every unit that the change does not touch.
    keep = prev_edges.filter(
        ((pl.col("kind") == "occurrence") & ~pl.col("documents").list.first().is_in(list(changed)))
        | ((pl.col("kind") == "cross_document") & ~pl.col("anchor").is_in(list(touched)))
    )
    kept_ids = keep["unit_id"]
    frames: dict[str, pl.DataFrame] = {}
    frames["unit_hyperedges"] = pl.concat([keep, frame(new_rows["unit_hyperedges"], SCHEMAS["unit_hyperedges"])])
    for name in ("unit_provenance", "unit_chunk_edges", "unit_type_bags"):
        old = previous[name].filter(pl.col("unit_id").is_in(kept_ids.implode())) if previous else SCHEMAS_EMPTY[name]
        frames[name] = pl.concat([old, frame(new_rows[name], SCHEMAS[name])])
    old_rej = SCHEMAS_EMPTY["unit_rejections"]
    if previous:
        old_rej = previous["unit_rejections"].filter(
            ~pl.col("documents").list.eval(pl.element().is_in(list(changed))).list.any()
            & ~pl.col("anchor").is_in(list(touched))
        )
    frames["unit_rejections"] = pl.concat([old_rej, frame(rejections, SCHEMAS["unit_rejections"])])

    node_ids = frames["unit_hyperedges"]["artifact_ids"].explode().drop_nulls().unique()
    frames["unit_nodes"] = (
        artifacts.filter(pl.col("artifact_id").is_in(node_ids.implode()))
        .rename({"artifact_id": "node_id"})
        .select(list(SCHEMAS["unit_nodes"]))
        .unique("node_id", keep="first", maintain_order=True)
    )
    chunk_ids = frames["unit_hyperedges"]["chunk_ids"].explode().drop_nulls().unique()
    frames["unit_chunk_contents"] = (
        chunks.filter(pl.col("chunk_id").is_in(chunk_ids.implode()))
        .select(list(SCHEMAS["unit_chunk_contents"]))
        .unique("chunk_id", keep="first", maintain_order=True)
    )
    frames = canonical_order(frames)

    edges = frames["unit_hyperedges"]
    stats.units = edges.height
    stats.cross_document = edges.filter(pl.col("kind") == "cross_document").height
    stats.within_source = stats.units - stats.cross_document
    stats.reused = stats.units - stats.rebuilt
    stats.deleted = 0 if full else len(prev_keys - set(edges["content_hash"].to_list()))
    for rule, n in frames["unit_rejections"].group_by("rule").len().iter_rows():
        stats.rejected[rule] = n
    stats.seconds = time.perf_counter() - started
    return frames, stats


