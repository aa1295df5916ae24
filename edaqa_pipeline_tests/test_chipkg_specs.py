"""ChipKG on real circuit specifications: triples from PDF tables stored as pipe tables,
circuit-spec entity types (module, signal, register, field, fsm_state, parameter) chosen per
document kind, honest provenance labels, the extracting model in the per-document hash.

The PDFs are the real specifications of /work/shared/corpus/datasheets (a few of their pages,
copied with pymupdf so that parsing stays within seconds) and the sample corpus's LDO
datasheet; the Markdown manuals are the sample corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pymupdf
import pytest

from edaqa_pipeline.graphs.chipkg.document import document_kg, entity_id
from edaqa_pipeline.graphs.chipkg.schema import (
    DOCUMENT_KINDS,
    IRTriple,
    SentenceIR,
    SentenceIRs,
    validate_irs,
)
from edaqa_pipeline.graphs.chipkg.store import build_kg, document_hash
from edaqa_pipeline.graphs.chipkg.tables import is_pipe_table
from edaqa_pipeline.parsing.documents import parse_document
from edaqa_pipeline_tests.fixtures_index import SAMPLE, SHARED

DATASHEETS = SHARED / "corpus" / "datasheets"
# pages (1-based) holding the tables and sections the tests look at
PAGES = {
    "veer_eh1_prm.pdf": [31, 32, 52, 53, 75],  # mrac / dmst field tables, power signals, CSR map
    "wishbone_b3_spec.pdf": [33, 34, 73],  # signal headings (ACK_I, DAT_I()...), CTI_O table
    "ihp_sg13g2_process_spec.pdf": [7, 8],  # NMOS parameters, continued on the next page
}


def _pages(path: Path, pages: list[int]) -> bytes:
    src, dst = pymupdf.open(path), pymupdf.open()
    for page in pages:
        dst.insert_pdf(src, from_page=page - 1, to_page=page - 1)
    return dst.tobytes()


@pytest.fixture(scope="module")
def specs() -> dict[str, list[dict]]:
    """Parsed blocks of the spec pages (real PDFs, real parser)."""
    if not DATASHEETS.is_dir():
        pytest.skip(f"{DATASHEETS} (the shared specification corpus) is not available")
    out = {name: parse_document(_pages(DATASHEETS / name, pages), name)[1] for name, pages in PAGES.items()}
    ldo = SAMPLE / "nimbus_ldo_datasheet.pdf"
    out[ldo.name] = parse_document(ldo.read_bytes(), ldo.name)[1]
    return out


@pytest.fixture(scope="module")
def kgs(specs: dict[str, list[dict]]) -> dict[str, object]:
    return {name: document_kg(blocks, []) for name, blocks in specs.items()}


def _entities(kg, etype: str) -> set[str]:  # type: ignore[no-untyped-def]
    return {n["canonical"] for n in kg.nodes if n["kind"] == "entity" and n["node_type"] == etype}


def _triples(kg, relation: str) -> set[tuple[str, str]]:  # type: ignore[no-untyped-def]
    text = {n["node_id"]: n["canonical"] if n["kind"] == "entity" else n["text"] for n in kg.nodes}
    return {(text[t["subject"]], text[t["object"]]) for t in kg.triples if t["relation"] == relation}


def test_pdf_tables_are_pipe_tables_and_become_triples(specs, kgs) -> None:  # type: ignore[no-untyped-def]
    tables = [b for b in specs["veer_eh1_prm.pdf"] if b["kind"] == "table"]
    assert tables and all(is_pipe_table(b) for b in tables)
    assert all("header" in json.loads(b["meta"]) for b in tables)
    kg = kgs["veer_eh1_prm.pdf"]
    assert kg.rules["offline:spec_table.register_field"] >= 4
    assert {"mrac", "dmst"} <= _entities(kg, "register")
    assert {"mrac.cacheabley", "mrac.sideeffecty", "dmst.fence", "dmst.fence_i"} <= _entities(kg, "field")
    assert ("mrac", "mrac.cacheabley") in _triples(kg, "has_field")
    # the table's Bits / Access / Reset columns are auxiliaries of the field's meaning
    field = entity_id("field", "mrac.cacheabley")
    aux = {(t["relation"], n["text"]) for t in kg.triples for n in kg.nodes
           if t["kind"] == "auxiliary" and t["subject"] == field and n["node_id"] == t["object"]}
    assert {("bits", "Y*2"), ("access", "R/W"), ("reset", "0")} <= aux
    links = [t for t in kg.triples if t["kind"] == "linking"]
    assert links and all(t["subject_kind"] == t["object_kind"] == "triple" for t in links)


def test_register_map_and_signal_tables(kgs) -> None:  # type: ignore[no-untyped-def]
    kg = kgs["veer_eh1_prm.pdf"]
    assert {"meivt", "meipt", "meihap"} <= _entities(kg, "register")  # Table 6-13 (CSR map)
    assert "reserved" not in _entities(kg, "register")
    assert {"cpu_halt_req", "cpu_halt_ack", "cpu_run_req"} <= _entities(kg, "signal")
    assert ("cpu_halt_req", "cpu_halt_ack") in _triples(kg, "paired_with")
    # prose that names a signal the document's tables define links to the signal entity
    sig = entity_id("signal", "cpu_halt_req")
    prose = {t["statement_id"] for t in kg.triples if sig in (t["subject"], t["object"])
             and t["rule"].startswith("offline:prose.")}
    assert prose


def test_wishbone_signal_headings_and_value_table(kgs) -> None:  # type: ignore[no-untyped-def]
    kg = kgs["wishbone_b3_spec.pdf"]
    signals = _entities(kg, "signal")
    assert {"ACK_I", "DAT_I", "CLK_I", "CTI_O"} <= signals
    assert not any("(" in s for s in signals)  # DAT_I() / CTI_O(2:0) lose their ranges
    assert kg.rules["offline:heading.spec_entity"] >= 3
    assert ("DAT_I()", "DAT_I") in _triples(kg, "normalises_to")
    values = {o for s, o in _triples(kg, "has_value") if s == "CTI_O"}
    assert any("000" in v for v in values) and any("111" in v for v in values)
    means = dict(_triples(kg, "means"))
    assert any("000" in k and "Classic cycle" in v for k, v in means.items())
    # a sentence of the ACK_I section is anchored to the section's signal
    scoped = [n for n in kg.nodes if n["kind"] == "statement" and n["section_path"][-1:] == ["ACK_I"]
              and n["anchor_entity"] == "ACK_I"]
    assert scoped


def test_parameter_tables_with_a_continued_header(kgs) -> None:  # type: ignore[no-untyped-def]
    kg = kgs["ihp_sg13g2_process_spec.pdf"]
    params = _entities(kg, "parameter")
    assert {"VTN10x013", "IDSN013"} <= params
    # page 8 continues the NMOS table without a header row: its first row is data
    assert "BVDSSN013" in params
    assert ("Breakdown Voltage", "BVDSSN013") in _triples(kg, "normalises_to")
    bvd = entity_id("parameter", "BVDSSN013")
    aux = {(t["relation"], n["text"]) for t in kg.triples for n in kg.nodes
           if t["kind"] == "auxiliary" and t["subject"] == bvd and n["node_id"] == t["object"]}
    assert {("min", "2.0"), ("target", "2.7"), ("unit", "V")} <= aux
    ldo = kgs["nimbus_ldo_datasheet.pdf"]
    assert {"VIN", "VOUT"} <= _entities(ldo, "parameter")


def test_entity_types_follow_the_document_kind(kgs) -> None:  # type: ignore[no-untyped-def]
    spec_types = set(DOCUMENT_KINDS["spec"])
    for name, kg in kgs.items():
        types = {n["node_type"] for n in kg.nodes if n["kind"] == "entity"}
        assert types <= spec_types, (name, types - spec_types)
    manual_types = set(DOCUMENT_KINDS["manual"])
    for path in sorted(SAMPLE.glob("*.md")):
        kg = document_kg(parse_document(path.read_bytes(), path.name)[1], [])
        types = {n["node_type"] for n in kg.nodes if n["kind"] == "entity"}
        assert types <= manual_types, (path.name, types - manual_types)
        if path.name == "cts.md":  # Markdown pipe tables still give option rows
            assert kg.rules["offline:table.option_row"] > 0
    ir = SentenceIR(sentence_id="s", category="declarative", anchor_type="definition",
                    anchor_entity="ACK_O", anchor_entity_type="signal",
                    backbone=[IRTriple(subject="ACK_O", subject_type="signal", relation="means",
                                       object="acknowledge", object_type="value")])
    validate_irs(SentenceIRs(sentences=[ir]), ["s"], "spec")
    with pytest.raises(ValueError, match="signal"):
        validate_irs(SentenceIRs(sentences=[ir]), ["s"], "manual")


def test_offline_provenance_labels_name_the_rule(kgs) -> None:  # type: ignore[no-untyped-def]
    for kg in kgs.values():
        rules = {t["rule"] for t in kg.triples}
        assert rules and all(r.startswith("offline:") and len(r) > len("offline:") for r in rules)
        for n in kg.nodes:
            if n["kind"] == "statement":
                assert json.loads(n["ir"])["rule"].startswith("offline:")


def test_the_extracting_model_is_part_of_the_document_hash(specs) -> None:  # type: ignore[no-untyped-def]
    blocks = specs["nimbus_ldo_datasheet.pdf"]
    offline = document_hash(blocks, [], "offline:rules")
    assert offline == document_hash(blocks, [], "offline:rules")
    assert len({offline, document_hash(blocks, [], "openai:smollm2"),
                document_hash(blocks, [], "openai:gpt-4o-mini")}) == 3
    docs = {"nimbus_ldo_datasheet.pdf": blocks}
    nodes, triples, _ = build_kg(docs, {})
    again, _, stats = build_kg(docs, {}, previous=(nodes, triples))
    assert stats.reused_documents == 1 and again.equals(nodes)
    assert set(nodes.filter(nodes["kind"] != "entity")["doc_hash"].to_list()) == {offline}
