"""Hardware knowledge graphs from PDF datasheets (extraction.datasheets, graphs.hwkg,
methods.hwkg), on a two-page datasheet generated with pymupdf (_helpers_datasheets.py): a ruled
electrical table (Parameter / Symbol / Conditions / Min / Typ / Max / Unit), a second table with a two-row
header ("Limits" over "Min | Max") and units in the header ("Voltage (V)"), and prose with
"X is N unit" sentences. The tests check exact properties (value, unit, conditions, page),
the graph built from them, the instruction validator (unknown ids, incomplete fields, cycles,
unknown ops: rejected, logged, graph untouched), the tree check and the hwkg retriever.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import polars as pl
import pytest

from edaqa_pipeline.extraction.datasheets.chunks import datasheet_chunks
from edaqa_pipeline.extraction.datasheets.properties import extract_properties
from edaqa_pipeline.extraction.datasheets.skeletons import classify
from edaqa_pipeline.graphs.hwkg.checks import kg_problems
from edaqa_pipeline.graphs.hwkg.faithfulness import judge, offline_verdict, summary
from edaqa_pipeline.graphs.hwkg.instructions import REFINE_OPS, ROUTE_OPS, Instruction
from edaqa_pipeline.graphs.hwkg.kg import build_hardware_kg
from edaqa_pipeline.methods.hwkg.retriever import HwkgRetriever, make_hwkg
from edaqa_pipeline.parsing.pdf import parse_pdf
from edaqa_pipeline.retrieval.record import Retrieval
from edaqa_pipeline.text.markup import pipe_row
from edaqa_pipeline_tests._helpers_datasheets import DOC, HEADER, _snapshot, make_datasheet


@pytest.fixture(scope="module")
def sheet() -> dict[str, Any]:
    _doc, blocks = parse_pdf(make_datasheet(), DOC)
    chunks = datasheet_chunks(blocks)
    category, _ = classify([c["text"] for c in chunks])
    rows, _stats = extract_properties(chunks, category)
    return {"blocks": blocks, "chunks": chunks, "rows": rows, "category": category}


def _by(rows: list[dict[str, Any]], name: str, page: int | None = None) -> dict[str, Any]:
    found = [r for r in rows if r["name"] == name and (page is None or r["page"] == page)]
    assert len(found) == 1, (name, [(r["name"], r["page"]) for r in rows])
    return found[0]


# ---------------------------------------------------------------------------------------------
# chunks and properties


def test_table_chunk_is_whole_with_title_header_and_page(sheet):
    tables = [c for c in sheet["chunks"] if c["kind"] == "table"]
    assert len(tables) == 3
    first = tables[0]
    assert first["page"] == 1 and len(first["bbox"]) == 4
    assert first["text"].split("\n")[0] == "Table: Table 1. Electrical Characteristics"
    assert first["text"].split("\n")[1] == pipe_row(HEADER)
    assert first["text"].split("\n")[2] == "|" + "---|" * len(HEADER)
    assert "\n| Supply current | IDD | VDD = 1.8 V, active mode | - | 2.5 | 3.1 | mA |" in first["text"]
    # the caption paragraph is folded into the table chunk, figures never appear
    prose = [c for c in sheet["chunks"] if c["kind"] == "prose"]
    assert not any(c["text"].strip() == "Table 1. Electrical Characteristics" for c in prose)
    assert all(c["page"] and c["bbox"] for c in sheet["chunks"])


def test_exact_properties_from_the_ruled_table(sheet):
    rows = [r for r in sheet["rows"] if r["rule"] == "table:spec" and r["page"] == 1]
    got = {
        r["name"]: (r["symbol"], r["value_min"], r["value_typ"], r["value_max"], r["unit"],
                    r["conditions"], r["page"])
        for r in rows
    }  # fmt: skip
    assert got == {
        "Supply voltage": ("VDD", "1.71", "1.80", "1.89", "V", "", 1),
        "Supply current": ("IDD", None, "2.5", "3.1", "mA", "VDD = 1.8 V, active mode", 1),
        "Output high voltage": ("VOH", "1.62", None, None, "V", "IOH = -2 mA", 1),
        "SPI clock frequency": ("fSCK", None, None, "10", "MHz", "", 1),
    }
    current = _by(rows, "Supply current")
    assert current["value"] == "typ 2.5, max 3.1"
    assert "VDD = 1.8 V, active mode" in current["description"]
    table_chunk = next(c for c in sheet["chunks"] if c["chunk_id"] == current["chunk_id"])
    assert table_chunk["kind"] == "table" and table_chunk["page"] == 1


def test_multi_row_header_and_units_in_header(sheet):
    rows = sheet["rows"]
    vdd = _by(rows, "Supply voltage", page=2)
    assert (vdd["value_min"], vdd["value_max"], vdd["unit"]) == ("-0.3", "4.0", "V")
    tstg = _by(rows, "Storage temperature", page=2)
    assert (tstg["value_min"], tstg["value_max"], tstg["unit"]) == ("-40", "125", "°C")
    cap = _by(rows, "SCK Capacitance", page=2)
    assert (cap["value"], cap["unit"], cap["rule"]) == ("3.5", "pF", "table:matrix")
    volt = _by(rows, "MISO Voltage", page=2)
    assert (volt["value"], volt["unit"]) == ("1.8", "V")


def test_explicit_sentences_become_properties(sheet):
    rows = [r for r in sheet["rows"] if r["rule"].startswith("sentence:")]
    standby = _by(rows, "standby current")
    assert (standby["value"], standby["unit"], standby["conditions"], standby["page"]) == (
        "1.2", "uA", "at 25 °C", 1,
    )  # fmt: skip
    accuracy = _by(rows, "measurement accuracy")
    assert (accuracy["value"], accuracy["unit"]) == ("0.5", "°C")


def test_offline_faithfulness_holds_and_catches_tampering(sheet):
    texts = {c["chunk_id"]: c["text"] for c in sheet["chunks"]}
    verdicts = judge(sheet["rows"], texts)
    assert summary(verdicts)["faithfulness"] == 1.0
    current = dict(_by(sheet["rows"], "Supply current"))
    assert not offline_verdict({**current, "value_max": "3.7"}, texts[current["chunk_id"]]).faithful
    assert not offline_verdict({**current, "unit": "µA"}, texts[current["chunk_id"]]).faithful
    wrong_chunk = next(c for c in sheet["chunks"] if c["kind"] == "prose")
    assert not offline_verdict(current, wrong_chunk["text"]).faithful


# ---------------------------------------------------------------------------------------------
# graph: routing, refinement, instruction validation


def test_offline_graph_routes_by_section_and_passes_the_checks(sheet):
    result = build_hardware_kg(DOC, sheet["rows"], sheet["category"])
    kg = result.kg
    assert len(result.iterations) == 3
    nodes = result.nodes()
    chunks = pl.DataFrame({"chunk_id": [c["chunk_id"] for c in sheet["chunks"]]})
    assert kg_problems(nodes, chunks) == {
        "every_property_has_source": [],
        "no_property_outside_block": [],
        "block_tree_is_a_tree": [],
        "unique_property_names_per_block": [],
    }
    paths = {kg.records[p]["name"]: " > ".join(kg.path(kg.state[p].block_id)) for p in kg.active()}
    assert paths["Storage temperature"] == f"{DOC} > Absolute Maximum Ratings"
    assert paths["Supply current"].startswith(f"{DOC} > ")
    # the instruction log is complete: skeleton, routing, refinement; nothing rejected
    log = result.log()
    assert set(log["stage"].unique().to_list()) >= {"skeleton", "route", "refine", "reroute"}
    assert log.filter(pl.col("status") == "rejected").height == 0
    assert log.filter((pl.col("op") == "ATTACH") & (pl.col("stage") == "route")).height == len(
        sheet["rows"]
    )


def test_invalid_instructions_are_rejected_logged_and_change_nothing(sheet):
    kg = build_hardware_kg(DOC, sheet["rows"], sheet["category"]).kg
    before = _snapshot(kg)
    seq = len(kg.log)
    pid = kg.active()[0]
    block = kg.state[pid].block_id
    bad = [
        Instruction(op="ATTACH", property_id="hwp_doesnotexist", block_id=block),
        Instruction(op="ATTACH", property_id=pid, block_id="hwb_nope"),
        Instruction(op="ATTACH", property_id=pid),  # incomplete
        Instruction(op="CREATE_BLOCK", name="Loop", parent_id="Loop"),  # its own parent
        Instruction(op="CREATE_BLOCK", parent_id=kg.root_id),  # incomplete
        Instruction(op="DELETE_BLOCK", block_id=block),  # not an operation
        Instruction(op="MERGE", ids=[pid], into=pid),  # incomplete
        Instruction(op="RENAME", id=pid, new_name="hacked"),  # outside the route stage
    ]
    counts = kg.execute(bad, stage="route", iteration=9, batch="t", source="test",
                        allowed_ops=ROUTE_OPS)  # fmt: skip
    assert counts == {"rejected": len(bad)}
    logged = kg.log[seq:]
    assert [r["status"] for r in logged] == ["rejected"] * len(bad)
    reasons = [r["reason"] for r in logged]
    assert "unknown property id" in reasons[0]
    assert "unknown block id" in reasons[1]
    assert reasons[2] == "incomplete: block_id is missing"
    assert reasons[3].startswith("cycle")
    assert reasons[4] == "incomplete: name is missing"
    assert "unknown op 'DELETE_BLOCK'" in reasons[5]
    assert "not allowed in stage route" in reasons[7]
    # refinement stage: ids outside the batch, merges across units, renames without conflict
    other = next(p for p in kg.active() if kg.records[p]["unit"] != kg.records[pid]["unit"])
    refine_bad = [
        Instruction(op="MERGE", ids=[pid, "hwp_x"], into=pid),
        Instruction(op="MERGE", ids=[pid, other], into="hwp_y"),
        Instruction(op="RENAME", id=pid, new_name="hacked"),
        Instruction(op="RENAME", id=pid),
        Instruction(op="KEEP", id=other),  # not in this batch
    ]
    kg.execute(refine_bad, stage="refine", iteration=9, batch="t2", source="test",
               allowed_ops=REFINE_OPS, property_ids=[pid])  # fmt: skip
    reasons = [r["reason"] for r in kg.log[seq + len(bad) :]]
    assert all(r["status"] == "rejected" for r in kg.log[seq:])
    assert "unknown property id" in reasons[0]
    assert "is not one of ids" in reasons[1]
    assert reasons[2].startswith("no name conflict")
    assert reasons[3] == "incomplete: new_name is missing"
    assert "not in this batch" in reasons[4]
    assert _snapshot(kg) == before


def test_cycles_cannot_be_built_and_the_tree_check_finds_them(sheet):
    result = build_hardware_kg(DOC, sheet["rows"], sheet["category"])
    kg = result.kg
    a = kg.execute([Instruction(op="CREATE_BLOCK", name="A", parent_id=kg.root_id),
                    Instruction(op="CREATE_BLOCK", name="B", parent_id="A"),
                    Instruction(op="CREATE_BLOCK", name="A", parent_id="A")],
                   stage="route", iteration=0, batch="c", source="test", allowed_ops=ROUTE_OPS)  # fmt: skip
    assert a["CREATE_BLOCK"] == 3  # "A" under "A" is a new child named A, not a loop
    assert kg.tree_problems() == []
    nodes = result.nodes()
    assert kg_problems(nodes)["block_tree_is_a_tree"] == []
    # a tampered table (two blocks pointing at each other) fails the check
    blocks = nodes.filter(pl.col("node_type") == "block")["node_id"].to_list()
    x, y = blocks[1], blocks[2]
    broken = nodes.with_columns(
        pl.when(pl.col("node_id") == x).then(pl.lit(y))
        .when(pl.col("node_id") == y).then(pl.lit(x))
        .otherwise(pl.col("parent_id")).alias("parent_id")
    )  # fmt: skip
    assert any("cycle" in p for p in kg_problems(broken)["block_tree_is_a_tree"])


# ---------------------------------------------------------------------------------------------
# retrieval


def _write_storage(root: Path, result: Any, chunks: list[dict[str, Any]]) -> Path:
    from edaqa_pipeline.extraction.datasheets.chunks import chunk_frame

    tables = root / "tables"
    (tables / "datasheet_chunks").mkdir(parents=True)
    result.nodes().write_parquet(tables / "hardware_kgs.parquet")
    chunk_frame(chunks).write_parquet(tables / "datasheet_chunks" / f"{DOC}.parquet")
    return root


def test_hwkg_retriever_returns_property_with_page(sheet, tmp_path):
    result = build_hardware_kg(DOC, sheet["rows"], sheet["category"])
    storage = _write_storage(tmp_path / "storage", result, sheet["chunks"])
    retriever = HwkgRetriever.from_storage(storage)
    assert retriever.name == "hwkg"
    hits = retriever.retrieve("What is the maximum storage temperature?", 3)
    assert isinstance(hits, Retrieval) and hits.method == "hwkg" and hits.trace["blocks"]
    assert hits and hits[0].path == "hwkg" and hits[0].doc == DOC
    assert hits[0].page == 2 and hits[0].citation() == f"{DOC}:p2"
    assert "Storage temperature" in hits[0].text and "125" in hits[0].text
    assert "Table: Table 2. Absolute Maximum Ratings" in hits[0].text  # its source chunk
    # the evidence is a datasheet chunk, not a row of `chunks`; the properties it stands for
    tstg = _by(sheet["rows"], "Storage temperature")
    assert hits[0].chunk_id == "" and hits[0].datasheet_chunk_id == tstg["chunk_id"]
    assert tstg["property_id"] in hits[0].property_ids
    hits = retriever.retrieve("supply current in active mode", 2)
    assert hits[0].page == 1 and "Supply current" in hits[0].text and "3.1" in hits[0].text
    # the factory the registry uses: a snapshot-like object with a storage root
    snap = SimpleNamespace(storage=storage, documents=[DOC, "other.md"], base=None)
    assert make_hwkg(snap, llm=None).retrieve("SPI clock frequency", 1)[0].page == 1
