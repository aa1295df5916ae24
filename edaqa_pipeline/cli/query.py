"""``edaqa ask`` and ``edaqa eval``: query an indexed storage root without loading Dagster.

Errors a user can cause (no index, a method whose tables were not built, an unknown method, a
bad QA file, a misconfigured model) are one line on stderr and exit status 2, never a
traceback. A model that fails while answering is not such an error: the answer falls back to
the extractive one and a one-line note says why.

Answerers (``--answers``): ``llm`` is the grounded answer of the configured model (claims with
verified citations), the default when a model is configured (``EDAQA_LLM_*``); ``extractive``
is the offline answer quoted from the evidence, the default otherwise. With ``llm`` the
methods that can use a model (ChipMind's loop, TechDocRAG's query analysis) get it too.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

from edaqa_pipeline.registry import DEFAULT_METHOD, METHOD_NAMES

ANSWERERS = ("extractive", "llm")


def env_default(name: str) -> str | None:
    """The value of environment variable ``name`` as a CLI default (None when unset)."""
    value = os.environ.get(name, "").strip()
    return value or None


def storage_argument(parser: argparse.ArgumentParser) -> None:
    default = env_default("EDAQA_STORAGE")
    parser.add_argument("--storage", default=default, required=default is None,
                        help="storage root of an index (default: $EDAQA_STORAGE)")


def answers_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--answers", choices=ANSWERERS, default=None,
                        help="answerer: llm (the configured model's grounded answer; default when "
                        "EDAQA_LLM_* configures one) or extractive (offline quotes)")


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


def answer_client(choice: str | None) -> Any:
    """The LLM client for ``--answers`` (None = extractive), or ``QueryError``.

    No offline fallback inside the client: ``answer_question`` falls back itself and says so.
    """
    from edaqa_pipeline.llm import LLMError, client_from_env, llm_configured

    if choice is None:
        choice = "llm" if llm_configured() else "extractive"
    if choice == "extractive":
        return None
    if not llm_configured():
        raise QueryError("--answers llm needs a model: set EDAQA_LLM_BASE_URL and EDAQA_LLM_MODEL "
                         "(or EDAQA_LLM_API_KEY for api.openai.com); see docs/llm.md")
    try:
        return client_from_env(fallback_offline=False)
    except LLMError as exc:
        raise QueryError(str(exc)) from None


def build_retrievers(methods: list[str], snapshot: Any, llm: Any = None) -> dict[str, Any]:
    from edaqa_pipeline.registry import MethodNotBuiltError, UnknownMethodError, make_retriever
    from edaqa_pipeline.retrieval.snapshot import NoTrainedEncoderError

    out = {}
    for name in methods:
        try:
            out[name] = make_retriever(name, snapshot, llm=llm)
        except (UnknownMethodError, MethodNotBuiltError, NoTrainedEncoderError) as exc:
            raise QueryError(str(exc)) from None
    return out


def ask_record(question: str, method: str, retriever: Any, llm: Any, k: int) -> dict[str, Any]:
    """Retrieve, answer, and return the ``ask --json`` record (also ``POST /ask``)."""
    from edaqa_pipeline.generation.answer import answer_question

    started = time.perf_counter()
    result = retriever.retrieve(question, k)
    retrieval_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    answer = answer_question(question, list(result.items), llm)
    answer_ms = (time.perf_counter() - started) * 1000
    ids = {n.item.evidence_id: n.id for n in answer.evidence}
    return {
        "question": question, "method": method, **answer.to_json(),
        "retrieval_ms": round(retrieval_ms, 2), "answer_ms": round(answer_ms, 2),
        "evidence": [{**({"id": ids[e.evidence_id]} if e.evidence_id in ids else {}), **e.to_json()}
                     for e in result.items],
    }


def _spinner(llm: Any) -> Any:
    """A rich spinner on stderr showing the model's progress; a no-op without a model/TTY."""
    import contextlib

    if llm is None or not sys.stderr.isatty() or not hasattr(llm, "listening"):
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def spin() -> Any:
        from rich.console import Console

        with Console(stderr=True).status(f"answering with {llm.model} ...") as status, \
                llm.listening(lambda event: status.update(event.line())):
            yield

    return spin()


def warm(snapshot: Any, *retrievers: Any) -> None:
    """Load what a first query would (encoders and their ONNX exports, indexes), so that the
    reported retrieval time is the query's."""
    snapshot.base.encode(["warm up"])
    for retriever in retrievers:
        if hasattr(retriever, "warm"):
            retriever.warm()


def _cmd_ask(args: argparse.Namespace) -> int:
    try:
        llm = answer_client(args.answers)
        snapshot = load_snapshot(args.storage)
        retriever = build_retrievers([args.method], snapshot, llm)[args.method]
    except QueryError as exc:
        return _fail(str(exc))
    warm(snapshot, retriever)  # model load is not retrieval time
    with _spinner(llm):
        record = ask_record(args.question, args.method, retriever, llm, args.k)
    if args.json:
        print(json.dumps(record, indent=2, ensure_ascii=False))
        return 0
    print(f"Q: {args.question}\n\n{record['answer']}\n")
    if "fallback_reason" in record:
        print(f"note: {record['fallback_reason']}; answered extractively", file=sys.stderr)
    tokens = record["tokens"]
    cost = (f", {tokens['prompt_tokens']} prompt + {tokens['completion_tokens']} completion tokens"
            if record["answerer"] != "extractive" else "")
    dropped = f", {len(record['dropped_claims'])} unverified claim(s) dropped" if record["dropped_claims"] else ""
    print(f"Answered by {record['answerer']} in {record['answer_ms']:.0f} ms{cost}{dropped}.")
    print(f"Evidence ({args.method}, retrieval {record['retrieval_ms']:.1f} ms):")
    for rank, item in enumerate(record["evidence"], 1):
        first = next((ln for ln in item["text"].split("\n") if ln.strip()), "")[:90]
        label = item.get("id", f"{rank}.")
        print(f"  {label:<4} {item['citation']:<34} [{item['path']}] score={item['score']:.3f}  {first}")
    return 0


def _cmd_eval(args: argparse.Namespace) -> int:
    from edaqa_pipeline.evaluation.qa import QAFormatError, load_qa
    from edaqa_pipeline.evaluation.runner import run_evaluation, write_outputs
    from edaqa_pipeline.registry import available_methods

    try:
        items = load_qa(args.qa, args.qa_format, args.source_map)
        llm = answer_client(args.answers)
        judge = make_judge(args.judge)
        snapshot = load_snapshot(args.storage)
        methods = [m.strip() for m in args.methods.split(",") if m.strip()] or available_methods(snapshot.storage)
        retrievers = build_retrievers(methods, snapshot, llm)
    except (QAFormatError, QueryError) as exc:
        return _fail(str(exc))
    warm(snapshot, *retrievers.values())
    answerer = f"llm:{llm.model}" if llm is not None else "extractive"
    print(f"answers: {answerer}; judge: {judge.name if judge is not None else 'offline rules'}",
          file=sys.stderr)

    extra = None
    if not args.no_element_metrics:
        from edaqa_pipeline.evaluation.element_metrics import load_view

        view = load_view(snapshot.storage, snapshot.documents)

        def extra(item, evidence, answer):  # type: ignore[no-untyped-def]
            return view.scores(evidence, gold_spans=item.gold_spans, ref_passages=item.ref_passages,
                               gold_docs=item.gold_docs, answer=answer)

    from edaqa_pipeline.generation.answer import answer_question

    def answer(question: str, evidence: list) -> Any:  # type: ignore[type-arg]
        return answer_question(question, evidence, llm, packed=True)

    status = None
    if llm is not None and hasattr(llm, "throughput"):
        from edaqa_pipeline.llm import BatchProgress

        def status(done: int, total: int) -> str:
            batch = BatchProgress("answers", total, llm.throughput)
            batch.advance(done)
            return batch.line()

    metrics, rows = run_evaluation(items, retrievers, answer, k=args.k,
                                   embed=partial(snapshot.base.encode, stable=True), judge=judge,
                                   progress=not args.no_progress, extra_scores=extra, status=status)
    metrics["answerer"] = answerer
    if judge is not None:
        metrics["judge"] = judge.name
    out = Path(args.out)
    write_outputs(out, metrics, rows, reproduced="edaqa " + " ".join(sys.argv[1:]))
    print(f"wrote {out}/metrics.json, results.jsonl, report.md, report.html")
    headline = ["doc_recall@5", "ref_recall@2048t", "span_cover@2048t", "rougeL", "bleu",
                "llm_score", "atomic_f1", "citation_recall", "citation_precision"]
    print("method".ljust(24) + "".join(h.rjust(18) for h in headline))
    for method, values in metrics["methods"].items():
        print(method.ljust(24) + "".join(
            (f"{values[h]:.3f}" if h in values else "-").rjust(18) for h in headline))
    return 0


def make_judge(choice: str) -> Any:
    """The answer judge for ``--judge`` (None = offline rules), or ``QueryError``."""
    from edaqa_pipeline.evaluation.judge import AnswerJudge
    from edaqa_pipeline.llm import LLMError, judge_from_env, llm_configured

    configured = llm_configured() or bool(env_default("EDAQA_JUDGE_BASE_URL") or
                                          env_default("EDAQA_JUDGE_API_KEY"))
    if choice == "none" or (choice == "auto" and not configured):
        return None
    if not configured:
        raise QueryError("--judge llm needs a model: set EDAQA_JUDGE_BASE_URL and EDAQA_JUDGE_MODEL "
                         "(or the EDAQA_LLM_* settings); see docs/llm.md")
    try:
        return AnswerJudge(judge_from_env())
    except LLMError as exc:
        raise QueryError(str(exc)) from None


def add_query_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("ask", help="answer a question with cited evidence",
                       description="Answer a question from an index, citing the source lines.")
    p.add_argument("question")
    storage_argument(p)
    p.add_argument("--method", default=DEFAULT_METHOD, choices=METHOD_NAMES,
                   help=f"retrieval method (default: {DEFAULT_METHOD})")
    p.add_argument("--k", type=int, default=5, help="evidence items to retrieve (default 5)")
    answers_argument(p)
    p.add_argument("--json", action="store_true", help="print a machine-readable record")
    p.set_defaults(func=_cmd_ask)

    p = sub.add_parser("eval", help="compare retrieval methods and answers on a QA file",
                       description="Run methods on a QA file; writes metrics.json, results.jsonl, "
                       "report.md and report.html.")
    storage_argument(p)
    p.add_argument("--qa", required=True, help="QA file (edaqa JSONL or ORD-QA)")
    p.add_argument("--qa-format", default="auto", choices=["auto", "edaqa", "ordqa"])
    p.add_argument("--source-map", default=None, help="ORD-QA chunk-prefix -> document map")
    p.add_argument("--methods", default="", help="comma-separated; default: every method whose "
                   "indexes are built in STORAGE")
    p.add_argument("--k", type=int, default=10)
    answers_argument(p)
    p.add_argument("--judge", choices=["auto", "llm", "none"], default="auto",
                   help="LLM judge for llm_score, Atomic-ROUGE and citation support (EDAQA_JUDGE_*, "
                   "else EDAQA_LLM_*); auto = when configured")
    p.add_argument("--out", default="eval_out")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--no-element-metrics", action="store_true",
                   help="skip TechDocRAG's element-graph metrics (rehr@10_L0..L4, ecr, poa, csr)")
    p.set_defaults(func=_cmd_eval)
