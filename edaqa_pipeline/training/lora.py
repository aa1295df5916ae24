"""The LoRA-wrapped encoder and what a training step computes: query/unit embeddings, the
per-epoch unit bank, the batch loss (eq. 3-4) and the exact loss over a split."""

from __future__ import annotations

from typing import Any

from edaqa_pipeline.training.config import (
    TrainConfig,
)


def make_lora_model(config: TrainConfig, base_path: str = ""):  # type: ignore[no-untyped-def]
    """A fresh base encoder with a new LoRA adapter (seeded init), in train mode."""
    import torch
    from peft import LoraConfig, get_peft_model
    from sentence_transformers import SentenceTransformer

    from edaqa_pipeline.retrieval.encoders import quiet_model_loading
    from edaqa_pipeline.settings import default_encoder_path

    quiet_model_loading()  # no "Loading weights" bar in `edaqa index --quiet`
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


def batch_loss(model, rows: list[dict[str, Any]], summary: dict[str, str], config: TrainConfig,  # type: ignore[no-untyped-def]
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
            loss, _ = batch_loss(model, batch, summary, grad_free, bank, bank_row)
            total += float(loss) * len(batch)
    return total / len(rows)
