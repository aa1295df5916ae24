"""Index a corpus through Dagster (`edaqa index`) and print what was built, wall time and peak RSS.

    .venv/bin/python benchmarks/index_corpus.py ../shared/corpus/openroad-2024 [--storage DIR] [--no-floor]

Prints documents, failures, chunks, artifacts by type, occurrences, anchors, units, and for
PDFs pages / tables / artifacts per file; then a breakdown per step (wall and CPU seconds from
the build manifest, rows written, rows/s) and **the floor**, measured in the same run: a fresh
process that loads the encoder with plain sentence-transformers and encodes, in one
``model.encode`` call, every text the build embedded (each chunk's ``embed_text`` and each
functional unit's summary). ``build / floor`` is the figure the project's target is set on (<= 1.5x). The
floor runs after the build, in its own process (no Python-level cache is shared; the build has
warmed the OS page cache for the model files, which favours the floor slightly).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import polars as pl

from edaqa_pipeline.cli.index import index_corpus
from edaqa_pipeline.settings import settings_for
from edaqa_pipeline.storage.tables import read_partitions

FLOOR_SCRIPT = """
import json, os, sys, time
wall, cpu = time.perf_counter(), time.process_time()
from sentence_transformers import SentenceTransformer
from edaqa_pipeline.settings import default_encoder_path
# the encoder the build used: EDAQA_ENCODER when set (as encoders.configured_encoder), else MiniLM
model = SentenceTransformer(os.environ.get("EDAQA_ENCODER", "").strip() or default_encoder_path(), device="cpu")
loaded = time.perf_counter() - wall
texts = json.load(sys.stdin)
model.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
print(json.dumps({"texts": len(texts), "load_s": loaded, "wall_s": time.perf_counter() - wall,
                  "cpu_s": time.process_time() - cpu}))
"""


def embedded_texts(tables_dir: Path, docs: list[str]) -> list[str]:
    """Every text the core build encodes: chunk ``embed_text`` and unit summaries."""
    chunks = read_partitions(tables_dir, "chunks", docs)
    texts = chunks["embed_text"].to_list() if chunks is not None else []
    units = tables_dir / "unit_hyperedges.parquet"
    if units.is_file():
        texts += pl.read_parquet(units, columns=["summary"])["summary"].to_list()
    return texts


def measure_floor(texts: list[str]) -> dict[str, float]:
    """Encoder load + one batched encoding of ``texts`` in a fresh process (see the docstring)."""
    out = subprocess.run([sys.executable, "-c", FLOOR_SCRIPT], input=json.dumps(texts), text=True,
                         capture_output=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def print_breakdown(manifest: dict, wall: float) -> None:
    rows = {name: t.get("rows", 0) for name, t in manifest.get("tables", {}).items()}
    cpu = manifest.get("step_cpu_s", {})
    print(f"{'step':<28}{'wall s':>9}{'CPU s':>9}{'rows':>8}{'rows/s':>9}")
    for step, seconds in sorted(manifest["timings"].items(), key=lambda kv: -kv[1]):
        n = rows.get(step, 0)
        rate = f"{n / seconds:.0f}" if n and seconds else "-"
        print(f"{step:<28}{seconds:>9.1f}{cpu.get(step, 0.0):>9.1f}{n:>8}{rate:>9}")
    steps = sum(manifest["timings"].values())
    print(f"{'(sum of steps)':<28}{steps:>9.1f}{sum(cpu.values()):>9.1f}")
    print(f"{'(outside steps)':<28}{wall - steps:>9.1f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus")
    parser.add_argument("--storage", default=None)
    parser.add_argument("--no-floor", action="store_true", help="skip the floor measurement")
    args = parser.parse_args()
    storage = Path(args.storage or tempfile.mkdtemp(prefix="edaqa_bench_"))
    started, cpu_started = time.perf_counter(), time.process_time()
    report = index_corpus(Path(args.corpus), storage, log=lambda *_: None)
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
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
    print(f"wall time        {wall:.1f} s ({cpu:.1f} CPU-s in this process)")
    print(f"peak RSS         {peak_mb:.0f} MiB")
    print_breakdown(report.manifest, wall)
    if blocks is not None and arts is not None:
        pdfs = [d for d in docs if d.lower().endswith(".pdf")]
        for doc in pdfs:
            b = blocks.filter(pl.col("document") == doc)
            a = arts.filter(pl.col("document") == doc)
            pages = b["page"].max()
            tables = b.filter(pl.col("kind") == "table").height
            print(f"  {doc}: pages={pages} tables={tables} artifacts={a.height} "
                  + " ".join(f"{t}={n}" for t, n in sorted(Counter(a['artifact_type'].to_list()).items())))

    if not args.no_floor:
        texts = embedded_texts(cfg.tables_dir, docs)
        floor = measure_floor(texts)
        print(f"floor            {floor['wall_s']:.1f} s wall / {floor['cpu_s']:.1f} CPU-s: encoder load "
              f"{floor['load_s']:.1f} s + one encode of {floor['texts']} texts")
        print(f"build / floor    {wall / floor['wall_s']:.2f}x wall, {cpu / floor['cpu_s']:.2f}x CPU")
        print(json.dumps({"build_wall_s": round(wall, 2), "build_cpu_s": round(cpu, 2),
                          "peak_mib": round(peak_mb), "floor": floor,
                          "ratio_wall": round(wall / floor["wall_s"], 3)}))


if __name__ == "__main__":
    main()
