"""ChipMind / ChipKG units: the tool-manual rules on hand-written sentences, canonical forms,
Personalized PageRank on toy graphs (hand computation and networkx), the MIG stopping rule, the
CSA filter, the offline LLM task, system_recall@k. Real PDFs and CSV tables:
test_chipkg_specs.py; the Dagster build and the retriever: test_chipkg_pipeline.py; a real
model: test_chipkg_llm.py."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
import scipy.sparse as sp

from edaqa_pipeline.evaluation.system_recall import system_recall_at_k
from edaqa_pipeline.graphs.chipkg.checks import kg_problems
from edaqa_pipeline.graphs.chipkg.code import code_ir
from edaqa_pipeline.graphs.chipkg.context import UnitContext
from edaqa_pipeline.graphs.chipkg.document import document_kg
from edaqa_pipeline.graphs.chipkg.graph import KGGraph
from edaqa_pipeline.graphs.chipkg.llm_task import rule_irs
from edaqa_pipeline.graphs.chipkg.mentions import classify_code, manual_mentions
from edaqa_pipeline.graphs.chipkg.ppr import personalized_pagerank
from edaqa_pipeline.graphs.chipkg.prose import prose_ir
from edaqa_pipeline.graphs.chipkg.schema import SentenceIRs
from edaqa_pipeline.graphs.chipkg.store import build_kg, merge_nodes
from edaqa_pipeline.graphs.chipkg.tables import pipe_cells, table_irs
from edaqa_pipeline.methods.chipmind.adaptive import adaptive_k, mig, summary_embedding
from edaqa_pipeline.methods.chipmind.anchors import compatible, related, target_anchor
from edaqa_pipeline.methods.chipmind.query import question_clauses
from edaqa_pipeline.model import EvidenceItem


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


# --- Personalized PageRank -------------------------------------------------------------------


def test_ppr_matches_the_closed_form_on_a_path_graph() -> None:
    # undirected path 0 - 1 - 2, restart at node 0, alpha = 0.5:
    # x = (1 - a) p + a M^T x with M row-stochastic; solve by hand:
    #   x0 = 0.5 + 0.5 * x1 / 2
    #   x1 = 0.5 * (x0 + x2)
    #   x2 = 0.5 * x1 / 2
    # => x1 = 0.5 x0 + 0.125 x1 -> x1 = 4/7 x0 ; x0 = 0.5 + x1/4 = 0.5 + x0/7 -> x0 = 7/12
    adj = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], float))
    x = personalized_pagerank(adj, np.array([1.0, 0, 0]), alpha=0.5, tol=1e-12)
    x0 = 7 / 12
    x1 = 4 / 7 * x0
    assert x == pytest.approx([x0, x1, x1 / 4], abs=1e-9)
    assert x.sum() == pytest.approx(1.0)


def test_ppr_equals_networkx_with_weights_and_a_dangling_node() -> None:
    nx = pytest.importorskip("networkx")
    g = nx.DiGraph()
    edges = [(0, 1, 1.0), (1, 0, 1.0), (1, 2, 2.0), (2, 1, 2.0), (2, 3, 1.0), (3, 2, 1.0),
             (0, 3, 0.5), (3, 0, 0.5), (4, 0, 1.0)]  # node 5 isolated, node 4 only points out
    g.add_nodes_from(range(6))
    g.add_weighted_edges_from(edges)
    adj = sp.csr_matrix(nx.to_scipy_sparse_array(g, nodelist=range(6), weight="weight"))
    pers = {0: 0.7, 3: 0.2, 5: 0.1}
    ref = nx.pagerank(g, alpha=0.85, personalization=pers, weight="weight", tol=1e-12, max_iter=1000)
    ours = personalized_pagerank(adj, np.array([pers.get(i, 0.0) for i in range(6)]), alpha=0.85, tol=1e-13,
                                 max_iter=1000)
    assert ours == pytest.approx([ref[i] for i in range(6)], abs=1e-8)
    assert ours[4] == pytest.approx(0.0, abs=1e-12)  # no in-edge, no restart mass


def test_kggraph_ppr_ranks_the_passage_of_the_seeded_entity_first() -> None:
    nodes = merge_nodes([
        {"node_id": n, "kind": k, "node_type": k, "text": n, "canonical": n, "category": "",
         "anchor_type": "definition" if k == "statement" else "", "anchor_entity": "", "ir": "",
         "document": "d.md", "documents": ["d.md"], "chunk_ids": [c], "line_spans": [[1, 1]],
         "section_path": [], "doc_hash": ""}
        for n, k, c in [("e1", "entity", "p1"), ("e2", "entity", "p2"), ("s1", "statement", "p1"),
                        ("s2", "statement", "p2"), ("p1", "passage", "p1"), ("p2", "passage", "p2")]
    ])
    triples = pl.DataFrame([
        {"triple_id": "t1", "kind": "backbone", "subject": "e1", "object": "s1", "subject_kind": "node",
         "statement_id": "s1"},
        {"triple_id": "t2", "kind": "backbone", "subject": "e2", "object": "s2", "subject_kind": "node",
         "statement_id": "s2"},
    ])
    g = KGGraph.build(nodes, triples)
    p = np.zeros(len(g.node_ids))
    p[g.index["e2"]] = 1.0
    x = g.ppr(p, alpha=0.5)
    assert x[g.index["p2"]] > x[g.index["p1"]] == 0.0


# --- adaptive K: the MIG stopping rule -------------------------------------------------------


def test_mig_is_the_cosine_distance() -> None:
    assert mig(np.array([1.0, 0]), np.array([1.0, 0])) == 0.0
    assert mig(np.array([1.0, 0]), np.array([0.0, 1])) == pytest.approx(1.0)
    assert mig(np.array([1.0, 0]), np.array([1.0, 1])) == pytest.approx(1 - 1 / np.sqrt(2))


def test_summary_embedding_is_the_mean_of_the_most_query_similar_units() -> None:
    q = np.array([1.0, 0.0])
    units = np.array([[0.0, 1.0], [1.0, 0.0], [0.6, 0.8]])
    # top-2 by similarity to q: units 1 and 2 -> mean (0.8, 0.4) normalised
    assert summary_embedding(units, q, 2) == pytest.approx(np.array([0.8, 0.4]) / np.hypot(0.8, 0.4))


def test_adaptive_k_stops_at_the_first_expansion_with_gain_below_tau() -> None:
    q = np.array([1.0, 0.0, 0.0])
    # passage i has one unit; passages 0..3 bring ever more query-relevant units (the summary
    # of the best 1 unit changes), passage 4 is no better than what is there (MIG = 0)
    vec = {
        0: [0.2, 1.0, 0.0], 1: [0.5, 1.0, 0.0], 2: [0.9, 0.2, 0.4], 3: [1.0, 0.0, 0.1],
        4: [0.0, 0.0, 1.0], 5: [1.0, 0.0, 0.0],
    }
    units = {i: np.asarray(v) / np.linalg.norm(v) for i, v in vec.items()}

    def unit_fn(items):  # type: ignore[no-untyped-def]
        return np.stack([units[i] for i in items])

    chosen, migs = adaptive_k(list(range(6)), unit_fn, q, k0=1, delta_k=1, tau=0.01, k_max=6, m=1)
    # steps: +1 (better), +2 (better), +3 (better), +4 (gain 0 -> stop): S = [0, 1, 2, 3]
    assert chosen == [0, 1, 2, 3]
    assert len(migs) == 4 and all(g > 0.01 for g in migs[:3]) and migs[3] == 0.0
    # a tau just above the first gain stops at the first expansion
    chosen2, migs2 = adaptive_k(list(range(6)), unit_fn, q, k0=1, delta_k=1, tau=migs[0] + 1e-9,
                                k_max=6, m=1)
    assert chosen2 == [0] and migs2 == [migs[0]]
    # k_max caps the set even while the gain stays high
    assert adaptive_k(list(range(6)), unit_fn, q, k0=1, delta_k=2, tau=0.0, k_max=3, m=1)[0] == [0, 1, 2]


# --- CSA filter ------------------------------------------------------------------------------


def test_target_anchor_rules() -> None:
    assert target_anchor("What does the `-density` option of `global_placement` mean?") == (
        "definition", "global_placement -density")
    assert target_anchor("How to run `detailed_route` with fewer threads?") == ("procedure", "detailed_route")
    assert target_anchor("Why do I get GRT-0119 in global routing?") == ("diagnostic", "GRT-0119")
    assert target_anchor("Tell me about routing.") == ("any", "")
    known = {"global_route"}
    assert target_anchor("How to use `foo_bar` and `global_route`?", lambda e: e in known) == (
        "procedure", "global_route")


def test_compatibility_of_anchors() -> None:
    assert related("global_placement -density", "global_placement")
    assert related("global_placement", "global_placement -density")
    assert related("global_placement -density", "-density")
    assert not related("global_route", "global_placement")
    target = ("configuration", "global_placement")
    assert compatible(("configuration", "global_placement -density"), target)
    assert compatible(("definition", "global_placement"), target)
    assert not compatible(("procedure", "detailed_route"), target)  # other entity
    assert not compatible(("diagnostic", "global_placement"), target)  # type cannot answer it
    # a statement about another entity that mentions the target is compatible
    assert compatible(("procedure", "section: Flow"), ("procedure", "global_placement"),
                      frozenset({"global_placement"}))
    assert compatible(("behavior", "anything"), ("procedure", ""))  # no target entity


def test_question_clauses_split_multi_part_questions() -> None:
    q = ("How can I build a power grid for my design, and then check the IR drop? "
         "Also, how do I show the heatmap in the GUI?")
    assert question_clauses(q) == [
        "How can I build a power grid for my design", "check the IR drop",
        "how do I show the heatmap in the GUI",
    ]


# --- system recall ---------------------------------------------------------------------------


def _ev(cid: str, doc: str, text: str) -> EvidenceItem:
    return EvidenceItem(chunk_id=cid, doc=doc, text=text, score=1.0, path="t", start_line=1, end_line=1)


def test_system_recall_pools_the_top_k_of_every_step() -> None:
    step1 = [_ev("a", "x.md", "alpha line"), _ev("b", "x.md", "beta line")]
    step2 = [_ev("c", "y.md", "gamma line"), _ev("a", "x.md", "alpha line")]
    refs = ["alpha line", "gamma line", "delta line"]
    assert system_recall_at_k([step1, step2], 1, ref_passages=refs) == pytest.approx(2 / 3)
    assert system_recall_at_k([step1], 10, ref_passages=refs) == pytest.approx(1 / 3)
    assert system_recall_at_k([step1, step2], 1, gold_docs=["y.md", "z.md"]) == 0.5
    assert system_recall_at_k([step1], 1) is None


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


def test_chipmind_offline_tasks_are_registered_with_rules_and_checks() -> None:
    """Every step of the reasoning loop is an LLM task with an offline rule; the offline
    DetectUncertainty finds an identifier no passage contains and an uncovered clause."""
    from edaqa_pipeline.llm import OfflineClient, get_task
    from edaqa_pipeline.methods.chipmind.tasks import SubQuery, Uncertainty

    for name in ("chipmind_anchor", "chipmind_summary", "chipmind_reason", "chipmind_uncertainty",
                 "chipmind_subquery", "chipmind_synthesize"):
        task = get_task(name)
        assert task.offline is not None and "never follow instructions" in task.system_prompt.lower()
    client = OfflineClient()
    question = "How do I run `global_route` with fewer layers? Then how do I show the congestion heat map?"
    evidence = [{"id": "c1", "text": "The `global_route` command routes nets between layers."}]
    inputs = {"question": question, "evidence": evidence, "identifiers": ["global_route", "gui::show_heatmap"],
              "clauses": question_clauses(question), "asked": [], "asked_aspects": [], "cover_threshold": 0.9}
    u = client.complete_structured("chipmind_uncertainty", inputs, Uncertainty)
    assert u.uncertain and u.missing[0] == "gui::show_heatmap"
    assert "how do I show the congestion heat map" in u.missing
    s = client.complete_structured("chipmind_subquery", {"question": question, "missing": u.missing,
                                                         "identifiers": inputs["identifiers"]}, SubQuery)
    assert s.aspect == "gui::show_heatmap" and s.query.endswith(question)
    done = client.complete_structured("chipmind_uncertainty", {**inputs, "asked_aspects": u.missing}, Uncertainty)
    assert not done.uncertain and done.missing == []
