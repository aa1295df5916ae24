"""TechDocRAG element graph: the identifier views, the intent rules and the grounding metrics."""

from __future__ import annotations

import random

import pytest

from edaqa_pipeline.evaluation import corruption
from edaqa_pipeline.evaluation import element_metrics as metrics
from edaqa_pipeline.graphs.elements import graph, summaries
from edaqa_pipeline.graphs.elements import intent as query
from edaqa_pipeline.methods.techdoc.provenance import claim_provenance
from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.text import identifiers
from edaqa_pipeline.text import tokens as text_tokens

# --- views, intents ---------------------------------------------------------------------------


def test_canonicalisation() -> None:
    assert identifiers.canonical("`GRT-243`") == "GRT-0243"
    assert identifiers.canonical("--Max_Length") == "-max_length"
    assert identifiers.canonical("CORE_UTILIZATION") == "CORE_UTILIZATION"
    assert identifiers.canonical("./results/Floorplan.def") == "floorplan.def"
    assert identifiers.canonical("dbBlock::getName") == "dbblock::getname"
    assert identifiers.canonical_label("Fig.", "3-2") == "figure:3.2"
    ids = identifiers.extract_identifiers(
        "Run `global_route -verbose`; see GRT-0243, $::env(CORE_UTILIZATION) and results/route.guide.")
    assert {"global_route", "global_route -verbose", "GRT-0243", "CORE_UTILIZATION", "route.guide"} <= set(ids)
    code = identifiers.extract_identifiers("place_pin \\\n    -pin_name pin_name\n    -layer layer", code=True)
    assert "place_pin -layer" in code and "pin_name" not in code  # placeholders are not commands
    assert "my_design" not in identifiers.extract_identifiers("Use my_design here.")


def test_query_identifiers_and_fuzzy_matching() -> None:
    q = identifiers.query_identifiers("What does -max_length of global_route do? grt-243, see Table 3")
    assert {"global_route", "-max_length", "global_route -max_length", "GRT-0243", "table:3"} <= set(q)
    vocab = identifiers.IdentifierVocabulary(["set_routing_alpha", "-max_length", "CORE_UTILIZATION"])
    got = vocab.match(["set_rout1ng_alpha", "-max_lenght", "core_utilization", "unrelated_thing"])
    assert got["CORE_UTILIZATION"] == 1.0
    assert 0.8 <= got["set_routing_alpha"] < 1.0 and 0.8 <= got["-max_length"] < 1.0
    assert "unrelated_thing" not in got


def test_quoted_words_are_names_only_where_the_index_knows_them() -> None:
    from edaqa_pipeline.methods.edaqa.index import ChunkIdentifierIndex
    from edaqa_pipeline.parsing.lines import markdown_line_kinds

    q = "When I run the `restructure` command with `layer` set, and `set_wire_rc` or `int`?"
    # snake_case is a command by the rules already; `int` is a language word
    assert identifiers.quoted_words(q) == ["restructure", "layer"]
    assert "restructure" not in identifiers.query_identifiers(q)
    texts = ["Run it:\n```tcl\nrestructure -liberty_file lib.lib\n```",
             "Set the `layer` of the wire with `set_wire_rc`."]
    records = [{"text": t, "line_kinds": markdown_line_kinds(t)} for t in texts]  # as chunks store them
    index = ChunkIdentifierIndex.build(records)
    known = index.vocabulary.known_words(identifiers.quoted_words(q))
    assert known == ["restructure"]  # a code line's command; `layer` is a value in b.md
    assert set(index.scores(known)) == {0}
    assert index.vocabulary.known_words(["restructur"]) == []  # exact, never fuzzy


def test_tokens_summary_and_corruption() -> None:
    assert {"max_length", "max", "length"} <= set(text_tokens.tokens("the -max_length option"))
    summary = summaries.offline_summary("paragraph", ["Placer", "Commands"],
                                    "The `place_cells` command places cells. More text.", ["place_cells"])
    assert summary == "Placer > Commands (paragraph). The place_cells command places cells. Identifiers: place_cells"
    text = "use set_routing_alpha with -net and CORE_UTILIZATION; see Table 3"
    assert corruption.corrupt_text(text, 0.0, random.Random(1)) == text
    bad = corruption.corrupt_text(text, 1.0, random.Random(1))
    assert bad != text and "set_routing_alpha" not in bad
    assert corruption.corrupt_text(text, 1.0, random.Random(1)) == bad  # seeded


@pytest.mark.parametrize(("question", "intent"), [
    ("What changed for -density in the latest release?", "version"),
    ("In Section 5.2, what does Table 7 clarify?", "cross_reference"),
    ("What does Figure 3 indicate about the connector layout?", "text_figure"),
    ("Which density range is allowed for place_cells?", "text_table"),
    ("How do I recalibrate the sensor?", "procedure"),
    ("Why does GRT-0243 appear?", "procedure"),
    ("What does parameter X mean in Section 4.2?", "definition"),
    ("place_cells density", "default"),
])
def test_intent_rules(question: str, intent: str) -> None:
    analysis = query.analyze(question)
    assert analysis.intent == intent
    assert analysis.policy is query.POLICIES[intent]
    assert analysis.policy.max_hops == (1 if intent in ("version", "default") else 2)


def test_policies_follow_table_1() -> None:
    p = query.POLICIES
    assert p["definition"].relations == {"contains", "same_identifier", "clause_ref"}
    assert p["procedure"].relations == {"step_next", "contains", "same_section"}
    assert p["text_table"].relations == {"table_ref", "caption_of", "same_identifier"}
    assert p["text_figure"].relations == {"figure_ref", "caption_of", "same_section"}
    assert p["cross_reference"].relations == {"clause_ref", "table_ref", "figure_ref"}
    assert p["version"].relations == {"version_of", "supersedes", "same_identifier"}
    assert all(set(x.relations) <= set(graph.RELATIONS) for x in p.values())


# --- metrics ----------------------------------------------------------------------------------


def test_metric_functions() -> None:
    adjacency = {0: [1], 1: [0, 2], 2: [1, 3], 3: [2]}
    assert metrics.rehr({2}, {2}, adjacency, 0) == 1.0
    assert metrics.rehr({0}, {2}, adjacency, 1) == 0.0
    assert metrics.rehr({0}, {2}, adjacency, 2) == 1.0
    assert metrics.rehr(set(), set(), adjacency) is None
    assert metrics.rehr_levels({0}, {3}, adjacency) == {
        "rehr@10_L0": 0.0, "rehr@10_L1": 0.0, "rehr@10_L2": 0.0, "rehr@10_L3": 1.0, "rehr@10_L4": 1.0}
    assert metrics.ecr({0, 1}, [(0, 1), (1, 2)]) == 0.5
    assert metrics.ecr({0}, []) is None
    assert metrics.span_gold_edges({1, 2}, [(0, 1), (2, 1), (1, 2)]) == [(1, 2)]
    assert metrics.poa([5, 7, 6], [5, 6, 7]) == 0.5  # (5,6) in order, (6,7) reversed
    assert metrics.poa([1], [1]) is None
    assert metrics.csr([True, False, True, True]) == 0.75


def test_claim_provenance() -> None:
    text = "The `-density` option of `place_cells` sets the target density."
    ev = [EvidenceItem("", "placer.md", text, 1.0, "techdoc:recall", 1, 2, element_ids=("el_a", "el_b"))]
    claims = claim_provenance("The -density option of place_cells sets the target density. Bananas are yellow.", ev)
    assert [c.supported for c in claims] == [True, False]
    assert claims[0].evidence_ids == (ev[0].evidence_id,)  # the item, without element texts
    per_element = claim_provenance("place_cells sets the target density.", ev,
                                   {"el_a": "The `place_cells` command sets the target density.", "el_b": "Other."})
    assert per_element[0].evidence_ids == ("el_a",)
    chunk = EvidenceItem("ch_1", "placer.md", text, 1.0, "bm25", 1, 2)  # chunk evidence: its own id
    assert claim_provenance("place_cells sets the target density.", [chunk])[0].evidence_ids == (chunk.evidence_id,)
