"""``edaqa train``: train the function-aware encoder on an indexed storage root, without Dagster.

Runs the same three steps as the ``training`` assets (``training.pipeline``) and writes the
same tables into ``STORAGE/tables`` (``training_pairs``, ``trained_encoder``,
``tuned_embeddings``) and the adapter into ``STORAGE/encoders/<version>/``, so ``edaqa eval
--methods ...,fa_hybrid_tuned`` works right after. An unchanged index is not retrained.

Hook into the main CLI with ``add_train_command(sub)`` (like ``add_query_commands``), or run
``python -m edaqa_pipeline.cli.train --storage DIR``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _write(tables: Path, name: str, frame: Any) -> None:
    from edaqa_pipeline.storage.tables import table_path

    path = table_path(tables, name)
    tmp = path.with_suffix(".parquet.partial")
    frame.write_parquet(tmp)
    tmp.replace(path)


def train_storage(
    storage: str | Path,
    config: Any = None,
    *,
    force: bool = False,
    encoder_path: str = "",
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Pairs -> adapter -> tuned vectors for ``storage``; returns a summary (card, timings)."""
    from edaqa_pipeline.llm import client_from_env
    from edaqa_pipeline.retrieval.snapshot import NotIndexedError, indexed_documents
    from edaqa_pipeline.storage.tables import read_partitions, read_table
    from edaqa_pipeline.training.config import TrainConfig
    from edaqa_pipeline.training.pipeline import (
        card_frame,
        ensure_trained,
        make_training_pairs,
        tuned_vectors,
    )

    root = Path(storage).resolve()
    tables = root / "tables"
    units = read_table(tables, "unit_hyperedges")
    nodes = read_table(tables, "unit_nodes")
    if units is None or nodes is None or units.is_empty():
        raise NotIndexedError(f"{root} holds no functional units: run `edaqa index` first")
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    client = client_from_env(cache_dir=root / "llm_cache", fallback_offline=True)
    pairs = make_training_pairs(units, nodes, read_table(tables, "unit_embeddings"), client=client,
                                base_path=encoder_path)
    _write(tables, "training_pairs", pairs)
    timings["pairs_s"] = round(time.perf_counter() - t0, 2)
    log(f"training pairs: {pairs.height} queries over {pairs['unit_id'].n_unique()} units "
        f"({client.provider}); {timings['pairs_s']} s")

    t0 = time.perf_counter()
    card, folder, reused = ensure_trained(root, pairs, units, config or TrainConfig(),
                                          base_path=encoder_path, force=force, log=log)
    _write(tables, "trained_encoder", card_frame(card, folder.relative_to(root).as_posix()))
    timings["train_s"] = round(time.perf_counter() - t0, 2)

    t0 = time.perf_counter()
    chunks = read_partitions(tables, "chunks", indexed_documents(root))
    if chunks is None:
        raise NotIndexedError(f"{root} holds no chunks")
    frame, stats = tuned_vectors(folder, card["version"], units, chunks,
                                 read_table(tables, "tuned_embeddings"), base_path=encoder_path)
    _write(tables, "tuned_embeddings", frame)
    timings["tuned_embeddings_s"] = round(time.perf_counter() - t0, 2)
    log(f"tuned embeddings: {stats['encoded']} encoded, {stats['reused']} reused; "
        f"{timings['tuned_embeddings_s']} s")
    return {"card": {k: v for k, v in card.items() if k != "probe"}, "adapter_dir": str(folder),
            "reused": reused, "timings": timings, "pairs": pairs.height}


def config_from_args(args: argparse.Namespace) -> Any:
    from edaqa_pipeline.training.config import TrainConfig

    base = TrainConfig.paper() if args.paper else TrainConfig()
    data = base.to_dict()
    for key in ("max_pairs", "epochs", "patience", "unit_grad", "max_seconds", "seed", "batch_size", "lam"):
        value = getattr(args, key, None)
        if value is not None:
            data[key] = value
    return TrainConfig.from_dict(data)


def _cmd_train(args: argparse.Namespace) -> int:
    from edaqa_pipeline.retrieval.snapshot import NotIndexedError

    try:
        summary = train_storage(args.storage, config_from_args(args), force=args.force)
    except NotIndexedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    card = summary["card"]
    print(json.dumps({
        "adapter_dir": summary["adapter_dir"], "reused": summary["reused"],
        "epochs_run": card["epochs_run"], "best_epoch": card["best_epoch"],
        "best_val_loss": round(card["best_val_loss"], 4),
        "val_loss": [round(v, 4) for v in card["val_loss"]],
        "train_seconds": card["seconds"], "peak_rss_mb": card["peak_rss_mb"],
        "timings": summary["timings"],
    }, indent=2))
    return 0


def add_train_command(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register ``edaqa train`` on the main CLI's subparsers."""
    p = sub.add_parser("train", help="train the function-aware encoder (LoRA) on an indexed storage root")
    p.add_argument("--storage", required=True)
    p.add_argument("--paper", action="store_true", help="the paper's setting literally (gradient through every candidate: hours on CPU)")
    p.add_argument("--max-pairs", dest="max_pairs", type=int, default=None, help="pairs used (0 = all)")
    p.add_argument("--epochs", type=int, default=None)
    p.add_argument("--patience", type=int, default=None)
    p.add_argument("--batch-size", dest="batch_size", type=int, default=None)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--lambda", dest="lam", type=float, default=None,
                   help="weight of the type-coverage margin term (paper 0.3; 0 = InfoNCE only)")
    p.add_argument("--unit-grad", dest="unit_grad", choices=["none", "all"], default=None)
    p.add_argument("--max-seconds", dest="max_seconds", type=float, default=None)
    p.add_argument("--force", action="store_true", help="retrain even if this version exists")
    p.set_defaults(func=_cmd_train)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="edaqa-train", description=__doc__)
    sub = parser.add_subparsers(dest="command")
    add_train_command(sub)
    raw = list(sys.argv[1:] if argv is None else argv)
    if not raw or raw[0] != "train":
        raw = ["train", *raw]
    args = parser.parse_args(raw)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
