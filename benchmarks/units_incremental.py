"""Full vs one-document-incremental functional-unit assembly (paper Table A1).

    .venv/bin/python benchmarks/units_incremental.py ../shared/corpus/openroad-2024

Parses every Markdown document once, then for each document: assembles the units of the corpus
without it (the previous index), times the incremental assembly that adds it back, and checks
that the seven outputs equal the full build. Prints median/max full and incremental times, the
ratio (paper: 1.396 s vs 0.407 s = 0.29; our target <= 0.10), reused/rebuilt counts and peak RSS.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from pathlib import Path

import polars as pl

from edaqa_pipeline import model
from edaqa_pipeline.extraction.artifacts import extract_artifacts
from edaqa_pipeline.extraction.chunks import build_chunks
from edaqa_pipeline.extraction.occurrences import build_occurrences
from edaqa_pipeline.graphs.functional_units import UNIT_TABLE_NAMES, assemble_units
from edaqa_pipeline.parsing.documents import parse_document
from edaqa_pipeline.storage.hashing import content_hash


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    docs = {}
    for path in sorted(Path(args.corpus).rglob("*.md")):
        if path.name.upper().startswith("LICENSE"):
            continue
        key = path.relative_to(args.corpus).as_posix()
        _, blocks = parse_document(path.read_bytes(), key)
        chunks = build_chunks(blocks)
        arts = extract_artifacts(blocks)
        occs = build_occurrences(blocks, arts, chunks)
        docs[key] = (model.frame(occs, model.OCCURRENCES_SCHEMA), model.frame(arts, model.ARTIFACTS_SCHEMA),
                     model.frame(chunks, model.CHUNKS_SCHEMA))

    def tables(keys: list[str]) -> tuple[pl.DataFrame, ...]:
        return tuple(pl.concat([docs[k][i] for k in sorted(keys)]) for i in range(3))

    keys = sorted(docs)
    full_times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        full, stats = assemble_units(*tables(keys))
        full_times.append(time.perf_counter() - t)
    full_hash = {n: content_hash(full[n]) for n in UNIT_TABLE_NAMES}
    inc_times, equal, reused, rebuilt = [], 0, [], []
    for key in keys:
        rest = [k for k in keys if k != key]
        before, _ = assemble_units(*tables(rest))
        inputs = tables(keys)
        t = time.perf_counter()
        after, st = assemble_units(*inputs, previous=before)
        inc_times.append(time.perf_counter() - t)
        equal += {n: content_hash(after[n]) for n in UNIT_TABLE_NAMES} == full_hash
        reused.append(st.reused)
        rebuilt.append(st.rebuilt)
    full_med = statistics.median(full_times)
    inc_med = statistics.median(inc_times)
    print(f"documents                 {len(keys)}")
    print(f"units                     {stats.units} ({stats.within_source} within, {stats.cross_document} cross)")
    print(f"full assembly             median {full_med:.3f} s (runs {', '.join(f'{x:.3f}' for x in full_times)})")
    print(f"incremental (+1 document) median {inc_med:.3f} s, max {max(inc_times):.3f} s over {len(keys)} documents")
    print(f"ratio incremental/full    {inc_med / full_med:.3f}  (paper 0.29; target <= 0.10)")
    print(f"reused / rebuilt units    median {statistics.median(reused):.0f} / {statistics.median(rebuilt):.0f}")
    print(f"outputs equal to full     {equal}/{len(keys)} (all seven tables, content_hash)")
    print(f"peak RSS                  {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
