"""Functional units: linker rules on hand-made occurrences, and incremental == full rebuild."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from edaqa_pipeline import model
from edaqa_pipeline.extraction.artifacts import extract_artifacts
from edaqa_pipeline.extraction.chunks import build_chunks
from edaqa_pipeline.extraction.occurrences import build_occurrences
from edaqa_pipeline.graphs.functional_units import UNIT_TABLE_NAMES, assemble_units
from edaqa_pipeline.graphs.summaries import offline_summary
from edaqa_pipeline.parsing.documents import parse_document
from edaqa_pipeline.storage.hashing import content_hash
from edaqa_pipeline.validation.structure import unit_problems
from edaqa_pipeline_tests.fixtures_index import SAMPLE


def _art(doc: str, aid: str, kind: str, content: str = "x") -> dict:
    return {"artifact_id": aid, "document": doc, "block_id": f"b_{aid}", "artifact_type": kind,
            "content": content, "section_path": ["S"], "start_line": 1, "end_line": 1,
            "page": None, "bbox": None, "rule": "test"}


def _chunk(doc: str, cid: str) -> dict:
    return {"chunk_id": cid, "document": doc, "ordinal": 0, "section_path": ["S"], "text": f"text {cid}",
            "embed_text": f"S\ntext {cid}", "block_ids": [], "n_tokens": 2, "start_line": 1,
            "end_line": 1, "page": None, "bbox": None}


def _occ(doc: str, oid: str, anchor: str, arts: list[str], chunks: list[str], kind: str = "command") -> dict:
    return {"occurrence_id": oid, "document": doc, "anchor": anchor, "anchor_kind": kind,
            "anchor_rule": "test", "section_path": ["S"], "artifact_ids": arts, "artifact_types": [],
            "chunk_ids": chunks, "block_ids": [], "line_spans": [[1, 1]], "pages": [],
            "content_hash": f"h_{oid}"}


def _tables(occs: list[dict], arts: list[dict], chunks: list[dict]) -> tuple[pl.DataFrame, ...]:
    return (model.frame(occs, model.OCCURRENCES_SCHEMA), model.frame(arts, model.ARTIFACTS_SCHEMA),
            model.frame(chunks, model.CHUNKS_SCHEMA))


def _two_doc_world(anchor: str, type_a: str = "codeblock", type_b: str = "table"):
    arts = [_art("a.md", "a1", type_a), _art("b.md", "b1", type_b)]
    chunks = [_chunk("a.md", "ca"), _chunk("b.md", "cb")]
    occs = [_occ("a.md", "oa", anchor, ["a1"], ["ca"]), _occ("b.md", "ob", anchor, ["b1"], ["cb"])]
    return _tables(occs, arts, chunks)


def test_cross_document_unit_needs_two_documents_and_two_types() -> None:
    tables, stats = assemble_units(*_two_doc_world("define_pdn_grid"))
    edges = tables["unit_hyperedges"]
    cross = edges.filter(pl.col("kind") == "cross_document")
    assert stats.within_source == 2 and stats.cross_document == 1
    assert cross["anchor"].to_list() == ["define_pdn_grid"]
    assert cross["documents"].to_list() == [["a.md", "b.md"]]
    assert cross["artifact_types"].to_list() == [["codeblock", "table"]]
    assert sorted(cross["chunk_ids"].to_list()[0]) == ["ca", "cb"]
    assert unit_problems(tables, cap=8) == []


def test_same_type_in_two_documents_is_rejected_for_low_type_diversity() -> None:
    tables, _ = assemble_units(*_two_doc_world("define_pdn_grid", "text", "text"))
    assert tables["unit_hyperedges"].filter(pl.col("kind") == "cross_document").height == 0
    rej = tables["unit_rejections"]
    assert rej.select("rule", "anchor").rows() == [("insufficient_type_diversity", "define_pdn_grid")]


@pytest.mark.parametrize(
    ("anchor", "rule"),
    [("<file>", "placeholder_anchor"), ("foo", "placeholder_anchor"), ("design.def", "placeholder_anchor"),
     ("int", "language_type_alias"), ("string", "language_type_alias"), ("proc", "language_type_alias")],
)
def test_placeholders_and_language_words_never_link(anchor: str, rule: str) -> None:
    tables, _ = assemble_units(*_two_doc_world(anchor))
    assert tables["unit_hyperedges"].filter(pl.col("kind") == "cross_document").height == 0
    assert tables["unit_rejections"].select("rule", "anchor").rows() == [(rule, anchor)]


def test_section_anchors_never_link_documents() -> None:
    occs, arts, chunks = _two_doc_world("section:FAQs")
    occs = occs.with_columns(pl.lit("section").alias("anchor_kind"))
    tables, _ = assemble_units(occs, arts, chunks)
    assert tables["unit_hyperedges"].filter(pl.col("kind") == "cross_document").height == 0


def test_cap_keeps_occurrences_round_robin_over_documents() -> None:
    arts, chunks, occs = [], [], []
    plan = {"a.md": 6, "b.md": 3, "c.md": 1}  # 10 occurrences, cap 4
    for doc, n in plan.items():
        for i in range(n):
            aid, cid, oid = f"{doc}{i}a", f"{doc}{i}c", f"{doc}{i}o"
            arts.append(_art(doc, aid, "codeblock" if i % 2 == 0 else "table"))
            chunks.append(_chunk(doc, cid))
            occs.append(_occ(doc, oid, "place_cells", [aid], [cid]))
    tables, _ = assemble_units(*_tables(occs, arts, chunks), cap=4)
    cross = tables["unit_hyperedges"].filter(pl.col("kind") == "cross_document")
    # round 1: a0, b0, c0; round 2: a1 -> cap reached
    assert sorted(cross["occurrence_ids"].to_list()[0]) == sorted(["a.md0o", "b.md0o", "c.md0o", "a.md1o"])
    dropped = tables["unit_rejections"].filter(pl.col("rule") == "cap_exceeded")["subject_id"].to_list()
    assert sorted(dropped) == sorted(["a.md2o", "a.md3o", "a.md4o", "a.md5o", "b.md1o", "b.md2o"])
    assert unit_problems(tables, cap=4) == []


def test_structural_rejections_empty_missing_source_invalid_type() -> None:
    arts = [_art("a.md", "a1", "codeblock"), _art("a.md", "a2", "not_a_type")]
    chunks = [_chunk("a.md", "c1")]
    occs = [
        _occ("a.md", "o_empty", "x_cmd", [], ["c1"]),
        _occ("a.md", "o_nosrc", "y_cmd", ["a1"], []),
        _occ("a.md", "o_badtype", "z_cmd", ["a2"], ["c1"]),
        _occ("a.md", "o_ok", "ok_cmd", ["a1"], ["c1"]),
    ]
    tables, _ = assemble_units(*_tables(occs, arts, chunks))
    rules = dict(tables["unit_rejections"].select("subject_id", "rule").rows())
    assert rules == {"o_empty": "empty_unit", "o_nosrc": "missing_source_reference",
                     "o_badtype": "invalid_type_label"}
    assert tables["unit_hyperedges"]["anchor"].to_list() == ["ok_cmd"]


def test_summary_is_serialised_by_artifact_type() -> None:
    arts = [_art("a.md", "1", "text", "Builds the grid."), _art("a.md", "2", "codeblock", "define_pdn_grid -name g"),
            _art("a.md", "3", "table", "| Switch | Description |\n| --- | --- |\n| `-name` | grid name |")]
    summary = offline_summary("define_pdn_grid", "command", "occurrence", ["PDN", "Define"], arts)
    assert summary.splitlines() == [
        "command: define_pdn_grid",
        "section: PDN > Define",
        "types: codeblock, table, text",
        "[codeblock] define_pdn_grid -name g",
        "[table] Switch ; Description: -name",
        "[text] Builds the grid.",
    ]


def _document_tables(corpus: Path) -> dict[str, tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]]:
    out = {}
    for path in sorted(corpus.glob("*.md")):
        _, blocks = parse_document(path.read_bytes(), path.name)
        chunks = build_chunks(blocks)
        arts = extract_artifacts(blocks)
        occs = build_occurrences(blocks, arts, chunks)
        out[path.name] = (model.frame(occs, model.OCCURRENCES_SCHEMA), model.frame(arts, model.ARTIFACTS_SCHEMA),
                          model.frame(chunks, model.CHUNKS_SCHEMA))
    return out


def _concat(docs: dict, keys: list[str]) -> tuple[pl.DataFrame, ...]:
    return tuple(pl.concat([docs[k][i] for k in sorted(keys)]) for i in range(3))


def _hashes(tables: dict[str, pl.DataFrame]) -> dict[str, str]:
    return {name: content_hash(tables[name]) for name in UNIT_TABLE_NAMES}


@pytest.mark.parametrize("target", ["cts.md", "overview.md", "placement.md"])
def test_incremental_add_and_delete_equal_full_rebuild(target: str) -> None:
    docs = _document_tables(SAMPLE)
    keys = sorted(docs)
    rest = [k for k in keys if k != target]
    full, _ = assemble_units(*_concat(docs, keys))
    base, _ = assemble_units(*_concat(docs, rest))
    added, stats = assemble_units(*_concat(docs, keys), previous=base)
    assert _hashes(added) == _hashes(full)
    assert stats.rebuilt > 0 and stats.reused > 0
    assert stats.reused + stats.rebuilt == full["unit_hyperedges"].height
    deleted, stats = assemble_units(*_concat(docs, rest), previous=full)
    assert _hashes(deleted) == _hashes(base)
    assert stats.deleted > 0
    # A deletion follows provenance in reverse: nothing of the document survives.
    assert target not in deleted["unit_provenance"]["document"].to_list()
    assert target not in deleted["unit_chunk_contents"]["document"].to_list()
    assert all(target not in docs_ for docs_ in deleted["unit_hyperedges"]["documents"].to_list())
