"""What a cross-encoder rerank stage would cost the function-aware retriever, per query.

Why: the design allows a cross-encoder reranker (trained from the packaged MiniLM on
unit-derived pairs) only if it fits the retrieval budget, p50 <= 20 ms and p95 <= 50 ms on 2
cores. The cost of a cross-encoder does not depend on its weights, only on its architecture
and inputs, so it is measured before anything is trained: a MiniLM-L6 cross-encoder (the
packaged all-MiniLM-L6-v2 body with a fresh one-logit head, sentence-transformers
``CrossEncoder``) scores the real candidates ``fa_hybrid_tuned`` returns for the dev questions
(top N, truncated to L tokens). Printed next to it: the retriever's own time per query, the
CPU seconds per call and the load average (on a shared machine wall time overstates the cost;
``cpu / 2`` is what 2 idle cores would need at best).

    .venv/bin/python benchmarks/fa_rerank_latency.py --storage /tmp/fa26 --qa data/dev/openroad_dev.jsonl
        [--n 5,10] [--max-length 128,256] [--questions 40] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _timed(fn, runs: list[tuple[float, float]]) -> None:  # type: ignore[no-untyped-def]
    wall, cpu = time.perf_counter(), _cpu()
    fn()
    runs.append(((time.perf_counter() - wall) * 1000, (_cpu() - cpu) * 1000))


def _row(name: str, runs: list[tuple[float, float]]) -> dict[str, float | str]:
    walls = sorted(r[0] for r in runs)
    return {"stage": name, "p50_ms": round(statistics.median(walls), 1),
            "p95_ms": round(walls[int(0.95 * (len(walls) - 1))], 1),
            "cpu_ms_mean": round(statistics.mean(r[1] for r in runs), 1)}


def main() -> int:
    import torch
    from sentence_transformers import CrossEncoder

    from edaqa_pipeline.evaluation.qa import load_qa
    from edaqa_pipeline.registry import make_retriever
    from edaqa_pipeline.retrieval.snapshot import IndexSnapshot
    from edaqa_pipeline.settings import default_encoder_path

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--storage", required=True, type=Path)
    p.add_argument("--qa", required=True)
    p.add_argument("--method", default="fa_hybrid_tuned")
    p.add_argument("--n", default="5,10")
    p.add_argument("--max-length", dest="max_length", default="128,256")
    p.add_argument("--questions", type=int, default=40)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    if Path(args.qa).name.startswith("ord-qa"):
        raise SystemExit(f"error: {args.qa} is the ORD-QA test set")
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()[0]
    questions = [i.question for i in load_qa(args.qa)][: args.questions]
    retriever = make_retriever(args.method, IndexSnapshot.load(args.storage))
    retriever.retrieve("warm up", 10)
    results = []
    retrieval_runs: list[tuple[float, float]] = []
    candidates = []
    for q in questions:
        holder = []
        _timed(lambda q=q, holder=holder: holder.append(retriever.retrieve(q, 20)), retrieval_runs)
        candidates.append([e.text for e in holder[0]])
    results.append(_row(f"{args.method} retrieve (k=20)", retrieval_runs))
    for length in (int(x) for x in args.max_length.split(",")):
        model = CrossEncoder(default_encoder_path(), num_labels=1, max_length=length, device="cpu")
        model.predict([("warm", "up")], show_progress_bar=False)
        for n in (int(x) for x in args.n.split(",")):
            runs: list[tuple[float, float]] = []
            for q, texts in zip(questions, candidates, strict=True):
                pairs = [(q, t) for t in texts[:n]]
                _timed(lambda pairs=pairs, model=model: model.predict(pairs, batch_size=len(pairs) or 1,
                                                                     show_progress_bar=False), runs)
            results.append(_row(f"cross-encoder top-{n}, {length} tokens", runs))
    out = {"load_average_before": round(load_before, 2), "load_average_after": round(os.getloadavg()[0], 2),
           "threads": args.threads, "questions": len(questions), "stages": results}
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
