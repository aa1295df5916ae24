"""Index a corpus through Dagster (`edaqa index`) and print what was built, wall time and peak RSS.

    .venv/bin/python benchmarks/index_corpus.py ../shared/corpus/openroad-2024 [--storage DIR]

Prints documents, failures, chunks, artifacts by type, occurrences, anchors, units, and for
PDFs pages / tables / artifacts per file.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from collections import Counter
from pathlib import Path

import polars as pl

from edaqa_pipeline.cli.index import index_corpus
from edaqa_pipeline.settings import settings_for
from edaqa_pipeline.storage.tables import read_partitions


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus")
    parser.add_argument("--storage", default=None)
    args = parser.parse_args()
    storage = Path(args.storage or tempfile.mkdtemp(prefix="edaqa_bench_"))
    started = time.perf_counter()
    report = index_corpus(Path(args.corpus), storage, log=lambda *_: None)
    wall = time.perf_counter() - started
    cfg = settings_for(Path(args.corpus), storage)
    docs = report.documents
    arts = read_partitions(cfg.tables_dir, "typed_artifacts", docs)
    occs = read_partitions(cfg.tables_dir, "occurrences", docs)
    chunks = read_partitions(cfg.tables_dir, "chunks", docs)
    blocks = read_partitions(cfg.tables_dir, "parsed_documents", docs)
    units = report.manifest.get("units", {})
    peak_mb = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    print(f"corpus           {args.corpus}")
    print(f"storage          {storage}")
    print(f"documents        {len(docs)} indexed, {len(report.failed)} failed")
    for failure in report.failed:
        print(f"  FAILED {failure['document']}: {failure['error']}")
    print(f"blocks           {blocks.height if blocks is not None else 0}")
    print(f"chunks           {chunks.height if chunks is not None else 0}")
    if arts is not None:
        counts = Counter(arts["artifact_type"].to_list())
        print(f"artifacts        {arts.height}: " + ", ".join(f"{t}={n}" for t, n in sorted(counts.items())))
    if occs is not None:
        anchors = occs.filter(pl.col("anchor_kind") != "section")["anchor"].n_unique()
        print(f"occurrences      {occs.height} ({anchors} distinct command/file anchors)")
    if units:
        print(f"units            {units['units_within_source']} within documents, "
              f"{units['units_cross_document']} cross-document, {units['nodes']} nodes; "
              f"rejections {units['rejections']}")
    print(f"wall time        {wall:.1f} s")
    print(f"peak RSS         {peak_mb:.0f} MiB")
    print("timings (s)      " + ", ".join(f"{k}={v}" for k, v in report.manifest["timings"].items()))
    if blocks is not None and arts is not None:
        pdfs = [d for d in docs if d.lower().endswith(".pdf")]
        for doc in pdfs:
            b = blocks.filter(pl.col("document") == doc)
            a = arts.filter(pl.col("document") == doc)
            pages = b["page"].max()
            tables = b.filter(pl.col("kind") == "table").height
            print(f"  {doc}: pages={pages} tables={tables} artifacts={a.height} "
                  + " ".join(f"{t}={n}" for t, n in sorted(Counter(a['artifact_type'].to_list()).items())))


if __name__ == "__main__":
    main()
