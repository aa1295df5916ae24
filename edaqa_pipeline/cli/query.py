"""``edaqa ask`` and ``edaqa eval``: query an indexed storage root without loading Dagster.

Errors a user can cause (no index, a method whose tables were not built, an unknown method, a
bad QA file) are one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from edaqa_pipeline.registry import DEFAULT_METHOD, METHOD_NAMES


def env_default(name: str) -> str | None:
    """The value of environment variable ``name`` as a CLI default (None when unset)."""
    value = os.environ.get(name, "").strip()
    return value or None


def storage_argument(parser: argparse.ArgumentParser) -> None:
    default = env_default("EDAQA_STORAGE")
    parser.add_argument("--storage", default=default, required=default is None,
                        help="storage root of an index (default: $EDAQA_STORAGE)")


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def load_snapshot(storage: str) -> Any:
    """The index at ``storage``, or a user-facing error (``QueryError``)."""
    from edaqa_pipeline.retrieval.snapshot import (
        EncoderMismatchError,
        IndexSnapshot,
        NotIndexedError,
    )

    try:
        return IndexSnapshot.load(Path(storage))
    except (NotIndexedError, EncoderMismatchError) as exc:
        raise QueryError(str(exc)) from None


class QueryError(RuntimeError):
    """A problem the user can fix; printed as one line."""


def build_retrievers(methods: list[str], snapshot: Any) -> dict[str, Any]:
    from edaqa_pipeline.registry import MethodNotBuiltError, UnknownMethodError, make_retriever
    from edaqa_pipeline.retrieval.snapshot import NoTrainedEncoderError

    out = {}
    for name in methods:
        try:
            out[name] = make_retriever(name, snapshot)
        except (UnknownMethodError, MethodNotBuiltError, NoTrainedEncoderError) as exc:
            raise QueryError(str(exc)) from None
    return out


def _cmd_ask(args: argparse.Namespace) -> int:
    from edaqa_pipeline.generation.extractive import extractive_answer

    try:
        snapshot = load_snapshot(args.storage)
        retriever = build_retrievers([args.method], snapshot)[args.method]
    except QueryError as exc:
        return _fail(str(exc))
    snapshot.base.encode(["warm up"])  # model load is not retrieval time
    started = time.perf_counter()
    result = retriever.retrieve(args.question, args.k)
    retrieval_ms = (time.perf_counter() - started) * 1000
    answer = extractive_answer(args.question, list(result.items))
    if args.json:
        print(json.dumps({
            "question": args.question, "method": args.method, "answer": answer,
            "answerer": "extractive", "retrieval_ms": round(retrieval_ms, 2),
            "evidence": [e.to_json() for e in result.items],
        }, indent=2, ensure_ascii=False))
        return 0
    print(f"Q: {args.question}\n\n{answer}\n")
    print(f"Evidence ({args.method}, retrieval {retrieval_ms:.1f} ms):")
    for rank, item in enumerate(result.items, 1):
        first = next((ln for ln in item.text.split("\n") if ln.strip()), "")[:90]
        print(f"  {rank}. {item.citation():<34} [{item.path}] score={item.score:.3f}  {first}")
    return 0


def _cmd_eval(args: argparse.Namespace) -> int:
    from edaqa_pipeline.evaluation.qa import QAFormatError, load_qa
    from edaqa_pipeline.evaluation.runner import run_evaluation, write_outputs
    from edaqa_pipeline.generation.extractive import extractive_answer
    from edaqa_pipeline.registry import available_methods

    try:
        items = load_qa(args.qa, args.qa_format, args.source_map)
        snapshot = load_snapshot(args.storage)
        methods = [m.strip() for m in args.methods.split(",") if m.strip()] or available_methods(snapshot.storage)
        retrievers = build_retrievers(methods, snapshot)
    except (QAFormatError, QueryError) as exc:
        return _fail(str(exc))
    snapshot.base.encode(["warm up"])

    extra = None
    if not args.no_element_metrics:
        from edaqa_pipeline.evaluation.element_metrics import load_view

        view = load_view(snapshot.storage, snapshot.documents)

        def extra(item, evidence, answer):  # type: ignore[no-untyped-def]
            return view.scores(evidence, gold_spans=item.gold_spans, ref_passages=item.ref_passages,
                               gold_docs=item.gold_docs, answer=answer)

    metrics, rows = run_evaluation(items, retrievers, extractive_answer, k=args.k,
                                   embed=snapshot.base.encode, progress=not args.no_progress,
                                   extra_scores=extra)
    out = Path(args.out)
    write_outputs(out, metrics, rows, reproduced="edaqa " + " ".join(sys.argv[1:]))
    print(f"wrote {out}/metrics.json, results.jsonl, report.md, report.html")
    headline = ["doc_recall@1", "doc_recall@5", "ref_recall@2048t", "span_cover@2048t",
                "span_all@2048t", "rougeL", "latency_ms_p50"]
    print("method".ljust(24) + "".join(h.rjust(18) for h in headline))
    for method, values in metrics["methods"].items():
        print(method.ljust(24) + "".join(
            (f"{values[h]:.3f}" if h in values else "-").rjust(18) for h in headline))
    return 0


def add_query_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("ask", help="answer a question with cited evidence",
                       description="Answer a question from an index, citing the source lines.")
    p.add_argument("question")
    storage_argument(p)
    p.add_argument("--method", default=DEFAULT_METHOD, choices=METHOD_NAMES,
                   help=f"retrieval method (default: {DEFAULT_METHOD})")
    p.add_argument("--k", type=int, default=5, help="evidence items to retrieve (default 5)")
    p.add_argument("--json", action="store_true", help="print a machine-readable record")
    p.set_defaults(func=_cmd_ask)

    p = sub.add_parser("eval", help="compare retrieval methods on a QA file",
                       description="Run methods on a QA file; writes metrics.json, results.jsonl, "
                       "report.md and report.html.")
    storage_argument(p)
    p.add_argument("--qa", required=True, help="QA file (edaqa JSONL or ORD-QA)")
    p.add_argument("--qa-format", default="auto", choices=["auto", "edaqa", "ordqa"])
    p.add_argument("--source-map", default=None, help="ORD-QA chunk-prefix -> document map")
    p.add_argument("--methods", default="", help="comma-separated; default: every method whose "
                   "indexes are built in STORAGE")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--out", default="eval_out")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--no-element-metrics", action="store_true",
                   help="skip TechDocRAG's element-graph metrics (rehr@10_L0..L4, ecr, poa, csr)")
    p.set_defaults(func=_cmd_eval)
