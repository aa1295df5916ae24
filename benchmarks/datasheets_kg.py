"""Hardware knowledge graphs on the real PDF datasheets: extraction, refinement, faithfulness.

For each PDF: pages, chunks, the detected hardware category, properties extracted (by rule),
properties left after refinement, blocks (skeleton / created), MERGE / RENAME / reroute
counts per refinement iteration (the paper's Figure 2), offline faithfulness, and example
properties with their citations (file:pN). Offline rules unless ``--llm`` (then the LLM layer
configured by the environment: EDAQA_LLM_BASE_URL / EDAQA_LLM_MODEL ...).

Usage::

    .venv/bin/python benchmarks/datasheets_kg.py [--corpus DIR] [--iterations 3]
        [--examples 5] [--json out.json] [--llm]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edaqa_pipeline.extraction.datasheets.chunks import datasheet_chunks  # noqa: E402
from edaqa_pipeline.extraction.datasheets.properties import extract_properties  # noqa: E402
from edaqa_pipeline.extraction.datasheets.skeletons import classify  # noqa: E402
from edaqa_pipeline.graphs.hwkg.faithfulness import judge, summary  # noqa: E402
from edaqa_pipeline.graphs.hwkg.kg import KGConfig, build_hardware_kg, kg_problems  # noqa: E402
from edaqa_pipeline.parsing.pdf import parse_pdf  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus" / "datasheets"


def _examples(kg: Any, n: int) -> list[dict[str, Any]]:
    """``n`` properties spread over the graph: round-robin over the top-level blocks (largest
    first), a different second-level block each time where possible, preferring a property
    with a unit, from a spec table, with a numeric value, and a short name."""

    def rank(p: str) -> tuple[Any, ...]:
        rec = kg.records[p]
        return (
            not rec["unit"],
            rec["rule"] != "table:spec",
            not re.match(r"[-+]?(?:\d|0x)", rec["value"] or ""),
            len(kg.state[p].name),
            kg.order[p],
        )

    groups: dict[str, list[str]] = {}
    for pid in kg.active():
        path = kg.path(kg.state[pid].block_id)
        groups.setdefault(path[1] if len(path) > 1 else "", []).append(pid)
    order = sorted(groups, key=lambda g: (-len(groups[g]), g))
    for g in order:
        groups[g].sort(key=rank)
    picked: list[str] = []
    used: set[tuple[str, ...]] = set()
    while len(picked) < n and any(groups[g] for g in order):
        for g in order:
            if len(picked) >= n or not groups[g]:
                continue
            fresh = [p for p in groups[g] if tuple(kg.path(kg.state[p].block_id)[1:3]) not in used]
            pid = (fresh or groups[g])[0]
            groups[g].remove(pid)
            used.add(tuple(kg.path(kg.state[pid].block_id)[1:3]))
            picked.append(pid)
    out = []
    for pid in picked:
        rec = kg.records[pid]
        out.append(
            {
                "name": kg.state[pid].name,
                "value": rec["value"],
                "unit": rec["unit"],
                "conditions": rec["conditions"],
                "block": " > ".join(kg.path(kg.state[pid].block_id)[1:]),
                "rule": rec["rule"],
                "citation": f"{rec['document']}:p{rec['page']}",
            }
        )
    return out


def run_one(path: Path, iterations: int, n_examples: int, client: Any = None) -> dict[str, Any]:
    started = time.perf_counter()
    doc, blocks = parse_pdf(path.read_bytes(), path.name)
    t_parse = time.perf_counter() - started
    t0 = time.perf_counter()
    chunks = datasheet_chunks(blocks)
    category, _ = classify([c["text"] for c in chunks], doc.get("title") or "")
    rows, stats = extract_properties(chunks, category, client)
    t_extract = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = build_hardware_kg(
        path.name, rows, category, title=path.name, client=client,
        config=KGConfig(iterations=iterations),
    )  # fmt: skip
    t_kg = time.perf_counter() - t0
    texts = {c["chunk_id"]: c["text"] for c in chunks}
    faith = summary(judge(rows, texts))
    kg = result.kg
    import polars as pl

    problems = kg_problems(result.nodes(), pl.DataFrame({"chunk_id": list(texts)}))
    origins = Counter(b.origin for b in kg.blocks.values())
    return {
        "file": path.name,
        "pages": doc["n_pages"],
        "category": category,
        "chunks": dict(Counter(c["kind"] for c in chunks)),
        "properties_extracted": len(rows),
        "by_rule": dict(Counter(r["rule"] for r in rows)),
        "properties_after_refinement": len(kg.active()),
        "blocks": len(kg.blocks),
        "blocks_by_origin": dict(origins),
        "blocks_with_properties": len({kg.state[p].block_id for p in kg.active()}),
        "iterations": result.iterations,
        "final": {"merge": result.stats["final_merge"], "rename": result.stats["final_rename"]},
        "instructions": len(kg.log),
        "rejected": result.stats["rejected"],
        "faithfulness": faith,
        "checks_failed": {k: len(v) for k, v in problems.items() if v},
        "examples": _examples(kg, n_examples),
        "seconds": {
            "parse": round(t_parse, 2),
            "extract": round(t_extract, 2),
            "kg": round(t_kg, 2),
        },
        "extract_stats": stats,
    }


def _print(r: dict[str, Any]) -> None:
    print(f"\n== {r['file']} ({r['pages']} pages, category {r['category']})")
    print(f"   chunks: {r['chunks']}; seconds: {r['seconds']}")
    print(f"   properties extracted: {r['properties_extracted']} {r['by_rule']}")
    print(
        f"   after refinement: {r['properties_after_refinement']} properties in "
        f"{r['blocks_with_properties']} blocks; blocks {r['blocks']} {r['blocks_by_origin']}"
    )
    for it in r["iterations"]:
        print(
            f"   iteration {it['iteration']}: MERGE {it['merge']} ({it['merged_properties']} "
            f"properties), RENAME {it['rename']}, reroute {it['reroute']}, "
            f"CREATE_BLOCK {it['create_block']}, rejected {it['rejected']}"
        )
    print(f"   final guarantee: {r['final']}; instructions logged {r['instructions']}, "
          f"rejected {r['rejected']}; failed checks {r['checks_failed'] or 'none'}")  # fmt: skip
    f = r["faithfulness"]
    print(f"   offline faithfulness: {f['faithful']}/{f['properties']} = {f['faithfulness']}")
    for ex in r["examples"]:
        value = " ".join(x for x in (ex["value"], ex["unit"]) if x)
        cond = f" [{ex['conditions']}]" if ex["conditions"] else ""
        print(
            f"     - {ex['name']} = {value}{cond}  ({ex['block']}; {ex['rule']}) {ex['citation']}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--examples", type=int, default=5)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--llm", action="store_true", help="use the LLM configured by the env")
    args = ap.parse_args(argv)
    client = None
    if args.llm:
        from edaqa_pipeline.llm import client_from_env

        client = client_from_env(fallback_offline=True)
    files = sorted(args.corpus.glob("*.pdf"))
    if not files:
        print(f"no PDFs under {args.corpus}", file=sys.stderr)
        return 1
    results = []
    for path in files:
        r = run_one(path, args.iterations, args.examples, client)
        _print(r)
        results.append(r)
    total = sum(r["properties_extracted"] for r in results)
    faithful = sum(r["faithfulness"]["faithful"] for r in results)
    print(f"\nall: {total} properties, offline faithfulness {faithful}/{total}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
