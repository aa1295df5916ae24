"""``edaqa ask`` and ``edaqa eval``: query an indexed storage root without loading Dagster."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def _cmd_ask(args: argparse.Namespace) -> int:
    from edaqa_pipeline.generation.extractive import extractive_answer
    from edaqa_pipeline.retrieval.retrievers import make_retriever
    from edaqa_pipeline.retrieval.snapshot import IndexSnapshot, NotIndexedError

    try:
        snapshot = IndexSnapshot.load(Path(args.storage))
    except NotIndexedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    retriever = make_retriever(args.method, snapshot)
    snapshot.base.encode(["warm up"])  # model load is not retrieval time
    started = time.perf_counter()
    evidence = retriever.retrieve(args.question, args.k)
    retrieval_ms = (time.perf_counter() - started) * 1000
    answer = extractive_answer(args.question, evidence)
    if args.json:
        print(json.dumps({
            "question": args.question, "method": args.method, "answer": answer,
            "retrieval_ms": round(retrieval_ms, 2),
            "evidence": [{k: v for k, v in e.to_json().items() if k != "chunk_id"} for e in evidence],
        }, indent=2, ensure_ascii=False))
        return 0
    print(f"Q: {args.question}\n\n{answer}\n")
    print(f"Evidence ({args.method}, retrieval {retrieval_ms:.1f} ms):")
    for rank, item in enumerate(evidence, 1):
        first = next((ln for ln in item.text.split("\n") if ln.strip()), "")[:90]
        print(f"  {rank}. {item.citation():<34} [{item.path}] score={item.score:.3f}  {first}")
    return 0


def _cmd_eval(args: argparse.Namespace) -> int:
    import numpy as np

    from edaqa_pipeline.evaluation.qa import QAFormatError, load_qa
    from edaqa_pipeline.evaluation.runner import run_evaluation, write_outputs
    from edaqa_pipeline.generation.extractive import extractive_answer
    from edaqa_pipeline.retrieval.retrievers import available_methods, make_retriever
    from edaqa_pipeline.retrieval.snapshot import IndexSnapshot

    try:
        items = load_qa(args.qa, args.qa_format, args.source_map)
    except QAFormatError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    snapshot = IndexSnapshot.load(Path(args.storage))
    methods = [m for m in args.methods.split(",") if m] or available_methods(Path(args.storage))
    retrievers = {m: make_retriever(m, snapshot) for m in methods}
    snapshot.base.encode(["warm up"])

    def embed(texts: list[str]) -> np.ndarray:
        return snapshot.base.encode(texts)

    extra = None
    if not args.no_element_metrics:
        from edaqa_pipeline.elements.metrics import load_view

        view = load_view(snapshot.storage, snapshot.documents)

        def extra(item, evidence, answer):  # type: ignore[no-untyped-def]
            return view.scores(evidence, gold_spans=item.gold_spans, ref_passages=item.ref_passages,
                               gold_docs=item.gold_docs, answer=answer)

    metrics, rows = run_evaluation(items, retrievers, extractive_answer, k=args.k, embed=embed,
                                   progress=not args.no_progress, extra_scores=extra)
    out = Path(args.out)
    write_outputs(out, metrics, rows, reproduced="edaqa " + " ".join(sys.argv[1:]))
    print(f"wrote {out}/metrics.json, results.jsonl, report.md, report.html")
    headline = ["doc_recall@1", "doc_recall@5", "ref_recall@2048t", "span_hit@2048t", "rougeL",
                "latency_ms_p50"]
    print("method".ljust(12) + "".join(h.rjust(18) for h in headline))
    for method, values in metrics["methods"].items():
        print(method.ljust(12) + "".join(
            (f"{values[h]:.3f}" if h in values else "-").rjust(18) for h in headline))
    return 0


def add_query_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from edaqa_pipeline.retrieval.retrievers import METHODS

    p = sub.add_parser("ask", help="answer a question with cited evidence")
    p.add_argument("question")
    p.add_argument("--storage", required=True)
    p.add_argument("--method", default="fa_hybrid", choices=sorted(METHODS))
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_ask)

    p = sub.add_parser("eval", help="compare retrieval methods on a QA file")
    p.add_argument("--storage", required=True)
    p.add_argument("--qa", required=True)
    p.add_argument("--qa-format", default="auto", choices=["auto", "edaqa", "ordqa"])
    p.add_argument("--source-map", default=None)
    p.add_argument("--methods", default="", help="comma-separated; default: every method whose "
                   "indexes are built in STORAGE")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--out", default="eval_out")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--no-element-metrics", action="store_true",
                   help="skip TechDocRAG's element-graph metrics (rehr@10_L0..L4, ecr, poa, csr)")
    p.set_defaults(func=_cmd_eval)
