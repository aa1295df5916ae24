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
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from edaqa_pipeline.extraction.anchors import rejection_reason
from edaqa_pipeline.graphs.summaries import offline_summary
from edaqa_pipeline.model import ARTIFACT_TYPES, stable_id

UNIT_TABLE_NAMES = (
    "unit_hyperedges",
    "unit_nodes",
    "unit_provenance",
    "unit_chunk_edges",
    "unit_chunk_contents",
    "unit_type_bags",
    "unit_rejections",
)

SCHEMAS: dict[str, dict[str, pl.DataType]] = {
    "unit_hyperedges": {
        "unit_id": pl.String(),
        "kind": pl.String(),  # occurrence | cross_document
        "anchor": pl.String(),
        "anchor_kind": pl.String(),
        "summary": pl.String(),
        "artifact_ids": pl.List(pl.String()),
        "artifact_types": pl.List(pl.String()),
        "chunk_ids": pl.List(pl.String()),
        "occurrence_ids": pl.List(pl.String()),
        "documents": pl.List(pl.String()),
        "n_artifacts": pl.Int64(),
        "n_chunks": pl.Int64(),
        "content_hash": pl.String(),
    },
    "unit_nodes": {
        "node_id": pl.String(),
        "artifact_type": pl.String(),
        "document": pl.String(),
        "content": pl.String(),
        "section_path": pl.List(pl.String()),
        "start_line": pl.Int64(),
        "end_line": pl.Int64(),
        "page": pl.Int64(),
        "rule": pl.String(),
    },
    "unit_provenance": {
        "unit_id": pl.String(),
        "occurrence_id": pl.String(),
        "document": pl.String(),
        "anchor": pl.String(),
        "line_spans": pl.List(pl.List(pl.Int64())),
        "pages": pl.List(pl.Int64()),
    },
    "unit_chunk_edges": {"unit_id": pl.String(), "chunk_id": pl.String(), "rank": pl.Int64()},
    "unit_chunk_contents": {
        "chunk_id": pl.String(),
        "document": pl.String(),
        "text": pl.String(),
        "start_line": pl.Int64(),
        "end_line": pl.Int64(),
        "page": pl.Int64(),
    },
    "unit_type_bags": {"unit_id": pl.String(), "artifact_type": pl.String(), "count": pl.Int64()},
    "unit_rejections": {
        "subject_kind": pl.String(),  # occurrence | anchor
        "subject_id": pl.String(),
        "anchor": pl.String(),
        "documents": pl.List(pl.String()),
        "rule": pl.String(),
        "detail": pl.String(),
    },
}

REJECTION_RULES = (
    "empty_unit",
    "missing_source_reference",
    "invalid_type_label",
    "insufficient_type_diversity",
    "placeholder_anchor",
    "language_type_alias",
    "cap_exceeded",
)
LINKABLE_ANCHOR_KINDS = frozenset({"command", "file"})
DEFAULT_CAP = 8


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


@dataclass
class _Unit:
    kind: str
    anchor: str
    anchor_kind: str
    occurrences: list[dict[str, Any]]

    def key(self, chunk_hash: dict[str, str]) -> str:
        parts: list[str] = [self.kind, self.anchor]
        for occ in self.occurrences:
            parts.append(occ["occurrence_id"])
            parts.append(occ["content_hash"])
            parts.extend(f"{c}:{chunk_hash.get(c, '')}" for c in occ["chunk_ids"])
        return stable_id("uk", *parts)


def _validate_occurrence(
    occ: dict[str, Any], artifacts: dict[str, dict[str, Any]], chunks: dict[str, dict[str, Any]]
) -> tuple[str, str] | None:
    if not occ["artifact_ids"]:
        return "empty_unit", "occurrence has no artifacts"
    if not occ["chunk_ids"] or not occ["document"]:
        return "missing_source_reference", "occurrence has no source chunk or document"
    missing = [c for c in occ["chunk_ids"] if c not in chunks]
    missing += [a for a in occ["artifact_ids"] if a not in artifacts]
    if missing:
        return "missing_source_reference", f"unknown ids {missing[:3]}"
    bad = sorted({artifacts[a]["artifact_type"] for a in occ["artifact_ids"]} - set(ARTIFACT_TYPES))
    if bad:
        return "invalid_type_label", f"types {bad} are not in the schema"
    return None


def _cap_round_robin(occs: list[dict[str, Any]], cap: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Choose at most ``cap`` occurrences, one per document in turn (documents in key order)."""
    by_doc: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for occ in occs:
        by_doc[occ["document"]].append(occ)
    queues = [by_doc[d] for d in sorted(by_doc)]
    kept: list[dict[str, Any]] = []
    depth = 0
    while len(kept) < cap and any(depth < len(q) for q in queues):
        for queue in queues:
            if depth < len(queue) and len(kept) < cap:
                kept.append(queue[depth])
        depth += 1
    kept_ids = {o["occurrence_id"] for o in kept}
    dropped = [o for o in occs if o["occurrence_id"] not in kept_ids]
    kept.sort(key=lambda o: (o["document"], o["_order"]))
    return kept, dropped


def _link(
    valid: list[dict[str, Any]], artifacts: dict[str, dict[str, Any]], cap: int
) -> tuple[list[_Unit], list[dict[str, Any]]]:
    """Cross-document units and the rejection records of the linker."""
    by_anchor: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for occ in valid:
        if occ["anchor_kind"] in LINKABLE_ANCHOR_KINDS:
            by_anchor[occ["anchor"]].append(occ)
    units: list[_Unit] = []
    rejections: list[dict[str, Any]] = []
    for anchor in sorted(by_anchor):
        occs = by_anchor[anchor]
        docs = sorted({o["document"] for o in occs})
        if len(docs) < 2:
            continue
        reason = rejection_reason(anchor)
        if reason:
            rejections.append(_rejection("anchor", anchor, anchor, docs, reason,
                                         f"{len(occs)} occurrences in {len(docs)} documents"))
            continue
        kept, dropped = _cap_round_robin(occs, cap)
        for occ in dropped:
            rejections.append(_rejection("occurrence", occ["occurrence_id"], anchor, [occ["document"]],
                                         "cap_exceeded", f"anchor holds {len(occs)} occurrences; cap {cap}"))
        types = {artifacts[a]["artifact_type"] for o in kept for a in o["artifact_ids"]}
        if len(types) < 2:
            rejections.append(_rejection("anchor", anchor, anchor, docs, "insufficient_type_diversity",
                                         f"only type {sorted(types)}"))
            continue
        kind = occs[0]["anchor_kind"]
        units.append(_Unit("cross_document", anchor, kind, kept))
    return units, rejections


def _rejection(kind: str, subject: str, anchor: str, docs: list[str], rule: str, detail: str) -> dict[str, Any]:
    return {"subject_kind": kind, "subject_id": subject, "anchor": anchor, "documents": docs,
            "rule": rule, "detail": detail}


def _build_unit_rows(
    unit: _Unit,
    key: str,
    artifacts: dict[str, dict[str, Any]],
    chunks: dict[str, dict[str, Any]],
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


def _previous_rows(previous: dict[str, pl.DataFrame] | None) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Previous per-unit rows keyed by unit content hash, for reuse."""
    if not previous or "unit_hyperedges" not in previous:
        return {}
    per_unit: dict[str, dict[str, list[dict[str, Any]]]] = {}
    id_to_key: dict[str, str] = {}
    for row in previous["unit_hyperedges"].iter_rows(named=True):
        id_to_key[row["unit_id"]] = row["content_hash"]
        per_unit[row["content_hash"]] = {"unit_hyperedges": [row], "unit_provenance": [],
                                         "unit_chunk_edges": [], "unit_type_bags": []}
    for name in ("unit_provenance", "unit_chunk_edges", "unit_type_bags"):
        frame = previous.get(name)
        if frame is None:
            continue
        for row in frame.iter_rows(named=True):
            key = id_to_key.get(row["unit_id"])
            if key is not None:
                per_unit[key][name].append(row)
    return per_unit


def assemble_units(
    occurrences: pl.DataFrame,
    artifacts: pl.DataFrame,
    chunks: pl.DataFrame,
    *,
    cap: int = DEFAULT_CAP,
    previous: dict[str, pl.DataFrame] | None = None,
) -> tuple[dict[str, pl.DataFrame], AssemblyStats]:
    """Build the seven unit tables from all documents' occurrences, artifacts and chunks."""
    started = time.perf_counter()
    stats = AssemblyStats()
    art_by_id = {r["artifact_id"]: r for r in artifacts.iter_rows(named=True)}
    chunk_by_id = {r["chunk_id"]: r for r in chunks.iter_rows(named=True)}
    chunk_hash = {cid: stable_id("ch", r["text"]) for cid, r in chunk_by_id.items()}
    occ_rows = occurrences.sort(["document"]).with_row_index("_order").to_dicts()

    rejections: list[dict[str, Any]] = []
    valid: list[dict[str, Any]] = []
    for occ in occ_rows:
        problem = _validate_occurrence(occ, art_by_id, chunk_by_id)
        if problem:
            rejections.append(_rejection("occurrence", occ["occurrence_id"], occ["anchor"],
                                         [occ["document"]], *problem))
        else:
            valid.append(occ)

    units = [_Unit("occurrence", o["anchor"], o["anchor_kind"], [o]) for o in valid]
    linked, link_rejections = _link(valid, art_by_id, cap)
    units += linked
    rejections += link_rejections

    reuse = _previous_rows(previous)
    tables: dict[str, list[dict[str, Any]]] = {name: [] for name in UNIT_TABLE_NAMES}
    new_keys: set[str] = set()
    for unit in units:
        key = unit.key(chunk_hash)
        new_keys.add(key)
        rows = reuse.get(key)
        if rows is not None:
            stats.reused += 1
        else:
            rows = _build_unit_rows(unit, key, art_by_id, chunk_by_id)
            stats.rebuilt += 1
        for name, part in rows.items():
            tables[name].extend(part)
        if unit.kind == "cross_document":
            stats.cross_document += 1
        else:
            stats.within_source += 1
    stats.deleted = len(set(reuse) - new_keys)
    stats.units = len(units)

    node_ids: list[str] = []
    seen_nodes: set[str] = set()
    chunk_ids: list[str] = []
    seen_chunks: set[str] = set()
    for edge in tables["unit_hyperedges"]:
        for a in edge["artifact_ids"]:
            if a not in seen_nodes:
                seen_nodes.add(a)
                node_ids.append(a)
        for c in edge["chunk_ids"]:
            if c not in seen_chunks:
                seen_chunks.add(c)
                chunk_ids.append(c)
    tables["unit_nodes"] = [
        {"node_id": a, **{k: art_by_id[a][k] for k in ("artifact_type", "document", "content",
                                                        "section_path", "start_line", "end_line",
                                                        "page", "rule")}}
        for a in node_ids
    ]
    tables["unit_chunk_contents"] = [
        {"chunk_id": c, **{k: chunk_by_id[c][k] for k in ("document", "text", "start_line",
                                                          "end_line", "page")}}
        for c in chunk_ids
    ]
    tables["unit_rejections"] = rejections
    for rej in rejections:
        stats.rejected[rej["rule"]] = stats.rejected.get(rej["rule"], 0) + 1

    frames = {}
    for name in UNIT_TABLE_NAMES:
        frames[name] = _frame(tables[name], SCHEMAS[name])
    frames = canonical_order(frames)
    stats.seconds = time.perf_counter() - started
    return frames, stats


def _frame(rows: list[dict[str, Any]], schema: dict[str, pl.DataType]) -> pl.DataFrame:
    if not rows:
        return pl.DataFrame(schema=schema)
    return pl.DataFrame(rows, schema=schema, strict=False).select(list(schema))


_SORT_KEYS = {
    "unit_hyperedges": ["unit_id"],
    "unit_nodes": ["node_id"],
    "unit_provenance": ["unit_id", "occurrence_id"],
    "unit_chunk_edges": ["unit_id", "rank"],
    "unit_chunk_contents": ["chunk_id"],
    "unit_type_bags": ["unit_id", "artifact_type"],
    "unit_rejections": ["rule", "subject_id"],
}


def canonical_order(frames: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """Sort every table by its key so that the Parquet bytes are reproducible."""
    return {name: df.sort(_SORT_KEYS[name]) for name, df in frames.items()}
