"""Robustness of the ``techdoc`` retriever (the paper's Table 10) on ORD-QA.

Experiment 2A, identifier corruption: OCR-like confusions (l->1, o->0, m->rn, _->space, ...;
``evaluation.corruption.corrupt_text``) hit each identifier-like token of the parsed text (commands,
options, parameter names, message ids, table/figure/section labels) with probability p. The
element graph, its identifier view, its summaries (re-embedded) and its edges are rebuilt from
the damaged text, as a damaged parse would produce them; the raw evidence handed to the
answerer keeps the original text, so ref_recall measures retrieval, not string damage.
Queries stay clean.

Experiment 2B, edge dropout: a fraction p of the element graph's edges (every relation) is
removed at random before retrieval.

Per level it prints ORD-QA ref_recall@2048t and doc_recall@5 (what the evaluation report
uses), plus the paper's own columns: rehr@10 at L0 for 2A and span-based ECR for 2B, both
measured on the clean graph. Levels 0/5/10/20/30%, averaged over ``--seeds`` seeds.

    .venv/bin/python benchmarks/robustness.py --storage /tmp/or24 \\
        --qa ../shared/benchmarks/ord-qa.jsonl \\
        --source-map ../shared/benchmarks/ord-qa.source_map.json [--seeds 3] [--json out.json]

Vectors go through the shared ``retrieval.embedder.Embedder`` (``--vector-cache``: its known
vectors as Parquet): query vectors are computed once and reused across levels (the queries
never change), and a summary is encoded again only when a corruption level changes its text.

``--latency`` instead measures per-query latency on the same questions, round-robin with
``bm25``, ``dense`` and ``hybrid_rrf`` (so machine load hits every method alike): techdoc
end to end (query encoding included, as ``edaqa eval`` times it), techdoc without the query
encoding (vector precomputed) and the query encoding alone.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import polars as pl

from edaqa_pipeline.evaluation import corruption
from edaqa_pipeline.evaluation import element_metrics as em
from edaqa_pipeline.evaluation import metrics as m
from edaqa_pipeline.evaluation.qa import QAItem, load_qa
from edaqa_pipeline.graphs.elements import graph, store
from edaqa_pipeline.graphs.elements.index import ElementIndex
from edaqa_pipeline.methods.techdoc.retriever import TechDocRetriever
from edaqa_pipeline.retrieval.embedder import VECTOR_KEY_COLUMNS, Embedder, text_hash, vector_series
from edaqa_pipeline.retrieval.snapshot import IndexSnapshot
from edaqa_pipeline.storage.tables import read_partitions
from edaqa_pipeline.text import identifiers

LEVELS = (0, 5, 10, 20, 30)


def load_embedder(snapshot: IndexSnapshot, path: Path | None) -> Embedder:
    """The shared Embedder, knowing the vectors saved at ``path`` by an earlier run and the
    summary vectors of the index (LanceDB ``elements``)."""
    previous = pl.read_parquet(path) if path is not None and path.is_file() else None
    stored = store.stored_vectors(snapshot.lancedb_uri)
    if stored is not None:
        stored = stored.rename({"element_id": "item_id"})
    return Embedder.from_frames(snapshot.base, previous, stored)


def save_embedder(embedder: Embedder, path: Path | None) -> None:
    if path is None or not embedder.known:
        return
    keys = list(embedder.known)
    frame = pl.DataFrame([list(col) for col in zip(*keys, strict=True)],
                         schema={c: pl.String() for c in VECTOR_KEY_COLUMNS}, orient="col")
    vectors = np.stack([embedder.known[k] for k in keys])
    frame.with_columns(vector_series("vector", vectors, vectors.shape[1])).write_parquet(path)


class QueryEncoder:
    """Query vectors through the Embedder (kind ``query``, keyed by the query's hash)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.embedder.embed("query", [text_hash(t) for t in texts], texts)


def load_blocks(storage: Path, documents: list[str]) -> dict[str, list[dict[str, Any]]]:
    blocks = read_partitions(storage / "tables", "parsed_documents", documents)
    if blocks is None:
        raise SystemExit(f"{storage} has no parsed_documents")
    out: dict[str, list[dict[str, Any]]] = {}
    for row in blocks.iter_rows(named=True):
        out.setdefault(row["document"], []).append(row)
    return out


def corrupted_blocks(blocks: dict[str, list[dict[str, Any]]], rate: float, seed: int) -> dict[str, list[dict[str, Any]]]:
    out = {}
    for doc, rows in blocks.items():
        rng = random.Random(f"{seed}:{doc}")
        out[doc] = [{**b, "text": corruption.corrupt_text(b["text"], rate, rng),
                     "raw": corruption.corrupt_text(b["raw"] or "", rate, random.Random(f"{seed}:{doc}:{b['block_id']}"))}
                    for b in rows]
    return out


def restore_raw(rows: list[dict[str, Any]], clean: list[dict[str, Any]]) -> None:
    """The evidence store keeps the original text (see the module docstring)."""
    original = {r["element_id"]: r for r in clean}
    for row in rows:
        src = original.get(row["element_id"])
        if src is not None:
            row["raw"], row["header_raw"] = src["raw"], src["header_raw"]


def evaluate(retriever: TechDocRetriever, items: list[QAItem], view: em.ElementGraphView) -> dict[str, float]:
    sums: dict[str, list[float]] = {}
    for item in items:
        evidence = retriever.retrieve(item.question, 10)[:10]
        packed = m.pack_to_budget(evidence, m.DEFAULT_BUDGET_TOKENS)
        scores = {
            "ref_recall@2048t": m.ref_recall(packed, item.ref_passages),
            "doc_recall@5": m.doc_recall_at_k(evidence, item.gold_docs, 5),
        }
        scores.update(view.scores(evidence, ref_passages=item.ref_passages, gold_docs=item.gold_docs))
        named = any(identifiers.identifier_kind(i) != "label" for i in identifiers.query_identifiers(item.question))
        for key, value in scores.items():
            if value is not None:
                sums.setdefault(key, []).append(float(value))
                if named:  # the questions that name a command / option / variable ...
                    sums.setdefault(f"named:{key}", []).append(float(value))
    return {k: sum(v) / len(v) for k, v in sums.items()}


def build(nodes_rows: list[dict[str, Any]], edges: list[dict[str, Any]], embedder: Embedder) -> ElementIndex:
    nodes, edge_df = graph.frames(nodes_rows, edges)
    return ElementIndex(nodes, edge_df, store.embed_summaries(nodes, embedder))


def latency(storage: Path, items: list[QAItem], embedder: Embedder, rounds: int) -> int:
    from edaqa_pipeline.registry import make_retriever

    snapshot = IndexSnapshot.load(storage)
    nodes, edges, _ = store.load_graph(snapshot.storage, snapshot.documents)
    index = ElementIndex(nodes, edges, store.embed_summaries(nodes, embedder))
    queries = QueryEncoder(embedder)
    methods: dict[str, Any] = {
        "techdoc": TechDocRetriever(index, snapshot.base),
        "techdoc (query vector given)": TechDocRetriever(index, queries, parallel_encode=False),
        "bm25": make_retriever("bm25", snapshot),
        "dense": make_retriever("dense", snapshot),
        "hybrid_rrf": make_retriever("hybrid_rrf", snapshot),
    }
    queries.encode([it.question for it in items])
    times: dict[str, list[float]] = {name: [] for name in [*methods, "query encoding alone"]}
    for r in methods.values():
        r.retrieve("warm up", 10)
    for _ in range(rounds):
        for item in items:
            for name, retriever in methods.items():
                t0 = time.perf_counter()
                retriever.retrieve(item.question, 10)
                times[name].append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            snapshot.base.encode([item.question])
            times["query encoding alone"].append((time.perf_counter() - t0) * 1000)
    print(f"\nLatency over {len(items)} x {rounds} queries (ms; load average {os.getloadavg()[0]:.1f}, "
          f"{os.cpu_count()} CPUs):\n")
    print("| method | p50 | p95 |\n|---|---|---|")
    for name, values in times.items():
        print(f"| {name} | {np.percentile(values, 50):.2f} | {np.percentile(values, 95):.2f} |")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--storage", default="/tmp/or24")
    ap.add_argument("--qa", default="../shared/benchmarks/ord-qa.jsonl")
    ap.add_argument("--source-map", default="../shared/benchmarks/ord-qa.source_map.json")
    ap.add_argument("--levels", default=",".join(map(str, LEVELS)))
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--experiments", default="2A,2B")
    ap.add_argument("--vector-cache", default="/tmp/edaqa_techdoc_vectors.parquet")
    ap.add_argument("--json", default="")
    ap.add_argument("--latency", type=int, default=0, metavar="ROUNDS",
                    help="measure latency (ROUNDS passes over the questions) instead")
    args = ap.parse_args(argv)

    started = time.perf_counter()
    snapshot = IndexSnapshot.load(Path(args.storage))
    items = load_qa(args.qa, source_map=args.source_map or None)
    cache = Path(args.vector_cache) if args.vector_cache else None
    embedder = load_embedder(snapshot, cache)
    queries = QueryEncoder(embedder)
    if args.latency:
        status = latency(Path(args.storage), items, embedder, args.latency)
        save_embedder(embedder, cache)
        return status
    blocks = load_blocks(snapshot.storage, snapshot.documents)
    clean_rows, clean_edges = graph.build_corpus(blocks)
    view = em.ElementGraphView(*graph.frames(clean_rows, clean_edges))
    queries.encode([it.question for it in items])  # query vectors once
    levels = [int(x) for x in args.levels.split(",") if x]
    results: dict[str, dict[int, dict[str, float]]] = {"2A": {}, "2B": {}}
    for level in levels:
        for exp in args.experiments.split(","):
            runs = []
            for seed in range(args.seeds):
                if exp == "2A":
                    rows, edges = graph.build_corpus(corrupted_blocks(blocks, level / 100, seed)) if level else (clean_rows, clean_edges)
                    if level:
                        restore_raw(rows, clean_rows)
                else:
                    rng = random.Random(f"dropout:{seed}")
                    rows = clean_rows
                    edges = [e for e in clean_edges if rng.random() >= level / 100]
                index = build(rows, edges, embedder)
                save_embedder(embedder, cache)
                retriever = TechDocRetriever(index, queries, parallel_encode=False)
                runs.append(evaluate(retriever, items, view))
                if level == 0:
                    break  # no randomness at 0%
            keys = sorted({k for r in runs for k in r})
            results[exp][level] = {k: float(np.mean([r[k] for r in runs if k in r])) for k in keys}
            print(f"[{time.perf_counter() - started:6.0f} s] {exp} {level:>2}%: "
                  + ", ".join(f"{k}={v:.4f}" for k, v in results[exp][level].items()
                              if k in ("ref_recall@2048t", "doc_recall@5", "rehr@10_L0", "ecr")),
                  file=sys.stderr, flush=True)

    named = sum(1 for it in items if any(identifiers.identifier_kind(i) != "label" for i in identifiers.query_identifiers(it.question)))
    print(f"\nTable 10 (techdoc on ORD-QA, {len(items)} questions, {args.seeds} seed(s)):\n")
    print("| Noise/loss | 2A ID corruption: REHR@10 L0 | 2A ref_recall@2048t | 2A doc_recall@5 "
          "| 2B edge dropout: ECR | 2B ref_recall@2048t | 2B doc_recall@5 |")
    print("|---|---|---|---|---|---|---|")
    for level in levels:
        a, b = results["2A"].get(level, {}), results["2B"].get(level, {})

        def f(d: dict[str, float], k: str) -> str:
            return f"{d[k]:.4f}" if k in d else "-"

        print(f"| {level}% | {f(a, 'rehr@10_L0')} | {f(a, 'ref_recall@2048t')} | {f(a, 'doc_recall@5')} "
              f"| {f(b, 'ecr')} | {f(b, 'ref_recall@2048t')} | {f(b, 'doc_recall@5')} |")
    print(f"\nThe {named} questions that name an identifier (command, option, variable, ...):\n")
    print("| Noise/loss | 2A REHR@10 L0 | 2A ref_recall@2048t | 2A doc_recall@5 | 2B ECR "
          "| 2B ref_recall@2048t | 2B doc_recall@5 |")
    print("|---|---|---|---|---|---|---|")
    for level in levels:
        a, b = results["2A"].get(level, {}), results["2B"].get(level, {})
        cells = [f"{d[f'named:{k}']:.4f}" if f"named:{k}" in d else "-" for d, k in (
            (a, "rehr@10_L0"), (a, "ref_recall@2048t"), (a, "doc_recall@5"),
            (b, "ecr"), (b, "ref_recall@2048t"), (b, "doc_recall@5"))]
        print(f"| {level}% | " + " | ".join(cells) + " |")
    print(f"\ntexts encoded this run: {embedder.encoded}; wall time {time.perf_counter() - started:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"levels": levels, "seeds": args.seeds, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

