"""The query-unit contrastive objective of the paper, equations (3) and (4). Pure torch.

For one training query q with candidates e_0 = e+ (the positive) and e_1..e_N (the sampled
negatives), given cosine similarities ``sim[i] = sim(q, e_i)``:

* InfoNCE, eq. (3): ``L_NCE = -log( exp(s+/tau) / (exp(s+/tau) + sum_e- exp(s-/tau)) )``,
  i.e. cross-entropy over the N+1 logits ``sim/tau`` with the positive at index 0.
* Type coverage, eq. (4): ``kappa_q(e) = |T_q & T(e)| / |T_q|`` (1 when ``T_q`` is empty);
  ``s_i = sim_i / tau``; ``R_q = {(i, j): i < j, |kappa_i - kappa_j| > 0.01}``;
  ``L_type = mean over R_q of max(0, m - sgn(kappa_i - kappa_j) * (s_i - s_j))``, and 0 when
  ``R_q`` is empty. Margin ``m = 0.1``.
* ``L = L_NCE + lambda * L_type`` with ``lambda = 0.3``, ``tau = 0.07``.

Every function works on a batch: ``sims`` and ``kappa`` are ``(B, N+1)`` tensors; the
per-query losses are returned as ``(B,)`` tensors and :func:`contrastive_loss` averages them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported where a loss is computed: importing the constants and
    import torch  # coverage() (the definitions, `edaqa index` with nothing to train) stays light

TAU = 0.07
LAMBDA = 0.3
MARGIN = 0.1
KAPPA_EPS = 0.01


def coverage(required: Iterable[str], present: Iterable[str]) -> float:
    """kappa_q(e) = |T_q & T(e)| / |T_q|; 1.0 when T_q is empty."""
    req = set(required)
    if not req:
        return 1.0
    return len(req & set(present)) / len(req)


def info_nce(sims: torch.Tensor, tau: float = TAU) -> torch.Tensor:
    """Eq. (3) per query: cross-entropy of ``sims / tau`` against index 0 (the positive)."""
    import torch
    import torch.nn.functional as F

    logits = sims / tau
    target = torch.zeros(logits.shape[0], dtype=torch.long, device=logits.device)
    return F.cross_entropy(logits, target, reduction="none")


def type_margin(
    sims: torch.Tensor,
    kappa: torch.Tensor,
    tau: float = TAU,
    margin: float = MARGIN,
    eps: float = KAPPA_EPS,
) -> torch.Tensor:
    """Eq. (4) per query: the mean pairwise hinge over candidate pairs of different coverage.

    ``s = sims / tau``; for every pair i < j with ``|kappa_i - kappa_j| > eps`` the term is
    ``max(0, margin - sign(kappa_i - kappa_j) * (s_i - s_j))``; a query with no such pair
    contributes 0.
    """
    import torch

    s = sims / tau
    ds = s.unsqueeze(2) - s.unsqueeze(1)  # (B, C, C): s_i - s_j
    dk = kappa.unsqueeze(2) - kappa.unsqueeze(1)  # kappa_i - kappa_j
    c = s.shape[1]
    upper = torch.triu(torch.ones(c, c, dtype=torch.bool, device=s.device), diagonal=1)
    pairs = (dk.abs() > eps) & upper
    hinge = torch.clamp(margin - torch.sign(dk) * ds, min=0.0) * pairs
    n_pairs = pairs.sum(dim=(1, 2))
    return hinge.sum(dim=(1, 2)) / n_pairs.clamp(min=1)


def contrastive_loss(
    sims: torch.Tensor,
    kappa: torch.Tensor,
    tau: float = TAU,
    lam: float = LAMBDA,
    margin: float = MARGIN,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``L = mean_q(L_NCE + lam * L_type)``; also returns the two parts (batch means)."""
    nce = info_nce(sims, tau)
    typ = type_margin(sims, kappa, tau, margin)
    total = (nce + lam * typ).mean()
    return total, {"nce": nce.mean().detach(), "type": typ.mean().detach()}
