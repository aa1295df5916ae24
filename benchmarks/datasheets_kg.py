"""Hardware knowledge graphs on the real PDF datasheets: the paper's evaluation, per PDF.

For each PDF: pages, chunks, category, properties extracted (by rule), properties left after
refinement, blocks, MERGE / RENAME / reroute per iteration (the paper's Figure 2) and whether
the refinement converged; property recall against the dev and check gold properties
(``data/dev/datasheets_properties{,_check}.jsonl``); the paper's evaluation (section IV):
faithfulness of our graph and of the one-shot baseline, inter-graph completeness both ways
after normalisation, each figure with the judge that produced it (``offline-lexical`` or
``llm``). With ``--storage`` (an index of the datasheet corpus) also page hit@2048t of
``bm25``, ``hybrid_rrf``, ``hwkg`` and the graph-only ``hwkg`` ranking on the dev and check
questions, per PDF.

Offline rules unless ``--llm`` (the LLM layer configured by the environment:
``EDAQA_LLM_BASE_URL`` / ``EDAQA_LLM_MODEL``; a small local model needs ``--pages`` and
``--sample`` to finish in minutes).

Usage::

    .venv/bin/python benchmarks/datasheets_kg.py [--corpus DIR] [--iterations 3]
        [--storage DIR] [--llm] [--pages ihp_sg13g2_process_spec.pdf=7-8] [--sample 8]
        [--context-tokens N] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import polars as pl  # noqa: E402

from edaqa_pipeline.extraction.datasheets.chunks import datasheet_chunks  # noqa: E402
from edaqa_pipeline.extraction.datasheets.properties import extract_properties  # noqa: E402
from edaqa_pipeline.extraction.datasheets.skeletons import classify  # noqa: E402
from edaqa_pipeline.graphs.hwkg.checks import kg_problems  # noqa: E402
from edaqa_pipeline.graphs.hwkg.kg import KGConfig, build_hardware_kg  # noqa: E402
from edaqa_pipeline.graphs.hwkg.oneshot import DEFAULT_CONTEXT_TOKENS  # noqa: E402
from edaqa_pipeline.graphs.hwkg.paper_metrics import evaluate_document, totals  # noqa: E402
from edaqa_pipeline.graphs.hwkg.recall import property_hits, read_gold, recall_by_document  # noqa: E402
from edaqa_pipeline.parsing.pdf import parse_pdf  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus" / "datasheets"
DEV = ROOT / "data" / "dev"


def _page_filter(specs: list[str]) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for spec in specs:
        name, _, pages = spec.partition("=")
        lo, _, hi = pages.partition("-")
        out[name] = set(range(int(lo), int(hi or lo) + 1))
    return out


def run_one(path: Path, args: argparse.Namespace, client: Any, pages: set[int] | None) -> dict[str, Any]:
    started = time.perf_counter()
    doc, blocks = parse_pdf(path.read_bytes(), path.name)
    t_parse = time.perf_counter() - started
    t0 = time.perf_counter()
    chunks = datasheet_chunks(blocks)
    if pages:
        chunks = [c for c in chunks if c["page"] in pages]
    category, _ = classify([c["text"] for c in chunks], doc.get("title") or "")
    rows, stats = extract_properties(chunks, category, client)
    t_extract = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = build_hardware_kg(path.name, rows, category, title=path.name, client=client,
                               config=KGConfig(iterations=args.iterations))
    t_kg = time.perf_counter() - t0
    nodes = result.nodes()
    active = nodes.filter((pl.col("node_type") == "property") & (pl.col("status") == "active")).to_dicts()
    merged_pages: dict[str, set[int]] = {}
    by_id = {r["property_id"]: r for r in rows}
    for n in active:
        merged_pages[n["node_id"]] = {int(by_id[m]["page"]) for m in (n["merged_from"] or []) if m in by_id}
    t0 = time.perf_counter()
    evaluation = evaluate_document(path.name, chunks, active, category, client, sample=args.sample,
                                   context_tokens=args.context_tokens)
    t_eval = time.perf_counter() - t0
    problems = kg_problems(nodes, pl.DataFrame({"chunk_id": [c["chunk_id"] for c in chunks]}))
    recall = {}
    for split, gold_path in (("dev", DEV / "datasheets_properties.jsonl"),
                             ("check", DEV / "datasheets_properties_check.jsonl")):
        gold = [g for g in read_gold(gold_path) if g["doc"] == path.name and (not pages or g["page"] in pages)]
        hits = property_hits(gold, active, merged_pages)
        recall[split] = {**recall_by_document(hits)["all"],
                         "missed": [f"{g['name']} p{g['page']}" for g, h in zip(gold, hits, strict=True) if not h["hit"]]}
    return {
        "file": path.name, "pages": doc["n_pages"], "category": category,
        "chunks": dict(Counter(c["kind"] for c in chunks)),
        "properties_extracted": len(rows), "by_rule": dict(Counter(r["rule"] for r in rows)),
        "properties_after_refinement": len(active), "blocks": len(result.kg.blocks),
        "iterations": result.iterations, "converged": result.converged,
        "checks_failed": {k: len(v) for k, v in problems.items() if v},
        "recall": recall, "evaluation": evaluation, "extract_stats": stats,
        "seconds": {"parse": round(t_parse, 2), "extract": round(t_extract, 2), "kg": round(t_kg, 2),
                    "evaluation": round(t_eval, 2)},
    }


def retrieval_table(storage: Path) -> dict[str, Any]:
    """page hit@2048t per method, split (dev / check) and PDF."""
    from edaqa_pipeline.evaluation.metrics import pack_to_budget, span_scores
    from edaqa_pipeline.evaluation.qa import load_qa
    from edaqa_pipeline.methods.hwkg.retriever import HwkgRetriever
    from edaqa_pipeline.registry import make_retriever
    from edaqa_pipeline.retrieval.snapshot import IndexSnapshot

    snapshot = IndexSnapshot.load(storage)
    methods: dict[str, Any] = {name: make_retriever(name, snapshot) for name in ("bm25", "hybrid_rrf", "hwkg")}
    methods["hwkg (graph only)"] = HwkgRetriever.from_storage(storage, snapshot.documents, encoder=snapshot.base,
                                                              chunk_fusion=False)
    out: dict[str, Any] = {}
    for split, name in (("dev", "datasheets_dev.jsonl"), ("check", "datasheets_dev_check.jsonl")):
        items = load_qa(DEV / name)
        for method, retriever in methods.items():
            per_doc: dict[str, list[float]] = {}
            for item in items:
                packed = pack_to_budget(list(retriever.retrieve(item.question, 20)), 2048)
                hit = (span_scores(packed, item.gold_spans) or {"hit": 0.0})["hit"]
                for doc in {d for d, *_ in item.gold_spans}:
                    per_doc.setdefault(doc, []).append(hit)
                per_doc.setdefault("all", []).append(hit)
            out.setdefault(split, {})[method] = {d: (round(sum(v) / len(v), 3), len(v)) for d, v in per_doc.items()}
    return out


def _print(r: dict[str, Any]) -> None:
    print(f"\n== {r['file']} ({r['pages']} pages, category {r['category']}); seconds {r['seconds']}")
    print(f"   chunks {r['chunks']}; properties {r['properties_extracted']} {r['by_rule']}")
    print(f"   after refinement {r['properties_after_refinement']}, blocks {r['blocks']}, "
          f"converged {r['converged']}, failed checks {r['checks_failed'] or 'none'}")
    for it in r["iterations"]:
        print(f"   iteration {it['iteration']}: MERGE {it['merge']} ({it['merged_properties']} properties), "
              f"RENAME {it['rename']}, reroute {it['reroute']}, rejected {it['rejected']}, "
              f"name conflicts left {it['name_conflicts']}")
    for split, rec in r["recall"].items():
        print(f"   property recall ({split}): {rec['hit']}/{rec['total']}  missed: {rec['missed']}")
    ev = r["evaluation"]
    for side in ("ours", "baseline"):
        f = ev["faithfulness"][side]
        print(f"   faithfulness {side}: {f['faithful']}/{f['properties']} judges {f['methods']}")
    for d, c in ev["completeness"].items():
        print(f"   completeness {d}: full {c['full']} partial {c['partial']} none {c['none']} of {c['n']} "
              f"judges {c['methods']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--storage", type=Path, default=None, help="an index of the corpus: retrieval table")
    ap.add_argument("--llm", action="store_true", help="use the LLM configured by the environment")
    ap.add_argument("--pages", action="append", default=[], help="FILE=A-B: only these pages of FILE")
    ap.add_argument("--sample", type=int, default=None, help="properties per graph a model judges")
    ap.add_argument("--context-tokens", type=int, default=DEFAULT_CONTEXT_TOKENS,
                    help="one-shot baseline: tokens per call")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    client = None
    if args.llm:
        from edaqa_pipeline.llm import client_from_env

        client = client_from_env(fallback_offline=True)
    pages = _page_filter(args.pages)
    files = sorted(p for p in args.corpus.glob("*.pdf") if not pages or p.name in pages)
    if not files:
        print(f"no PDFs under {args.corpus}", file=sys.stderr)
        return 1
    results = [run_one(path, args, client, pages.get(path.name)) for path in files]
    for r in results:
        _print(r)
    summary = totals([r["evaluation"] for r in results])
    print(f"\nall: {json.dumps(summary)}")
    out: dict[str, Any] = {"documents": results, "totals": summary,
                           "llm": getattr(client, "model", None) if client is not None else None}
    if args.storage:
        out["retrieval"] = retrieval_table(args.storage)
        for split, table in out["retrieval"].items():
            for method, per_doc in table.items():
                print(f"page hit@2048t {split} {method}: {per_doc}")
    if client is not None:
        out["llm_stats"] = client.stats.as_metadata()
    if args.json:
        args.json.write_text(json.dumps(out, indent=2, ensure_ascii=False, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
