"""How parsing a book-length PDF grows with its page count: CPU seconds and memory per size.

    .venv/bin/python scripts/build_pdf_manuals.py --corpus ../shared/corpus/openroad-2024 \\
        --corpus ../shared/corpus/openroad --out /tmp/pdfs      # the 1,012-page book
    .venv/bin/python benchmarks/pdf_scale.py --pdf /tmp/pdfs/book/book.pdf [--sizes 125,250,500,0]

Each size is the book's first N pages (0: all of them), saved as its own PDF and parsed by
``parsing.pdf.parse_pdf`` in a fresh child process (so the peak is its own). Printed per size:
CPU seconds, peak RSS of the child above its state before the parse, the peak of Python's heap
during the parse (``tracemalloc``), blocks, and each figure per page. The parser keeps one
record set per page (text lines, strokes, tables) and never a pymupdf page, so memory grows
with the text of the book, not with anything a page renders; this benchmark shows by how much.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(path: Path) -> dict[str, float]:
    """Parse ``path`` in this process: CPU s, peak RSS above the start, peak heap, blocks."""
    from edaqa_pipeline.parsing.pdf import parse_pdf

    data = path.read_bytes()
    before = _rss_mib()
    tracemalloc.start()
    cpu = time.process_time()
    row, blocks = parse_pdf(data, path.name)
    cpu = time.process_time() - cpu
    _, heap_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"pages": row["n_pages"], "blocks": len(blocks), "cpu_s": round(cpu, 1),
            "rss_gain_mib": round(_rss_mib() - before, 1), "heap_peak_mib": round(heap_peak / 2**20, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pdf", type=Path, help="the book to cut into sizes")
    parser.add_argument("--sizes", default="125,250,500,0", help="first N pages per size; 0 = all")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.child)))
        return 0
    if args.pdf is None:
        parser.error("--pdf is required")
    import pymupdf

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            with pymupdf.open(args.pdf) as doc:
                n = doc.page_count if size <= 0 else min(size, doc.page_count)
                doc.select(list(range(n)))
                part = Path(tmp) / f"first_{n}.pdf"
                doc.save(part, garbage=3, deflate=True)
            done = subprocess.run([sys.executable, __file__, "--child", str(part)], check=True,
                                  capture_output=True, text=True)
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print("| pages | blocks | CPU s | CPU ms/page | peak RSS gain MiB | KiB/page | heap peak MiB | KiB/page |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        pages = r["pages"]
        print(f"| {pages} | {r['blocks']} | {r['cpu_s']} | {1000 * r['cpu_s'] / pages:.0f} | "
              f"{r['rss_gain_mib']} | {1024 * r['rss_gain_mib'] / pages:.0f} | {r['heap_peak_mib']} | "
              f"{1024 * r['heap_peak_mib'] / pages:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
