"""Evaluation layer: the runner (metrics and rows of a run, packed evidence, the judge,
determinism) and the written outputs and report.

Expected values are computed by hand in the comments, so that a change of a metric's definition
shows up as a failing number rather than a silently different report.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from edaqa_pipeline.evaluation.qa import QAItem
from edaqa_pipeline.evaluation.report import render_html, render_markdown, write_report
from edaqa_pipeline.evaluation.runner import Retriever, build_metrics, run_evaluation, write_outputs
from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.retrieval.record import Retrieval, retrieval
from edaqa_pipeline_tests._helpers_eval import _judge, ev
from edaqa_pipeline_tests.llm_servers import ok

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
