"""Parse the real PDF datasheets and print what the parser found and how long it took.

Why: ``find_tables`` is the costly part of PDF parsing and its cost grows with the page count;
this is the number to watch when the parser or pymupdf changes. One line per PDF: pages,
blocks by kind, tables (of them unruled, found by ``parsing.pdf_unruled``), figures and
wall-clock seconds of ``parse_pdf`` (best of ``--repeat``).

    .venv/bin/python benchmarks/datasheets_parse.py                  # ../shared/corpus/datasheets
    .venv/bin/python benchmarks/datasheets_parse.py a.pdf some/folder --repeat 3
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edaqa_pipeline.parsing.pdf import parse_pdf  # noqa: E402

DEFAULT = ROOT.parent / "shared/corpus/datasheets"


def pdf_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        files.extend(sorted(path.glob("*.pdf")) if path.is_dir() else [path])
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "paths", nargs="*", type=Path, default=[DEFAULT], help="PDF files or folders"
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="parses per file; the best time is shown"
    )
    args = parser.parse_args(argv)
    files = pdf_files(args.paths)
    if not files:
        print(f"no PDF files in {', '.join(map(str, args.paths))}", file=sys.stderr)
        return 1
    total = 0.0
    print(
        f"{'file':40} {'pages':>5} {'blocks':>6} {'tables':>6} {'unruled':>7} {'figures':>7} {'seconds':>8}  kinds"
    )
    for path in files:
        data = path.read_bytes()
        best = float("inf")
        for _ in range(max(1, args.repeat)):
            start = time.perf_counter()
            doc, blocks = parse_pdf(data, path.name)
            best = min(best, time.perf_counter() - start)
        total += best
        kinds = Counter(b["kind"] for b in blocks)
        unruled = sum(1 for b in blocks if b["kind"] == "table" and '"ruling": "none"' in b["meta"])
        by_kind = " ".join(f"{k}={n}" for k, n in sorted(kinds.items()))
        print(
            f"{path.name[:40]:40} {doc['n_pages']:5d} {len(blocks):6d} {kinds['table']:6d} "
            f"{unruled:7d} {kinds['figure']:7d} {best:8.2f}  {by_kind}"
        )
    print(f"{'total':40} {'':5} {'':6} {'':6} {'':7} {'':7} {total:8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
