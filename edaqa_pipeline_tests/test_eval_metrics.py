"""Tests of the evaluation layer: metrics on hand-made cases, loaders, Atomic-ROUGE, runner, report.

Expected values are computed by hand in the comments, so that a change of a metric's definition
shows up as a failing number rather than a silently different report.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from edaqa_pipeline.evaluation import metrics as m
from edaqa_pipeline.evaluation.atomic import (
    atomic_rouge,
    facts_match,
    key_terms,
    split_facts,
    term_occurs,
    token_f1,
)
from edaqa_pipeline.evaluation.judge import AnswerJudge
from edaqa_pipeline.evaluation.qa import (
    QAFormatError,
    QAItem,
    detect_format,
    load_qa,
    load_source_map,
    reference_prefix,
)
from edaqa_pipeline.evaluation.report import render_html, render_markdown, write_report
from edaqa_pipeline.evaluation.runner import (
    Retriever,
    build_metrics,
    run_evaluation,
    write_outputs,
)
from edaqa_pipeline.llm import OpenAICompatibleClient
from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.retrieval.record import Retrieval, retrieval
from edaqa_pipeline_tests.llm_servers import ok

BENCH = Path("/work/shared/benchmarks")


def ev(
    doc: str, text: str = "x", start: int | None = 1, end: int | None = 1, page: int | None = None
) -> EvidenceItem:
    if page is not None:
        start = end = None
    return EvidenceItem(
        chunk_id=f"{doc}:{start}:{page}:{text[:8]}",
        doc=doc,
        text=text,
        score=1.0,
        path="test",
        start_line=start,
        end_line=end,
        page=page,
    )


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


def _judge(server) -> AnswerJudge:
    return AnswerJudge(OpenAICompatibleClient(base_url=server.base_url, api_key=None,
                                              model="judge", max_retries=0, timeout_s=5))


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


# --- loaders --------------------------------------------------------------------------------


def write_lines(path: Path, records: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def test_load_edaqa(tmp_path: Path):
    f = write_lines(
        tmp_path / "q.jsonl",
        [
            {
                "id": 7,
                "question": "  How?\n",
                "answer": "Like this.",
                "category": "flow",
                "evidence": [
                    {"doc": "grt.md", "start_line": 3, "end_line": 9},
                    {"doc": "sheet.pdf", "page": 2},
                    {"doc": "grt.md", "start_line": 20, "end_line": 20},
                ],
                "atomic_facts": ["Fact one.", " Fact two. "],
            },
            "",
            {"id": "b", "question": "Why?", "answer": "Because."},
        ],
    )
    a, b = load_qa(f)
    assert a == QAItem(
        id="7",
        question="How?",
        answer="Like this.",
        category="flow",
        gold_docs=("grt.md", "sheet.pdf"),
        gold_spans=(("grt.md", 3, 9, None), ("sheet.pdf", None, None, 2), ("grt.md", 20, 20, None)),
        atomic_facts=("Fact one.", "Fact two."),
    )
    assert b == QAItem(id="b", question="Why?", answer="Because.")
    assert b.category == "all" and b.gold_docs == () and b.ref_passages == ()


def test_load_ordqa(tmp_path: Path):
    smap = tmp_path / "map.json"
    smap.write_text(
        json.dumps({"_about": "comment", "global_routing": "grt.md", "scripts": "orfs.md"})
    )
    f = write_lines(
        tmp_path / "o.jsonl",
        [
            {
                "id": 1,
                "question": " Q?\n",
                "answer": " Use it: \\n```tcl\\ncmd\\n```\n",
                "type": "functionality",
                "reference": ["global_routing_6", "scripts_12", "global_routing_7"],
                "reference_content": [
                    "id:global_routing_6\n### H\nbody",
                    "id:scripts_12\ntext",
                    "id:global_routing_7\nmore",
                ],
            }
        ],
    )
    (item,) = load_qa(f, "auto", source_map=smap)
    assert item.question == "Q?"
    assert item.answer == "Use it: \n```tcl\ncmd\n```"  # literal \n -> newline, then stripped
    assert item.category == "functionality"
    assert item.gold_docs == ("grt.md", "orfs.md")
    assert item.ref_passages == ("### H\nbody", "text", "more")
    assert load_source_map(smap) == {"global_routing": "grt.md", "scripts": "orfs.md"}
    (no_map,) = load_qa(f, "ordqa")
    assert no_map.gold_docs == () and len(no_map.ref_passages) == 3
    assert reference_prefix("chip-level_connections_3") == "chip-level_connections"
    assert reference_prefix("nosuffix") == "nosuffix"
    assert detect_format({"reference": []}) == "ordqa"
    assert detect_format({"question": "q"}) == "edaqa"


@pytest.mark.parametrize(
    ("lines", "needle"),
    [
        (['{"id": 1, "question": "q", "answer": "a"}', "{not json"], ":2: invalid JSON"),
        (['{"id": 1, "answer": "a"}'], ":1: missing required key 'question'"),
        (
            [
                '{"id": 1, "question": "q", "answer": "a"}',
                '{"id": 1, "question": "r", "answer": "b"}',
            ],
            ":2: duplicate id '1'",
        ),
        (
            [
                '{"id": 1, "question": "q", "answer": "a"}',
                '{"id": 2, "question": "q", "answer": "a", "reference": []}',
            ],
            ":2: record looks like 'ordqa'",
        ),
        (
            [
                '{"id": 1, "question": "q", "answer": "a", "evidence": [{"doc": "x.md", "start_line": 5, "end_line": 2}]}'
            ],
            ":1: evidence end_line 2 < start_line 5",
        ),
        (
            [
                '{"id": 1, "question": "q", "answer": "a", "evidence": [{"start_line": 1, "end_line": 2}]}'
            ],
            ":1: each evidence entry",
        ),
        (["[1, 2]"], ":1: expected a JSON object"),
        (['{"id": 1, "question": "  ", "answer": "a"}'], ":1: 'question' is empty"),
        (['{"question": "q", "answer": "a"}'], ":1: missing or invalid 'id'"),
    ],
)
def test_loader_errors_name_file_and_line(tmp_path: Path, lines: list[str], needle: str):
    f = write_lines(tmp_path / "bad.jsonl", lines)
    with pytest.raises(QAFormatError) as exc:
        load_qa(f)
    assert str(f) in str(exc.value)
    assert needle in str(exc.value)


def test_loader_rejects_unknown_format_and_missing_file(tmp_path: Path):
    with pytest.raises(ValueError, match="unknown QA format"):
        load_qa(tmp_path / "x.jsonl", "csv")
    with pytest.raises(QAFormatError, match="no such QA file"):
        load_qa(tmp_path / "x.jsonl")


@pytest.mark.skipif(not (BENCH / "ord-qa.jsonl").is_file(), reason="ORD-QA benchmark not present")
def test_load_real_ordqa(caplog: pytest.LogCaptureFixture):
    items = load_qa(BENCH / "ord-qa.jsonl", "auto", source_map=BENCH / "ord-qa.source_map.json")
    assert len(items) == 90
    assert not [r for r in caplog.records if "no entry in the source map" in r.getMessage()]
    assert all(it.gold_docs for it in items)  # every reference prefix is mapped
    counts = Counter(it.category for it in items)
    assert counts == {"functionality": 46, "vlsi_flow": 22, "gui&installation&test": 22}
    smap = load_source_map(BENCH / "ord-qa.source_map.json")
    for line in (BENCH / "ord-qa.jsonl").read_text().splitlines():
        assert all(reference_prefix(r) in smap for r in json.loads(line)["reference"])
    assert all(
        it.ref_passages and not any(p.startswith("id:") for p in it.ref_passages) for it in items
    )
    assert not any("\\n" in it.answer for it in items)
    assert items[0].gold_docs == ("ppl.md", "grt.md")
    corpus = BENCH.parent / "corpus" / "openroad-2024"
    if corpus.is_dir():
        assert all((corpus / d).is_file() for it in items for d in it.gold_docs)


# --- runner ---------------------------------------------------------------------------------


class WordOverlapRetriever:
    """Test scaffolding: ranks a fixed list of evidence by shared lower-case words."""

    def __init__(self, name: str, corpus: list[EvidenceItem], reverse: bool = False):
        self.name = name
        self.corpus = corpus
        self.reverse = reverse

    def retrieve(self, query: str, k: int) -> Retrieval:
        q = set(re.findall(r"\w+", query.lower()))
        scored = [
            (len(q & set(re.findall(r"\w+", e.text.lower()))), -i, e)
            for i, e in enumerate(self.corpus)
        ]
        scored.sort(key=lambda t: (t[0], t[1]), reverse=not self.reverse)
        return retrieval(self.name, query, [e for _, _, e in scored[:k]])


CORPUS = [
    ev("grt.md", "set_routing_alpha sets the routing alpha of a net.", 10, 12),
    ev("grt.md", "global_route routes the design.", 20, 22),
    ev("cts.md", "clock_tree_synthesis builds the clock tree.", 5, 9),
    ev("sheet.pdf", "The supply voltage is 1.8 V.", page=3),
]
ITEMS = [
    QAItem(
        id="q1",
        question="How do I set the routing alpha of a net?",
        answer="set_routing_alpha sets the routing alpha of a net.",
        category="route",
        gold_docs=("grt.md",),
        gold_spans=(("grt.md", 11, 11, None),),
        atomic_facts=("Use `set_routing_alpha` to set the routing alpha.",),
    ),
    QAItem(
        id="q2",
        question="What is the supply voltage?",
        answer="The supply voltage is 1.8 V.",
        category="power",
        gold_docs=("sheet.pdf",),
        gold_spans=(("sheet.pdf", None, None, 3),),
    ),
]


def first_line_answer(question: str, evidence: list[EvidenceItem]) -> str:
    return evidence[0].text if evidence else ""


def retrievers() -> dict[str, Retriever]:
    return {
        "overlap": WordOverlapRetriever("overlap", CORPUS),
        "worst": WordOverlapRetriever("worst", CORPUS, reverse=True),
    }


def test_retriever_protocol():
    assert isinstance(WordOverlapRetriever("x", CORPUS), Retriever)


def test_run_evaluation_values_and_shape():
    metrics, rows = run_evaluation(ITEMS, retrievers(), first_line_answer, k=3, progress=False)
    assert metrics["n_questions"] == 2
    assert list(metrics["methods"]) == ["overlap", "worst"]
    assert sorted(metrics["by_category"]) == ["power", "route"]
    best = metrics["methods"]["overlap"]
    # overlap: q1 -> grt.md 10-12 first (finds the span), q2 -> sheet.pdf p3 first. Perfect.
    for key in (
        "doc_recall@1",
        "mrr@10",
        "ndcg@10",
        "span_hit@2048t",
        "span_all@1",
        "span_cover@3",
    ):
        assert best[key] == 1.0, key
    assert best["rougeL"] == 1.0 and best["bleu"] == 100.0  # answers equal the references
    assert best["atomic_f1"] == 1.0  # only q1 has atomic facts
    # worst ranks by fewest shared words: q1 -> [sheet.pdf, cts.md, grt.md 20-22]: grt.md is
    # distinct rank 3 -> doc_recall@1 0, @3 1, MRR 1/3; the span (line 11) is never found.
    # q2 -> [cts.md, grt.md 20-22, grt.md 10-12]: no sheet.pdf -> 0, MRR 0.
    worst = metrics["methods"]["worst"]
    assert worst["doc_recall@1"] == 0.0
    assert worst["doc_recall@3"] == 0.5  # mean of 1 and 0
    # Means are taken over the rounded per-question values of results.jsonl: (0.333333 + 0) / 2.
    assert worst["mrr@10"] == round((0.333333 + 0) / 2, 6)
    assert worst["span_hit@2048t"] == 0.0
    # Omitted, not 0: no reference passages, no LLM judge.
    assert not any(k.startswith("ref_recall") for k in best)
    assert "llm_score" not in best
    assert set(best) >= {"latency_ms_p50", "latency_ms_p95", "context_tokens_mean"}
    assert metrics["bleu_signature"].startswith("nrefs:1")
    # by_category has the same metrics per category; "power" has no atomic facts.
    assert metrics["by_category"]["route"]["overlap"]["atomic_f1"] == 1.0
    assert "atomic_f1" not in metrics["by_category"]["power"]["overlap"]
    # Rows: one per (method, question), methods outer, questions inner, in the given order.
    assert [(r["method"], r["id"]) for r in rows] == [
        ("overlap", "q1"),
        ("overlap", "q2"),
        ("worst", "q1"),
        ("worst", "q2"),
    ]
    row = rows[0]
    assert set(row) == {
        "id",
        "method",
        "category",
        "question",
        "reference_answer",
        "answer",
        "retrieval_ms",
        "evidence",
        "scores",
    }
    assert len(row["evidence"]) == 3 and row["evidence"][0]["doc"] == "grt.md"
    assert row["scores"]["doc_recall@1"] == 1.0
    # context_tokens: the packed evidence = all 3 items (well under 8192 chars).
    texts = [e["text"] for e in row["evidence"]]
    assert row["scores"]["context_tokens"] == round(sum(len(t) for t in texts) / 4, 6)


def test_run_evaluation_answers_from_packed_evidence():
    long = [ev("a.md", "a" * 6000, 1, 1), ev("b.md", "b" * 3000, 2, 2), ev("c.md", "c" * 10, 3, 3)]
    seen: list[list[EvidenceItem]] = []

    def answer(q: str, evidence: list[EvidenceItem]) -> str:
        seen.append(evidence)
        return "x"

    item = QAItem(id="1", question="q", answer="x", gold_docs=("c.md",))
    metrics, rows = run_evaluation(
        [item], {"m": WordOverlapRetriever("m", long)}, answer, progress=False
    )
    # 6000 fits; 6000 + 3000 > 8192 -> stop: the answerer sees only a.md (1500 tokens).
    assert [e.doc for e in seen[0]] == ["a.md"]
    assert metrics["methods"]["m"]["context_tokens_mean"] == 1500.0
    assert len(rows[0]["evidence"]) == 3  # the full ranked list is still recorded


def test_run_evaluation_with_judge_and_ordqa_items(scripted_server):
    item = QAItem(
        id="o1",
        question="How do I set the routing alpha?",
        answer="set_routing_alpha",
        ref_passages=("# H\nset_routing_alpha sets the routing alpha of a net.",),
    )

    rating = {"correctness": 15, "completeness": 12, "relevance": 20, "professionalism": 18,
              "conciseness": 10}
    server = scripted_server([ok(rating)])
    metrics, _ = run_evaluation(
        [item],
        {"m": WordOverlapRetriever("m", CORPUS)},
        first_line_answer,
        judge=_judge(server),
        progress=False,
    )
    got = metrics["methods"]["m"]
    assert got["llm_score"] == 75.0  # the sum of the five 0-20 criteria
    assert "set_routing_alpha" in server.requests[0]["messages"][1]["content"]
    assert got["ref_recall@1"] == 1.0 and got["ref_recall@2048t"] == 1.0
    assert not any(
        k.startswith(("doc_recall", "span_", "atomic_")) for k in got
    )  # no gold docs/spans
    assert list(metrics["by_category"]) == ["all"]


def strip_latency(metrics: dict) -> dict:
    out = json.loads(json.dumps(metrics))
    for block in [out["methods"], *out["by_category"].values()]:
        for vals in block.values():
            vals.pop("latency_ms_p50", None)
            vals.pop("latency_ms_p95", None)
    return out


def test_run_evaluation_is_deterministic():
    m1, r1 = run_evaluation(ITEMS, retrievers(), first_line_answer, progress=False)
    m2, r2 = run_evaluation(ITEMS, retrievers(), first_line_answer, progress=False)
    assert json.dumps(strip_latency(m1), sort_keys=True) == json.dumps(
        strip_latency(m2), sort_keys=True
    )
    for a, b in zip(r1, r2, strict=True):
        a, b = dict(a), dict(b)
        a.pop("retrieval_ms")
        b.pop("retrieval_ms")
        assert a == b
    # Rebuilding from the rows gives the same metrics; all floats have <= 6 decimals.
    assert build_metrics(ITEMS, ["overlap", "worst"], r1) == m1
    for vals in m1["methods"].values():
        assert all(round(v, 6) == v for v in vals.values())


# --- outputs and report ---------------------------------------------------------------------


def test_write_outputs_and_report(tmp_path: Path):
    metrics, rows = run_evaluation(ITEMS, retrievers(), first_line_answer, progress=False)
    paths = write_outputs(tmp_path / "out", metrics, rows, reproduced="edaqa eval --qa q.jsonl")
    for name in ("metrics.json", "results.jsonl", "report.md", "report.html"):
        assert (tmp_path / "out" / name).is_file()
    text = paths["metrics"].read_text()
    assert text == json.dumps(metrics, sort_keys=True, indent=2) + "\n"
    lines = paths["results"].read_text().splitlines()
    assert len(lines) == 4 and json.loads(lines[0])["method"] == "overlap"
    md = paths["report_md"].read_text()
    page = paths["report_html"].read_text()
    for method in ("overlap", "worst"):
        assert method in md and method in page
    assert "How reproduced: `edaqa eval --qa q.jsonl`" in md
    assert "| route | overlap |" in md  # per-category table
    assert page.count("data:image/png;base64,") == 3  # method bars, recall curves, categories


def test_report_rendering_is_deterministic(tmp_path: Path):
    metrics, _ = run_evaluation(ITEMS, retrievers(), first_line_answer, progress=False)
    metrics = strip_latency(metrics)
    assert render_html(metrics) == render_html(metrics)
    assert render_markdown(metrics) == render_markdown(metrics)
    md1, html1 = write_report(tmp_path / "a", metrics)
    md2, html2 = write_report(tmp_path / "b", metrics)
    assert html1.read_bytes() == html2.read_bytes()
    assert md1.read_bytes() == md2.read_bytes()


def test_report_handles_empty_metrics(tmp_path: Path):
    md, page = write_report(tmp_path, {"n_questions": 0, "methods": {}, "by_category": {}})
    assert "Questions: 0" in md.read_text()
    assert "base64" not in page.read_text()
