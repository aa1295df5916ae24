"""How the pipeline grows with the corpus: 1x, 4x, 16x synthetic copies of openroad-2024.

    .venv/bin/python benchmarks/scale.py [--sizes 1,4,16] [--workdir DIR] [--markdown FILE]

Copy 1 of the corpus is ../shared/corpus/openroad-2024 as is; copy k >= 2 renames, with the
suffix ``_v{k}``, every snake_case identifier (commands such as ``global_route``, options such
as ``-max_routing_layer``, variables), every ``-option`` word, the first word of every code
line and every one-word inline code span (single-word commands such as ``tapcell``; Tcl and
Python keywords are kept), and renumbers message ids (``GRT-0243`` -> ``GRT-20243``). Each
copy lives in its own folder, so an Nx corpus has N times the documents, and they really
differ: new chunk texts, new vectors, new anchors, new units (units link only within a copy).

Each size runs in a fresh child process (so peak RSS is its own) that measures:

* full build: ``index_corpus`` (what ``edaqa index`` runs: every document job through
  Dagster, in-process executor, then the cross-document assets) on empty storage;
* the floor of that size (``index_corpus.measure_floor``: a fresh process loads the encoder
  and encodes every text the build embedded in one batched call), and build / floor;
* one-document incremental: one document edited (a paragraph appended), ``index_corpus``
  again (its document job + the incremental corpus assets), and its share of the full build;
* peak RSS of the child; index size on disk (Parquet tables, LanceDB, all of STORAGE);
* retrieval latency p50/p95 per method over the ORD-QA questions (k = 10, after a warm-up);
* LanceDB vector search on the ``chunks`` table: flat (exact) p50/p95, then with the IVF_PQ
  index of ``lance_store.ensure_vector_index`` (built here regardless of its row threshold,
  so the trade-off is measured at every size): index build time, p50/p95, recall@10 vs flat.

The parent prints one Markdown table with growth ratios against the smallest size.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO.parent / "shared" / "corpus" / "openroad-2024"
QA = REPO.parent / "shared" / "benchmarks" / "ord-qa.jsonl"
METHODS = ("bm25", "dense", "hybrid_rrf", "fa_units", "fa_hybrid")
K = 10

INLINE_WORD = re.compile(r"`([a-z][a-z0-9]{2,})`")
FENCE = re.compile(r"^(\s*)(```|~~~)")
CODE_FIRST_WORD = re.compile(r"^(\s*)([a-z][a-z0-9]{2,})\b")


from edaqa_pipeline.text.identifiers import MESSAGE_ID, OPTION, SNAKE  # noqa: E402


def _keywords() -> frozenset[str]:
    from edaqa_pipeline.text.identifiers import LANGUAGE_WORDS

    return frozenset(LANGUAGE_WORDS)


def rename(text: str, copy: int, keywords: frozenset[str]) -> str:
    """The text of copy ``copy`` (>= 2): identifiers suffixed ``_v{copy}``, message ids renumbered."""
    suffix = f"_v{copy}"
    # the project's one identifier definition (text/identifiers.py) decides what is renamed
    text = SNAKE.sub(lambda m: m.group(0) + suffix, text)
    text = OPTION.sub(lambda m: m.group(0) + suffix, text)
    text = MESSAGE_ID.sub(lambda m: "{0}-{2}{1}".format(*m.group(0).split("-"), copy), text)
    text = INLINE_WORD.sub(
        lambda m: m.group(0) if m.group(1) in keywords else f"`{m.group(1)}{suffix}`", text
    )
    lines, in_code = [], False
    for line in text.split("\n"):
        if FENCE.match(line):
            in_code = not in_code
        elif in_code:
            line = CODE_FIRST_WORD.sub(
                lambda m: m.group(0) if m.group(2) in keywords or m.group(2).endswith(suffix)
                else f"{m.group(1)}{m.group(2)}{suffix}", line)  # fmt: skip
        lines.append(line)
    return "\n".join(lines)


def make_corpus(source: Path, dest: Path, copies: int) -> Path:
    """``copies`` copies of ``source`` under ``dest/cNN/`` (copy 1 unchanged)."""
    keywords = _keywords()
    if dest.exists():
        shutil.rmtree(dest)
    files = sorted(p for p in source.iterdir()
                   if p.suffix == ".md" and not p.name.upper().startswith("LICENSE"))  # fmt: skip
    for copy in range(1, copies + 1):
        folder = dest / f"c{copy:02d}"
        folder.mkdir(parents=True)
        for path in files:
            text = path.read_text(encoding="utf-8")
            (folder / path.name).write_text(text if copy == 1 else rename(text, copy, keywords),
                                            encoding="utf-8")  # fmt: skip
    return dest


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def _pcts(times_ms: list[float]) -> tuple[float, float]:
    ordered = sorted(times_ms)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu_s() -> float:
    """CPU seconds (user + system) of this process so far: unlike wall time, barely changed by
    other load on the machine."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(size: int, workdir: Path, questions: list[str]) -> dict[str, object]:
    """Everything for one size, in this (child) process."""
    import numpy as np

    from edaqa_pipeline.cli.index import index_corpus
    from edaqa_pipeline.registry import make_retriever
    from edaqa_pipeline.retrieval import lance_store
    from edaqa_pipeline.retrieval.snapshot import IndexSnapshot

    corpus = make_corpus(SOURCE, workdir / f"corpus_{size}x", size)
    storage = workdir / f"storage_{size}x"
    shutil.rmtree(storage, ignore_errors=True)
    out: dict[str, object] = {"size": size, "load_before": os.getloadavg()[0]}

    started, cpu = time.perf_counter(), _cpu_s()
    report = index_corpus(corpus, storage, log=lambda *_: None)
    out["full_build_s"] = time.perf_counter() - started
    out["full_build_cpu_s"] = _cpu_s() - cpu
    out["documents"] = len(report.documents)
    out["failed"] = len(report.failed)
    tables = report.manifest["tables"]
    out["chunks"] = tables.get("chunks", {}).get("rows", 0)
    out["units"] = tables.get("unit_hyperedges", {}).get("rows", 0)
    out["build_peak_rss_mb"] = _peak_mb()

    # The floor of this size, as benchmarks/index_corpus.py measures it: a fresh
    # process loads the encoder and encodes every text the build embedded in one batched call.
    from index_corpus import embedded_texts, measure_floor

    floor = measure_floor(embedded_texts(storage / "tables", report.documents))
    out["floor_s"], out["floor_cpu_s"] = floor["wall_s"], floor["cpu_s"]
    out["build_over_floor"] = out["full_build_s"] / floor["wall_s"]

    # One document edited: its job and the incremental corpus assets run again.
    target = sorted(corpus.rglob("*.md"))[-1]
    with target.open("a", encoding="utf-8") as fh:
        fh.write("\n\n## Scale benchmark edit\n\nRun `report_scale_edit -verbose` after the "
                 "flow to list what changed in this document.\n")  # fmt: skip
    started, cpu = time.perf_counter(), _cpu_s()
    again = index_corpus(corpus, storage, log=lambda *_: None)
    out["incremental_s"] = time.perf_counter() - started
    out["incremental_cpu_s"] = _cpu_s() - cpu
    out["incremental_reindexed"] = len(again.reindexed)
    out["incremental_share"] = out["incremental_s"] / out["full_build_s"]

    out["tables_mb"] = _du(storage / "tables") / 2**20
    out["lancedb_mb"] = _du(storage / "lancedb") / 2**20
    out["storage_mb"] = _du(storage) / 2**20

    # Retrieval latency per method (the CLI's path: snapshot + retriever).
    snapshot = IndexSnapshot.load(storage)
    latency: dict[str, list[float]] = {}
    cpu_latency: dict[str, float] = {}
    for name in METHODS:
        retriever = make_retriever(name, snapshot)
        retriever.retrieve("warm up query", K)
        times, cpu_times = [], []
        for question in questions:
            t, c = time.perf_counter(), time.process_time()
            retriever.retrieve(question, K)
            times.append((time.perf_counter() - t) * 1000)
            cpu_times.append((time.process_time() - c) * 1000)
        latency[name] = list(_pcts(times))
        cpu_latency[name] = statistics.median(cpu_times)
    out["cpu_ms_p50"] = cpu_latency

    # LanceDB vector search on the chunks table: flat, then IVF_PQ.
    from edaqa_pipeline.retrieval.encoders import base_encoder

    vectors = base_encoder("").encode(questions)
    table = lance_store.connect(str(storage / "lancedb")).open_table(lance_store.CHUNK_TABLE)

    def search(vec: np.ndarray, **kw: object) -> tuple[float, list[str]]:
        t = time.perf_counter()
        query = table.search(vec).metric("cosine").limit(K)
        if kw.get("flat"):
            query = query.bypass_vector_index()
        ids = query.select(["chunk_id"]).to_arrow().column("chunk_id").to_pylist()
        return (time.perf_counter() - t) * 1000, ids

    search(vectors[0], flat=True)
    flat = [search(v, flat=True) for v in vectors]
    latency["lance_flat"] = list(_pcts([t for t, _ in flat]))
    started = time.perf_counter()
    built = lance_store.ensure_vector_index(str(storage / "lancedb"), lance_store.CHUNK_TABLE,
                                            min_rows=0)  # fmt: skip
    out["ann_build_s"] = time.perf_counter() - started
    out["ann_default_threshold"] = lance_store.ANN_MIN_ROWS
    if built:
        table = lance_store.connect(str(storage / "lancedb")).open_table(lance_store.CHUNK_TABLE)
        search(vectors[0])
        ann = [search(v) for v in vectors]
        latency["lance_ann"] = list(_pcts([t for t, _ in ann]))
        recalls = [len(set(a) & set(f)) / max(len(f), 1) for (_, a), (_, f) in zip(ann, flat, strict=True)]
        out["ann_recall_at_10"] = statistics.mean(recalls)
    out["latency_ms"] = latency
    out["peak_rss_mb"] = _peak_mb()
    out["load_after"] = os.getloadavg()[0]
    return out


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.1f}x" if base else "-"


def markdown(results: list[dict], command: str) -> str:  # type: ignore[type-arg]
    base = results[0]
    sizes = [f"{r['size']}x" for r in results]
    rows: list[tuple[str, list[str]]] = []

    def add(label: str, key: str, fmt: str, ratio: bool = True) -> None:
        cells = [format(r[key], fmt) for r in results]
        if ratio and len(results) > 1:
            cells = [c if r is base else f"{c} ({_ratio(r[key], base[key])})"
                     for c, r in zip(cells, results, strict=True)]  # fmt: skip
        rows.append((label, cells))

    add("documents", "documents", "d")
    add("chunks", "chunks", "d")
    add("functional units", "units", "d")
    add("full build, wall (s)", "full_build_s", ".0f")
    add("full build, CPU (s)", "full_build_cpu_s", ".0f")
    if all("floor_s" in r for r in results):
        add("floor: encoder load + one encode (s)", "floor_s", ".1f")
        add("full build / floor (wall)", "build_over_floor", ".2f", ratio=False)
    add("one-document incremental, wall (s)", "incremental_s", ".1f")
    add("one-document incremental, CPU (s)", "incremental_cpu_s", ".1f")
    if all("incremental_share" in r for r in results):
        add("incremental / full build (wall)", "incremental_share", ".1%", ratio=False)
    add("peak RSS, build (MiB)", "build_peak_rss_mb", ".0f")
    add("peak RSS, build + queries (MiB)", "peak_rss_mb", ".0f")
    add("Parquet tables (MiB)", "tables_mb", ".1f")
    add("LanceDB (MiB)", "lancedb_mb", ".1f")
    add("STORAGE total (MiB)", "storage_mb", ".1f")
    for method in (*METHODS, "lance_flat", "lance_ann"):
        if all(method in r["latency_ms"] for r in results):
            cells = [f"{r['latency_ms'][method][0]:.1f} / {r['latency_ms'][method][1]:.1f}"
                     for r in results]  # fmt: skip
            if len(results) > 1:
                b = base["latency_ms"][method][0]
                cells = [c if r is base else f"{c} ({_ratio(r['latency_ms'][method][0], b)})"
                         for c, r in zip(cells, results, strict=True)]  # fmt: skip
            if all(method in r.get("cpu_ms_p50", {}) for r in results):
                cells = [f"{c}; CPU p50 {r['cpu_ms_p50'][method]:.1f}"
                         for c, r in zip(cells, results, strict=True)]  # fmt: skip
            rows.append((f"{method} p50 / p95 (ms)", cells))
    if all("ann_recall_at_10" in r for r in results):
        rows.append(("IVF_PQ build (s) / recall@10 vs flat",
                     [f"{r['ann_build_s']:.1f} / {r['ann_recall_at_10']:.2f}" for r in results]))
    rows.append(("load average (1 min) before / after",
                 [f"{r.get('load_before', 0):.1f} / {r.get('load_after', 0):.1f}" for r in results]))
    lines = [f"Command: `{command}`", "",
             "| | " + " | ".join(sizes) + " |", "|---|" + "---:|" * len(sizes)]  # fmt: skip
    lines += [f"| {label} | " + " | ".join(cells) + " |" for label, cells in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,4,16", help="comma-separated multiples (1,4,16)")
    parser.add_argument("--workdir", default=None, help="corpora and storage (default: a tmp dir)")
    parser.add_argument("--qa", default=str(QA), help="questions for the latency runs")
    parser.add_argument("--markdown", default=None, help="also write the table to this file")
    parser.add_argument("--keep", action="store_true", help="keep the workdir")
    parser.add_argument("--jsonl", default=None,
                        help="append each size's result to this file (one JSON per line)")
    parser.add_argument("--render", default=None,
                        help="only print the table of the results in this JSONL file")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    questions = [json.loads(line)["question"].strip()
                 for line in Path(args.qa).read_text().splitlines() if line.strip()]  # fmt: skip
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="edaqa_scale_"))
    workdir.mkdir(parents=True, exist_ok=True)

    if args.render:
        rendered = [json.loads(line) for line in Path(args.render).read_text().splitlines()
                    if line.strip()]  # fmt: skip
        rendered.sort(key=lambda r: r["size"])
        sizes = ",".join(str(r["size"]) for r in rendered)
        print(markdown(rendered, f"benchmarks/scale.py --sizes {sizes}"))
        return
    if args.child is not None:
        print("RESULT " + json.dumps(measure(args.child, workdir, questions)), flush=True)
        return

    results = []
    for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, __file__, "--child", str(size), "--workdir", str(workdir),
             "--qa", args.qa], capture_output=True, text=True, cwd=REPO,
        )  # fmt: skip
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
        if proc.returncode != 0 or not lines:
            sys.exit(f"size {size}x failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        result = json.loads(lines[-1].removeprefix("RESULT "))
        results.append(result)
        if args.jsonl:
            with open(args.jsonl, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(result) + "\n")
        print(f"{size}x done in {time.perf_counter() - started:.0f} s: " + json.dumps(result),
              flush=True)  # fmt: skip
        if not args.keep:
            shutil.rmtree(workdir / f"storage_{size}x", ignore_errors=True)
            shutil.rmtree(workdir / f"corpus_{size}x", ignore_errors=True)
    command = "benchmarks/scale.py --sizes " + ",".join(str(r["size"]) for r in results)
    table = markdown(results, command)
    print()
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")
    if not args.keep and args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
