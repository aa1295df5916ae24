"""``edaqa ask`` and ``edaqa eval``: arguments in, printed results out; the work is the service's.

Both commands call ``edaqa_pipeline.service`` (which reads the stored tables and LanceDB and
never loads Dagster, so answering starts fast). Errors a user can cause (no index, a method
whose tables were not built, an unknown method, a bad QA file, a misconfigured model) come
back as one ``ServiceError`` and are printed as one line on stderr with exit status 2, never a
traceback. A model that fails while answering is not such an error: the answer falls back to
the extractive one and a one-line note says why.

Answerers (``--answers``): ``llm`` is the grounded answer of the configured model (claims with
verified citations), the default when a model is configured (``EDAQA_LLM_*``); ``extractive``
is the offline answer quoted from the evidence, the default otherwise. With ``llm`` the
methods that can use a model (ChipMind's loop, TechDocRAG's query analysis) get it too.

``edaqa eval --export-votes OUT`` writes the votes readers gave on the answer page as a QA file
that ``--qa`` reads back (``service.votes``), so up-voted answers can become a test set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from edaqa_pipeline import service
from edaqa_pipeline.registry import DEFAULT_METHOD, METHOD_NAMES


def env_default(name: str) -> str | None:
    """The value of environment variable ``name`` as a CLI default (None when unset)."""
    value = os.environ.get(name, "").strip()
    return value or None


def storage_argument(parser: argparse.ArgumentParser) -> None:
    default = env_default("EDAQA_STORAGE")
    parser.add_argument("--storage", default=default, required=default is None,
                        help="storage root of an index (default: $EDAQA_STORAGE)")


def release_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--release", default=None, metavar="NAME",
                        help="on a storage root with several releases: answer from release NAME "
                        "(default: the release the question names, else the newest)")


def answers_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--answers", choices=service.ANSWERERS, default=None,
                        help="answerer: llm (the configured model's grounded answer; default when "
                        "EDAQA_LLM_* configures one) or extractive (offline quotes)")


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


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


def _cmd_ask(args: argparse.Namespace) -> int:
    try:
        llm = service.answer_client(args.answers)
        svc = service.EdaqaService.open(args.storage)
        svc.check_request(args.question, args.method, args.k)  # before loading any model
        release, _ = svc.pick_release(args.question, args.release)
        svc.warm(args.method, answerer=llm, release=release)  # model load is not retrieval time
        with _spinner(llm):
            record = svc.answer(args.question, args.method, args.k, llm, release=args.release)
    except service.ServiceError as exc:
        return _fail(str(exc))
    if args.json:
        print(json.dumps(record, indent=2, ensure_ascii=False))
        return 0
    print(f"Q: {args.question}\n\n{record['answer']}\n")
    if record.get("release"):
        print(f"Release: {record['release']} ({record['release_from']})")
    from edaqa_pipeline.service.changes import change_values

    for change in record.get("changes", ()):
        cited = "; ".join(change[s]["citation"] for s in ("old", "new") if s in change)
        print(f"  {change['option'] or change['command']}: {change['kind'].replace('_', ' ')}"
              f"{change_values(change)} [{cited}]")
    for reason in record.get("retrieval_fallbacks", ()):
        print(f"note: {reason}", file=sys.stderr)
    if "fallback_reason" in record:
        print(f"note: {record['fallback_reason']}; answered extractively", file=sys.stderr)
    tokens = record["tokens"]
    cost = (f", {tokens['prompt_tokens']} prompt + {tokens['completion_tokens']} completion tokens"
            if record["answerer"] != "extractive" else "")
    dropped = f", {len(record['dropped_claims'])} unverified claim(s) dropped" if record["dropped_claims"] else ""
    quotes = sum(1 for c in record["claims"] if c.get("quoted"))
    quoted = f", the last {quotes} claim(s) quoted from the evidence" if quotes else ""
    print(f"Answered by {record['answerer']} in {record['answer_ms']:.0f} ms{cost}{dropped}{quoted}.")
    print(f"Evidence ({args.method}, retrieval {record['retrieval_ms']:.1f} ms):")
    for rank, item in enumerate(record["evidence"], 1):
        first = next((ln for ln in item["text"].split("\n") if ln.strip()), "")[:90]
        label = item.get("id", f"{rank}.")
        print(f"  {label:<4} {item['citation']:<34} [{item['path']}] score={item['score']:.3f}  {first}")
        if item.get("location", item["citation"]) != item["citation"]:  # a PDF page's section
            print(f"       {item['location']}")
    return 0


HEADLINE = ("doc_recall@5", "ref_recall@2048t", "span_cover@2048t", "rougeL", "bleu",
            "llm_score", "atomic_f1", "citation_recall", "citation_precision")


def _cmd_export_votes(args: argparse.Namespace) -> int:
    try:
        records = service.export_votes(args.storage, args.export_votes)
    except service.ServiceError as exc:
        return _fail(str(exc))
    up = sum(r["vote"] == "up" for r in records)
    print(f"wrote {args.export_votes}: {len(records)} voted answers, {up} up-voted as gold, "
          f"{len(records) - up} without a reference answer")
    return 0


def _cmd_eval(args: argparse.Namespace) -> int:
    if args.export_votes:
        return _cmd_export_votes(args)
    if not args.qa:
        return _fail("--qa is required (or --export-votes OUT)")
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    try:
        evaluation = service.prepare_evaluation(
            args.storage, args.qa, qa_format=args.qa_format, source_map=args.source_map,
            methods=methods, answers=args.answers, judge=args.judge, k=args.k,
            element_metrics=not args.no_element_metrics, release=args.release)
    except service.ServiceError as exc:
        return _fail(str(exc))
    print(f"answers: {evaluation.answerer}; judge: {evaluation.judge_name}", file=sys.stderr)
    metrics, rows = evaluation.run(progress=not args.no_progress)
    out = Path(args.out)
    evaluation.write(out, metrics, rows, reproduced="edaqa " + " ".join(sys.argv[1:]))
    print(f"wrote {out}/metrics.json, results.jsonl, report.md, report.html")
    print("method".ljust(24) + "".join(h.rjust(18) for h in HEADLINE))
    for method, values in metrics["methods"].items():
        print(method.ljust(24) + "".join(
            (f"{values[h]:.3f}" if h in values else "-").rjust(18) for h in HEADLINE))
    return 0


def add_query_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("ask", help="answer a question with cited evidence",
                       description="Answer a question from an index, citing the source lines.")
    p.add_argument("question")
    storage_argument(p)
    p.add_argument("--method", default=DEFAULT_METHOD, choices=METHOD_NAMES,
                   help=f"retrieval method (default: {DEFAULT_METHOD})")
    p.add_argument("--k", type=int, default=5,
                   help=f"evidence items to retrieve (default 5, at most {service.MAX_K})")
    answers_argument(p)
    p.add_argument("--json", action="store_true", help="print a machine-readable record")
    release_argument(p)
    p.set_defaults(func=_cmd_ask)

    p = sub.add_parser("eval", help="compare retrieval methods and answers on a QA file",
                       description="Run methods on a QA file; writes metrics.json, results.jsonl, "
                       "report.md and report.html. With --export-votes OUT it writes the answer "
                       "page's votes as a QA file instead.")
    storage_argument(p)
    p.add_argument("--qa", help="QA file (edaqa JSONL or ORD-QA)")
    p.add_argument("--export-votes", metavar="OUT", default=None,
                   help="instead of evaluating, write the answer page's votes (STORAGE/feedback/"
                   "votes.jsonl) as a QA file: up-voted answers with their citations as gold")
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
    release_argument(p)
    p.add_argument("--no-element-metrics", action="store_true",
                   help="skip TechDocRAG's element-graph metrics (rehr@10_L0..L4, ecr, poa, csr)")
    p.set_defaults(func=_cmd_eval)
