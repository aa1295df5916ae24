"""ChipMind / ChipKG retrieval units: Personalized PageRank on toy graphs (hand computation and
networkx), the MIG stopping rule, the CSA filter, system_recall@k and the ChipMind offline
tasks. The extractor and the document KG: test_chipkg_extraction.py."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import scipy.sparse as sp

from edaqa_pipeline.evaluation.system_recall import system_recall_at_k
from edaqa_pipeline.graphs.chipkg.graph import KGGraph
from edaqa_pipeline.graphs.chipkg.ppr import personalized_pagerank
from edaqa_pipeline.graphs.chipkg.store import merge_nodes
from edaqa_pipeline.methods.chipmind.adaptive import adaptive_k, mig, summary_embedding
from edaqa_pipeline.methods.chipmind.anchors import compatible, related, target_anchor
from edaqa_pipeline.methods.chipmind.query import question_clauses
from edaqa_pipeline.model import EvidenceItem

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
