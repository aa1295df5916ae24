"""ChipMind / ChipKG units: the tool-manual rules on hand-written sentences, canonical forms,
the offline LLM task, the document KG and its provenance. Personalized PageRank, the MIG
stopping rule, the CSA filter and system_recall@k: test_chipkg_retrieval.py; real PDFs and
CSV tables: test_chipkg_specs.py; the Dagster build and the retriever:
test_chipkg_pipeline.py; a real model: test_chipkg_llm.py."""

from __future__ import annotations

import json

import polars as pl

from edaqa_pipeline.graphs.chipkg.checks import kg_problems
from edaqa_pipeline.graphs.chipkg.code import code_ir
from edaqa_pipeline.graphs.chipkg.context import UnitContext
from edaqa_pipeline.graphs.chipkg.document import document_kg
from edaqa_pipeline.graphs.chipkg.llm_task import rule_irs
from edaqa_pipeline.graphs.chipkg.mentions import classify_code, manual_mentions
from edaqa_pipeline.graphs.chipkg.prose import prose_ir
from edaqa_pipeline.graphs.chipkg.schema import SentenceIRs
from edaqa_pipeline.graphs.chipkg.store import build_kg, merge_nodes
from edaqa_pipeline.graphs.chipkg.tables import table_irs
from edaqa_pipeline.methods.chipmind.anchors import target_anchor
from edaqa_pipeline.text.markup import table_cells as pipe_cells


def triples_of(ir) -> list[tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    return [(t.subject, t.relation, t.object) for t in ir.backbone]


def aux_of(ir) -> list[tuple[str, str, str, str]]:  # type: ignore[no-untyped-def]
    return [(q.kind, q.subject, q.relation, q.object) for q in ir.auxiliary]


# --- the extractor on hand-written sentences -------------------------------------------------


GRT = UnitContext("grt.md", ["Global Routing", "Commands"], scope="")


def test_conditional_sentence_is_procedural_with_a_condition_auxiliary() -> None:
    ir = prose_ir("s", "The `global_route` command generates route guides when congestion is low.", GRT)
    assert ir is not None
    assert ir.category == "procedural"
    assert (ir.anchor_type, ir.anchor_entity) == ("behavior", "global_route")
    assert triples_of(ir) == [("global_route", "generates", "route guides")]
    assert aux_of(ir) == [("condition", "global_route", "when", "congestion is low")]
    assert ir.trigger == "global_route" and ir.conditions == ["congestion is low"]
    assert ir.rule == "offline:prose.conditional"


def test_leading_condition_without_comma_keeps_the_decimal_value() -> None:
    ir = prose_ir("s", "When alpha is 0.0 the net topology minimizes total wirelength.", GRT)
    assert ir is not None
    assert triples_of(ir) == [("net topology", "minimizes", "total wirelength")]
    assert aux_of(ir) == [("condition", "net topology", "when", "alpha is 0.0")]


def test_declarative_sentence_has_entity_attributes_and_refers_to_triples() -> None:
    ir = prose_ir("s", "The `set_routing_alpha` command enables the Prim-Dijkstra algorithm for `global_route`.", GRT)
    assert ir is not None
    assert ir.category == "declarative"
    assert (ir.anchor_type, ir.anchor_entity) == ("definition", "set_routing_alpha")
    assert triples_of(ir) == [
        ("set_routing_alpha", "enables", "the Prim-Dijkstra algorithm for `global_route`"),
        ("set_routing_alpha", "refers_to", "global_route"),
    ]
    assert ir.entity == "set_routing_alpha"


def test_imperative_step_is_a_procedure_with_temporal_and_purpose() -> None:
    ctx = UnitContext("flow.md", ["Flow", "Routing"], scope="")
    ir = prose_ir("s", "Run `global_route` after placement to create route guides.", ctx)
    assert ir is not None
    assert ir.category == "procedural" and ir.anchor_type == "procedure"
    assert triples_of(ir)[1] == ("section: Routing", "uses", "global_route")
    kinds = {(q.kind, q.relation, q.object) for q in ir.auxiliary}
    assert ("temporal", "after", "placement to create route guides") in kinds
    assert ("purpose", "in_order_to", "create route guides") in kinds


def test_option_table_row_gives_has_option_means_default_and_normalisation() -> None:
    ctx = UnitContext("cts.md", ["CTS", "Options"], scope="configure_cts_characterization")
    (ir,) = table_irs(
        [("r1", pipe_cells("| `-max_slew` | Max slew value (in the current time unit). Default: 100. |"))],
        ["Switch Name", "Description"], ctx,
    )
    opt = "configure_cts_characterization -max_slew"
    assert ir.rule == "offline:table.option_row"
    assert (ir.category, ir.anchor_type, ir.anchor_entity) == ("declarative", "configuration", opt)
    assert triples_of(ir) == [
        (opt, "means", "Max slew value (in the current time unit). Default: 100"),
        ("configure_cts_characterization", "has_option", opt),
    ]
    assert aux_of(ir) == [("default", opt, "default", "100"), ("unit", opt, "unit", "time unit")]
    assert [(n.surface, n.canonical) for n in ir.normalisation] == [("-max_slew", opt)]


def test_synopsis_code_block_marks_optional_and_required_options() -> None:
    ir = code_ir("c", "clock_tree_synthesis -buf_list <buffers>\n    [-root_buf root_buf]",
                 UnitContext("cts.md", ["CTS"], ""))
    assert ir is not None and ir.rule == "offline:code.synopsis"
    assert triples_of(ir) == [
        ("clock_tree_synthesis", "has_option", "clock_tree_synthesis -buf_list"),
        ("clock_tree_synthesis", "has_option", "clock_tree_synthesis -root_buf"),
    ]
    assert [(q.subject, q.object, q.backbone) for q in ir.auxiliary] == [
        ("clock_tree_synthesis -buf_list", "required", 0),
        ("clock_tree_synthesis -root_buf", "optional", 1),
    ]


def test_code_spans_normalise_to_canonical_forms() -> None:
    assert classify_code("Define_PDN_Grid()") == [("Define_PDN_Grid()", "command", "define_pdn_grid")]
    assert classify_code("./results/Floorplan.DEF") == [("./results/Floorplan.DEF", "file", "floorplan.def")]
    assert classify_code("place_pins -random") == [
        ("place_pins", "command", "place_pins"), ("place_pins -random", "option", "place_pins -random"),
    ]
    assert classify_code("-density", scope="global_placement") == [("-density", "option", "global_placement -density")]
    assert classify_code("PLACE_DENSITY") == [("PLACE_DENSITY", "variable", "PLACE_DENSITY")]
    assert classify_code("-param2") == []  # placeholder option of the boilerplate note
    assert classify_code("-Max_Slew", scope="cts") == [("-Max_Slew", "option", "cts -max_slew")]


def test_message_ids_are_canonicalised_like_everywhere_else() -> None:
    """GRT-118 and GRT-0118 are one message entity (text.identifiers.canonical_message), in
    prose, in code spans and in queries."""
    assert [(m.entity_type, m.canonical) for m in manual_mentions("Warning GRT-118 means congestion.")] == [
        ("message", "GRT-0118")]
    assert classify_code("grt-118") == [("grt-118", "message", "GRT-0118")]
    assert target_anchor("Why do I get grt-118?")[1] == target_anchor("Why do I get GRT-0118?")[1] == "GRT-0118"
    ctx = UnitContext("grt.md", ["Messages"])
    a = prose_ir("a", "The GRT-118 warning is reported when the design is congested.", ctx)
    b = prose_ir("b", "The GRT-0118 warning is reported when the design is congested.", ctx)
    assert a is not None and b is not None
    assert a.anchor_entity == b.anchor_entity == "GRT-0118" and a.anchor_type == "diagnostic"


def _block(doc: str, ordinal: int, kind: str, text: str, path: list[str], start: int) -> dict:
    end = start + text.count("\n")
    return {"block_id": f"b{ordinal}", "document": doc, "ordinal": ordinal, "kind": kind,
            "section_path": path, "heading_level": 0, "language": "", "text": text, "raw": text,
            "start_line": start, "end_line": end, "page": None, "bbox": None, "meta": "{}"}


def test_document_kg_links_backbone_to_auxiliaries_and_keeps_provenance() -> None:
    doc = "grt.md"
    blocks = [
        _block(doc, 0, "heading", "Set Routing Alpha", ["Set Routing Alpha"], 1),
        _block(doc, 1, "code", "set_routing_alpha [-net net_name] alpha", ["Set Routing Alpha"], 3),
        _block(doc, 2, "paragraph", "The `set_routing_alpha` command sets alpha when the net is "
               "critical.\nThe default is 0.3.", ["Set Routing Alpha"], 5),
    ]
    chunks = [{"chunk_id": "chk_1", "document": doc, "block_ids": ["b0", "b1", "b2"],
               "start_line": 1, "end_line": 6, "section_path": ["Set Routing Alpha"]}]
    kg = document_kg(blocks, chunks)
    nodes = {n["node_id"]: n for n in kg.nodes}
    kinds = {t["kind"] for t in kg.triples}
    assert kinds == {"backbone", "auxiliary", "linking", "normalisation"}
    by_id = {t["triple_id"]: t for t in kg.triples}
    for link in (t for t in kg.triples if t["kind"] == "linking"):
        assert by_id[link["subject"]]["kind"] == "backbone"
        assert by_id[link["object"]]["kind"] == "auxiliary"
        assert by_id[link["subject"]]["statement_id"] == by_id[link["object"]]["statement_id"]
    heading_norm = [t for t in kg.triples if t["kind"] == "normalisation" and t["rule"] == "offline:heading.command"]
    assert len(heading_norm) == 1
    assert nodes[heading_norm[0]["subject"]]["text"] == "Set Routing Alpha"
    assert nodes[heading_norm[0]["object"]]["canonical"] == "set_routing_alpha"
    sentence = next(n for n in kg.nodes if n["kind"] == "statement" and "critical" in n["text"])
    assert sentence["line_spans"] == [[5, 5]] and sentence["chunk_ids"] == ["chk_1"]
    ir = json.loads(sentence["ir"])
    assert ir["category"] == "procedural" and ir["conditions"] == ["the net is critical"]
    default = next(n for n in kg.nodes if n["kind"] == "statement" and "default is 0.3" in n["text"])
    assert json.loads(default["ir"])["anchor_type"] == "configuration"
    nodes_df, triples_df = merge_nodes(kg.nodes), pl.DataFrame(kg.triples)
    problems = kg_problems(nodes_df, triples_df.with_columns(pl.lit("").alias("doc_hash")))
    assert problems["_counts"] == ["0", "0", "0"]


def test_llm_task_offline_implementation_is_the_rules() -> None:
    from edaqa_pipeline.llm import OfflineClient

    inputs = {"document": "grt.md", "section_path": ["Global Routing"], "scope": "",
              "block_kind": "paragraph",
              "sentences": [{"id": "s0", "text": "The `global_route` command routes the design."}]}
    got = OfflineClient().complete_structured("chipkg_triples", inputs, SentenceIRs)
    assert got == rule_irs(inputs)
    assert triples_of(got.sentences[0]) == [("global_route", "routes", "the design")]


def test_cross_document_entity_is_one_node_with_both_provenances() -> None:
    def doc(name: str, text: str) -> tuple[list[dict], list[dict]]:
        blocks = [_block(name, 0, "paragraph", text, ["S"], 1)]
        return blocks, [{"chunk_id": f"chk_{name}", "document": name, "block_ids": ["b0"],
                         "start_line": 1, "end_line": 1, "section_path": ["S"]}]

    a, b = doc("a.md", "The `global_route` command routes nets."), doc("b.md", "Run `global_route` twice.")
    nodes, triples, _ = build_kg({"a.md": a[0], "b.md": b[0]}, {"a.md": a[1], "b.md": b[1]})
    ent = nodes.filter((pl.col("kind") == "entity") & (pl.col("canonical") == "global_route")).row(0, named=True)
    assert ent["documents"] == ["a.md", "b.md"] and sorted(ent["chunk_ids"]) == ["chk_a.md", "chk_b.md"]
    again, triples2, stats2 = build_kg({"a.md": a[0], "b.md": b[0]}, {"a.md": a[1], "b.md": b[1]},
                                       previous=(nodes, triples))
    assert stats2.reused_documents == 2 and stats2.rebuilt_documents == 0
    assert again.equals(nodes) and triples2.equals(triples)


def test_pdf_nodes_are_located_by_page_markdown_nodes_need_lines() -> None:
    """A PDF's blocks have pages, not lines: its nodes pass the provenance check on their
    chunk ids alone, while a Markdown node that lost its line spans is still flagged."""
    doc = "ldo.pdf"
    blocks = [_block(doc, 0, "paragraph", "The `EN` pin enables the regulator when it is high.",
                     ["Pins"], 1) | {"start_line": None, "end_line": None, "page": 2}]
    chunks = [{"chunk_id": "chk_p", "document": doc, "block_ids": ["b0"], "start_line": None,
               "end_line": None, "section_path": ["Pins"]}]
    kg = document_kg(blocks, chunks)
    nodes_df = merge_nodes(kg.nodes)
    triples_df = pl.DataFrame(kg.triples).with_columns(pl.lit("").alias("doc_hash"))
    assert nodes_df.filter(pl.col("kind") == "statement")["line_spans"].to_list() == [[]]
    assert kg_problems(nodes_df, triples_df)["nodes_without_provenance"] == []
    moved = nodes_df.with_columns(pl.lit(["grt.md"]).alias("documents"))
    flagged = kg_problems(moved, triples_df)["nodes_without_provenance"]
    assert len(flagged) == moved.filter(pl.col("kind") != "passage").height > 0
