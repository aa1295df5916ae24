"""ChipMind on a dev QA set: build the index and the ChipKG through Dagster, run the four
ChipMind variants (+ baselines and a vector-seeds-only ChipMind) through the evaluation runner,
print the table and the per-question trace statistics.

    .venv/bin/python benchmarks/chipmind_eval.py [--corpus /work/shared/corpus/openroad]
        [--storage /tmp/cm26] [--qa data/dev/openroad_dev.jsonl] [--out /tmp/chipmind_eval]
        [--k 10] [--llm]

The build is ``edaqa_pipeline.cli.index.index_corpus(corpus, storage,
extra_jobs=("build_chip_kg",))``: the same Dagster jobs as ``edaqa index --with chipkg``
(incremental: unchanged documents and node vectors are reused). The runner's outputs
(metrics.json, results.jsonl, report.md/html) go to ``--out``; every results.jsonl row of a
ChipMind method carries its ``trace`` (iterations, retrieved-set sizes, sub-queries, every
reasoning step, K and MIG per step, all chunk ids retrieved at any step, timings) and every
row ``scores["system_recall@k"]`` (pooled over the retrieval's steps). ``--llm`` sends the
reasoning tasks to the model the environment configures (``EDAQA_LLM_*``).

Tune on dev sets only (``data/dev``); ORD-QA is a test set.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from edaqa_pipeline.cli.index import index_corpus, instance_for
from edaqa_pipeline.evaluation.qa import load_qa
from edaqa_pipeline.evaluation.runner import run_evaluation, write_outputs
from edaqa_pipeline.generation.answer import answer_question
from edaqa_pipeline.graphs.chipkg.passages import PPRSeeds
from edaqa_pipeline.graphs.chipkg.store import NODES_TABLE
from edaqa_pipeline.methods.chipmind.retriever import FACTORIES, make_chipmind
from edaqa_pipeline.registry import make_retriever
from edaqa_pipeline.retrieval.snapshot import IndexSnapshot

REPO = Path(__file__).resolve().parents[1]


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, float), q)) if values else float("nan")


def build(corpus: Path, storage: Path) -> dict[str, Any]:
    """Index + ChipKG through Dagster; the ChipKG materialisation's metadata."""
    from dagster import AssetKey

    started = time.perf_counter()
    index_corpus(corpus, storage, log=lambda *_: None, extra_jobs=("build_chip_kg",))
    event = instance_for(storage).get_latest_materialization_event(AssetKey(NODES_TABLE))
    meta = event.asset_materialization.metadata if event and event.asset_materialization else {}
    out = {k: getattr(v, "value", v) for k, v in meta.items()}
    out["build_s"] = round(time.perf_counter() - started, 1)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="/work/shared/corpus/openroad")
    ap.add_argument("--storage", default="/tmp/cm26")
    ap.add_argument("--qa", default=str(REPO / "data" / "dev" / "openroad_dev.jsonl"))
    ap.add_argument("--out", default="/tmp/chipmind_eval")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--baselines", default="bm25,dense", help="comma-separated baseline methods")
    ap.add_argument("--no-extra", action="store_true", help="skip the vector-seeds-only row")
    ap.add_argument("--llm", action="store_true", help="reasoning tasks through EDAQA_LLM_* (default: offline rules)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch intra-op threads for the encoder (on a shared 2-core machine 1 thread "
                    "encodes a query faster than 2 contending ones)")
    args = ap.parse_args(argv)
    if args.threads > 0:
        import torch

        torch.set_num_threads(args.threads)
    kg = build(Path(args.corpus), Path(args.storage))
    print(f"ChipKG: {json.dumps({k: v for k, v in kg.items() if not k.startswith('rule:')}, default=str)}")

    llm = None
    if args.llm:
        from edaqa_pipeline.llm import client_from_env

        llm = client_from_env(fallback_offline=True)
    items = load_qa(args.qa)
    snapshot = IndexSnapshot.load(Path(args.storage))
    snapshot.base.encode(["warm up"])
    retrievers: dict[str, Any] = {b: make_retriever(b, snapshot) for b in args.baselines.split(",") if b}
    retrievers.update({name: factory(snapshot, llm=llm) for name, factory in FACTORIES.items()})
    if not args.no_extra:
        retrievers["chipmind_vector_seeds"] = make_chipmind(snapshot, "chipmind_vector_seeds", llm=llm,
                                                            seeds=PPRSeeds(lexical_weight=0.0))
    for r in retrievers.values():  # lazy caches (lexical index) outside the timed calls
        r.retrieve("warm up", 1)
    def answer(question: str, evidence: list) -> Any:  # type: ignore[type-arg]
        return answer_question(question, evidence, None, packed=True)  # extractive, offline

    metrics, rows = run_evaluation(items, retrievers, answer, k=args.k,
                                   embed=partial(snapshot.base.encode, stable=True), progress=False)
    out = Path(args.out)
    write_outputs(out, metrics, rows, reproduced="python benchmarks/chipmind_eval.py " + " ".join(sys.argv[1:]))

    cols = ["span_cover@2048t", "span_all@2048t", "doc_recall@1", "doc_recall@5", f"system_recall@{args.k}",
            "latency_ms_p50", "latency_ms_p95"]
    print(f"\n{args.qa}, {len(items)} questions, k={args.k}\n" + f"{'method':24s}"
          + "".join(f"{c:>18s}" for c in cols) + f"{'graph_ms p50':>14s}{'iters':>7s}{'|C|':>7s}{'|all|':>7s}")
    summary: dict[str, Any] = {}
    for name in retrievers:
        vals = metrics["methods"][name]
        traces = [r["trace"] for r in rows if r["method"] == name and "trace" in r]
        line = f"{name:24s}" + "".join(f"{vals[c]:18.3f}" if c in vals else f"{'-':>18s}" for c in cols)
        extra: dict[str, Any] = {}
        if traces:
            graph = [t["timings_ms"]["graph"] for t in traces]
            extra = {"graph_ms_p50": _pct(graph, 50), "graph_ms_p95": _pct(graph, 95),
                     "iterations_mean": statistics.mean(t["iterations"] for t in traces),
                     "context_size_mean": statistics.mean(t["retrieved_set_sizes"][-1] for t in traces),
                     "all_retrieved_mean": statistics.mean(t["n_all_retrieved"] for t in traces),
                     "stop_reasons": {s: sum(1 for t in traces if t["stop_reason"] == s)
                                      for s in sorted({t["stop_reason"] for t in traces})}}
            line += (f"{extra['graph_ms_p50']:14.1f}{extra['iterations_mean']:7.2f}"
                     f"{extra['context_size_mean']:7.2f}{extra['all_retrieved_mean']:7.2f}")
        print(line)
        summary[name] = {c: vals.get(c) for c in cols} | extra
    (out / "chipmind_summary.json").write_text(json.dumps({"build": kg, "methods": summary}, indent=2, default=str))
    print(f"\nwrote {out}/metrics.json, results.jsonl, report.md, chipmind_summary.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
