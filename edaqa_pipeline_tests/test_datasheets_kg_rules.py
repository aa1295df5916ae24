"""Hardware knowledge graphs: the routing rule and the merging and refinement rules on
hand-made properties.
"""

from __future__ import annotations

from typing import Any

from edaqa_pipeline.graphs.hwkg.checks import kg_problems
from edaqa_pipeline.graphs.hwkg.kg import KGConfig, build_hardware_kg
from edaqa_pipeline.graphs.hwkg.refinement import merge_key, offline_refine
from edaqa_pipeline.graphs.hwkg.routing import route_path
from edaqa_pipeline_tests._helpers_datasheets import DOC

# ---------------------------------------------------------------------------------------------
# graph: routing and refinement rules


def test_route_path_uses_deepest_matching_heading():
    assert route_path("process", ["2 Process Control Parameters", "2.1 NMOS"]) == [
        "Devices", "MOS Transistors", "NMOS",
    ]  # fmt: skip
    assert route_path("power", ["2 Specifications"], "Table 1. Electrical Characteristics") == [
        "Electrical Characteristics"
    ]
    assert route_path("power", ["9 Odd Section"]) == ["General", "Odd Section"]
    assert route_path("process", ["INOUTx", "Power Information"], entity="sg13g2_IOPadIn") == [
        "Cell Library", "Power", "sg13g2_IOPadIn",
    ]  # fmt: skip


def _prop(pid: str, name: str, value: str, unit: str, conditions: str = "", **kw: Any) -> dict:
    return {
        "property_id": pid, "document": DOC, "name": name, "symbol": kw.get("symbol", ""),
        "description": name, "value": value, "value_min": None, "value_typ": value,
        "value_max": None, "unit": unit, "conditions": conditions, "entity": "",
        "category": "sensor", "section_path": ["2 Electrical Characteristics"],
        "table_title": kw.get("title", "Table 1"), "chunk_id": kw.get("chunk", "dsc_1"),
        "page": kw.get("page", 1), "bbox": [0.0, 0.0, 1.0, 1.0], "rule": "table:spec",
        "row": kw.get("row", 0),
    }  # fmt: skip


def test_merging_rule_same_name_value_unit_conditions():
    rows = [
        _prop("p1", "Supply current", "2.5", "mA", "active mode", chunk="dsc_a", row=0),
        _prop("p2", "supply  current", "2.5", "mA", "Active mode", chunk="dsc_b", page=2),
        _prop("p3", "Supply current", "2.5", "mA", "sleep mode", chunk="dsc_a", row=1),
        _prop("p4", "Supply current", "2.5", "uA", "active mode", chunk="dsc_a", row=2),
        _prop("p5", "Supply voltage", "1.8", "V", "", chunk="dsc_a", row=3),
    ]
    assert merge_key(rows[0]) == merge_key(rows[1])
    assert merge_key(rows[0]) != merge_key(rows[2]) != merge_key(rows[3])
    result = build_hardware_kg(DOC, rows, "sensor", config=KGConfig(iterations=3))
    kg = result.kg
    assert kg.state["p2"].status == "merged" and kg.state["p2"].merged_into == "p1"
    assert kg.state["p1"].merged_from == ["p2"]
    assert {p for p in kg.active()} == {"p1", "p3", "p4", "p5"}
    names = sorted(kg.state[p].name for p in ("p1", "p3", "p4"))
    assert len(set(names)) == 3 and "Supply current" in names  # the earliest keeps its name
    assert result.iterations[0]["merge"] == 1 and result.iterations[0]["rename"] == 2
    assert result.iterations[1]["merge"] == result.iterations[1]["rename"] == 0
    # records are never rewritten: values, units, conditions as extracted
    assert kg.records["p3"]["name"] == "Supply current" and kg.records["p3"]["unit"] == "mA"
    assert kg_problems(result.nodes())["unique_property_names_per_block"] == []


def test_offline_refine_emits_one_instruction_per_property():
    props = [
        {"id": "a", "name": "X", "value": "1", "unit": "V", "conditions": "", "page": 1, "row": 0},
        {"id": "b", "name": "X", "value": "1", "unit": "V", "conditions": "", "page": 1, "row": 1},
        {"id": "c", "name": "X", "value": "2", "unit": "V", "conditions": "hot", "page": 1,
         "row": 2},
        {"id": "d", "name": "Y", "value": "3", "unit": "V", "conditions": "", "page": 1, "row": 3},
    ]  # fmt: skip
    out = offline_refine({"properties": props, "other_names": []}).instructions
    # properties are referred to by in-batch index and name, as the model's answer does
    assert [(i.op, i.indices, i.into, i.index, i.name, i.new_name) for i in out] == [
        ("MERGE", [0, 1], 0, None, None, None),
        ("RENAME", None, None, 2, "X", "X [hot]"),
        ("KEEP", None, None, 3, "Y", None),
    ]


def test_a_sentence_long_heading_still_gives_every_property_a_block():
    """A manual's heading can be a whole sentence; the block named after it is cut to the
    executor's limit instead of being refused, which left the property without a block."""
    heading = ("Set global routing region adjustment. Example: set_global_routing_region_adjustment "
               "{1.5 2 20 30.5} -layer Metal4 -adjustment 0.7 for the upper metal layers")
    names = route_path("power", ["Global Routing", heading, "Options"], "")
    assert all(len(name) <= 120 for name in names) and any(name.endswith("…") for name in names)
    props = [{**_prop("p1", "layer", "Metal4", ""), "section_path": ["Global Routing", heading, "Options"],
              "table_title": ""}]
    result = build_hardware_kg(DOC, props, "power", config=KGConfig())
    problems = kg_problems(result.nodes())
    assert not problems["no_property_outside_block"], problems
