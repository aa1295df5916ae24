"""Evaluation layer: the metrics on hand-made cases (packing to a token budget, document
ranks, reference passages, gold spans, answer text).

Expected values are computed by hand in the comments, so that a change of a metric's definition
shows up as a failing number rather than a silently different report.
"""

from __future__ import annotations

import math

import pytest

from edaqa_pipeline.evaluation import metrics as m
from edaqa_pipeline_tests._helpers_eval import ev

# --- pack_to_budget -------------------------------------------------------------------------


def test_pack_to_budget_fills_until_exactly_full():
    # budget 10 tokens = 40 chars; 30 + 10 = 40 fits exactly, + 5 = 45 overflows -> stop.
    items = [ev("a", "a" * 30), ev("b", "b" * 10), ev("c", "c" * 5)]
    packed = m.pack_to_budget(items, budget_tokens=10)
    assert [i.doc for i in packed] == ["a", "b"]
    assert m.context_tokens(packed) == 10.0  # 40 chars / 4


def test_pack_to_budget_stops_at_first_overflow():
    # 30 fits; 30 + 20 = 50 > 40 -> STOP, even though the 5-char third item would still fit.
    items = [ev("a", "a" * 30), ev("b", "b" * 20), ev("c", "c" * 5)]
    assert [i.doc for i in m.pack_to_budget(items, budget_tokens=10)] == ["a"]


def test_pack_to_budget_truncates_first_item():
    # The first item always counts, cut to 40 chars; the second (1 char) would make 41 > 40.
    items = [ev("a", "a" * 50), ev("b", "b")]
    packed = m.pack_to_budget(items, budget_tokens=10)
    assert len(packed) == 1
    assert packed[0].text == "a" * 40
    assert packed[0].doc == "a" and packed[0].chunk_id == items[0].chunk_id
    assert m.pack_to_budget([], 10) == []


def test_a_truncated_first_item_claims_only_the_lines_it_still_shows():
    """Cut to the budget, an item's end line (and a bundle's line numbers) are cut with its
    text: span metrics must not credit lines the reader never sees."""
    from dataclasses import replace

    lines = [f"line {n} " + "w" * 12 for n in range(10, 20)]  # 20 chars a line + newline
    whole = ev("a.md", "\n".join(lines), start=10, end=19)
    cut = m.pack_to_budget([whole], budget_tokens=10)[0]  # 40 chars: the first two lines
    assert (cut.start_line, cut.end_line) == (10, 11)
    assert not m.span_found(cut, ("a.md", 15, 19, None))
    from edaqa_pipeline.retrieval.packing import truncated

    cut = truncated(whole, 21)  # line 10 and its newline: nothing of line 11 is shown
    assert (cut.text, cut.end_line) == (lines[0], 10)
    bundle = replace(whole, end_line=40, line_numbers=(10, 11, 12, 13, 14, 35, 36, 37, 38, 39))
    cut = m.pack_to_budget([bundle], budget_tokens=10)[0]
    assert (cut.line_numbers, cut.end_line) == ((10, 11), 11)


def test_pack_to_budget_default_is_2048_tokens():
    # 2048 tokens = 8192 chars: 8000 + 192 fits, the next char overflows.
    items = [ev("a", "a" * 8000), ev("b", "b" * 192), ev("c", "c")]
    packed = m.pack_to_budget(items)
    assert [i.doc for i in packed] == ["a", "b"]
    assert m.context_tokens(packed) == 2048.0


# --- document metrics -----------------------------------------------------------------------


def test_document_metrics_use_distinct_documents():
    # Items a, a, b, c, d -> distinct docs [a, b, c, d]; gold {c, x}: c is distinct rank 3
    # (item rank 4, so without dedupe doc_recall@3 would be 0).
    items = [ev("a"), ev("a"), ev("b"), ev("c"), ev("d")]
    gold = ("c", "x")
    assert m.distinct_docs(items) == ["a", "b", "c", "d"]
    assert m.doc_recall_at_k(items, gold, 1) == 0.0
    assert m.doc_recall_at_k(items, gold, 3) == 1.0
    assert m.doc_recall_at_k(items, gold, 10) == 1.0
    assert m.mrr_at_k(items, gold, 10) == pytest.approx(1 / 3)
    # DCG = 1/log2(3+1) = 0.5; ideal over min(2, 10) = 2 docs: 1/log2(2) + 1/log2(3)
    # = 1 + 0.6309298 = 1.6309298; nDCG = 0.5 / 1.6309298 = 0.3065736.
    assert m.ndcg_at_k(items, gold, 10) == pytest.approx(0.5 / (1 + 1 / math.log2(3)))
    assert m.ndcg_at_k(items, gold, 10) == pytest.approx(0.3065736, abs=1e-7)


def test_document_metrics_edge_cases():
    items = [ev("g1"), ev("g2"), ev("z")]
    assert m.ndcg_at_k(items, ("g1", "g2"), 10) == pytest.approx(1.0)  # perfect ranking
    assert m.mrr_at_k(items, ("z",), 2) == 0.0  # z is distinct rank 3, outside the first 2
    assert m.doc_recall_at_k(items, (), 5) is None  # no gold docs: metric does not apply
    assert m.mrr_at_k([], ("a",), 10) == 0.0
    assert m.ndcg_at_k([], ("a",), 10) == 0.0


# --- reference passages ---------------------------------------------------------------------


PASSAGE_A = "## Heading\nline one here\n\n  line   two\nline three\n# another heading\n"
PASSAGE_B = "alpha beta\ngamma delta"
PASSAGE_C = "x1 y\nx2 y\nx3 y"


def test_passage_lines_skip_blank_and_heading_lines():
    assert m.passage_lines(PASSAGE_A) == ["line one here", "line two", "line three"]
    assert m.passage_lines("# only\n   \n## headings") == []


def test_ref_recall_half_of_lines_rule():
    # A: 2 of 3 countable lines present (whitespace-normalised) -> found (2/3 >= 1/2)
    # B: 1 of 2 -> found (exactly half counts); C: 1 of 3 -> not found. Recall = 2/3.
    items = [ev("d", "intro\nline one   here\nline two"), ev("e", "alpha   beta\nx1 y")]
    assert m.ref_recall(items, [PASSAGE_A, PASSAGE_B, PASSAGE_C]) == pytest.approx(2 / 3)
    # @1 sees only the first item: A found, B (0/2) and C (0/3) not -> 1/3.
    assert m.ref_recall_at_k(items, [PASSAGE_A, PASSAGE_B, PASSAGE_C], 1) == pytest.approx(1 / 3)


def test_ref_recall_ignores_passages_without_countable_lines():
    items = [ev("d", "alpha beta")]
    # The heading-only passage is left out of the mean: 1 found of 1 counted.
    assert m.ref_recall(items, ["# just a heading", PASSAGE_B]) == 1.0
    assert m.ref_recall(items, ["# just a heading"]) is None
    assert m.ref_recall(items, []) is None


def test_ref_recall_lines_are_case_sensitive_substrings():
    # "Alpha beta" != "alpha beta"; "gamma delta" occurs inside a longer line -> 1 of 2 -> found.
    items = [ev("d", "Alpha beta and gamma delta too")]
    assert m.passage_found(PASSAGE_B, "Alpha beta and gamma delta too") is True
    assert m.passage_found("alpha beta\nalpha gamma\nzeta", "Alpha beta and gamma delta") is False
    assert m.ref_recall(items, [PASSAGE_B]) == 1.0


# --- gold spans -----------------------------------------------------------------------------


SPANS = (("a.md", 10, 20, None), ("a.md", 30, 35, None), ("b.pdf", None, None, 3))


def test_span_scores_line_overlap_and_pages():
    # span1 (a.md 10-20) overlapped by 18-25; span2 (30-35) by nothing (36-40 starts after it);
    # span3 (b.pdf p3) not found by page 4. hit 1, cover 1/3, all 0.
    items = [ev("a.md", start=18, end=25), ev("b.pdf", page=4), ev("a.md", start=36, end=40)]
    assert m.span_scores(items, SPANS) == {"hit": 1.0, "cover": pytest.approx(1 / 3), "all": 0.0}
    # Adding b.pdf page 3 and a.md 35-35 (inclusive end touches) finds all three.
    more = [*items, ev("b.pdf", page=3), ev("a.md", start=35, end=35)]
    assert m.span_scores(more, SPANS) == {"hit": 1.0, "cover": 1.0, "all": 1.0}


def test_span_found_boundaries():
    span = ("a.md", 10, 20, None)
    assert m.span_found(ev("a.md", start=20, end=22), span)  # touches the end line
    assert m.span_found(ev("a.md", start=1, end=10), span)  # touches the start line
    assert not m.span_found(ev("a.md", start=21, end=22), span)
    assert not m.span_found(ev("other.md", start=10, end=20), span)  # other document
    assert not m.span_found(ev("a.md", page=1), span)  # no lines on a PDF item
    assert m.span_found(ev("a.md", start=99, end=99), ("a.md", None, None, None))  # doc-only span
    assert m.span_scores([ev("a.md")], ()) is None
    # a bundle of separate runs (a table header and one of its rows) covers only its lines
    from dataclasses import replace

    bundle = replace(ev("a.md", "| h |\n| row |", start=5, end=40), line_numbers=(5, 40))
    assert not m.span_found(bundle, span)  # 10-20 lies between its two lines
    assert m.span_found(bundle, ("a.md", 40, 41, None))
    assert m.span_scores([], SPANS) == {"hit": 0.0, "cover": 0.0, "all": 0.0}


# --- answer text ----------------------------------------------------------------------------


def test_rouge_l():
    # LCS("the cat sat", "the cat sat on the mat") = 3: P = 3/3, R = 3/6, F = 2*1*0.5/1.5 = 2/3.
    assert m.rouge_l("the cat sat", "the cat sat on the mat") == pytest.approx(2 / 3)
    # Stemming: routed -> rout, routing -> rout; nets -> net.
    assert m.rouge_l("routed net", "routing nets") == pytest.approx(1.0)
    assert m.rouge_l("anything", "  ") is None


def test_corpus_bleu():
    score, signature = m.corpus_bleu(["the cat sat on the mat"], ["the cat sat on the mat"])
    assert score == pytest.approx(100.0)
    assert "version:" in signature and "tok:13a" in signature
    assert m.corpus_bleu([], []) is None
    low, _ = m.corpus_bleu(["completely different words here"], ["the cat sat on the mat"])
    assert low == 0.0


def test_percentile_and_mean():
    # numpy linear interpolation: p50 of 1..5 = 3, p95 = 1 + 0.95 * 4 = 4.8.
    assert m.percentile([5.0, 1.0, 3.0, 2.0, 4.0], 50) == 3.0
    assert m.percentile([1.0, 2.0, 3.0, 4.0, 5.0], 95) == pytest.approx(4.8)
    assert m.percentile([], 50) is None
    assert m.mean([1.0, 0.0, 0.5]) == 0.5
    assert m.mean([]) is None
