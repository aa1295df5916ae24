"""Dev-set ablations of the function-aware encoder without rebuilding the index.

Why: each choice of docs/training.md (identifier lines in the unit summaries, row-level training
queries, identifier-hard negatives, the type-coverage term, the number of pairs) has to be
measured on dev data, and a full ``edaqa index --with train`` per variant costs the shared
2-core machine an index build each time. This script reads an indexed storage root (read-only:
it writes nothing under it), optionally re-serialises the unit summaries with the current
``graphs.summaries`` code, builds the training pairs and trains the adapter with the same
functions the Dagster assets call (``training.pipeline``, ``training.train``), encodes the
corpus in the tuned space, and evaluates ``fa_units`` / ``fa_hybrid`` / ``fa_hybrid_tuned`` (and
any baseline) with the evaluation runner on the dev QA files. Adapters and tuned vectors are
cached under ``--work`` by version (training-data hash + config digest), so a variant that only
changes the evaluation does not retrain.

    .venv/bin/python benchmarks/fa_ablation.py --storage /tmp/fa26 --qa data/dev/openroad_dev.jsonl \\
        --variant ids+rows+neg --summaries current --rows 4 --ratios 3,2,1,1 [--lam 0] \\
        [--max-pairs 0] [--methods fa_units,fa_hybrid,fa_hybrid_tuned] [--json out.json]

``--summaries stored`` keeps the index's summaries; ``current`` re-serialises them (identical
to what a fresh index build with this code stores). ``--rows 0 --ratios 3,0,2,2`` is the
pre-change pair generation (unit-level templates, the paper's 3/2/2 negative mix).
Never pass ORD-QA (the test set): the script refuses ``ord-qa*`` files.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

KEYS_EDAQA = ("span_cover@2048t", "span_all@2048t", "span_hit@2048t", "doc_recall@1", "doc_recall@5")
KEYS_ORDQA = ("ref_recall@2048t", "ref_recall@5", "doc_recall@1", "doc_recall@5")


def resummarise(storage: Path, units, nodes):  # type: ignore[no-untyped-def]
    """``units`` with ``summary`` re-serialised by the current ``offline_summary`` (the section
    path of a unit is its first occurrence's, as in ``graphs.functional_units``)."""
    import polars as pl

    from edaqa_pipeline.graphs.summaries import offline_summary
    from edaqa_pipeline.retrieval.snapshot import indexed_documents
    from edaqa_pipeline.storage.tables import read_partitions

    occ = read_partitions(storage / "tables", "occurrences", indexed_documents(storage))
    assert occ is not None, f"{storage} has no occurrences table"
    section = dict(zip(occ["occurrence_id"].to_list(), occ["section_path"].to_list(), strict=True))
    node = {r["node_id"]: r for r in nodes.iter_rows(named=True)}
    summaries = []
    for r in units.iter_rows(named=True):
        arts = [node[a] for a in r["artifact_ids"]]
        summaries.append(offline_summary(r["anchor"], r["anchor_kind"], r["kind"],
                                         list(section[r["occurrence_ids"][0]] or []), arts))
    return units.with_columns(pl.Series("summary", summaries, dtype=pl.String()))


def train_cached(work: Path, pairs, units, config, log):  # type: ignore[no-untyped-def]
    """(adapter folder, version, card): trained once per training-data hash + config."""
    from edaqa_pipeline.training.config import read_card, training_data_hash, version_of
    from edaqa_pipeline.training.pipeline import probe_texts
    from edaqa_pipeline.training.train import train_encoder

    version = version_of(training_data_hash(pairs, units), config)
    folder = work / version
    card = read_card(folder)
    if card is None:
        tmp = folder.with_name(folder.name + ".partial")
        card = train_encoder(pairs, units, tmp, config, probe_texts=probe_texts(pairs, units), log=log).card
        tmp.rename(folder)
    return folder, version, card


def tuned_space(folder: Path, version: str, snap, units):  # type: ignore[no-untyped-def]
    """The snapshot's units and chunks in the tuned space (cached next to the adapter)."""
    import numpy as np
    import polars as pl

    from edaqa_pipeline.retrieval.embedder import vectors_of
    from edaqa_pipeline.retrieval.snapshot import TunedSpace
    from edaqa_pipeline.training.pipeline import tuned_vectors

    cache = folder / "tuned.parquet"
    if cache.is_file():
        frame = pl.read_parquet(cache)
    else:
        frame, _ = tuned_vectors(folder, version, units, snap.chunks)
        frame.write_parquet(cache)

    def aligned(kind: str, ids: list[str]) -> np.ndarray:
        part = frame.filter(pl.col("kind") == kind)
        row = {i: n for n, i in enumerate(part["item_id"].to_list())}
        vecs = vectors_of(part).reshape(part.height, -1)
        return vecs[[row[i] for i in ids]]

    return TunedSpace(version=version, adapter_dir=str(folder),
                      unit_vectors=aligned("unit", snap.units["unit_id"].to_list()),
                      chunk_vectors=aligned("chunk", snap.chunks["chunk_id"].to_list()))


def main() -> int:
    import polars as pl

    from edaqa_pipeline.evaluation.qa import load_qa
    from edaqa_pipeline.evaluation.runner import run_evaluation
    from edaqa_pipeline.registry import make_retriever
    from edaqa_pipeline.retrieval.snapshot import IndexSnapshot
    from edaqa_pipeline.storage.tables import read_table
    from edaqa_pipeline.training.config import TrainConfig
    from edaqa_pipeline.training.pipeline import make_training_pairs

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--storage", required=True, type=Path)
    p.add_argument("--qa", action="append", required=True, help="dev QA file (repeatable)")
    p.add_argument("--source-map", action="append", default=[], help="per --qa, '' for none")
    p.add_argument("--variant", required=True)
    p.add_argument("--summaries", choices=["stored", "current"], default="stored")
    p.add_argument("--rows", type=int, default=None, help="row-level queries per unit (default: package's)")
    p.add_argument("--ratios", default="", help="type,identifier,semantic,random (default: package's)")
    p.add_argument("--config", default="{}", help="TrainConfig overrides as JSON")
    p.add_argument("--lam", type=float, default=None)
    p.add_argument("--max-pairs", dest="max_pairs", type=int, default=None)
    p.add_argument("--methods", default="fa_units,fa_hybrid,fa_hybrid_tuned")
    p.add_argument("--work", type=Path, default=Path("/tmp/fa_exp"))
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    for qa in args.qa:
        if Path(qa).name.startswith("ord-qa"):
            raise SystemExit(f"error: {qa} is the ORD-QA test set; ablations run on dev data only")

    started = time.perf_counter()
    storage = args.storage.resolve()
    tables = storage / "tables"
    snap = IndexSnapshot.load(storage)
    units = read_table(tables, "unit_hyperedges")
    nodes = read_table(tables, "unit_nodes")
    assert units is not None and nodes is not None, f"{storage} has no functional units"
    units = units.sort("unit_id")
    if args.summaries == "current":
        units = resummarise(storage, units, nodes)
    base_vectors = snap.base.encode(units["summary"].to_list(), stable=True)
    embeddings = pl.DataFrame({"unit_id": units["unit_id"], "vector": base_vectors.tolist()})
    row = {u: i for i, u in enumerate(units["unit_id"].to_list())}
    order = [row[u] for u in snap.units["unit_id"].to_list()]
    snap.units = snap.units.with_columns(pl.Series("summary", units["summary"].to_list())[order])
    snap.unit_vectors = base_vectors[order]

    kwargs = {}
    if args.rows is not None:
        kwargs["rows_per_unit"] = args.rows
    if args.ratios:
        kwargs["ratios"] = tuple(int(x) for x in args.ratios.split(","))
    t = time.perf_counter()
    pairs = make_training_pairs(units, nodes, embeddings, **kwargs)
    pair_seconds = time.perf_counter() - t
    overrides = json.loads(args.config)
    if args.lam is not None:
        overrides["lam"] = args.lam
    if args.max_pairs is not None:
        overrides["max_pairs"] = args.max_pairs
    config = TrainConfig.from_dict({**TrainConfig().to_dict(), **overrides})
    work = args.work / storage.name
    work.mkdir(parents=True, exist_ok=True)
    folder, version, card = train_cached(work, pairs, units, config, log=print)
    snap.tuned = tuned_space(folder, version, snap, units)

    result: dict = {"variant": args.variant, "storage": str(storage), "version": version,
                    "summaries": args.summaries, "pairs": pairs.height,
                    "forms": dict(pairs.group_by("form").len().sort("form").iter_rows()),
                    "negative_kinds": dict(pairs["negative_kinds"].explode().value_counts().sort("negative_kinds").iter_rows()),
                    "config": config.to_dict(), "pair_seconds": round(pair_seconds, 1),
                    "train": {k: card[k] for k in ("n_train", "n_val", "epochs_run", "best_epoch",
                                                   "best_val_loss", "seconds", "cpu_seconds", "val_loss")},
                    "sets": {}}
    methods = [m for m in args.methods.split(",") if m]
    retrievers = {m: make_retriever(m, snap) for m in methods}
    for n, qa in enumerate(args.qa):
        smap = args.source_map[n] if n < len(args.source_map) and args.source_map[n] else None
        items = load_qa(qa, source_map=smap)
        metrics, _ = run_evaluation(items, retrievers, lambda q, ev: "", k=10, progress=False)
        keys = KEYS_ORDQA if any(i.ref_passages for i in items) else KEYS_EDAQA
        result["sets"][Path(qa).name] = {m: {k: metrics["methods"][m].get(k) for k in keys}
                                         for m in methods}
        print(f"\n{Path(qa).name} ({len(items)} questions), variant {args.variant}")
        print(f"{'method':<18}" + "".join(f"{k:>18}" for k in keys))
        for m in methods:
            print(f"{m:<18}" + "".join(f"{metrics['methods'][m].get(k, float('nan')):>18.3f}" for k in keys))
    result["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps({k: v for k, v in result.items() if k != "sets"}, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
