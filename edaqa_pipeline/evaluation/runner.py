"""Run every retrieval method on every question and aggregate the metrics.

One loop, one order (methods in the order given, questions in file order), so that two runs on
the same inputs give identical metrics apart from the latency fields. Only ``retrieve()`` is
timed. The answerer sees the evidence packed to the 2048-token budget, the same set that the
``@2048t`` metrics and ``context_tokens_mean`` measure: the headline numbers describe what the
answerer actually got.

An answerer returns plain text or a ``generation.answer.Answer`` (claims with verified
citations). For an ``Answer``, ROUGE-L / BLEU / Atomic-ROUGE / LLM-Score score its text without
the inline citation markers (``Answer.plain``), the citations are scored on their own
(``citations.py``: ALCE citation recall/precision; abstention split by whether the gold
evidence was in the context), and each result row keeps the claims, the dropped claims, the
answerer and its token counts.

Aggregation: a metric's value is the mean over the questions where it applies (per-question
value not None); a metric that applies to no question is omitted, not reported as 0. ``bleu``
is sacrebleu's corpus BLEU (0-100) over the method's answers; the latencies are the p50/p95 of
the per-question retrieval times. All floats are rounded to 6 decimals; the means are taken over
the rounded per-question values that results.jsonl holds, so that anyone can recompute
metrics.json from results.jsonl exactly (:func:`build_metrics`).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from edaqa_pipeline.corpus.releases import key_release
from edaqa_pipeline.evaluation import metrics as m
from edaqa_pipeline.evaluation.atomic import Embed, MemoEmbed, atomic_rouge
from edaqa_pipeline.evaluation.citations import (
    abstention_scores,
    citation_scores,
    strict_entails,
)
from edaqa_pipeline.evaluation.judge import AnswerJudge
from edaqa_pipeline.evaluation.qa import QAItem
from edaqa_pipeline.evaluation.system_recall import system_recall_at_k
from edaqa_pipeline.generation.answer import Answer
from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.retrieval.record import Retriever

Answerer = Callable[[str, list[EvidenceItem]], "str | Answer"]

BUDGET_TOKENS = m.DEFAULT_BUDGET_TOKENS
BUDGET_SUFFIX = f"@{BUDGET_TOKENS}t"
LATENCY_KEYS: tuple[str, ...] = ("latency_ms_p50", "latency_ms_p95")
ROUND = 6


def _r(x: float) -> float:
    return round(float(x), ROUND)


def question_scores(
    item: QAItem,
    evidence: Sequence[EvidenceItem],
    packed: Sequence[EvidenceItem],
    answer: str | Answer,
    *,
    embed: Embed | None = None,
    judge: AnswerJudge | None = None,
) -> dict[str, float]:
    """Every per-question metric that applies to ``item`` (rounded); others are absent."""
    text = answer.plain if isinstance(answer, Answer) else answer
    s: dict[str, float | None] = {}
    for k in m.KS:
        s[f"doc_recall@{k}"] = m.doc_recall_at_k(evidence, item.gold_docs, k)
    s["mrr@10"] = m.mrr_at_k(evidence, item.gold_docs, 10)
    s["ndcg@10"] = m.ndcg_at_k(evidence, item.gold_docs, 10)
    for k in m.KS:
        s[f"ref_recall@{k}"] = m.ref_recall_at_k(evidence, item.ref_passages, k)
    s[f"ref_recall{BUDGET_SUFFIX}"] = m.ref_recall(packed, item.ref_passages)
    for suffix, ev in [*((f"@{k}", list(evidence)[:k]) for k in m.KS), (BUDGET_SUFFIX, packed)]:
        spans = m.span_scores(ev, item.gold_spans)
        if spans is not None:
            for name, value in spans.items():
                s[f"span_{name}{suffix}"] = value
    s["rougeL"] = m.rouge_l(text, item.answer)
    atomic = atomic_rouge(
        text, item.atomic_facts, embed=embed, judge=judge, question=item.question
    )
    if atomic is not None:
        s["atomic_p"], s["atomic_r"], s["atomic_f1"] = atomic.precision, atomic.recall, atomic.f1
        if judge is None:  # what the packed evidence holds, by the same (offline) judge
            held = atomic_rouge("\n".join(e.text for e in packed), item.atomic_facts, embed=embed)
            s["atomic_r_evidence"] = held.recall if held is not None else None
    if judge is not None and item.answer.strip():
        s["llm_score"] = judge.llm_score(item.question, item.answer, text)
    if isinstance(answer, Answer):
        s.update(answer_scores(item, answer, s, judge))
    s["context_tokens"] = m.context_tokens(packed)
    return {key: _r(v) for key, v in s.items() if v is not None}


def answer_scores(
    item: QAItem, answer: Answer, scores: dict[str, float | None], judge: AnswerJudge | None
) -> dict[str, float]:
    """Citation recall/precision, abstention and the answer's own counts (see the module doc)."""
    out: dict[str, float] = {}
    items = {n.id: n for n in answer.evidence}
    claims = [{"text": c.text, "evidence_ids": c.evidence_ids} for c in answer.claims]
    entails = strict_entails if judge is None else (
        lambda claim, cited: judge.entails(claim, [n.item.text for n in cited]))
    cited = citation_scores(claims, items, entails)
    if cited is not None:
        out.update(cited)
    gold = scores.get(f"ref_recall{BUDGET_SUFFIX}")
    if gold is None:
        gold = scores.get(f"span_hit{BUDGET_SUFFIX}")
    if gold is None and item.gold_docs:
        gold = float(any(n.item.doc in item.gold_docs for n in answer.evidence))
    abstained = answer.not_in_documents or not answer.claims
    out.update(abstention_scores(abstained, None if gold is None else gold > 0))
    out["abstained"] = 1.0 if abstained else 0.0
    if answer.claims and item.gold_spans:  # does the answer lead with a gold line?
        out["first_claim_gold"] = 1.0 if cites_gold(answer.claims[0].citations, item.gold_spans) else 0.0
    out["claims"] = float(len(answer.claims))
    out["dropped_claims"] = float(len(answer.dropped))
    out["completion_tokens"] = float(answer.usage.completion_tokens)
    return out


_CITATION = re.compile(r"^(?P<doc>.+):L(?P<start>\d+)(?:-L(?P<end>\d+))?$")


def cites_gold(citations: Sequence[str], gold_spans: Sequence[Any]) -> bool:
    """Whether a citation (``doc:Lx-Ly``) overlaps one of the gold spans (doc, start, end, ...).

    A gold span without lines (a PDF page, a whole document) is met by any citation of its document.
    """
    for citation in citations:
        match = _CITATION.match(citation)
        if not match:
            continue
        start = int(match.group("start"))
        end = int(match.group("end") or start)
        for doc, gold_start, gold_end, *_ in gold_spans:
            if doc != match.group("doc"):
                continue
            if gold_start is None or gold_end is None:  # a gold span naming its document (or page) only
                return True
            if start <= gold_end and gold_start <= end:
                return True
    return False


def aggregate(rows: Sequence[dict[str, Any]]) -> tuple[dict[str, float], str | None]:
    """Metrics of one method over ``rows`` (result rows); returns (metrics, bleu signature)."""
    out: dict[str, float] = {}
    keys = sorted({k for row in rows for k in row["scores"]})
    for key in keys:
        values = [row["scores"][key] for row in rows if key in row["scores"]]
        name = "context_tokens_mean" if key == "context_tokens" else key
        mean = m.mean(values)
        if mean is not None:
            out[name] = _r(mean)
    signature = None
    scored = [row for row in rows if row["reference_answer"].strip()]
    bleu = m.corpus_bleu([r.get("answer_plain", r["answer"]) for r in scored],
                         [r["reference_answer"] for r in scored])
    if bleu is not None:
        out["bleu"], signature = _r(bleu[0]), bleu[1]
    if out.get("atomic_r_evidence"):  # the share of the facts its evidence holds that an answer states
        out["atomic_r_of_evidence"] = _r(out["atomic_r"] / out["atomic_r_evidence"])
    words = [len(str(r.get("answer_plain", r["answer"])).split()) for r in rows
             if not r["scores"].get("abstained")]
    if words and any("claims" in r["scores"] for r in rows):
        out["answer_words_median"] = _r(m.percentile(words, 50) or 0.0)
    latencies = [row["retrieval_ms"] for row in rows]
    for key, q in zip(LATENCY_KEYS, (50, 95), strict=True):
        value = m.percentile(latencies, q)
        if value is not None:
            out[key] = _r(value)
    return dict(sorted(out.items())), signature


def _jsonable(value: Any) -> Any:
    """A retriever's trace (dict or dataclass) as plain JSON data for results.jsonl."""
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    return json.loads(json.dumps(value, default=str))


def run_evaluation(
    items: list[QAItem],
    retrievers: dict[str, Retriever],
    answer: Answerer,
    *,
    k: int = 10,
    embed: Embed | None = None,
    judge: AnswerJudge | None = None,
    progress: bool = True,
    extra_scores: Callable[[QAItem, list[EvidenceItem], str], dict[str, float]] | None = None,
    status: Callable[[int, int], str] | None = None,
) -> tuple[dict, list[dict]]:
    """Evaluate each retriever on each question; returns (metrics.json dict, result rows).

    ``extra_scores(item, evidence, answer)`` adds method-independent per-question metrics
    (the element-graph metrics rehr@10_L0..L4, ecr, poa, csr of TechDocRAG);
    ``status(done, total)`` adds a line to the progress bar (the answering model's measured
    tokens/s and the time left at that rate)."""
    rows: list[dict[str, Any]] = []
    embed = MemoEmbed(embed) if embed is not None else None
    with tqdm(
        total=len(items) * len(retrievers), disable=not progress, desc="eval", unit="q"
    ) as bar:
        for method, retriever in retrievers.items():
            bar.set_postfix_str(method)
            for item in items:
                t0 = time.perf_counter()
                result = retriever.retrieve(item.question, k)
                elapsed_ms = (time.perf_counter() - t0) * 1000.0
                steps = result.all_steps()  # multi-step methods (ChipMind): every step
                trace = result.trace or None
                evidence = list(result.items)[:k]
                packed = m.pack_to_budget(evidence, BUDGET_TOKENS)
                # a method's own answer (ChipMind with a model) goes to the answerer to verify
                generated = answer(item.question, packed, draft=result.draft) if result.draft else \
                    answer(item.question, packed)
                text = str(generated)
                scores = question_scores(item, evidence, packed, generated, embed=embed, judge=judge)
                system_recall = system_recall_at_k(
                    steps, k, ref_passages=item.ref_passages, gold_docs=item.gold_docs
                )
                if system_recall is not None:
                    scores[f"system_recall@{k}"] = _r(system_recall)
                if item.release and packed:  # what the question is about, whatever answered it
                    scores["wrong_release@2048t"] = _r(
                        sum(key_release(e.doc) != item.release for e in packed) / len(packed))
                release = item.release or (result.trace or {}).get("release")
                if extra_scores is not None:
                    scores.update({name: _r(v) for name, v in extra_scores(item, evidence, text).items()
                                   if v is not None})
                row_extra = {"trace": _jsonable(trace)} if trace is not None else {}
                if isinstance(generated, Answer):
                    record = generated.to_json()
                    row_extra.update(answer_plain=generated.plain, answerer=record["answerer"],
                                     claims=record["claims"], dropped_claims=record["dropped_claims"],
                                     tokens=record["tokens"])
                    if generated.reason:
                        row_extra["fallback_reason"] = generated.reason
                rows.append(
                    {
                        "id": item.id,
                        "method": method,
                        "category": item.category,
                        "question": item.question,
                        "reference_answer": item.answer,
                        "answer": text,
                        "retrieval_ms": _r(elapsed_ms),
                        "evidence": [{**e.to_json(), **({"release": key_release(e.doc)}
                                                        if release and key_release(e.doc) else {})}
                                     for e in evidence],
                        "scores": scores,
                        **row_extra,
                    }
                )
                bar.update(1)
                if status is not None and progress:
                    bar.set_postfix_str(f"{method}, {status(bar.n, bar.total)}")
    return build_metrics(items, list(retrievers), rows), rows


def build_metrics(
    items: Sequence[QAItem], methods: Sequence[str], rows: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """The metrics.json structure from result rows (overall and per category)."""
    metrics: dict[str, Any] = {"n_questions": len(items), "methods": {}, "by_category": {}}
    signature = None
    for method in methods:
        mine = [r for r in rows if r["method"] == method]
        metrics["methods"][method], sig = aggregate(mine)
        signature = signature or sig
    for category in sorted({it.category for it in items}):
        metrics["by_category"][category] = {
            method: aggregate(
                [r for r in rows if r["method"] == method and r["category"] == category]
            )[0]
            for method in methods
        }
    if signature is not None:
        metrics["bleu_signature"] = signature
    return metrics


def write_outputs(
    out_dir: str | Path,
    metrics: dict[str, Any],
    results: list[dict[str, Any]],
    *,
    reproduced: str | None = None,
) -> dict[str, Path]:
    """Write metrics.json, results.jsonl, report.md and report.html; returns their paths."""
    from edaqa_pipeline.evaluation.report import write_report

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"metrics": out / "metrics.json", "results": out / "results.jsonl"}
    paths["metrics"].write_text(
        json.dumps(metrics, sort_keys=True, indent=2) + "\n", encoding="utf-8"
    )
    with paths["results"].open("w", encoding="utf-8") as fh:
        for row in results:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    paths["report_md"], paths["report_html"] = write_report(out, metrics, reproduced=reproduced)
    return paths
