"""Linker rules of functional units (paper "Validation and updates"): which occurrences are
valid, which anchors link across documents (>= 2 documents, >= 2 types, command/file
anchors only), the round-robin cap, and the rejection record every refusal leaves."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from edaqa_pipeline.extraction.anchors import rejection_reason
from edaqa_pipeline.graphs.unit_schema import (
    LINKABLE_ANCHOR_KINDS,
)
from edaqa_pipeline.model import ARTIFACT_TYPES, stable_id


@dataclass
class Unit:
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


def validate_occurrence(
    occ: dict[str, Any], artifacts: dict[str, dict[str, Any]], chunk_ids: Collection[str]
) -> tuple[str, str] | None:
    if not occ["artifact_ids"]:
        return "empty_unit", "occurrence has no artifacts"
    if not occ["chunk_ids"] or not occ["document"]:
        return "missing_source_reference", "occurrence has no source chunk or document"
    missing = [c for c in occ["chunk_ids"] if c not in chunk_ids]
    missing += [a for a in occ["artifact_ids"] if a not in artifacts]
    if missing:
        return "missing_source_reference", f"unknown ids {missing[:3]}"
    bad = sorted({artifacts[a]["artifact_type"] for a in occ["artifact_ids"]} - set(ARTIFACT_TYPES))
    if bad:
        return "invalid_type_label", f"types {bad} are not in the schema"
    return None


def cap_round_robin(occs: list[dict[str, Any]], cap: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Choose at most ``cap`` occurrences, one per document in turn (documents in key order)."""
    by_doc: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for occ in sorted(occs, key=lambda o: (o["document"], o["_order"])):
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


def link_anchor(
    valid: list[dict[str, Any]], artifacts: dict[str, dict[str, Any]], cap: int
) -> tuple[list[Unit], list[dict[str, Any]]]:
    """Cross-document units and the rejection records of the linker."""
    by_anchor: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for occ in valid:
        if occ["anchor_kind"] in LINKABLE_ANCHOR_KINDS:
            by_anchor[occ["anchor"]].append(occ)
    units: list[Unit] = []
    rejections: list[dict[str, Any]] = []
    for anchor in sorted(by_anchor):
        occs = by_anchor[anchor]
        docs = sorted({o["document"] for o in occs})
        if len(docs) < 2:
            continue
        reason = rejection_reason(anchor)
        if reason:
            rejections.append(rejection_record("anchor", anchor, anchor, docs, reason,
                                         f"{len(occs)} occurrences in {len(docs)} documents"))
            continue
        kept, dropped = cap_round_robin(occs, cap)
        for occ in dropped:
            rejections.append(rejection_record("occurrence", occ["occurrence_id"], anchor, [occ["document"]],
                                         "cap_exceeded", f"anchor holds {len(occs)} occurrences; cap {cap}"))
        types = {artifacts[a]["artifact_type"] for o in kept for a in o["artifact_ids"]}
        if len(types) < 2:
            rejections.append(rejection_record("anchor", anchor, anchor, docs, "insufficient_type_diversity",
                                         f"only type {sorted(types)}"))
            continue
        kind = occs[0]["anchor_kind"]
        units.append(Unit("cross_document", anchor, kind, kept))
    return units, rejections


def rejection_record(kind: str, subject: str, anchor: str, docs: list[str], rule: str, detail: str) -> dict[str, Any]:
    return {"subject_kind": kind, "subject_id": subject, "anchor": anchor, "documents": docs,
            "rule": rule, "detail": detail}
