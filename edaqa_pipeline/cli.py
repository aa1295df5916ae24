"""The ``edaqa`` command: index a corpus, ask questions, evaluate, estimate LLM cost.

``index`` goes through Dagster (a persistent local instance, so runs show in the UI);
``ask`` and ``eval`` read the stored tables and LanceDB directly and never load Dagster,
so answering starts fast.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _cmd_index(args: argparse.Namespace) -> int:
    from edaqa_pipeline.indexing import index_corpus

    started = time.perf_counter()
    from edaqa_pipeline.jobs import EXTRA_JOBS

    wanted = [w.strip() for w in (args.with_ or "").split(",") if w.strip()]
    unknown = [w for w in wanted if w not in EXTRA_JOBS]
    if unknown:
        print(f"error: --with takes {', '.join(EXTRA_JOBS)}; got {', '.join(unknown)}", file=sys.stderr)
        return 2
    extra = tuple(job for name, job in EXTRA_JOBS.items() if name in wanted)
    report = index_corpus(Path(args.corpus), Path(args.storage), force=args.force,
                          log=(lambda *_: None) if args.quiet else print, extra_jobs=extra)
    manifest = report.manifest
    tables = manifest["tables"]
    print(f"\nindexed {len(report.documents)} documents into {args.storage} "
          f"({len(report.reindexed)} re-run, {len(report.deleted)} removed) in "
          f"{time.perf_counter() - started:.1f} s")
    for asset in ("parsed_documents", "typed_artifacts", "occurrences", "chunks", "unit_hyperedges"):
        if asset in tables:
            print(f"  {asset:<18} {tables[asset]['rows']:>7} rows")
    if "typed_artifacts" in tables:
        from edaqa_pipeline.indexing import settings_for
        from edaqa_pipeline.storage.tables import read_partitions

        cfg = settings_for(Path(args.corpus), Path(args.storage))
        arts = read_partitions(cfg.tables_dir, "typed_artifacts", report.documents)
        if arts is not None:
            counts = Counter(arts["artifact_type"].to_list())
            print("  artifacts by type: " + ", ".join(f"{t}={n}" for t, n in sorted(counts.items())))
    units = manifest.get("units") or {}
    if units:
        print(f"  units: {units['units_within_source']} within documents, "
              f"{units['units_cross_document']} cross-document; rejections {units['rejections']}")
    for failure in manifest["failed"]:
        print(f"FAILED {failure['document']}: {failure['error']}", file=sys.stderr)
    return 1 if manifest["failed"] else 0


def _cmd_estimate(args: argparse.Namespace) -> int:
    from edaqa_pipeline.corpus.scan import scan_corpus
    from edaqa_pipeline.extraction.semantic_llm import prompt_pairs
    from edaqa_pipeline.llm import estimate_tokens
    from edaqa_pipeline.parsing.documents import parse_document
    from edaqa_pipeline.parsing.errors import DocumentError

    files, _ = scan_corpus(Path(args.corpus))
    pairs: list[tuple[str, str]] = []
    skipped = 0
    for file in files:
        try:
            _, blocks = parse_document(file.path.read_bytes(), file.key)
        except DocumentError:
            skipped += 1
            continue
        pairs.extend(prompt_pairs(blocks))
    estimate = estimate_tokens(pairs)
    estimate.update({"documents": len(files) - skipped, "documents_unparseable": skipped,
                     "task": "semantic_spans"})
    print(json.dumps(estimate, indent=2, sort_keys=True))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="edaqa", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("index", help="materialise every asset for a corpus (through Dagster)")
    p.add_argument("--corpus", required=True)
    p.add_argument("--storage", required=True)
    p.add_argument("--force", action="store_true", help="re-run every document")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--with", dest="with_", default="",
                   help="also build method graphs: chipkg (chipmind methods), techdoc (element "
                   "graph), train (function-aware encoder for fa_hybrid_tuned), eval (the "
                   "eval_reports asset over every built method); comma-separated, run in "
                   "that order; minutes each on large corpora")
    p.set_defaults(func=_cmd_index)

    p = sub.add_parser("estimate", help="tokens and calls a full LLM build would need")
    p.add_argument("--corpus", required=True)
    p.set_defaults(func=_cmd_estimate)

    try:
        from edaqa_pipeline.cli_query import add_query_commands

        add_query_commands(sub)
    except ImportError:
        pass
    from edaqa_pipeline.training.cli import add_train_command

    add_train_command(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
