"""Sweep the EDAQA method's settings on a DEV QA set (never on ORD-QA, the test set).

One snapshot, one evaluation run, every configuration side by side, plus the baselines named
with ``--methods``. Each ``--set`` is ``name:field=value,field=value`` over ``EdaqaConfig``
(``elements.<field>`` sets a field of its ``ElementPathConfig``, e.g. ``elements.alpha=0``):

    .venv/bin/python benchmarks/edaqa_sweep.py --storage /tmp/ed26 --qa data/dev/openroad_dev.jsonl \\
        --methods bm25,hybrid_rrf --set base: --set lex2:w_lexical=2 --set nofocus:focus=false

Prints span_cover / span_all / span_hit @2048t, doc_recall@1/@5 (and ref_recall@2048t for
sets with reference passages) per configuration, overall and per category.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import fields, replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

HEADLINE = ("span_cover@2048t", "span_all@2048t", "span_hit@2048t", "doc_recall@1",
            "doc_recall@5", "ref_recall@2048t", "latency_ms_p50")


def parse_set(spec: str) -> tuple[str, dict[str, object]]:
    from edaqa_pipeline.methods.edaqa.elements import ElementPathConfig
    from edaqa_pipeline.methods.edaqa.retriever import EdaqaConfig

    name, _, body = spec.partition(":")
    types = {f.name: f.type for f in fields(EdaqaConfig)}
    element_types = {f.name: f.type for f in fields(ElementPathConfig)}
    values: dict[str, object] = {}
    element_values: dict[str, object] = {}
    for pair in filter(None, body.split(",")):
        key, _, raw = pair.partition("=")
        target, table = (element_values, element_types) if key.startswith("elements.") else (values, types)
        key = key.removeprefix("elements.")
        kind = table[key]
        if kind in (bool, "bool"):
            target[key] = raw.lower() in ("1", "true", "yes")
        elif kind in (str, "str"):
            target[key] = raw
        else:
            target[key] = int(raw) if kind in (int, "int") else float(raw)
    if element_values:  # ``elements.alpha=0``: a field of the element path's config
        values["elements"] = replace(ElementPathConfig(), **element_values)
    return name, values


def main() -> int:
    from edaqa_pipeline.evaluation.qa import load_qa
    from edaqa_pipeline.evaluation.runner import run_evaluation
    from edaqa_pipeline.methods.edaqa.retriever import EdaqaConfig, EdaqaRetriever
    from edaqa_pipeline.registry import make_retriever
    from edaqa_pipeline.retrieval.snapshot import IndexSnapshot

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--storage", required=True)
    parser.add_argument("--qa", required=True)
    parser.add_argument("--source-map", default=None)
    parser.add_argument("--methods", default="", help="baselines to run beside the sweep")
    parser.add_argument("--set", dest="sets", action="append", default=[])
    parser.add_argument("--by-category", action="store_true")
    args = parser.parse_args()
    if "ord-qa" in Path(args.qa).name:
        parser.error("ORD-QA is the test set: sweep on dev data only")

    items = load_qa(args.qa, "auto", args.source_map)
    snapshot = IndexSnapshot.load(Path(args.storage))
    retrievers = {m: make_retriever(m, snapshot) for m in filter(None, args.methods.split(","))}
    for spec in args.sets or ["edaqa:"]:
        name, values = parse_set(spec)
        retrievers[name] = EdaqaRetriever(snapshot, replace(EdaqaConfig(), **values), name=name)
    snapshot.base.encode(["warm up"])
    metrics, _ = run_evaluation(items, retrievers, lambda q, ev: "", k=10, progress=False)

    def table(values_by_method: dict[str, dict[str, float]], title: str) -> None:
        keys = [h for h in HEADLINE if any(h in v for v in values_by_method.values())]
        print(f"\n{title}")
        print("config".ljust(22) + "".join(k.rjust(18) for k in keys))
        for method, values in values_by_method.items():
            print(method.ljust(22) + "".join(
                (f"{values[k]:.3f}" if k in values else "-").rjust(18) for k in keys))

    table(metrics["methods"], f"{args.qa} ({metrics['n_questions']} questions)")
    if args.by_category:
        for category, values in metrics["by_category"].items():
            table(values, f"category {category}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
