"""Answer quality and cost of chosen methods on a QA set, with whatever model is configured.

Why: the primary paper's headline is answer quality (ROUGE-L, BLEU, LLM-Score); this runs the
real answer path (retrieve -> pack to 2,048 tokens -> grounded answer -> verified citations)
for each method and prints the answer metrics next to what answering cost (tokens/s,
completion tokens and seconds per question). Offline (no model) it measures the extractive
answerer; ``--local`` starts llama.cpp serving the packaged SmolLM2-135M; otherwise the
``EDAQA_LLM_*`` settings (and ``EDAQA_JUDGE_*`` for the judge) are used.

    .venv/bin/python benchmarks/answers.py --storage STORE --qa ../shared/benchmarks/ord-qa.jsonl \\
        --source-map ../shared/benchmarks/ord-qa.source_map.json --methods bm25,techdoc \\
        [--answers extractive|llm] [--local] [--judge] [--limit N] [--out DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

COLUMNS = ("rougeL", "bleu", "llm_score", "atomic_f1", "citation_recall", "citation_precision",
           "abstain_gold_in_context", "abstain_gold_missing", "claims", "dropped_claims")


@contextlib.contextmanager
def _local_model(enabled: bool) -> Iterator[None]:
    """With ``--local``: SmolLM2 on llama.cpp, exported as EDAQA_LLM_* for this process."""
    if not enabled:
        yield
        return
    from edaqa_pipeline_tests.llm_servers import SMOLLM2_ALIAS, llama_server, missing_local_llm

    reason = missing_local_llm()
    if reason:
        raise SystemExit(reason)
    with llama_server() as url:
        os.environ.update({"EDAQA_LLM_BASE_URL": url, "EDAQA_LLM_MODEL": SMOLLM2_ALIAS,
                           "EDAQA_LLM_PROVIDER": "openai", "EDAQA_LLM_TIMEOUT_S": "300"})
        yield


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if abs(value) >= 100 or isinstance(value, int) else f"{value:.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--storage", required=True)
    parser.add_argument("--qa", required=True)
    parser.add_argument("--source-map", default=None)
    parser.add_argument("--methods", default="bm25")
    parser.add_argument("--answers", choices=["extractive", "llm"], default=None)
    parser.add_argument("--local", action="store_true", help="start SmolLM2 on llama.cpp")
    parser.add_argument("--judge", action="store_true", help="judge with EDAQA_JUDGE_* / the model")
    parser.add_argument("--limit", type=int, default=0, help="first N questions only")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--out", default=None, help="also write metrics.json/results.jsonl/reports")
    args = parser.parse_args()

    from edaqa_pipeline.evaluation.qa import load_qa
    from edaqa_pipeline.evaluation.runner import run_evaluation, write_outputs
    from edaqa_pipeline.generation.answer_settings import evidence_answerer
    from edaqa_pipeline.service import EdaqaService, ServiceError, answer_client, make_judge
    from edaqa_pipeline.service.clients import answer_settings

    items = load_qa(args.qa, "auto", args.source_map)
    if args.limit:
        items = items[: args.limit]
    with _local_model(args.local):
        try:
            llm = answer_client(args.answers or ("llm" if args.local else None))
            answer = evidence_answerer(llm, answer_settings())
            judge = make_judge("llm" if args.judge else "none")
            service = EdaqaService.open(args.storage)
            snapshot = service.snapshot
            retrievers = service.retrievers([m.strip() for m in args.methods.split(",")], llm)
        except ServiceError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        snapshot.base.encode(["warm up"])
        answerer = f"llm:{llm.model}" if llm is not None else "extractive"

        started = time.monotonic()
        metrics, rows = run_evaluation(items, retrievers, answer, k=args.k, judge=judge,
                                       progress=sys.stderr.isatty())
        total_s = time.monotonic() - started
        stats = llm.stats if llm is not None else None
        rate = llm.throughput.tokens_per_s if llm is not None else None

    print(f"{len(items)} questions from {args.qa}; answers: {answerer}; "
          f"judge: {judge.name if judge is not None else 'offline rules'}; "
          f"{total_s:.0f} s in all ({total_s / max(len(rows), 1):.2f} s per question and method)")
    present = [c for c in COLUMNS if any(c in v for v in metrics["methods"].values())]
    print("| method | " + " | ".join(present) + " |")
    print("|---|" + "---|" * len(present))
    for method, values in metrics["methods"].items():
        print(f"| {method} | " + " | ".join(_fmt(values.get(c)) for c in present) + " |")
    if stats is not None:
        answered = max(len(rows), 1)
        print(f"model {llm.model}: {stats.calls} requests, {stats.cache_hits} cache hits, "
              f"{stats.prompt_tokens} prompt + {stats.completion_tokens} completion tokens "
              f"({stats.completion_tokens / answered:.0f} per answer, longest "
              f"{stats.max_completion_tokens}), decode {rate or 0:.1f} tok/s, "
              f"{stats.errors} errors, {stats.cancelled} cancelled, "
              f"{sum(1 for r in rows if r.get('fallback_reason'))} extractive fallbacks")
    if args.out:
        metrics["answerer"] = answerer
        write_outputs(Path(args.out), metrics, rows, reproduced=" ".join(["benchmarks/answers.py", *sys.argv[1:]]))
        print(json.dumps({"wrote": args.out}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
