"""Evaluation layer: Atomic-ROUGE (fact splitting, key terms, matching, the LLM judge).

Expected values are computed by hand in the comments, so that a change of a metric's definition
shows up as a failing number rather than a silently different report.
"""

from __future__ import annotations

import numpy as np
import pytest

from edaqa_pipeline.evaluation.atomic import (
    atomic_rouge,
    facts_match,
    key_terms,
    split_facts,
    term_occurs,
    token_f1,
)
from edaqa_pipeline_tests._helpers_eval import _judge
from edaqa_pipeline_tests.llm_servers import ok

# --- Atomic-ROUGE ---------------------------------------------------------------------------


def test_split_facts():
    text = (
        "The answer, i.e. the short one. Use `grt` e.g. for nets; it works!\n"
        "* bullet one\n"
        "2) step two. Step three?\n"
        "## Heading words\n"
        "```tcl\nglobal_route\n  -verbose\n```\n"
        "...\n"
    )
    assert split_facts(text) == [
        "The answer, i.e. the short one.",
        "Use `grt` e.g. for nets;",
        "it works!",
        "bullet one",
        "step two.",
        "Step three?",
        "Heading words",
        "global_route\n  -verbose",  # a fenced block is one fact
    ]  # "..." has no letter or digit and is dropped
    assert split_facts("") == []
    assert split_facts("```\nunterminated code") == ["unterminated code"]


def test_key_terms_and_occurrence():
    terms = key_terms("Use `set_routing_alpha` and -min_fanout 3; alpha 0.4-0.8; GRT-0118 fires.")
    assert terms == [
        "set_routing_alpha",  # backticked
        "GRT-0118",  # message id
        "-min_fanout",  # option
        "min_fanout",  # snake_case (set_routing_alpha already listed)
        "3",
        "0.4",
        "0.8",
        "0118",
    ]
    assert not term_occurs("-net", "use -netlist")
    assert term_occurs("-net", "use -net clk")
    assert not term_occurs("5", "alpha 0.5")
    assert not term_occurs("0.5", "alpha 0.55")
    assert term_occurs("0.4", "values 0.4-0.8")
    assert term_occurs("SET_ROUTING_ALPHA", "call set_routing_alpha now")  # case-insensitive


def test_facts_match_offline_judge():
    ref = "Use `set_routing_alpha` with -net to choose the net."
    gen = "Call set_routing_alpha -net to choose the net."
    # Gate: set_routing_alpha and -net occur in gen. Content tokens (text.tokens.STOP_WORDS out,
    # rouge-score's Porter stems): ref [set, rout, alpha, net, choos, net] (6),
    # gen [call, set, rout, alpha, net, choos, net]
    # (7); overlap 6 -> P = 6/7, R = 1, F1 = 12/13 = 0.923 >= 0.5 -> match.
    assert token_f1(gen, ref) == pytest.approx(12 / 13)
    assert facts_match(gen, ref)
    # A missing key term fails the gate whatever the overlap.
    assert not facts_match(
        "Typical alpha values are 0.4 to 0.9.", "Typical alpha values are 0.4 to 0.8."
    )
    # Low overlap without embeddings: no match.
    assert not facts_match("The router picks trees.", "Use set_routing_alpha for trade-offs.")


def test_facts_match_with_embedding_cosine():
    ref = "The global router balances wirelength against depth."
    gen = "Routing trades off total length and path depth."
    assert token_f1(gen, ref) < 0.5
    assert facts_match(gen, ref, cosine=0.85)  # >= 0.8 -> match
    assert not facts_match(gen, ref, cosine=0.79)

    def embed(texts: list[str]) -> np.ndarray:  # both facts map to nearly the same vector
        return np.array([[1.0, 0.1] if "depth" in t else [0.0, 1.0] for t in texts])

    score = atomic_rouge(gen, [ref], embed=embed)
    assert score is not None and score.f1 == 1.0
    assert atomic_rouge(gen, [ref]).f1 == 0.0  # lexical only: no match


def test_atomic_rouge_precision_recall():
    refs = ["Use `set_routing_alpha` to trade wirelength for depth.", "Alpha ranges from 0 to 1."]
    answer = (
        "Use set_routing_alpha to trade wirelength for depth. "
        "The set_routing_alpha command trades wirelength for depth. "
        "It is fast."
    )
    # Generated facts: 3; the first two match ref 1, the third matches nothing; ref 2 uncovered.
    # P = 2/3, R = 1/2, F1 = 2 * (2/3) * (1/2) / (2/3 + 1/2) = (2/3) / (7/6) = 4/7.
    score = atomic_rouge(answer, refs)
    assert score is not None
    assert (score.n_generated, score.n_reference) == (3, 2)
    assert score.precision == pytest.approx(2 / 3)
    assert score.recall == pytest.approx(1 / 2)
    assert score.f1 == pytest.approx(4 / 7)
    assert atomic_rouge("", refs).f1 == 0.0
    assert atomic_rouge("anything", []) is None


def test_atomic_rouge_llm_judge_decomposes_and_matches(scripted_server):
    # The judge model splits the answer into two facts, then says G1 states both references.
    server = scripted_server([
        ok({"facts": ["yes one", "no two"]}),
        ok({"matches": [{"generated": "G1", "reference": "R1"}, {"generated": "G1", "reference": "R2"}]}),
    ])
    score = atomic_rouge("yes one. no two.", ["fact A", "fact B"], judge=_judge(server), question="Q?")
    assert score is not None and (score.precision, score.recall) == (0.5, 1.0)
    assert [r["tools"][0]["function"]["name"] for r in server.requests] == ["AtomicFacts", "FactMatches"]
    assert "Q?" in server.requests[1]["messages"][1]["content"]


def test_fact_match_rejects_unknown_ids_and_reasks(scripted_server):
    server = scripted_server([
        ok({"facts": ["one"]}),
        ok({"matches": [{"generated": "G5", "reference": "R1"}]}),
        ok({"matches": []}),
    ])
    score = atomic_rouge("one.", ["fact A"], judge=_judge(server))
    assert score is not None and score.f1 == 0.0
    assert server.request_count == 3 and "G5/R1" in server.requests[2]["messages"][-1]["content"]
