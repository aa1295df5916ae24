"""Train the function-aware encoder on an indexed storage root and report its cost.

Why: the project's CPU budget (a full training on the OpenROAD 2024 units within 20 minutes on
2 cores) is checked with this script; it prints training time (wall and CPU), peak RSS
(``resource.getrusage``), epochs, best epoch and the loss curves. It runs the same code as
``edaqa train`` (``cli.train.train_storage``: the ``train_encoder`` Dagster job) and writes into the storage root (the
adapter under ``encoders/``, the ``training_pairs``, ``trained_encoder`` and
``tuned_embeddings`` tables). Work on a copy if the root must stay untouched.

    .venv/bin/python benchmarks/train_encoder.py --storage /tmp/or24 [--paper] [--force]
        [--max-pairs N] [--epochs N] [--unit-grad all|positive|none] [--json out.json]

CPU time / wall time tells whether the machine was shared: on an idle 2-core machine torch
keeps both cores busy (ratio about 1.7-2); a much lower ratio means the wall time is inflated
by other processes, and ``cpu_seconds / 1.8`` estimates the idle-machine wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main() -> int:
    from edaqa_pipeline.cli.train import train_storage

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--storage", required=True)
    parser.add_argument("--paper", action="store_true")
    parser.add_argument("--max-pairs", dest="max_pairs", type=int, default=None)
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--patience", type=int, default=None)
    parser.add_argument("--batch-size", dest="batch_size", type=int, default=None)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--unit-grad", dest="unit_grad", choices=["none", "all"], default=None)
    parser.add_argument("--max-seconds", dest="max_seconds", type=float, default=None)
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args()

    options = {k: getattr(args, k) for k in ("paper", "max_pairs", "epochs", "patience", "unit_grad",
                                             "max_seconds", "seed", "batch_size", "force")}
    load_before = os.getloadavg()
    started = time.perf_counter()
    summary = train_storage(Path(args.storage), **options)
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    card = summary["card"]
    result = {
        "storage": str(Path(args.storage).resolve()),
        "adapter_dir": summary["adapter_dir"],
        "reused_existing_adapter": summary["reused"],
        "config": card["config"],
        "pairs_total": summary["pairs"],
        "n_train": card["n_train"],
        "n_val": card["n_val"],
        "training_wall_s": card["seconds"],
        "training_cpu_s": card.get("cpu_seconds"),
        "cpu_over_wall": round(card["cpu_seconds"] / card["seconds"], 2) if card.get("cpu_seconds") else None,
        "total_wall_s": round(wall, 1),
        "timings": summary["timings"],
        "peak_rss_mb": round(usage.ru_maxrss / 1024.0, 1),
        "epochs_run": card["epochs_run"],
        "best_epoch": card["best_epoch"],
        "stopped": card["stopped"],
        "best_val_loss": round(card["best_val_loss"], 4),
        "val_loss": [round(v, 4) for v in card["val_loss"]],
        "train_eval_loss": [round(v, 4) for v in card.get("train_eval_loss", [])],
        "train_loss": [round(v, 4) for v in card["train_loss"]],
        "epoch_seconds": [h["seconds"] for h in card.get("history", [])],
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "trainable_params": card["trainable_params"],
    }
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
