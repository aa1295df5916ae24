"""The paper's LLM path and evaluation: refinement by in-batch index and name, MERGE
of compatible units, non-convergence reported, the one-shot baseline, normalisation, inter-graph
completeness both ways, and -- against the real SmolLM2 server -- the same evaluation with a
model judging (plumbing and validation; SmolLM2-135M's judgements are not meant to be good)."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

from edaqa_pipeline.extraction.datasheets.chunks import datasheet_chunks
from edaqa_pipeline.extraction.datasheets.properties import extract_properties
from edaqa_pipeline.graphs.hwkg.checks import kg_problems
from edaqa_pipeline.graphs.hwkg.completeness import completeness, offline_coverage
from edaqa_pipeline.graphs.hwkg.executor import units_compatible
from edaqa_pipeline.graphs.hwkg.instructions import RefineInstruction, to_instructions
from edaqa_pipeline.graphs.hwkg.kg import KGConfig, build_hardware_kg
from edaqa_pipeline.graphs.hwkg.normalisation import normalise_property
from edaqa_pipeline.graphs.hwkg.oneshot import one_shot, parts
from edaqa_pipeline.graphs.hwkg.paper_metrics import evaluate_document, totals
from edaqa_pipeline.graphs.hwkg.tasks import render_refine
from edaqa_pipeline.parsing.pdf import parse_pdf
from edaqa_pipeline_tests._helpers_datasheets import DOC, make_datasheet


@pytest.fixture(scope="module")
def sheet() -> dict[str, Any]:
    _doc, blocks = parse_pdf(make_datasheet(), DOC)
    chunks = datasheet_chunks(blocks)
    rows, _ = extract_properties(chunks, "sensor")
    return {"chunks": chunks, "rows": rows}


def test_refinement_answers_are_checked_by_index_and_name() -> None:
    ids, names = ["p0", "p1", "p2"], ["Supply current", "Supply current", "VDD"]
    answer = [
        RefineInstruction(op="MERGE", indices=[0, 1], into=0),
        RefineInstruction(op="RENAME", index=2, name="VDD", new_name="VDD (abs max)"),
        RefineInstruction(op="KEEP", index=7, name="x"),  # not in the batch
        RefineInstruction(op="KEEP", index=1, name="Output voltage"),  # the name of another property
        RefineInstruction(op="MERGE", indices=[0, 2], into=1),  # into is not one of indices
        RefineInstruction(op="DELETE", index=0),  # passed on: the executor rejects unknown ops
    ]
    instructions, refused = to_instructions(answer, ids, names)
    assert [(i.op, i.ids, i.into, i.id, i.new_name) for i in instructions] == [
        ("MERGE", ["p0", "p1"], "p0", None, None),
        ("RENAME", None, None, "p2", "VDD (abs max)"),
        ("DELETE", None, None, None, None),
    ]
    assert [reason for _, reason in refused] == [
        "index 7 is not in the batch (0..2)",
        "name 'Output voltage' is not the name of [1] ('Supply current')",
        "into [1] is not one of indices",
    ]


def test_refine_prompt_carries_descriptions_other_names_and_indices() -> None:
    text = render_refine({
        "kg_id": DOC, "block": {"path": f"{DOC} > Power"}, "other_names": ["Standby current"],
        "properties": [{"name": "Supply current", "value": "3.1", "unit": "mA",
                        "conditions": "active mode", "description": "Supply current, from Table 1"}],
    })
    assert "[0] Supply current | 3.1 mA | conditions: active mode | description: Supply current, from Table 1" in text
    assert "Other property names in this block (not in this batch): Standby current" in text


@pytest.mark.parametrize(("a", "b", "ok"), [("mA", "mA", True), ("mA", "µA", True), ("V", "", True),
                                             ("V", "mA", False), ("ns", "s", True), ("pF", "V", False)])
def test_merge_joins_compatible_units(a: str, b: str, ok: bool) -> None:
    assert units_compatible(a, b) is ok


def test_a_refinement_that_did_not_converge_is_reported(sheet: dict[str, Any]) -> None:
    """Without refinement iterations the same-named properties stay: nothing hides them."""
    twice = [*sheet["rows"], *({**r, "property_id": r["property_id"] + "b", "row": 99, "value": "9.9"}
                               for r in sheet["rows"][:2])]
    result = build_hardware_kg(DOC, twice, "sensor", config=KGConfig(iterations=0))
    assert not result.converged and result.stats["name_conflicts_left"] == 2
    problems = kg_problems(result.nodes())["unique_property_names_per_block"]
    assert len(problems) == 2 and all("did not converge" in p for p in problems)
    fixed = build_hardware_kg(DOC, twice, "sensor", config=KGConfig(iterations=3))
    assert fixed.converged and kg_problems(fixed.nodes())["unique_property_names_per_block"] == []


def test_normalisation_splits_statistics_ranges_and_alternatives() -> None:
    rows = normalise_property({"name": "VDD", "value": "min 1.71, max 3.6", "value_min": "1.71",
                               "value_max": "3.6", "unit": "V", "conditions": "T = 25 °C"})
    assert rows == [{"name": "VDD (min)", "value": "1.71", "unit": "V", "conditions": "T = 25 °C"},
                    {"name": "VDD (max)", "value": "3.6", "unit": "V", "conditions": "T = 25 °C"}]
    assert [r["value"] for r in normalise_property({"name": "range", "value": "1.71 to 3.6"})] == ["1.71", "3.6"]
    assert [r["value"] for r in normalise_property({"name": "size", "value": "8-bit, 16-bit or 32-bit"})] == [
        "8-bit", "16-bit", "32-bit"]
    assert normalise_property({"name": "mode", "value": "Linear burst"})[0]["value"] == "Linear burst"


def test_coverage_full_partial_none() -> None:
    ref = {"name": "Supply current", "value": "3.1", "unit": "mA", "conditions": ""}
    assert offline_coverage(ref, [{"name": "supply current max", "value": "3.1", "unit": "mA"}])[0] == "full"
    assert offline_coverage(ref, [{"name": "Supply current", "value": "2.5", "unit": "mA"}])[0] == "partial"
    assert offline_coverage(ref, [{"name": "Clock", "value": "10", "unit": "MHz"}])[0] == "none"


def test_offline_evaluation_one_shot_and_completeness_both_ways(sheet: dict[str, Any]) -> None:
    chunks = sheet["chunks"]
    assert len(parts(chunks, 10)) == len(chunks) and len(parts(chunks, 10**6)) == 1
    baseline, stats = one_shot(DOC, chunks, "sensor")
    assert stats["parts"] == 1 and baseline and all(r["reference_ok"] for r in baseline)
    result = build_hardware_kg(DOC, sheet["rows"], "sensor")
    nodes = result.nodes().filter((pl.col("node_type") == "property") & (pl.col("status") == "active"))
    report = evaluate_document(DOC, chunks, nodes.to_dicts(), "sensor")
    assert report["faithfulness"]["ours"]["methods"] == {"offline-lexical": nodes.height}
    for direction in ("ours_by_baseline", "baseline_by_ours"):
        c = report["completeness"][direction]
        assert c["full"] + c["partial"] + c["none"] == c["n"] > 0
        assert c["methods"] == {"offline-lexical": c["n"]}
    # the same rules on both sides: what the baseline states, our graph covers in full
    assert report["completeness"]["baseline_by_ours"]["full_share"] == 1.0
    assert totals([report])["baseline_by_ours_full"] == 1.0
    # a baseline property whose reference is not in its input is unfaithful
    fake = [{**baseline[0], "reference": "text the document never states", "reference_ok": False}]
    from edaqa_pipeline.graphs.hwkg.faithfulness import judge
    assert not judge([{**fake[0], "chunk_id": fake[0]["property_id"]}], {fake[0]["property_id"]: ""})[0].faithful
    # coverage of a graph by itself is full
    assert completeness(baseline[:5], baseline)["full_share"] == 1.0


@pytest.mark.llm
def test_paper_evaluation_with_smollm2(smollm2_base_url: str, tmp_path: Any) -> None:
    from edaqa_pipeline.llm import OfflineClient, OpenAICompatibleClient

    client = OpenAICompatibleClient(base_url=smollm2_base_url, api_key=None, model="smollm2",
                                    cache_dir=tmp_path / "cache", timeout_s=120, max_retries=0,
                                    validation_retries=1, max_tokens=384, fallback=OfflineClient())
    _doc, blocks = parse_pdf(make_datasheet(second_page=False), DOC)
    chunks = datasheet_chunks(blocks)
    rows, _ = extract_properties(chunks, "sensor")
    result = build_hardware_kg(DOC, rows, "sensor")
    nodes = result.nodes().filter((pl.col("node_type") == "property") & (pl.col("status") == "active"))
    report = evaluate_document(DOC, chunks, nodes.to_dicts(), "sensor", client, sample=2,
                               context_tokens=600)
    for side in ("ours", "baseline"):
        f = report["faithfulness"][side]
        assert f["properties"] <= 2 and sum(f["methods"].values()) == f["properties"]
        assert set(f["methods"]) <= {"llm", "offline-fallback", "offline-lexical"}
    assert report["baseline"]["parts"] >= 1
    assert report["baseline"]["llm_parts"] + report["baseline"]["fallback_parts"] == report["baseline"]["parts"]
    for direction in ("ours_by_baseline", "baseline_by_ours"):
        c = report["completeness"][direction]
        assert c["full"] + c["partial"] + c["none"] == c["n"]
        assert set(c["methods"]) <= {"llm", "offline-fallback"} and sum(c["methods"].values()) == c["n"]
    # the model answered at least one of the judgements (not everything fell back)
    judged = [report["faithfulness"][s]["methods"].get("llm", 0) for s in ("ours", "baseline")]
    judged += [report["completeness"][d]["methods"].get("llm", 0) for d in ("ours_by_baseline", "baseline_by_ours")]
    assert sum(judged) > 0, report
    assert client.stats.calls > 0
