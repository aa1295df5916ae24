"""The same questions answered from the same manuals in different shapes: Markdown, the HTML
site built from them (``scripts/build_html_site.py``) and, where given, other renditions with a
line map (the per-manual PDFs of ``scripts/build_pdf_manuals.py``).

Every question's gold lines are mapped through the build's line map (Markdown line -> the
element of the page it became, ``[markdown line, page line]`` pairs) to the indexed blocks of
that page: the block whose ``html_lines`` hold the element, narrowed inside a table or code
block to the same row or line (the rendition keeps a table's header, rule and rows, and a code
block's fence and lines, one per line, as the Markdown has them). A PDF's gold is the
pages the gold lines landed on (a PDF item hits gold on its page, as ``evaluation.metrics``
scores PDF evidence). So each shape is scored against the same gold, by ``edaqa eval`` on its
own storage root. Printed: doc_recall@1 and
the evidence hit (span_hit / span_cover at 2,048 tokens) per shape and method, side by side.

ORD-QA is the test set: it is refused unless ``--test`` is given (run it once, at the end).
Its gold is documents (the source map names the manual each reference chunk comes from), so
for it only doc_recall@1 is measured, with each manual mapped to the page or PDF it became.

    .venv/bin/python scripts/build_html_site.py --corpus ../shared/corpus/openroad --out /tmp/site26
    .venv/bin/edaqa index --corpus /tmp/site26 --storage /tmp/html26
    .venv/bin/python benchmarks/format_parity.py --markdown /tmp/edaqa_matrix/or26 \\
        --html /tmp/html26 --html-map /tmp/site26.line_map.json --work /tmp/parity \\
        --other pdf /tmp/pdf26 /tmp/pdfs/openroad.line_map.json
    # the test set, once, over the 2024 renditions
    .venv/bin/python benchmarks/format_parity.py --test --qa ../shared/benchmarks/ord-qa.jsonl \\
        --source-map ../shared/benchmarks/ord-qa.source_map.json --markdown OR24_STORAGE ...
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
QA_SETS = ("data/dev/openroad_dev.jsonl", "data/dev/openroad_dev_check.jsonl")
METRICS = ("doc_recall@1", "span_hit@2048t", "span_cover@2048t")
# text a documentation theme puts around every page (Read the Docs, Furo, Alabaster)
CHROME = ("Edit on GitHub", "View page source", "Show Source", "Built with", "Sphinx",
          "Read the Docs", "Copyright", "©", "Search docs", "Quick search", "¶", "Previous",
          "Next", "Navigation", "Table of Contents")


def chrome_counts(storage: Path) -> dict[str, int]:
    """How often each theme string occurs in the chunks of ``storage`` (every chunk)."""
    import polars as pl

    texts = pl.read_parquet(storage / "tables" / "chunks" / "*.parquet")["text"].to_list()
    return {marker: sum(text.count(marker) for text in texts) for marker in CHROME}


class PageBlocks:
    """The indexed blocks of one page: (first, last) page lines -> rendition lines."""

    def __init__(self, storage: Path, page: str) -> None:
        from edaqa_pipeline.storage.tables import read_partitions

        frame = read_partitions(storage / "tables", "parsed_documents", [page])
        self.blocks: list[tuple[int, int, int, int, str]] = []
        for row in (frame.to_dicts() if frame is not None else []):
            first, last = json.loads(row["meta"]).get("html_lines", [0, 0])
            self.blocks.append((first, last, row["start_line"], row["end_line"], row["kind"]))
        self.blocks.sort()

    def lines_of(self, page_line: int, offset: int) -> tuple[int, int] | None:
        """Rendition lines of the element at ``page_line``; ``offset`` lines into a table or
        code block (the Markdown line's distance from the element's first line)."""
        holding = [b for b in self.blocks if b[0] <= page_line <= b[1]]
        if not holding:
            before = [b for b in self.blocks if b[0] <= page_line]
            holding = before[-1:] if before else self.blocks[:1]
        if not holding:
            return None
        _, _, start, end, kind = min(holding, key=lambda b: b[1] - b[0])
        if kind in ("table", "code"):
            line = min(start + max(offset, 0), end)
            return line, line
        return start, end


def map_span(line_map: dict[str, Any], pages: dict[str, PageBlocks], storage: Path,
             doc: str, start: int, end: int) -> dict[str, Any] | None:
    """One Markdown gold span as a span of the page it became (None when unmapped)."""
    entry = line_map.get(doc)
    if entry is None:
        return None
    pairs = entry["lines"]
    keys = [p[0] for p in pairs]
    page = entry["html"]
    blocks = pages.setdefault(page, PageBlocks(storage, page))
    spans = []
    for line in (start, end):
        i = bisect.bisect_right(keys, line) - 1
        if i < 0:
            return None
        md_line = keys[i]
        page_line = max(p[1] for p in pairs if p[0] == md_line)
        found = blocks.lines_of(page_line, line - md_line)
        if found is None:
            return None
        spans.append(found)
    first, last = min(s[0] for s in spans), max(s[1] for s in spans)
    return {"doc": page, "start_line": first, "end_line": last}


def map_pdf_span(line_map: dict[str, Any], doc: str, start: int, end: int) -> list[dict[str, Any]]:
    """One Markdown gold span as the PDF pages its lines landed on (``build_pdf_manuals``'s map:
    ``[markdown line, page, x0, y0, x1, y1]``; a line without an element takes the page of
    the nearest element above it)."""
    entry = line_map.get(doc)
    if entry is None:
        return []
    rows = entry["lines"]
    keys = [r[0] for r in rows]
    pages = set()
    for line in range(start, end + 1):
        i = bisect.bisect_right(keys, line) - 1
        if i >= 0:
            pages.add(int(rows[i][1]))
    return [{"doc": entry["pdf"], "page": page} for page in sorted(pages)]


def map_qa(qa: Path, line_map: dict[str, Any], storage: Path, out: Path) -> tuple[int, int]:
    """Write ``qa`` with its gold mapped to the pages; (spans mapped, spans in all)."""
    pages: dict[str, PageBlocks] = {}
    mapped = total = 0
    with qa.open() as src, out.open("w") as dst:
        for raw in src:
            if not raw.strip() or raw.lstrip().startswith("#"):
                continue
            item = json.loads(raw)
            evidence = []
            for ev in item.get("evidence", []):
                total += 1
                if next(iter(line_map.values()), {}).get("pdf"):  # a PDF rendition: gold pages
                    on_pages = map_pdf_span(line_map, ev["doc"], ev["start_line"], ev["end_line"])
                else:
                    span = map_span(line_map, pages, storage, ev["doc"], ev["start_line"], ev["end_line"])
                    on_pages = [span] if span is not None else []
                mapped += bool(on_pages)
                evidence.extend(on_pages)
            item["evidence"] = evidence
            dst.write(json.dumps(item) + "\n")
    return mapped, total


def is_test_set(qa: Path) -> bool:
    """ORD-QA, the test set: nothing is chosen on it."""
    return qa.name.startswith("ord-qa")


def map_ordqa(qa: Path, source_map: Path, line_map: dict[str, Any] | None, out: Path) -> tuple[int, int]:
    """ORD-QA as a QA file whose gold is the documents its references come from, each named as
    the rendition names it (``line_map``; None: the Markdown); (documents mapped, in all)."""
    from edaqa_pipeline.evaluation.qa import load_qa

    mapped = total = 0
    with out.open("w") as dst:
        for item in load_qa(qa, "ordqa", source_map):
            docs = []
            for doc in item.gold_docs:
                total += 1
                entry = (line_map or {}).get(doc)
                name = doc if line_map is None else (entry or {}).get("html") or (entry or {}).get("pdf")
                if name:
                    mapped += 1
                    docs.append({"doc": name})
            dst.write(json.dumps({"id": item.id, "question": item.question, "answer": item.answer,
                                  "evidence": docs}) + "\n")
    return mapped, total


def evaluate(storage: Path, qa: Path, methods: str, out: Path) -> dict[str, Any]:
    subprocess.run([str(REPO / ".venv" / "bin" / "edaqa"), "eval", "--storage", str(storage),
                    "--qa", str(qa), "--methods", methods, "--out", str(out), "--no-progress",
                    "--no-element-metrics", "--judge", "none", "--answers", "extractive"],
                   check=True, cwd=REPO, env={**os.environ, "HF_HUB_OFFLINE": "1"},
                   stdout=subprocess.DEVNULL)
    return json.loads((out / "metrics.json").read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", type=Path, required=True, help="storage root of the Markdown build")
    parser.add_argument("--html", type=Path, help="storage root of the HTML site")
    parser.add_argument("--html-map", type=Path, help="the site's line_map.json")
    parser.add_argument("--other", nargs=3, action="append", default=[], metavar=("NAME", "STORAGE", "MAP"),
                        help="another rendition: its storage root and line map (an HTML site's, or "
                             "scripts/build_pdf_manuals.py's <corpus>.line_map.json: gold on pages)")
    parser.add_argument("--qa", action="append", default=None)
    parser.add_argument("--source-map", type=Path, help="ORD-QA's reference source -> manual map")
    parser.add_argument("--test", action="store_true", help="allow the test set (ORD-QA): once, at the end")
    parser.add_argument("--methods", default="edaqa,bm25")
    parser.add_argument("--work", type=Path, required=True)
    args = parser.parse_args(argv)
    shapes: list[tuple[str, Path, Path | None]] = [("markdown", args.markdown, None)]
    if args.html:
        shapes.append(("html", args.html, args.html_map))
    shapes += [(name, Path(storage), Path(line_map)) for name, storage, line_map in args.other]
    rows = []
    for qa_name in args.qa or QA_SETS:
        qa = REPO / qa_name if not Path(qa_name).is_absolute() else Path(qa_name)
        if is_test_set(qa) and not args.test:
            parser.error(f"{qa.name} is the test set: it runs only with --test, once, at the end")
        if is_test_set(qa) and args.source_map is None:
            parser.error(f"{qa.name} needs --source-map (its gold names reference chunks, not manuals)")
        for shape, storage, map_path in shapes:
            work = args.work / qa.stem / shape
            work.mkdir(parents=True, exist_ok=True)
            target, note = qa, ""
            if is_test_set(qa):
                target = work / "qa_documents.jsonl"
                line_map = json.loads(map_path.read_text()) if map_path is not None else None
                mapped, total = map_ordqa(qa, args.source_map, line_map, target)
                note = f"{mapped}/{total} gold documents mapped"
            elif map_path is not None:
                target = work / "qa_mapped.jsonl"
                mapped, total = map_qa(qa, json.loads(map_path.read_text()), storage, target)
                note = f"{mapped}/{total} gold spans mapped"
            metrics = evaluate(storage, target, args.methods, work / "eval")
            for method, values in sorted(metrics.get("methods", metrics).items()):
                if isinstance(values, dict):
                    rows.append((qa.stem, shape, method, *(values.get(m) for m in METRICS), note))
    print("| QA set | shape | method | " + " | ".join(METRICS) + " | gold |")
    print("|---|---|---|" + "---|" * len(METRICS) + "---|")
    for qa_stem, shape, method, *values, note in rows:
        cells = " | ".join("" if v is None else f"{v:.3f}" for v in values)
        print(f"| {qa_stem} | {shape} | {method} | {cells} | {note} |")
    print("\nTheme text in chunks (every chunk of each build; the Markdown's own count is the floor):")
    counts = {shape: chrome_counts(storage) for shape, storage, _ in shapes}
    for shape, found in counts.items():
        extra = {m: n - counts["markdown"][m] for m, n in found.items() if n > counts["markdown"][m]}
        print(f"  {shape}: {sum(found.values())} occurrences; beyond the Markdown's: {extra or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
