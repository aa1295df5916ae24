"""Retrieval latency per method over the ORD-QA questions (answer generation excluded).

    .venv/bin/python benchmarks/latency.py --storage /tmp/or24 [--qa ../shared/benchmarks/ord-qa.jsonl]

The storage must hold an index (`edaqa index`); its build time is read from manifest.json.
Prints p50/p95/mean per method (k = 10) after one warm-up query per method, for every method
built in the storage root unless ``--methods`` names some. ``--threads N`` sets torch's intra-op
threads (query encoding is one short sequence: 1 thread avoids contention on a shared machine).
Also prints the 1-minute load average before and after. Target: p50 <= 20 ms, p95 <= 50 ms on
2 CPU cores.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from edaqa_pipeline.registry import METHOD_NAMES, available_methods, make_retriever
from edaqa_pipeline.retrieval.encoders import query_vector
from edaqa_pipeline.retrieval.snapshot import IndexSnapshot

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--storage", required=True)
    parser.add_argument("--qa", default=str(REPO.parent / "shared" / "benchmarks" / "ord-qa.jsonl"))
    parser.add_argument("--methods", default="", help="default: every method built in STORAGE")
    parser.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0 = torch default)")
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    questions = [json.loads(line)["question"].strip() for line in Path(args.qa).read_text().splitlines() if line.strip()]
    t = time.perf_counter()
    snapshot = IndexSnapshot.load(Path(args.storage))
    load_s = time.perf_counter() - t
    manifest = json.loads((Path(args.storage) / "manifest.json").read_text())
    build_s = sum(manifest.get("timings", {}).values())
    print(f"index: {len(snapshot.documents)} documents, {snapshot.chunks.height} chunks, "
          f"{snapshot.units.height} units; step time in build {build_s:.1f} s; snapshot load {load_s * 1000:.0f} ms")
    print(f"{'method':<24}{'p50 ms':>10}{'p95 ms':>10}{'mean ms':>10}")
    methods = [m for m in args.methods.split(",") if m] or available_methods(Path(args.storage))
    for name in methods:
        if name not in METHOD_NAMES:
            continue
        query_vector.cache_clear()  # a method must not reuse the query vectors of the last one
        retriever = make_retriever(name, snapshot)
        retriever.retrieve("warm up query", args.k)
        times = []
        for question in questions:
            t = time.perf_counter()
            retriever.retrieve(question, args.k)
            times.append((time.perf_counter() - t) * 1000)
        times.sort()
        p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
        print(f"{name:<24}{statistics.median(times):>10.2f}{p95:>10.2f}{statistics.mean(times):>10.2f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
