"""The mixed negative sampler: per query one positive unit and 7 negatives.

The paper: "units with partial overlap provide difficult type negatives, while semantically
hard or random units keep the learned space from collapsing into a type classifier". Per
query (ratios ``type / identifier / semantic / random``; default 3 / 2 / 1 / 1, the paper's
mix with two of its semantic-hard and random slots given to identifier-hard negatives;
``PAPER_RATIOS`` = 3 / 0 / 2 / 2 is the paper's literal mix):

* **type-hard (3)**: among the ``neighbours`` units closest to the positive (base-encoder
  cosine of the unit summaries), units that lack at least one required type
  (``kappa_q(e) < 1``); partial overlap (``0 < kappa < 1``) is preferred over none, then
  closeness. Drawn (seeded) from the first ``window`` of that ranking.
* **identifier-hard (2)**: units that share the query's command but not its option, its option
  but not its command (the unit-identifier graph), then the best BM25 units for the query
  (``hard_negatives.IdentifierNegatives``); drawn from the first ``window``. Needs the units'
  identifier sets; without them this category is empty (and filled from the next).
* **semantic-hard (1)**: other close neighbours, whatever their types (drawn from the first
  ``window`` remaining neighbours).
* **random (1)**: uniform over all remaining units.

A category that runs short is filled from the next one (type -> identifier -> semantic ->
random), so every
query gets exactly ``n_negatives`` negatives when the corpus has enough units. Units that may
also answer the query are never negatives: the positive, units with the same command or file
anchor, and units sharing an occurrence with the positive (a cross-document unit contains its
occurrence units). The random generator of each query is seeded with ``(seed, query_id)``, so
the sample does not depend on row order, process or platform.
"""

from __future__ import annotations

import random
from collections import defaultdict

import numpy as np
import polars as pl

from edaqa_pipeline.training.hard_negatives import IdentifierNegatives, query_names
from edaqa_pipeline.training.loss import coverage

N_NEGATIVES = 7
RATIOS = (3, 2, 1, 1)  # type-hard, identifier-hard, semantic-hard, random
PAPER_RATIOS = (3, 0, 2, 2)
NEIGHBOURS = 40
WINDOW = 10
KINDS = ("type_hard", "identifier", "semantic", "random")


def neighbour_lists(vectors: np.ndarray, k: int, block: int = 1024) -> np.ndarray:
    """Row indexes of each row's ``k`` most similar other rows (cosine; ties by index)."""
    n = vectors.shape[0]
    k = max(0, min(k, n - 1))
    out = np.zeros((n, k), dtype=np.int64)
    if k == 0:
        return out
    for start in range(0, n, block):
        sims = vectors[start:start + block] @ vectors.T
        for r in range(sims.shape[0]):
            sims[r, start + r] = -np.inf
        for r, row in enumerate(sims):
            part = np.argpartition(-row, k - 1)[:k]
            out[start + r] = sorted(part.tolist(), key=lambda i: (-row[i], i))
    return out


def _excluded(units: pl.DataFrame) -> list[set[int]]:
    """Per unit row: rows that may also answer its queries (never used as negatives)."""
    by_anchor: dict[str, set[int]] = defaultdict(set)
    by_occ: dict[str, set[int]] = defaultdict(set)
    rows = units.select("anchor", "anchor_kind", "occurrence_ids").iter_rows()
    facts = list(rows)
    for i, (anchor, kind, occs) in enumerate(facts):
        if kind in ("command", "file"):
            by_anchor[anchor].add(i)
        for o in occs or []:
            by_occ[o].add(i)
    out = []
    for i, (anchor, kind, occs) in enumerate(facts):
        ex = {i}
        if kind in ("command", "file"):
            ex |= by_anchor[anchor]
        for o in occs or []:
            ex |= by_occ[o]
        out.append(ex)
    return out


def _take(rng: random.Random, pool: list[int], n: int, kind: str, limit: int | None,
          chosen: list[int], kinds: list[str]) -> int:
    """Draw ``n`` of ``pool`` (its first ``limit`` entries; all when None) not yet chosen, in
    pool order; returns how many are missing."""
    pool = [j for j in pool if j not in chosen]
    head = pool if limit is None else pool[:max(limit, n)]
    order = {j: i for i, j in enumerate(head)}
    picked = sorted(rng.sample(head, min(n, len(head))), key=order.__getitem__)
    chosen.extend(picked)
    kinds.extend([kind] * len(picked))
    return n - len(picked)


def sample_negatives(
    pairs: pl.DataFrame,
    units: pl.DataFrame,
    unit_vectors: np.ndarray,
    *,
    n_negatives: int = N_NEGATIVES,
    ratios: tuple[int, int, int, int] = RATIOS,
    neighbours: int = NEIGHBOURS,
    window: int = WINDOW,
    seed: int = 0,
    identifiers: list[set[str]] | None = None,
) -> pl.DataFrame:
    """``pairs`` plus ``negatives`` (unit ids), ``negative_kinds`` and ``kappa``.

    ``kappa`` holds kappa_q(e) for the candidates ``[positive, *negatives]`` (the positive is
    1.0 by construction). ``unit_vectors`` are the base-encoder vectors of ``units`` (row
    aligned, L2-normalised); ``identifiers`` the canonical identifiers each unit names (row
    aligned; None: no identifier-hard negatives).
    """
    if sum(ratios) != n_negatives or len(ratios) != 4:
        raise ValueError(f"ratios {ratios} must be 4 counts summing to n_negatives={n_negatives}")
    unit_ids = units["unit_id"].to_list()
    row_of = {u: i for i, u in enumerate(unit_ids)}
    types = [set(t) for t in units["artifact_types"].to_list()]
    vectors = np.asarray(unit_vectors, dtype=np.float32)
    near = neighbour_lists(vectors, neighbours)
    excluded = _excluded(units)
    hard = (IdentifierNegatives(units["summary"].to_list(), identifiers, units["anchor"].to_list(), vectors)
            if identifiers is not None and ratios[1] else None)
    negatives, kinds, kappas = [], [], []
    for qid, query, pos_id, required in pairs.select("query_id", "query", "unit_id", "required_types").iter_rows():
        rng = random.Random(f"{seed}:{qid}")
        pos = row_of[pos_id]
        ex = excluded[pos]
        close = [int(j) for j in near[pos] if int(j) not in ex]
        kap = {j: coverage(required, types[j]) for j in close}
        rank = {j: i for i, j in enumerate(close)}
        typed = sorted((j for j in close if kap[j] < 1.0), key=lambda j: (not (0.0 < kap[j] < 1.0), rank[j]))
        chosen: list[int] = []
        chosen_kinds: list[str] = []
        short = _take(rng, typed, ratios[0], "type_hard", window, chosen, chosen_kinds)
        pool = hard.pool(query, pos, ex) if hard is not None else []
        short = _take(rng, pool, ratios[1] + short, "identifier", window, chosen, chosen_kinds)
        short = _take(rng, close, ratios[2] + short, "semantic", window, chosen, chosen_kinds)
        rest = [j for j in range(len(unit_ids)) if j not in ex and j not in chosen]
        _take(rng, rest, ratios[3] + short, "random", None, chosen, chosen_kinds)
        negatives.append([unit_ids[j] for j in chosen])
        kinds.append(chosen_kinds)
        kappas.append([1.0] + [coverage(required, types[j]) for j in chosen])
    return pairs.with_columns(
        pl.Series("negatives", negatives, dtype=pl.List(pl.String())),
        pl.Series("negative_kinds", kinds, dtype=pl.List(pl.String())),
        pl.Series("kappa", kappas, dtype=pl.List(pl.Float64())),
    )


def sampler_problems(pairs: pl.DataFrame, units: pl.DataFrame, n_negatives: int = N_NEGATIVES,
                     identifiers: list[set[str]] | None = None) -> list[str]:
    """Checks: negative counts, no positive among its negatives, type-hard negatives lack a
    required type, kappa consistent with the unit types, identifier-hard negatives do not name
    every identifier of their query (with ``identifiers``, row-aligned with ``units``)."""
    types = dict(zip(units["unit_id"].to_list(), [set(t) for t in units["artifact_types"].to_list()], strict=True))
    names = dict(zip(units["unit_id"].to_list(), identifiers, strict=True)) if identifiers is not None else {}
    anchors = dict(zip(units["unit_id"].to_list(), units["anchor"].to_list(), strict=True))
    problems = []
    for row in pairs.iter_rows(named=True):
        negs = row["negatives"]
        if len(negs) != n_negatives:
            problems.append(f"{row['query_id']}: {len(negs)} negatives")
        if row["unit_id"] in negs:
            problems.append(f"{row['query_id']}: positive among negatives")
        for neg, kind, k in zip(negs, row["negative_kinds"], row["kappa"][1:], strict=True):
            if abs(coverage(row["required_types"], types[neg]) - k) > 1e-9:
                problems.append(f"{row['query_id']}: kappa of {neg} is wrong")
            if kind == "type_hard" and set(row["required_types"]) <= types[neg]:
                problems.append(f"{row['query_id']}: type-hard negative {neg} has every required type")
            if kind == "identifier" and names:
                named = set().union(*query_names(row["query"], anchors[row["unit_id"]]))
                if named and named <= names[neg]:
                    problems.append(f"{row['query_id']}: identifier negative {neg} names every identifier of the query")
        if len(problems) > 20:
            break
    return problems
