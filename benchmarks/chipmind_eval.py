"""ChipMind on ORD-QA: build the ChipKG over an indexed storage root, run the four ChipMind
variants (+ the BM25 and dense baselines and a vector-seeds-only ChipMind) through the
evaluation runner, print the table and the per-question trace statistics.

    .venv/bin/python benchmarks/chipmind_eval.py [--storage /tmp/or24] [--work /tmp/or24_chipmind]
        [--out /tmp/chipmind_eval] [--k 10]

``--storage`` is never written: it is copied to ``--work`` once (the KG tables and the
LanceDB ``kg_nodes`` table are added there; later runs rebuild incrementally). The runner's
outputs (metrics.json, results.jsonl, report.md/html) go to ``--out``; every results.jsonl row
of a ChipMind method carries ``chipmind`` (iterations, retrieved-set sizes, sub-queries, target
anchor, K and MIG per step, all chunk ids retrieved at any step, encode / graph milliseconds),
and every row carries ``scores["system_recall@10"]`` (see ``edaqa_pipeline.evaluation.system_recall``).

Latency: ``retrieval_ms`` is the whole loop per question (query + clause encoding in one
encoder call, PPR per step, adaptive K, filter, gap detection); ``graph_ms`` excludes the
encoder call, which on a loaded CPU dominates and varies with the other processes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from edaqa_pipeline.evaluation.qa import load_qa
from edaqa_pipeline.evaluation.runner import build_metrics, run_evaluation, write_outputs
from edaqa_pipeline.evaluation.system_recall import steps_of, system_recall_at_k
from edaqa_pipeline.generation.extractive import extractive_answer
from edaqa_pipeline.graphs.chipkg.graph import build_from_storage
from edaqa_pipeline.methods.chipmind.retriever import FACTORIES, make_chipmind
from edaqa_pipeline.model import EvidenceItem
from edaqa_pipeline.registry import make_retriever
from edaqa_pipeline.retrieval.snapshot import IndexSnapshot

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"
SYSTEM_K = 10


class Recorder:
    """Wraps a retriever; keeps, per call, its trace and the steps for system_recall."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls: list[dict[str, Any]] = []

    def retrieve(self, query: str, k: int) -> list[EvidenceItem]:
        evidence = self.inner.retrieve(query, k)
        self.calls.append({"trace": dict(getattr(self.inner, "last_trace", {}) or {}),
                           "steps": steps_of(self.inner, evidence[:k])})
        return evidence


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, float), q)) if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--storage", default="/tmp/or24")
    ap.add_argument("--work", default="/tmp/or24_chipmind")
    ap.add_argument("--qa", default=str(SHARED / "ord-qa.jsonl"))
    ap.add_argument("--source-map", default=str(SHARED / "ord-qa.source_map.json"))
    ap.add_argument("--out", default="/tmp/chipmind_eval")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--baselines", default="bm25,dense",
                    help="comma-separated baseline methods of edaqa_pipeline.methods.baselines")
    ap.add_argument("--no-extra", action="store_true", help="skip the vector-seeds-only row")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch intra-op threads for the encoder (all methods); on a shared "
                    "2-core machine 1 thread encodes a query ~5x faster than 2 contending ones")
    args = ap.parse_args(argv)
    if args.threads > 0:
        import torch

        torch.set_num_threads(args.threads)

    work = Path(args.work)
    if not work.exists():
        shutil.copytree(args.storage, work)
        print(f"copied {args.storage} -> {work}")
    started = time.perf_counter()
    build = build_from_storage(work)
    print(f"ChipKG: {build['nodes']} nodes {build['nodes_by_kind']}, {build['triples']} triples "
          f"{build['triples_by_kind']}; reused {build['reused_documents']}/{build['documents']} "
          f"documents, encoded {build['encoded']}/{build['embedded']} node vectors; "
          f"problems (orphans, no provenance, missing targets) = {build['problems']}; "
          f"{time.perf_counter() - started:.1f} s")

    items = load_qa(args.qa, "auto", args.source_map)
    snapshot = IndexSnapshot.load(work)
    snapshot.base.encode(["warm up"])
    retrievers: dict[str, Recorder] = {
        b: Recorder(make_retriever(b, snapshot)) for b in args.baselines.split(",") if b}
    for name, factory in FACTORIES.items():
        retrievers[name] = Recorder(factory(snapshot))
    if not args.no_extra:
        retrievers["chipmind_vector_seeds"] = Recorder(
            make_chipmind(snapshot, "chipmind_vector_seeds", lexical_weight=0.0))
    for r in retrievers.values():  # build lazy caches (lexical index) outside the timed calls
        r.inner.retrieve("warm up", 1)
        r.calls.clear()

    def embed(texts: list[str]) -> np.ndarray:
        return snapshot.base.encode(texts)

    metrics, rows = run_evaluation(items, retrievers, extractive_answer, k=args.k, embed=embed,
                                   progress=False)
    # attach the traces and system_recall@10 to the rows (runner order: method, then question)
    per_method = {name: iter(r.calls) for name, r in retrievers.items()}
    by_id = {it.id: it for it in items}
    for row in rows:
        call = next(per_method[row["method"]])
        item = by_id[row["id"]]
        sr = system_recall_at_k(call["steps"], SYSTEM_K, ref_passages=item.ref_passages,
                                gold_docs=item.gold_docs)
        if sr is not None:
            row["scores"][f"system_recall@{SYSTEM_K}"] = round(sr, 6)
        if call["trace"]:
            row["chipmind"] = call["trace"]
    metrics = build_metrics(items, list(retrievers), rows)
    out = Path(args.out)
    write_outputs(out, metrics, rows, reproduced="python benchmarks/chipmind_eval.py " + " ".join(sys.argv[1:]))

    cols = ["doc_recall@1", "doc_recall@5", f"ref_recall{'@2048t'}", f"system_recall@{SYSTEM_K}",
            "latency_ms_p50", "latency_ms_p95"]
    head = f"{'method':24s}" + "".join(f"{c:>18s}" for c in cols) + f"{'graph_ms p50/p95':>20s}{'encode_ms p50/p95':>20s}{'iters':>7s}{'|C|':>7s}{'|all|':>7s}"
    print(f"\nORD-QA, {len(items)} questions, k={args.k}\n" + head)
    summary: dict[str, Any] = {}
    for name in retrievers:
        vals = metrics["methods"][name]
        mine = [r for r in rows if r["method"] == name]
        traces = [r["chipmind"] for r in mine if "chipmind" in r]
        graph = [t["graph_ms"] for t in traces]
        enc = [t["encode_ms"] for t in traces]
        line = f"{name:24s}" + "".join(
            f"{vals[c]:18.3f}" if c in vals else f"{'-':>18s}" for c in cols)
        if traces:
            iters = statistics.mean(t["iterations"] for t in traces)
            size = statistics.mean(t["retrieved_set_sizes"][-1] for t in traces)
            total = statistics.mean(t["n_all_retrieved"] for t in traces)
            line += (f"{_pct(graph, 50):9.1f}/{_pct(graph, 95):<10.1f}{_pct(enc, 50):9.1f}/{_pct(enc, 95):<10.1f}"
                     f"{iters:7.2f}{size:7.2f}{total:7.2f}")
        print(line)
        summary[name] = {c: vals.get(c) for c in cols} | (
            {"graph_ms_p50": _pct(graph, 50), "graph_ms_p95": _pct(graph, 95),
             "encode_ms_p50": _pct(enc, 50), "encode_ms_p95": _pct(enc, 95),
             "iterations_mean": statistics.mean(t["iterations"] for t in traces),
             "context_size_mean": statistics.mean(t["retrieved_set_sizes"][-1] for t in traces),
             "all_retrieved_mean": statistics.mean(t["n_all_retrieved"] for t in traces),
             "iterations_histogram": {str(n): sum(1 for t in traces if t["iterations"] == n)
                                      for n in sorted({t["iterations"] for t in traces})}}
            if traces else {})
    (out / "chipmind_summary.json").write_text(json.dumps({"build": build, "methods": summary}, indent=2, default=str))
    print(f"\nwrote {out}/metrics.json, results.jsonl, report.md, chipmind_summary.json")
    print("columns: |C| = gathered context size after the last iteration (returned: its first k); "
          "|all| = distinct passages retrieved at any step; latency = whole retrieve() call; "
          "graph_ms = latency without the one encoder call")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
