"""``edaqa train``: train the function-aware encoder of an indexed storage root.

Launches the ``train_encoder`` job (``training_pairs`` -> ``trained_encoder`` ->
``tuned_embeddings``) on the storage root's Dagster instance, with the training options as
the ``trained_encoder`` run config, so the run, its metadata (card, loss curve) and its
checks show in the UI like every other build; ``edaqa index --with train`` runs the same job.
An unchanged index is not retrained (the adapter is versioned by its training data).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

TRAIN_JOB = "train_encoder"


class TrainingError(RuntimeError):
    """The storage root cannot be trained on, or the training run failed."""


def corpus_of(storage: Path) -> Path:
    """The corpus a storage root was indexed from (its manifest), else ``EDAQA_CORPUS``."""
    manifest = storage / "manifest.json"
    if manifest.is_file():
        corpus = json.loads(manifest.read_text()).get("corpus")
        if corpus:
            return Path(corpus)
    from edaqa_pipeline.settings import Settings

    return Settings.from_env().corpus_root


def run_config_for(options: dict[str, Any]) -> dict[str, Any]:
    """``trained_encoder``'s run config (``TrainEncoderConfig``) from CLI options."""
    config: dict[str, Any] = {}
    if options.get("paper"):
        config["preset"] = "paper"
    for key in ("max_pairs", "epochs", "patience", "max_seconds"):
        if options.get(key) is not None:
            config[key] = options[key]
    if options.get("unit_grad"):
        config["unit_grad"] = options["unit_grad"]
    if options.get("force"):
        config["force"] = True
    overrides = {k: options[k] for k in ("seed", "batch_size", "lam") if options.get(k) is not None}
    overrides.update(options.get("overrides") or {})
    if overrides:
        config["overrides_json"] = json.dumps(overrides, sort_keys=True)
    return {"ops": {"trained_encoder": {"config": config}}} if config else {}


def train_storage(storage: str | Path, **options: Any) -> dict[str, Any]:
    """Run the ``train_encoder`` job on ``storage``; returns the card summary and timings.
    Options: ``paper``, ``max_pairs``, ``epochs``, ``patience``, ``max_seconds``,
    ``unit_grad``, ``force``, ``seed``, ``batch_size``, ``lam``, ``overrides`` (a dict of
    any ``TrainConfig`` field)."""
    from edaqa_pipeline.assets.partitions import DOCUMENTS
    from edaqa_pipeline.cli.index import instance_for, run_job
    from edaqa_pipeline.retrieval.snapshot import indexed_documents
    from edaqa_pipeline.settings import settings_for
    from edaqa_pipeline.storage.tables import read_table

    root = Path(storage).resolve()
    units = read_table(root / "tables", "unit_hyperedges")
    if units is None or units.is_empty():
        raise TrainingError(f"{root} holds no functional units: run `edaqa index --storage {root}` first")
    cfg = settings_for(corpus_of(root), root)
    instance = instance_for(root)
    # a storage root copied or moved without its dagster_home has an instance that knows no
    # document: register the indexed ones, or the job would read zero chunk partitions
    known = set(instance.get_dynamic_partitions(DOCUMENTS))
    missing = [d for d in indexed_documents(root) if d not in known]
    if missing:
        instance.add_dynamic_partitions(DOCUMENTS, missing)
    result = run_job(cfg, TRAIN_JOB, run_config_for(options), instance=instance)
    if not result.success:
        raise TrainingError(f"{TRAIN_JOB} failed: {result.message}")
    card = read_table(root / "tables", "trained_encoder")
    row = card.row(0, named=True) if card is not None and card.height else {}
    details = {k: v for k, v in row.items() if k != "card_json"}
    details.update(json.loads(row.get("card_json") or "{}"))
    pairs = read_table(root / "tables", "training_pairs")
    reused = bool(result.metadata.get("trained_encoder", {}).get("reused_existing", False))
    return {"card": details, "adapter_dir": str(root / row.get("adapter_path", "")),
            "reused": reused, "pairs": 0 if pairs is None else pairs.height,
            "run_id": result.run_id, "timings": result.timings}


def _cmd_train(args: argparse.Namespace) -> int:
    options = {k: getattr(args, k) for k in ("paper", "max_pairs", "epochs", "patience",
                                             "unit_grad", "max_seconds", "seed", "batch_size",
                                             "lam", "force")}
    try:
        summary = train_storage(args.storage, **options)
    except TrainingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=2, default=str))
    return 0


def add_train_command(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register ``edaqa train`` on the main CLI's subparsers."""
    from edaqa_pipeline.cli.query import storage_argument

    p = sub.add_parser("train", help="train the function-aware encoder (LoRA) of an index",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    storage_argument(p)
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
